"""How well a benchmark ranking of reward models predicts their downstream ranking.

Items are reward models: ``benchmark[i]`` is RM i's benchmark score and ``downstream[i]`` its
downstream score (e.g. BoN or PPO judge score). Provides Spearman, Kendall tau-b and Pearson
(wrapping :mod:`scipy.stats`), NDCG as recommended in the PRB reference §8, and bootstrap CIs that
resample either RMs (:func:`correlate`) or prompts (:func:`bootstrap_prompts`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from rlexp.errors import ConfigError, DataError

RELEVANCES: tuple[str, ...] = ("rank", "minmax", "raw")
GAINS: tuple[str, ...] = ("linear", "exp2")
CORRELATION_METHODS: tuple[str, ...] = ("spearman", "kendall", "pearson")
#: Every NDCG variant: the PRB reference leaves relevance and gain open, so report them all.
DEFAULT_NDCG_VARIANTS: tuple[tuple[str, str], ...] = tuple((r, g) for r in RELEVANCES for g in GAINS)
#: Fewest items for which a correlation coefficient is reported.
MIN_ITEMS = 3
#: Fewest items for which a p-value is reported: below it even a perfect rank agreement is not
#: significant (exact Spearman p = 0.083 at n = 4), so the p-value is withheld as "not testable".
MIN_TESTABLE = 5
#: Largest n whose Spearman p-value is exact (all n! pairings, 3.6M at n = 10); above it scipy's
#: t-approximation, which is close by then.
MAX_EXACT_SPEARMAN = 10
#: Largest M whose NDCG null is enumerated (M! orders); above it NDCG_NULL_DRAWS random orders.
MAX_EXACT_NDCG = 8
NDCG_NULL_DRAWS = 10_000


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


def _vector(values: Any, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise DataError(f"{name} must be a 1-D sequence of scores, got shape {arr.shape}")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise DataError(f"{name}: non-finite score at item {int(bad[0])}")
    return arr


def _pair(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    xa, ya = _vector(x, "benchmark"), _vector(y, "downstream")
    if xa.size != ya.size:
        raise DataError(f"benchmark has {xa.size} items but downstream has {ya.size}")
    return xa, ya


def _undefined_reason(x: np.ndarray, y: np.ndarray) -> str | None:
    if x.size < MIN_ITEMS:
        return f"fewer than {MIN_ITEMS} items (n={x.size})"
    if np.all(x == x[0]):
        return "constant benchmark scores"
    if np.all(y == y[0]):
        return "constant downstream scores"
    return None


def _scipy_corr(name: str, x: Any, y: Any) -> Corr:
    xa, ya = _pair(x, y)
    reason = _undefined_reason(xa, ya)
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
    return _scipy_corr("spearman", x, y)


def kendall(x: Sequence[float], y: Sequence[float]) -> Corr:
    """Kendall tau-b and its p-value (``scipy.stats.kendalltau``: exact without ties at small n).

    No p-value below :data:`MIN_TESTABLE` items; undefined below 3 points or for constant input.
    """
    return _scipy_corr("kendall", x, y)


def pearson(x: Sequence[float], y: Sequence[float]) -> Corr:
    """Pearson r and its p-value (``scipy.stats.pearsonr``).

    No p-value below :data:`MIN_TESTABLE` items; undefined below 3 points or for constant input.
    """
    return _scipy_corr("pearson", x, y)


# --------------------------------------------------------------------------------------------
# exact permutation nulls
# --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=16)
def _permutations(n: int) -> np.ndarray:
    """Every permutation of ``range(n)`` as an ``[n!, n]`` int8 array (n <= 10: 36 MB at most).

    Built by inserting the largest element at every position of the permutations of ``n - 1``,
    which is far faster and leaner than materialising ``itertools.permutations`` tuples.
    """
    perms = np.zeros((1, 0), dtype=np.int8)
    for k in range(n):
        perms = np.concatenate([np.insert(perms, i, k, axis=1) for i in range(k + 1)])
    perms.setflags(write=False)
    return perms


@functools.lru_cache(maxsize=256)
def _spearman_null(x_ranks: tuple[float, ...], y_ranks: tuple[float, ...]) -> np.ndarray:
    """Spearman rho over every pairing of two rank multisets (ties keep their average ranks)."""
    x = np.asarray(x_ranks) - np.mean(x_ranks)
    y = np.asarray(y_ranks) - np.mean(y_ranks)
    norm = math.sqrt(float(x @ x) * float(y @ y))
    perms = _permutations(len(x))
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
    xa, ya = _pair(x, y)
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
# NDCG
# --------------------------------------------------------------------------------------------


def _relevance(downstream: np.ndarray, relevance: str) -> np.ndarray | None:
    if relevance == "rank":
        # rank 1 = best; tied downstream scores share their average rank.
        down_rank = stats.rankdata(-downstream, method="average")
        return downstream.size - down_rank
    if relevance == "minmax":
        lo, hi = downstream.min(), downstream.max()
        if hi == lo:
            return None  # every RM ties: the rescaling is undefined
        return (downstream - lo) / (hi - lo)
    if np.any(downstream < 0):
        # Negative gains make DCG/IDCG meaningless (IDCG can be 0 or negative).
        raise DataError("ndcg: raw relevance needs non-negative downstream scores")
    return downstream.astype(np.float64)


def ndcg(
    benchmark: Sequence[float],
    downstream: Sequence[float],
    relevance: str = "rank",
    gain: str = "linear",
    k: int | None = None,
) -> float | None:
    """NDCG@K of the benchmark's RM ranking against the downstream one (PRB §8).

    ``pi`` orders the RMs by benchmark score, best first; the ideal order sorts them by downstream
    score. ``DCG@K = sum_{i<=K} g(rel(pi_i)) / log2(i + 1)`` and ``NDCG = DCG(pi) / DCG(ideal)``,
    with ``K = M`` (all RMs) when ``k`` is None and ``k`` clamped to M.

    * ``relevance``: ``"rank"`` -> ``M - r_down`` (rank 1 = best, tied downstream scores get their
      average rank); ``"minmax"`` -> downstream rescaled to [0, 1]; ``"raw"`` -> the downstream
      score itself (must be >= 0).
    * ``gain``: ``"linear"`` -> ``g(x) = x``; ``"exp2"`` -> ``g(x) = 2**x - 1``.

    Tied benchmark scores: the DCG is averaged over every order of each tied block. DCG is linear
    in the per-position gains and, under a uniformly random order of a block, every item of the
    block is equally likely at each of its positions, so the average equals giving each position of
    the block the block's mean *gain* (mean of ``g(rel)``, not ``g`` of the mean relevance).

    Returns:
        NDCG in [0, 1], or None when the ideal DCG is 0 (e.g. constant downstream scores with
        ``minmax``, or all-zero raw scores).

    Raises:
        ConfigError: unknown ``relevance``/``gain`` or ``k < 1``.
        DataError: empty input, length mismatch, NaN, or negative raw relevance.
    """
    if relevance not in RELEVANCES:
        raise ConfigError(f"ndcg: relevance must be one of {list(RELEVANCES)}, got {relevance!r}")
    if gain not in GAINS:
        raise ConfigError(f"ndcg: gain must be one of {list(GAINS)}, got {gain!r}")
    bench, down = _pair(benchmark, downstream)
    n_items = bench.size
    if n_items == 0:
        raise DataError("ndcg: no items")
    if k is None:
        cutoff = n_items
    else:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ConfigError(f"ndcg: k must be a positive integer, got {k!r}")
        cutoff = min(int(k), n_items)

    rel = _relevance(down, relevance)
    if rel is None:
        return None
    with np.errstate(over="ignore"):
        gains = rel if gain == "linear" else np.exp2(rel) - 1.0
    if not np.all(np.isfinite(gains)):
        # 2**rel overflows past rel ~ 1024 (rank relevance with > 1024 RMs, or large raw scores).
        raise DataError("ndcg: exp2 gain overflows; use gain='linear' or a bounded relevance")
    discounts = 1.0 / np.log2(np.arange(2, n_items + 2))
    discounts[cutoff:] = 0.0

    ideal = float(np.sort(gains)[::-1] @ discounts)
    if ideal <= 0.0:
        return None

    # Order by benchmark, best first, then average gains within each block of tied benchmark scores.
    order = np.argsort(-bench, kind="stable")
    ranked_bench = bench[order]
    ranked_gains = gains[order]
    new_block = np.r_[True, ranked_bench[1:] != ranked_bench[:-1]]
    block_id = np.cumsum(new_block) - 1
    block_mean = np.bincount(block_id, weights=ranked_gains) / np.bincount(block_id)
    actual = float(block_mean[block_id] @ discounts)
    return actual / ideal


def _ndcg_gains(downstream: np.ndarray, relevance: str, gain: str) -> np.ndarray | None:
    rel = _relevance(downstream, relevance)
    if rel is None:
        return None
    with np.errstate(over="ignore"):
        return rel if gain == "linear" else np.exp2(rel) - 1.0


@dataclass(frozen=True)
class NDCGNull:
    """NDCG of a uniformly random order of the RMs: the chance level an observed NDCG is read against.

    ``mean`` is exact: every RM is equally likely at every position, so E[DCG@K] = mean(gain) x
    sum of the first K discounts. ``draws`` is the null distribution (every order for M <=
    :data:`MAX_EXACT_NDCG`, else :data:`NDCG_NULL_DRAWS` seeded random orders), ``exact`` says which.
    """

    mean: float
    draws: np.ndarray
    exact: bool

    def pvalue(self, observed: float) -> float:
        """P[NDCG_random >= observed]; with random draws the (count + 1) / (draws + 1) estimate."""
        count = int(np.sum(self.draws >= observed - 1e-12))
        return count / len(self.draws) if self.exact else (count + 1) / (len(self.draws) + 1)

    def quantile(self, q: float) -> float:
        return float(np.quantile(self.draws, q))

    def normalise(self, observed: float) -> float | None:
        """(observed - mean) / (1 - mean): 0 at chance, 1 for the ideal order; None when the null is already 1."""
        return None if self.mean >= 1.0 - 1e-12 else (observed - self.mean) / (1.0 - self.mean)


@functools.lru_cache(maxsize=512)
def _ndcg_null_cached(gains: tuple[float, ...], cutoff: int, seed: int) -> NDCGNull:
    g = np.asarray(gains)
    m = g.size
    discounts = 1.0 / np.log2(np.arange(2, m + 2))
    discounts[cutoff:] = 0.0
    ideal = float(np.sort(g)[::-1] @ discounts)
    mean = float(g.mean() * discounts.sum()) / ideal
    if m <= MAX_EXACT_NDCG:
        orders, exact = _permutations(m), True
    else:
        orders = np.argsort(np.random.default_rng(seed).random((NDCG_NULL_DRAWS, m)), axis=1)
        exact = False
    draws = (g[orders] @ discounts) / ideal
    draws.setflags(write=False)
    return NDCGNull(mean=mean, draws=draws, exact=exact)


def ndcg_null(
    downstream: Sequence[float], relevance: str = "rank", gain: str = "linear", k: int | None = None, seed: int = 0
) -> NDCGNull | None:
    """The chance level of :func:`ndcg` for these downstream scores (see :class:`NDCGNull`).

    The null depends only on the downstream scores (through their gains) and the cutoff, not on
    the benchmark, so one null serves every benchmark column. With rank relevance and linear gain
    the mean is about 0.80 for 4 to 17 RMs (0.804 at M = 6). None where NDCG itself is undefined.

    Raises:
        ConfigError: unknown ``relevance``/``gain``.
        DataError: empty or non-finite input, or negative raw relevance.
    """
    if relevance not in RELEVANCES or gain not in GAINS:
        raise ConfigError(f"ndcg_null: unknown relevance/gain {relevance!r}/{gain!r}")
    down = _vector(downstream, "downstream")
    if down.size == 0:
        raise DataError("ndcg_null: no items")
    gains = _ndcg_gains(down, relevance, gain)
    if gains is None or not np.all(np.isfinite(gains)) or float(np.sort(gains)[::-1][0]) <= 0.0:
        return None
    cutoff = down.size if k is None else min(int(k), down.size)
    return _ndcg_null_cached(tuple(float(v) for v in gains), cutoff, int(seed))


# --------------------------------------------------------------------------------------------
# bootstrap
# --------------------------------------------------------------------------------------------


def _normalise_variants(ndcg_variants: Sequence[Any]) -> list[tuple[str, str, int | None]]:
    out = []
    for variant in ndcg_variants:
        if isinstance(variant, dict):
            rel, g, k = variant.get("relevance", "rank"), variant.get("gain", "linear"), variant.get("k")
        elif isinstance(variant, (tuple, list)) and len(variant) in (2, 3):
            rel, g = variant[0], variant[1]
            k = variant[2] if len(variant) == 3 else None
        else:
            raise ConfigError(f"ndcg variant must be (relevance, gain[, k]) or a dict, got {variant!r}")
        if rel not in RELEVANCES:
            raise ConfigError(f"ndcg: relevance must be one of {list(RELEVANCES)}, got {rel!r}")
        if g not in GAINS:
            raise ConfigError(f"ndcg: gain must be one of {list(GAINS)}, got {g!r}")
        out.append((rel, g, k))
    return out


def _ndcg_name(rel: str, g: str, k: int | None) -> str:
    return f"ndcg[{rel},{g}]" + (f"@{k}" if k is not None else "")


def _coefficient(name: str, x: np.ndarray, y: np.ndarray) -> float | None:
    """The coefficient alone, as scipy computes it but without the p-value (tested equal).

    Bootstrap replicates need only the value, and scipy's p-values (a t or normal tail, or an
    exact permutation distribution for Kendall) made up most of a study's correlate time.
    """
    if _undefined_reason(x, y) is not None:
        return None
    if name == "spearman":
        x, y = stats.rankdata(x), stats.rankdata(y)
    if name in ("spearman", "pearson"):
        value = np.corrcoef(x, y)[0, 1]
    else:
        # Kendall tau-b: (concordant - discordant) / sqrt(pairs untied in x * pairs untied in y);
        # summing over the full sign matrices counts every pair twice on both sides of the ratio.
        sx, sy = np.sign(x[:, None] - x[None, :]), np.sign(y[:, None] - y[None, :])
        value = (sx * sy).sum() / math.sqrt((sx * sx).sum() * (sy * sy).sum())
    return None if math.isnan(value) else float(np.clip(value, -1.0, 1.0))


def _statistics(methods: Sequence[str], variants: list[tuple[str, str, int | None]]) -> list[tuple[Any, Any]]:
    """(fn(x, y) -> Corr, fn(x, y) -> value or None for replicates) per requested statistic, in order."""
    out: list[tuple[Any, Any]] = []
    for method in methods:
        if method in CORRELATION_METHODS:
            out.append((lambda x, y, _m=method: _scipy_corr(_m, x, y), lambda x, y, _m=method: _coefficient(_m, x, y)))
        elif method == "ndcg":
            for rel, g, k in variants:
                out.append((_ndcg_corr(rel, g, k), _ndcg_value(rel, g, k)))
        else:
            raise ConfigError(f"unknown correlation method {method!r} (expected spearman, kendall, pearson or ndcg)")
    return out


def _ndcg_corr(rel: str, g: str, k: int | None) -> Any:
    name = _ndcg_name(rel, g, k)

    def compute(x: np.ndarray, y: np.ndarray) -> Corr:
        try:
            value = ndcg(x, y, relevance=rel, gain=g, k=k)
        except DataError as err:
            # e.g. negative downstream scores with raw relevance: report, do not abort the table.
            return Corr(name, None, None, len(x), note=str(err))
        if value is None:
            return Corr(name, None, None, len(x), note="ideal DCG is 0")
        null = ndcg_null(y, rel, g, k)
        if null is None:
            return Corr(name, value, None, len(x))
        return Corr(name, value, None, len(x), null_mean=null.mean, null_p=null.pvalue(value),
                    normalised=null.normalise(value))

    return compute


def _ndcg_value(rel: str, g: str, k: int | None) -> Any:
    """NDCG alone for bootstrap replicates (no null: it would be recomputed per replicate)."""

    def value(x: np.ndarray, y: np.ndarray) -> float | None:
        try:
            return ndcg(x, y, relevance=rel, gain=g, k=k)
        except DataError:
            return None

    return value


def _check_boot(n_boot: int, alpha: float) -> None:
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 0:
        raise ConfigError(f"n_boot must be a non-negative integer, got {n_boot!r}")
    if not 0.0 < alpha < 1.0:
        raise ConfigError(f"alpha must be in (0, 1), got {alpha!r}")


def _attach_ci(corr: Corr, samples: list[float], n_boot: int, alpha: float) -> None:
    """Percentile CI from the defined bootstrap replicates; say how many were undefined."""
    if n_boot == 0:
        return
    undefined = n_boot - len(samples)
    if samples:
        lo, hi = np.quantile(np.asarray(samples), [alpha / 2.0, 1.0 - alpha / 2.0])
        corr.ci_low, corr.ci_high = float(lo), float(hi)
    if undefined:
        extra = f"{undefined}/{n_boot} bootstrap replicates undefined"
        corr.note = f"{corr.note}; {extra}" if corr.note else extra


def correlate(
    benchmark: Sequence[float],
    downstream: Sequence[float],
    methods: Sequence[str] = ("spearman", "kendall", "pearson", "ndcg"),
    n_boot: int = 1000,
    seed: int = 0,
    ndcg_variants: Sequence[Any] = DEFAULT_NDCG_VARIANTS,
    alpha: float = 0.05,
) -> list[Corr]:
    """Agreement between benchmark and downstream scores of the same RMs, with bootstrap CIs.

    Each method gives one :class:`Corr` (``"ndcg"`` gives one per variant, named like
    ``ndcg[rank,linear]`` or ``ndcg[rank,linear]@3``). CIs are percentile intervals over ``n_boot``
    resamples of the RMs (items) with replacement; replicates where the statistic is undefined
    (e.g. all resampled RMs identical) are dropped and counted in ``note``. ``n_boot=0`` skips CIs.

    ``ndcg_variants``: ``(relevance, gain)`` or ``(relevance, gain, k)`` tuples, or dicts with those
    keys; the default is every relevance x gain combination at ``K = M``.

    Raises:
        ConfigError: unknown method/variant, bad ``n_boot`` or ``alpha``.
        DataError: length mismatch or NaN.
    """
    _check_boot(n_boot, alpha)
    x, y = _pair(benchmark, downstream)
    statistics = _statistics(methods, _normalise_variants(ndcg_variants))
    results = [full(x, y) for full, _ in statistics]
    if n_boot == 0 or x.size == 0:
        return results
    rng = np.random.default_rng(seed)
    replicates: list[list[float]] = [[] for _ in statistics]
    for _ in range(n_boot):
        idx = rng.integers(0, x.size, size=x.size)
        xb, yb = x[idx], y[idx]
        for j, (_, value_of) in enumerate(statistics):
            value = value_of(xb, yb)
            if value is not None:
                replicates[j].append(value)
    for corr, samples in zip(results, replicates, strict=True):
        _attach_ci(corr, samples, n_boot, alpha)
    return results


def bootstrap_prompts(
    benchmark: Sequence[float],
    downstream_per_prompt: np.ndarray,
    methods: Sequence[str] = ("spearman", "kendall", "pearson", "ndcg"),
    n_boot: int = 1000,
    seed: int = 0,
    ndcg_variants: Sequence[Any] = DEFAULT_NDCG_VARIANTS,
    alpha: float = 0.05,
) -> list[Corr]:
    """Correlations with CIs that reflect prompt sampling noise in the downstream scores.

    ``downstream_per_prompt`` is an ``[M, P]`` matrix: RM i's downstream score on prompt p. The
    point estimate correlates ``benchmark`` with the per-RM mean over prompts; each bootstrap
    replicate resamples the P prompts with replacement, using the same prompts for every RM (the
    RMs were evaluated on shared prompts, so the resampling is paired), and recomputes the means.

    Raises:
        ConfigError: unknown method/variant, bad ``n_boot`` or ``alpha``.
        DataError: shape mismatch, no prompts, or NaN (names the RM and prompt index).
    """
    _check_boot(n_boot, alpha)
    bench = _vector(benchmark, "benchmark")
    matrix = np.asarray(downstream_per_prompt, dtype=np.float64)
    if matrix.ndim != 2:
        raise DataError(f"downstream_per_prompt must be an [RMs, prompts] matrix, got shape {matrix.shape}")
    if matrix.shape[0] != bench.size:
        raise DataError(f"benchmark has {bench.size} RMs but downstream_per_prompt has {matrix.shape[0]} rows")
    if matrix.shape[1] == 0:
        raise DataError("downstream_per_prompt has no prompts")
    bad = np.argwhere(~np.isfinite(matrix))
    if bad.size:
        raise DataError(f"downstream_per_prompt: non-finite score for RM {int(bad[0][0])}, prompt {int(bad[0][1])}")

    statistics = _statistics(methods, _normalise_variants(ndcg_variants))
    results = [full(bench, matrix.mean(axis=1)) for full, _ in statistics]
    if n_boot == 0:
        return results
    rng = np.random.default_rng(seed)
    n_prompts = matrix.shape[1]
    replicates: list[list[float]] = [[] for _ in statistics]
    for _ in range(n_boot):
        idx = rng.integers(0, n_prompts, size=n_prompts)
        down = matrix[:, idx].mean(axis=1)
        for j, (_, value_of) in enumerate(statistics):
            value = value_of(bench, down)
            if value is not None:
                replicates[j].append(value)
    for corr, samples in zip(results, replicates, strict=True):
        _attach_ci(corr, samples, n_boot, alpha)
    return results


@dataclass
class GainDifferences:
    """Pairwise differences of per-RM mean gains on shared prompts, with paired bootstrap CIs.

    ``diff[i, j]`` = mean gain of RM i - mean gain of RM j; ``ci_low``/``ci_high`` its percentile
    CI when the prompts are resampled (the same prompts for every RM: the RMs chose from one pool).
    """

    means: np.ndarray  # [M]
    diff: np.ndarray  # [M, M]
    ci_low: np.ndarray  # [M, M]
    ci_high: np.ndarray  # [M, M]
    #: Friedman test over prompts (blocks) and RMs (treatments): do the RMs' per-prompt gains
    #: differ at all? One omnibus p-value, free of the pick-the-extremes bias of best - worst and of
    #: the multiple comparisons in the pair count. None below 3 RMs or when every gain ties.
    friedman_statistic: float | None = None
    friedman_pvalue: float | None = None

    def separated(self) -> np.ndarray:
        """``[M, M]`` bool: the pair's CI excludes 0 (symmetric, False on the diagonal)."""
        return (self.ci_low > 0) | (self.ci_high < 0)

    def n_separated_pairs(self) -> int:
        """Unordered RM pairs whose gains differ beyond the CI."""
        return int(np.triu(self.separated(), k=1).sum())


def gain_differences(
    per_prompt: np.ndarray, n_boot: int = 1000, seed: int = 0, alpha: float = 0.05
) -> GainDifferences:
    """Do the RMs' downstream gains differ beyond prompt noise? (see :class:`GainDifferences`).

    Why paired: every RM selected from the same pool for the same prompts, so much of the prompt
    noise is shared; comparing two separate per-RM CIs would overstate the uncertainty of their
    difference. Each replicate draws P prompt indices with replacement (``rng.integers``, one row
    of a ``[n_boot, P]`` draw) and takes every RM's mean over them.

    Raises:
        ConfigError: bad ``n_boot`` (must be >= 1 here) or ``alpha``.
        DataError: not an ``[RMs, prompts]`` matrix, fewer than 2 RMs, no prompts, or NaN.
    """
    _check_boot(n_boot, alpha)
    if n_boot < 1:
        raise ConfigError("gain_differences needs n_boot >= 1")
    matrix = np.asarray(per_prompt, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[0] < 2 or matrix.shape[1] == 0:
        raise DataError(f"per_prompt must be an [RMs >= 2, prompts >= 1] matrix, got shape {matrix.shape}")
    bad = np.argwhere(~np.isfinite(matrix))
    if bad.size:
        raise DataError(f"per_prompt: non-finite gain for RM {int(bad[0][0])}, prompt {int(bad[0][1])}")
    means = matrix.mean(axis=1)
    idx = np.random.default_rng(seed).integers(0, matrix.shape[1], size=(n_boot, matrix.shape[1]))
    boot = matrix[:, idx].mean(axis=2)  # [M, n_boot]
    pairs = boot[:, None, :] - boot[None, :, :]  # [M, M, n_boot]
    lo, hi = np.quantile(pairs, [alpha / 2.0, 1.0 - alpha / 2.0], axis=2)
    chi2 = p = None
    # Where every prompt's gains tie across RMs, Friedman's tie correction is 0 (no test).
    if matrix.shape[0] >= 3 and matrix.shape[1] >= 2 and np.ptp(matrix, axis=0).any():
        result = stats.friedmanchisquare(*matrix)
        if np.isfinite(result.statistic) and np.isfinite(result.pvalue):
            chi2, p = float(result.statistic), float(result.pvalue)
    return GainDifferences(
        means=means, diff=means[:, None] - means[None, :], ci_low=lo, ci_high=hi, friedman_statistic=chi2, friedman_pvalue=p
    )
