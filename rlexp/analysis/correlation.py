"""Rank agreement between a benchmark's and a downstream ranking of reward models.

Items are reward models: ``benchmark[i]`` is RM i's benchmark score and ``downstream[i]`` its
downstream score (e.g. BoN or PPO judge score). Provides Spearman, Kendall tau-b and Pearson
(wrapping :mod:`scipy.stats`) with exact small-n Spearman p-values, as :class:`Corr` results.
NDCG lives in :mod:`rlexp.analysis.ndcg`; bootstrap CIs in :mod:`rlexp.analysis.bootstrap`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from rlexp.analysis.score_vectors import permutations, score_pair
from rlexp.errors import DataError

CORRELATION_METHODS: tuple[str, ...] = ("spearman", "kendall", "pearson")
#: Fewest items for which a correlation coefficient is reported.
MIN_ITEMS = 3
#: Fewest items for which a p-value is reported: below it even a perfect rank agreement is not
#: significant (exact Spearman p = 0.083 at n = 4), so the p-value is withheld as "not testable".
MIN_TESTABLE = 5
#: Largest n whose Spearman p-value is exact (all n! pairings, 3.6M at n = 10); above it scipy's
#: t-approximation, which is close by then.
MAX_EXACT_SPEARMAN = 10


@dataclass
class Corr:
    """One agreement statistic between benchmark and downstream scores.

    ``value``/``pvalue`` are None when the statistic is undefined, with the reason in ``note``
    (``pvalue`` is always None for NDCG). ``ci_low``/``ci_high`` hold a bootstrap CI when one was
    computed. Iterating yields ``(value, pvalue)``, so ``stat, p = spearman(x, y)`` works.
    """

    name: str
    value: float | None
    pvalue: float | None
    n: int
    note: str | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    #: NDCG only: the mean and the p-value (P[NDCG >= observed]) of NDCG under a uniformly random
    #: order of the RMs, and the normalised NDCG (value - null_mean) / (1 - null_mean).
    null_mean: float | None = None
    null_p: float | None = None
    normalised: float | None = None

    def __iter__(self) -> Iterator[float | None]:
        return iter((self.value, self.pvalue))


def undefined_reason(x: np.ndarray, y: np.ndarray) -> str | None:
    """Why no coefficient is defined for these scores (too few items, a constant side), or None."""
    if x.size < MIN_ITEMS:
        return f"fewer than {MIN_ITEMS} items (n={x.size})"
    if np.all(x == x[0]):
        return "constant benchmark scores"
    if np.all(y == y[0]):
        return "constant downstream scores"
    return None


def scipy_corr(name: str, x: Any, y: Any) -> Corr:
    """``name`` (spearman, kendall or pearson) with its p-value, as :func:`spearman` etc. describe."""
    xa, ya = score_pair(x, y)
    reason = undefined_reason(xa, ya)
    if reason is not None:
        return Corr(name, None, None, int(xa.size), note=reason)
    if name == "spearman":
        result = stats.spearmanr(xa, ya)
    elif name == "kendall":
        result = stats.kendalltau(xa, ya, variant="b")
    else:
        result = stats.pearsonr(xa, ya)
    value, pvalue = float(result.statistic), float(result.pvalue)
    if math.isnan(value):
        return Corr(name, None, None, int(xa.size), note="scipy returned NaN")
    if xa.size < MIN_TESTABLE:
        return Corr(name, value, None, int(xa.size), note=f"not testable (n={xa.size})")
    if name == "spearman" and xa.size <= MAX_EXACT_SPEARMAN:
        pvalue = spearman_exact_p(xa, ya)
    return Corr(name, value, None if math.isnan(pvalue) else pvalue, int(xa.size))


def spearman(x: Sequence[float], y: Sequence[float]) -> Corr:
    """Spearman rho (``scipy.stats.spearmanr``) and its two-sided p-value.

    The p-value is exact for n <= :data:`MAX_EXACT_SPEARMAN` (:func:`spearman_exact_p`), scipy's
    t-approximation above, and withheld below :data:`MIN_TESTABLE` items (``note`` says "not
    testable"). Undefined below 3 points or for constant input.
    """
    return scipy_corr("spearman", x, y)


def kendall(x: Sequence[float], y: Sequence[float]) -> Corr:
    """Kendall tau-b and its p-value (``scipy.stats.kendalltau``: exact without ties at small n).

    No p-value below :data:`MIN_TESTABLE` items; undefined below 3 points or for constant input.
    """
    return scipy_corr("kendall", x, y)


def pearson(x: Sequence[float], y: Sequence[float]) -> Corr:
    """Pearson r and its p-value (``scipy.stats.pearsonr``).

    No p-value below :data:`MIN_TESTABLE` items; undefined below 3 points or for constant input.
    """
    return scipy_corr("pearson", x, y)


# --------------------------------------------------------------------------------------------
# exact permutation null of Spearman's rho
# --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _spearman_null(x_ranks: tuple[float, ...], y_ranks: tuple[float, ...]) -> np.ndarray:
    """Spearman rho over every pairing of two rank multisets (ties keep their average ranks)."""
    x = np.asarray(x_ranks) - np.mean(x_ranks)
    y = np.asarray(y_ranks) - np.mean(y_ranks)
    norm = math.sqrt(float(x @ x) * float(y @ y))
    perms = permutations(len(x))
    out = np.empty(len(perms))
    for start in range(0, len(perms), 500_000):  # bounded temporaries at n = 10
        out[start:start + 500_000] = y[perms[start:start + 500_000]] @ x
    return out / norm


def spearman_exact_p(x: Sequence[float], y: Sequence[float]) -> float:
    """Two-sided exact permutation p-value of Spearman's rho (n <= :data:`MAX_EXACT_SPEARMAN`).

    Every one of the n! pairings of the two samples is equally likely under independence; the
    p-value is ``min(1, 2 * min(P[rho >= observed], P[rho <= observed]))`` over them, the convention
    of ``scipy.stats.permutation_test`` (tested equal). Ties keep their average ranks. Examples:
    perfect agreement gives 1/3 at n = 3 and 1/12 at n = 4; rho = 0.943 at n = 6 gives 1/60.

    Raises:
        DataError: mismatched lengths, non-finite values, or n outside [2, MAX_EXACT_SPEARMAN].
    """
    xa, ya = score_pair(x, y)
    if not 2 <= xa.size <= MAX_EXACT_SPEARMAN:
        raise DataError(f"exact Spearman p needs 2..{MAX_EXACT_SPEARMAN} items, got {xa.size}")
    rx, ry = stats.rankdata(xa), stats.rankdata(ya)
    null = _spearman_null(tuple(sorted(rx)), tuple(sorted(ry)))
    xc, yc = rx - rx.mean(), ry - ry.mean()
    observed = float(xc @ yc) / math.sqrt(float(xc @ xc) * float(yc @ yc))
    eps = 1e-12 * max(1.0, abs(observed))  # the same pairing recomputed may differ in the last bit
    greater = float(np.mean(null >= observed - eps))
    less = float(np.mean(null <= observed + eps))
    return min(1.0, 2.0 * min(greater, less))


# --------------------------------------------------------------------------------------------
# bootstrap replicates
# --------------------------------------------------------------------------------------------


def coefficients(name: str, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """The coefficient of every row pair of two ``[B, n]`` arrays, as scipy computes it (tested equal).

    Bootstrap replicates need only the value, by the thousand: scipy's p-values (a t or normal tail,
    or Kendall's exact permutation distribution) made up most of a study's correlate time, and then
    its per-call overhead did, so the rows are ranked in one call and Kendall's sign matrices summed
    as one array. NaN where the coefficient is undefined (fewer than 3 items, a constant row).
    """
    xs, ys = np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64)
    out = np.full(xs.shape[0], np.nan)
    if xs.shape[1] < MIN_ITEMS:
        return out
    rows = np.flatnonzero(~(np.all(xs == xs[:, :1], axis=1) | np.all(ys == ys[:, :1], axis=1)))
    if name == "kendall":
        # Tau-b: (concordant - discordant) / sqrt(pairs untied in x * pairs untied in y); summing the
        # full sign matrices counts every pair twice on both sides of the ratio. The sums are exact
        # integers, so summing them as one array changes no bit. Chunks bound the [b, n, n] temporaries.
        step = max(1, (1 << 21) // xs.shape[1] ** 2)
        for start in range(0, rows.size, step):
            r = rows[start:start + step]
            sx = np.sign(xs[r, :, None] - xs[r, None, :])
            sy = np.sign(ys[r, :, None] - ys[r, None, :])
            out[r] = (sx * sy).sum(axis=(1, 2)) / np.sqrt((sx * sx).sum(axis=(1, 2)) * (sy * sy).sum(axis=(1, 2)))
    else:
        if name == "spearman":
            xs, ys = stats.rankdata(xs, axis=1), stats.rankdata(ys, axis=1)
        for i in rows:  # one np.corrcoef per row keeps its exact arithmetic (BLAS order included)
            out[i] = np.corrcoef(xs[i], ys[i])[0, 1]
    return np.clip(out, -1.0, 1.0)
