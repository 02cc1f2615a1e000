"""Bootstrap CIs for the agreement statistics, and whether RMs' gains differ beyond prompt noise.

:func:`correlate` resamples RMs, :func:`bootstrap_prompts` resamples prompts (paired across RMs),
:func:`gain_differences` compares the RMs' mean gains on shared prompts, and :func:`bootstrap_ci` is
the CI of one mean over prompts (a Best-of-N or PPO gain). The statistics
themselves come from :mod:`rlexp.analysis.correlation` and :mod:`rlexp.analysis.ndcg`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from rlexp.analysis.correlation import CORRELATION_METHODS, Corr, coefficients, scipy_corr
from rlexp.analysis.ndcg import DEFAULT_NDCG_VARIANTS, ndcg_statistic, ndcg_values, normalise_variants
from rlexp.analysis.score_vectors import score_pair, score_vector
from rlexp.errors import ConfigError, DataError

#: A statistic twice over: the full result (value, p, null), and the value alone of each of a
#: ``[B, n]`` stack of replicates (NaN where undefined).
Statistic = tuple[Callable[[np.ndarray, np.ndarray], Corr], Callable[[np.ndarray, np.ndarray], np.ndarray]]


def _statistics(methods: Sequence[str], variants: list[tuple[str, str, int | None]]) -> list[Statistic]:
    """(fn(x, y) -> Corr, fn(xs, ys) -> replicate values) per requested statistic, in order."""
    out: list[Statistic] = []
    for method in methods:
        if method in CORRELATION_METHODS:
            out.append((lambda x, y, _m=method: scipy_corr(_m, x, y), lambda xs, ys, _m=method: coefficients(_m, xs, ys)))
        elif method == "ndcg":
            for rel, g, k in variants:
                out.append((ndcg_statistic(rel, g, k), ndcg_values(rel, g, k)))
        else:
            raise ConfigError(f"unknown correlation method {method!r} (expected spearman, kendall, pearson or ndcg)")
    return out


def _check_boot(n_boot: int, alpha: float) -> None:
    """Raise ConfigError for a negative/non-integer ``n_boot`` or an ``alpha`` outside (0, 1)."""
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 0:
        raise ConfigError(f"n_boot must be a non-negative integer, got {n_boot!r}")
    if not 0.0 < alpha < 1.0:
        raise ConfigError(f"alpha must be in (0, 1), got {alpha!r}")


def _attach_ci(corr: Corr, samples: np.ndarray, n_boot: int, alpha: float) -> None:
    """Percentile CI from the defined bootstrap replicates; say how many were undefined."""
    if n_boot == 0:
        return
    undefined = n_boot - samples.size
    if samples.size:
        lo, hi = np.quantile(samples, [alpha / 2.0, 1.0 - alpha / 2.0])
        corr.ci_low, corr.ci_high = float(lo), float(hi)
    if undefined:
        extra = f"{undefined}/{n_boot} bootstrap replicates undefined"
        corr.note = f"{corr.note}; {extra}" if corr.note else extra


def bootstrap_ci(
    per_prompt_values: np.ndarray,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean over prompts (resampling prompts with replacement).

    Raises:
        DataError: empty, non 1-D or non-finite values. ConfigError: ``n_boot < 1`` or ``alpha``
        outside (0, 1).
    """
    values = np.asarray(per_prompt_values, dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise DataError(f"bootstrap_ci: expected a non-empty 1-D array, got shape {values.shape}")
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise DataError(f"bootstrap_ci: non-finite value at prompt {int(bad[0])}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise ConfigError(f"bootstrap_ci: n_boot must be a positive integer, got {n_boot!r}")
    if not 0.0 < alpha < 1.0:
        raise ConfigError(f"bootstrap_ci: alpha must be in (0, 1), got {alpha!r}")
    rng = np.random.default_rng(seed)
    size = values.size
    # Draw in chunks so n_boot x P indices never need more than ~32 MB at once.
    chunk = max(1, (1 << 22) // size)
    means = np.empty(n_boot, dtype=np.float64)
    for start in range(0, n_boot, chunk):
        stop = min(n_boot, start + chunk)
        idx = rng.integers(0, size, size=(stop - start, size))
        means[start:stop] = values[idx].mean(axis=1)
    lo, hi = np.quantile(means, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(lo), float(hi)


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
    x, y = score_pair(benchmark, downstream)
    statistics = _statistics(methods, normalise_variants(ndcg_variants))
    results = [full(x, y) for full, _ in statistics]
    if n_boot == 0 or x.size == 0:
        return results
    rng = np.random.default_rng(seed)

    def resample_rms() -> tuple[np.ndarray, np.ndarray]:
        idx = rng.integers(0, x.size, size=x.size)
        return x[idx], y[idx]

    return _with_cis(results, statistics, resample_rms, n_boot, alpha)


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
    bench = score_vector(benchmark, "benchmark")
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

    statistics = _statistics(methods, normalise_variants(ndcg_variants))
    results = [full(bench, matrix.mean(axis=1)) for full, _ in statistics]
    if n_boot == 0:
        return results
    rng = np.random.default_rng(seed)
    n_prompts = matrix.shape[1]

    def resample_prompts() -> tuple[np.ndarray, np.ndarray]:
        idx = rng.integers(0, n_prompts, size=n_prompts)
        return bench, matrix[:, idx].mean(axis=1)

    return _with_cis(results, statistics, resample_prompts, n_boot, alpha)


def _with_cis(results: list[Corr], statistics: Sequence[Any], resample: Callable[[], tuple[np.ndarray, np.ndarray]],
              n_boot: int, alpha: float) -> list[Corr]:
    """``results`` with percentile CIs from ``n_boot`` replicates of ``resample()``; a replicate
    where a statistic is undefined is dropped (and counted) for that statistic only."""
    # Drawn one by one, as the seeded resamples always were; evaluated as one stack per statistic.
    draws = [resample() for _ in range(n_boot)]
    xs, ys = np.stack([x for x, _ in draws]), np.stack([y for _, y in draws])
    for corr, (_, values_of) in zip(results, statistics, strict=True):
        values = values_of(xs, ys)
        _attach_ci(corr, values[~np.isnan(values)], n_boot, alpha)
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


def prompt_draws(n_prompts: int, n_boot: int, seed: int) -> np.ndarray:
    """``[n_boot, n_prompts]`` prompt indices drawn with replacement: one paired resample per row,
    applied to every RM's (or group's) per-prompt gains alike so their differences keep the shared
    prompt noise out."""
    return np.random.default_rng(seed).integers(0, n_prompts, size=(n_boot, n_prompts))


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
    idx = prompt_draws(matrix.shape[1], n_boot, seed)
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
