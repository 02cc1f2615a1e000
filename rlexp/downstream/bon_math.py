"""Exact Best-of-N (BoN) statistics from a pool of scored samples.

For one prompt with ``n`` samples, each with an RM score and a gold (downstream) score, BoN@k picks
the RM-argmax of a uniformly random k-subset. Instead of simulating subsets we compute the exact
expectation over all ``C(n, k)`` subsets, with ties in the RM score broken uniformly at random.

Derivation. Sort the samples by RM score. Take a group G of ``t`` samples sharing one RM value and
let ``m`` be the number of samples strictly below it. The subset's maximum lies in G exactly when
the subset contains ``j >= 1`` members of G and its other ``k - j`` members come from the ``m``
lower samples. A fixed member ``x`` of G is selected when it is in such a subset and wins the
uniform tie-break among the ``j`` members present (probability ``1/j``)::

    P(x) = sum_j C(t-1, j-1) C(m, k-j) / (j C(n, k))
         = (1/t) sum_{j>=1} C(t, j) C(m, k-j) / C(n, k)          [C(t-1, j-1)/j = C(t, j)/t]
         = (C(m+t, k) - C(m, k)) / (t C(n, k))                   [Vandermonde, minus j = 0]

For ``t = 1`` this is ``C(m, k-1) / C(n, k)``, the chance that a sample with ``m`` samples below it
is the subset's maximum. By the hockey-stick identity, ``sum_{i<t} C(m+i, k-1) = C(m+t, k) -
C(m, k)``: a tie group receives exactly the total probability its sorted positions would get
without ties, shared equally among its members. So the expectation equals the tie-free formula
applied after replacing each tie group's gold scores by their mean, which is what the vectorised
:func:`bon_curve` does. Binomials are exact Python integers (``math.comb``) and only their ratio
is rounded, so ``n`` up to a few thousand is safe.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from rlexp.errors import ConfigError, DataError

# Relative tolerance under which the normalised-gain denominator counts as zero.
_ZERO_TOL = 1e-12


@lru_cache(maxsize=512)
def _rank_weights(n: int, k: int) -> np.ndarray:
    """``w[m] = C(m, k-1) / C(n, k)``: chance that the sample with ``m`` samples below it is the max.

    Computed from exact integers; the read-only array is cached because every prompt with the same
    ``(n, k)`` reuses it.
    """
    denom = math.comb(n, k)
    weights = np.array([math.comb(m, k - 1) / denom for m in range(n)], dtype=np.float64)
    weights.flags.writeable = False
    return weights


@lru_cache(maxsize=4096)
def _tie_group_weight(n: int, k: int, below: int, size: int) -> float:
    """Selection probability of each member of a tie group of ``size`` with ``below`` lower samples."""
    return (math.comb(below + size, k) - math.comb(below, k)) / (size * math.comb(n, k))


def _check_k(k: Any, n: int) -> int:
    try:
        k_int = operator.index(k)
    except TypeError:
        raise ConfigError(f"k must be an integer, got {k!r}") from None
    if isinstance(k, bool):
        raise ConfigError(f"k must be an integer, got {k!r}")
    if k_int < 1:
        raise ConfigError(f"k must be >= 1, got k={k_int}")
    if k_int > n:
        raise ConfigError(f"k={k_int} exceeds pool size n={n}")
    return k_int


def _check_finite(array: np.ndarray, name: str, prompt_ids: Sequence[Any] | None = None) -> None:
    bad = np.argwhere(~np.isfinite(array))
    if bad.size:
        p, j = (int(x) for x in bad[0])
        label = f"prompt {prompt_ids[p]!r}" if prompt_ids is not None else f"prompt {p}"
        kind = "NaN" if np.isnan(array[p, j]) else "infinite value"
        raise DataError(f"{kind} in {name} at {label}, sample {j}")


def _as_pool(rm: Any, gold: Any) -> tuple[np.ndarray, np.ndarray]:
    rm_arr = np.asarray(rm, dtype=np.float64)
    gold_arr = np.asarray(gold, dtype=np.float64)
    if rm_arr.ndim != 1 or gold_arr.ndim != 1:
        raise DataError("bon_expected: rm and gold must be 1-D arrays of one prompt's samples")
    if rm_arr.shape != gold_arr.shape:
        raise DataError(f"bon_expected: rm has {rm_arr.size} samples but gold has {gold_arr.size}")
    if rm_arr.size == 0:
        raise DataError("bon_expected: empty sample pool")
    _check_finite(rm_arr[None, :], "rm")
    _check_finite(gold_arr[None, :], "gold")
    return rm_arr, gold_arr


def selection_probabilities(rm: np.ndarray, k: int) -> np.ndarray:
    """Exact probability that each sample is the one BoN@k selects (uniform k-subset, uniform ties).

    Returned in the samples' original order; the values sum to 1 and members of a tie group get
    equal probabilities (see the module docstring for the formula).

    Raises:
        DataError: non 1-D/empty input or NaN/inf. ConfigError: k < 1 or k > n.
    """
    rm_arr, _ = _as_pool(rm, np.zeros_like(np.asarray(rm, dtype=np.float64)))
    n = rm_arr.size
    k = _check_k(k, n)
    order = np.argsort(rm_arr, kind="stable")
    sorted_rm = rm_arr[order]
    probs_sorted = np.array(_rank_weights(n, k))  # writable copy; right wherever there are no ties
    starts = np.flatnonzero(np.r_[True, sorted_rm[1:] != sorted_rm[:-1]])
    sizes = np.diff(np.r_[starts, n])
    for start, size in zip(starts[sizes > 1], sizes[sizes > 1], strict=True):
        probs_sorted[start : start + size] = _tie_group_weight(n, k, int(start), int(size))
    probs = np.empty(n, dtype=np.float64)
    probs[order] = probs_sorted
    return probs


def bon_expected(rm: np.ndarray, gold: np.ndarray, k: int) -> float:
    """Exact expected gold score of the BoN@k pick for one prompt.

    The expectation is over all ``C(n, k)`` k-subsets of the ``n`` samples (uniformly) and over a
    uniform tie-break among samples sharing the subset's maximum RM score.
    ``bon_expected(gold, gold, k)`` is the oracle (expected best gold in a k-subset) and
    ``bon_expected(rm, rm, k)`` the expected maximum RM score.

    Raises:
        DataError: shape mismatch, empty pool, NaN/inf. ConfigError: k < 1 or k > n.
    """
    rm_arr, gold_arr = _as_pool(rm, gold)
    return float(selection_probabilities(rm_arr, k) @ gold_arr)


def default_ks(n: int) -> list[int]:
    """``1, 2, 4, ...`` up to ``n``, plus ``n`` itself when it is not a power of two."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ConfigError(f"pool size n must be a positive integer, got {n!r}")
    ks = [1]
    while ks[-1] * 2 <= n:
        ks.append(ks[-1] * 2)
    if ks[-1] != n:
        ks.append(int(n))
    return ks


def _tie_averaged(sorted_rm: np.ndarray, sorted_gold: np.ndarray) -> np.ndarray:
    """Replace gold scores within each run of equal RM scores (per row) by the run's mean."""
    n_prompts, n = sorted_rm.shape
    new_group = np.ones((n_prompts, n), dtype=bool)
    new_group[:, 1:] = sorted_rm[:, 1:] != sorted_rm[:, :-1]
    # Every row starts a new group, so group ids never span two prompts.
    ids = np.cumsum(new_group.ravel()) - 1
    sums = np.bincount(ids, weights=sorted_gold.ravel())
    counts = np.bincount(ids)
    return (sums / counts)[ids].reshape(n_prompts, n)


def _as_matrices(rm: Any, gold: Any, prompt_ids: Sequence[Any] | None) -> tuple[np.ndarray, np.ndarray]:
    """``[P, n]`` float64 RM and gold matrices of the same non-empty shape, without NaN/inf."""
    rm_arr = np.asarray(rm, dtype=np.float64)
    gold_arr = np.asarray(gold, dtype=np.float64)
    if rm_arr.ndim != 2:
        raise DataError(f"bon_curve: rm must be a [prompts, samples] matrix, got shape {rm_arr.shape}")
    if rm_arr.shape != gold_arr.shape:
        raise DataError(f"bon_curve: rm has shape {rm_arr.shape} but gold has shape {gold_arr.shape}")
    n_prompts, n = rm_arr.shape
    if n_prompts == 0 or n == 0:
        raise DataError(f"bon_curve: empty score matrix (shape {rm_arr.shape})")
    if prompt_ids is not None and len(prompt_ids) != n_prompts:
        raise DataError(f"bon_curve: {len(prompt_ids)} prompt ids for {n_prompts} prompts")
    _check_finite(rm_arr, "rm", prompt_ids)
    _check_finite(gold_arr, "gold", prompt_ids)
    return rm_arr, gold_arr


def _gains(
    bon: dict[int, float], oracle: dict[int, float], bon_at_1: float
) -> tuple[dict[int, float], dict[int, float | None]]:
    """``gain`` (BoN@k - BoN@1) and ``normalised_gain`` (gain / headroom over BoN@1) for each k of ``bon``."""
    gain: dict[int, float] = {}
    normalised: dict[int, float | None] = {}
    for k in bon:
        # At k = 1 both are the same quantity; pin them so rounding noise cannot create a gain.
        gain[k] = 0.0 if k == 1 else bon[k] - bon_at_1
        headroom = oracle[k] - bon_at_1
        scale = max(1.0, abs(oracle[k]), abs(bon_at_1))
        normalised[k] = None if k == 1 or abs(headroom) <= _ZERO_TOL * scale else gain[k] / headroom
    return gain, normalised


def bon_curve(
    rm: np.ndarray,
    gold: np.ndarray,
    ks: Sequence[int] | None = None,
    prompt_ids: Sequence[Any] | None = None,
    prompt_weights: np.ndarray | None = None,
) -> dict[str, Any]:
    """BoN statistics over prompts for several k, from ``[P, n]`` RM and gold score matrices.

    Means over prompts are plain, or weighted by ``prompt_weights`` (a suite weights each task's
    prompts by 1 / its prompt count, so the curve is the unweighted mean over tasks).

    For each k (default :func:`default_ks`):

    * ``bon``: mean over prompts of the exact BoN@k expectation (:func:`bon_expected`);
    * ``first_k``: the reference protocol, the gold score of the RM argmax over the first k samples
      in sample order, ties to the earliest;
    * ``oracle``: exact expected best gold score of a random k-subset;
    * ``proxy``: exact expected RM score of the selected sample (expected max RM of a k-subset);
    * ``gain`` = BoN@k - BoN@1 and ``normalised_gain`` = (BoN@k - BoN@1) / (oracle@k - BoN@1), None
      when the denominator is 0 (the pool has no headroom).

    BoN@1 is the mean gold score and is computed even when 1 is not in ``ks``.

    Returns:
        ``ks, n, num_prompts, bon_at_1`` and dicts ``bon, first_k, oracle, proxy, gain,
        normalised_gain`` keyed by k, plus ``per_prompt``: ``[P, len(ks)]`` arrays for ``bon,
        first_k, oracle, proxy`` (column order = ``ks``).

    Raises:
        ConfigError: k < 1 or k > n. DataError: bad shapes or NaN/inf (names prompt and sample;
        ``prompt_ids`` maps row positions to ids in that message).
    """
    rm_arr, gold_arr = _as_matrices(rm, gold, prompt_ids)
    n_prompts, n = rm_arr.shape
    k_list = sorted({_check_k(k, n) for k in (default_ks(n) if ks is None else ks)})
    if not k_list:
        raise ConfigError("bon_curve: ks is empty")

    order = np.argsort(rm_arr, axis=1, kind="stable")
    sorted_rm = np.take_along_axis(rm_arr, order, axis=1)
    sorted_gold = _tie_averaged(sorted_rm, np.take_along_axis(gold_arr, order, axis=1))
    # Ties in gold do not matter for the oracle: tied values are equal, so any order gives the same sum.
    gold_ascending = np.sort(gold_arr, axis=1)

    weights = np.stack([_rank_weights(n, k) for k in k_list], axis=1)  # [n, K]
    per_bon = sorted_gold @ weights
    per_oracle = gold_ascending @ weights
    per_proxy = sorted_rm @ weights
    rows = np.arange(n_prompts)
    per_first = np.stack([gold_arr[rows, np.argmax(rm_arr[:, :k], axis=1)] for k in k_list], axis=1)

    w = None if prompt_weights is None else np.asarray(prompt_weights, dtype=np.float64)

    def mean(per: np.ndarray) -> dict[int, float]:
        means = np.average(per, axis=0, weights=w)
        return {k: float(v) for k, v in zip(k_list, means, strict=True)}

    bon_at_1 = float(np.average(gold_arr.mean(axis=1), weights=w))
    bon, oracle = mean(per_bon), mean(per_oracle)
    gain, normalised = _gains(bon, oracle, bon_at_1)
    return {
        "ks": k_list,
        "n": n,
        "num_prompts": n_prompts,
        "bon_at_1": bon_at_1,
        "bon": bon,
        "first_k": mean(per_first),
        "oracle": oracle,
        "proxy": mean(per_proxy),
        "gain": gain,
        "normalised_gain": normalised,
        "per_prompt": {"bon": per_bon, "first_k": per_first, "oracle": per_oracle, "proxy": per_proxy},
    }


def gold_varies(gold: np.ndarray) -> np.ndarray:
    """Per prompt (row): whether its samples differ in gold at all; elsewhere no RM can gain anything."""
    return np.ptp(gold, axis=1) > 0


def rank_agreement(rm: Any, gold: Any) -> dict[str, float | int | None]:
    """How well the RM orders each prompt's samples by gold: mean within-prompt Spearman.

    Best-of-N can only gain where a prompt's samples differ in gold and the RM orders them the same
    way, so this is the RM's benchmark skill as it carries over to the policy's own samples.
    Prompts where either the gold or the RM scores all tie have no defined rank correlation and are
    left out; ``prompts`` counts those that remain, ``gold_varies`` those whose gold differs at all.
    ``mean_spearman`` is None when no prompt remains.
    """
    from scipy import stats

    rm_arr, gold_arr = np.asarray(rm, dtype=np.float64), np.asarray(gold, dtype=np.float64)
    if rm_arr.ndim != 2 or rm_arr.shape != gold_arr.shape:
        raise DataError(f"rank_agreement: rm {rm_arr.shape} and gold {gold_arr.shape} must be the same [prompts, n] shape")
    _check_finite(rm_arr, "rm")
    _check_finite(gold_arr, "gold")
    varies = gold_varies(gold_arr)
    usable = varies & (np.ptp(rm_arr, axis=1) > 0)
    rhos = [float(stats.spearmanr(r, g).statistic) for r, g in zip(rm_arr[usable], gold_arr[usable], strict=True)]
    return {"mean_spearman": float(np.mean(rhos)) if rhos else None, "prompts": len(rhos),
            "gold_varies": int(varies.sum()), "total_prompts": int(rm_arr.shape[0])}
