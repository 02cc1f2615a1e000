"""NDCG of a benchmark's RM ranking against the downstream one (PRB reference §8), its chance
level under a random order of the RMs, and the NDCG variants a study reports.

The PRB reference leaves the relevance transform and the gain open, so every variant is named
``ndcg[<relevance>,<gain>]`` (``@<k>`` with a cutoff) and reported side by side. One of them,
:data:`PRB_VARIANT` (``ndcg[prb,exp2]``: relevance M + 1 - downstream rank, gain 2^rel - 1, no cutoff),
is rlexp's reconstruction of the paper's: it gives all four NDCG values Personalized RewardBench
publishes from their 6-RM rankings (docs/tasks.md, "PRB's NDCG, reconstructed"); the paper itself does
not state its definition.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from rlexp.analysis.correlation import Corr
from rlexp.analysis.score_vectors import permutations, score_pair, score_vector
from rlexp.errors import ConfigError, DataError

RELEVANCES: tuple[str, ...] = ("rank", "minmax", "raw", "prb")
GAINS: tuple[str, ...] = ("linear", "exp2")
#: Every NDCG variant: the PRB reference leaves relevance and gain open, so report them all.
DEFAULT_NDCG_VARIANTS: tuple[tuple[str, str], ...] = tuple((r, g) for r in RELEVANCES for g in GAINS)
#: The variant that reproduces Personalized RewardBench's published NDCGs (0.9180, 0.9265, 0.6586, 0.7016).
PRB_VARIANT: tuple[str, str, int | None] = ("prb", "exp2", None)
#: Largest M whose NDCG null is enumerated (M! orders); above it NDCG_NULL_DRAWS random orders.
MAX_EXACT_NDCG = 8
NDCG_NULL_DRAWS = 10_000


def _relevance(downstream: np.ndarray, relevance: str) -> np.ndarray | None:
    """Each RM's relevance under one transform; None where the transform is undefined. The rank
    transform also takes a ``[B, M]`` stack of bootstrap replicates, ranking each row."""
    if relevance in ("rank", "prb"):
        # rank 1 = best; tied downstream scores share their average rank. "prb" starts at 1 (the worst
        # RM keeps a gain under 2^rel - 1), "rank" at 0.
        down_rank = stats.rankdata(-downstream, method="average", axis=-1)
        return downstream.shape[-1] - down_rank + (1.0 if relevance == "prb" else 0.0)
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
      average rank); ``"prb"`` -> ``M + 1 - r_down`` (with ``exp2``: PRB's published values);
      ``"minmax"`` -> downstream rescaled to [0, 1]; ``"raw"`` -> the downstream score itself (must be >= 0).
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
    bench, down = score_pair(benchmark, downstream)
    n_items = bench.size
    if n_items == 0:
        raise DataError("ndcg: no items")
    if k is None:
        cutoff = n_items
    else:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ConfigError(f"ndcg: k must be a positive integer, got {k!r}")
        cutoff = min(int(k), n_items)

    gains = _ndcg_gains(down, relevance, gain)
    if gains is None:
        return None
    if not np.all(np.isfinite(gains)):
        # 2**rel overflows past rel ~ 1024 (rank relevance with > 1024 RMs, or large raw scores).
        raise DataError("ndcg: exp2 gain overflows; use gain='linear' or a bounded relevance")
    return _dcg_ratio(bench, gains, _discounts(n_items, cutoff))


def _discounts(n_items: int, cutoff: int) -> np.ndarray:
    """1 / log2(i + 1) for positions i = 1..n_items, 0 past the cutoff."""
    discounts = 1.0 / np.log2(np.arange(2, n_items + 2))
    discounts[cutoff:] = 0.0
    return discounts


def _dcg_ratio(bench: np.ndarray, gains: np.ndarray, discounts: np.ndarray) -> float | None:
    """DCG of the benchmark's order over the ideal DCG (None when that is 0); see :func:`ndcg`."""
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
    """g(rel) per RM, or None; unlike :func:`ndcg` an exp2 overflow is left to the caller."""
    rel = _relevance(downstream, relevance)
    return None if rel is None else _gain(rel, gain)


def _gain(rel: np.ndarray, gain: str) -> np.ndarray:
    """g(rel): the relevance itself, or 2**rel - 1 (inf where it overflows)."""
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
        """The ``q`` quantile of the null draws (the figures shade the 5-95% range)."""
        return float(np.quantile(self.draws, q))

    def normalise(self, observed: float) -> float | None:
        """(observed - mean) / (1 - mean): 0 at chance, 1 for the ideal order; None when the null is already 1."""
        return None if self.mean >= 1.0 - 1e-12 else (observed - self.mean) / (1.0 - self.mean)


@functools.lru_cache(maxsize=512)
def _ndcg_null_cached(gains: tuple[float, ...], cutoff: int, seed: int) -> NDCGNull:
    # Cached by gains: the same downstream column is read against every benchmark column.
    g = np.asarray(gains)
    m = g.size
    discounts = _discounts(m, cutoff)
    ideal = float(np.sort(g)[::-1] @ discounts)
    mean = float(g.mean() * discounts.sum()) / ideal
    if m <= MAX_EXACT_NDCG:
        orders, exact = permutations(m), True
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
    down = score_vector(downstream, "downstream")
    if down.size == 0:
        raise DataError("ndcg_null: no items")
    gains = _ndcg_gains(down, relevance, gain)
    if gains is None or not np.all(np.isfinite(gains)) or float(np.sort(gains)[::-1][0]) <= 0.0:
        return None
    cutoff = down.size if k is None else min(int(k), down.size)
    return _ndcg_null_cached(tuple(float(v) for v in gains), cutoff, int(seed))


# --------------------------------------------------------------------------------------------
# the variants a study reports, as agreement statistics
# --------------------------------------------------------------------------------------------


def ndcg_variants(relevance: Sequence[str] = ("rank", "minmax", "raw"), gain: Sequence[str] = ("linear",),
                  cutoff: int | None = None) -> list[tuple[str, str, int | None]]:
    """Every relevance x gain combination at ``cutoff`` (None = all RMs), in config order.

    Raises:
        ConfigError: ``cutoff`` is not a positive integer, or ``relevance``/``gain`` is empty.
    """
    if cutoff is not None and (isinstance(cutoff, bool) or not isinstance(cutoff, (int, np.integer)) or cutoff < 1):
        raise ConfigError(f"ndcg.cutoff must be a positive integer or null, got {cutoff!r}")
    if not relevance or not gain:
        raise ConfigError("ndcg.relevance and ndcg.gain must each name at least one option")
    return [(str(r), str(g), None if cutoff is None else int(cutoff)) for r in relevance for g in gain]


def normalise_variants(variants: Sequence[Any]) -> list[tuple[str, str, int | None]]:
    """``(relevance, gain, k)`` per variant, from tuples of 2 or 3 or from dicts with those keys.

    Raises:
        ConfigError: a malformed variant, or an unknown relevance or gain.
    """
    out = []
    for variant in variants:
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


def ndcg_name(rel: str, g: str, k: int | None) -> str:
    """The statistic's name in the correlation table: ``ndcg[rank,linear]`` or ``ndcg[rank,linear]@3``."""
    return f"ndcg[{rel},{g}]" + (f"@{k}" if k is not None else "")


def ndcg_statistic(rel: str, g: str, k: int | None) -> Callable[[np.ndarray, np.ndarray], Corr]:
    """NDCG of one variant as a :class:`Corr` with its chance level (null mean, p, normalised)."""
    name = ndcg_name(rel, g, k)

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


def ndcg_values(rel: str, g: str, k: int | None) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """NDCG of every row pair of two ``[B, M]`` arrays, equal to :func:`ndcg` (tested), NaN where it
    is undefined or raises: for bootstrap replicates, which need no null (it would be recomputed
    per replicate) and whose rows are already checked. Rank relevance ranks every row in one call."""

    def values(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        out = np.full(xs.shape[0], np.nan)
        n_items = xs.shape[1]
        if n_items == 0:
            return out
        discounts = _discounts(n_items, n_items if k is None else min(int(k), n_items))
        ranked = _relevance(ys, rel) if rel in ("rank", "prb") else None
        for i in range(xs.shape[0]):
            try:
                relevance = ranked[i] if ranked is not None else _relevance(ys[i], rel)
            except DataError:
                continue  # negative raw relevance: no value, as ndcg() raising
            if relevance is None:
                continue
            gains = _gain(relevance, g)
            if np.all(np.isfinite(gains)):
                value = _dcg_ratio(xs[i], gains, discounts)
                out[i] = np.nan if value is None else value
        return out

    return values
