"""Input checks and permutation tables shared by the rank correlations and NDCG.

Items are reward models: ``benchmark[i]`` is RM i's benchmark score, ``downstream[i]`` its
downstream score. Both statistics modules validate their inputs here, so a bad score fails with
the same message whichever statistic sees it first.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from rlexp.errors import DataError


def score_vector(values: Any, name: str) -> np.ndarray:
    """``values`` as a 1-D float64 array of finite scores.

    Raises:
        DataError: not 1-D, or a NaN/inf score (the message names the item).
    """
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise DataError(f"{name} must be a 1-D sequence of scores, got shape {arr.shape}")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise DataError(f"{name}: non-finite score at item {int(bad[0])}")
    return arr


def score_pair(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    """Benchmark and downstream scores of the same RMs, checked by :func:`score_vector`.

    Raises:
        DataError: a bad vector, or the two have different lengths.
    """
    xa, ya = score_vector(x, "benchmark"), score_vector(y, "downstream")
    if xa.size != ya.size:
        raise DataError(f"benchmark has {xa.size} items but downstream has {ya.size}")
    return xa, ya


@functools.lru_cache(maxsize=16)
def permutations(n: int) -> np.ndarray:
    """Every permutation of ``range(n)`` as an ``[n!, n]`` int8 array (n <= 10: 36 MB at most).

    Built by inserting the largest element at every position of the permutations of ``n - 1``,
    which is far faster and leaner than materialising ``itertools.permutations`` tuples. Cached and
    read-only: the exact Spearman and NDCG nulls share it.
    """
    perms = np.zeros((1, 0), dtype=np.int8)
    for k in range(n):
        perms = np.concatenate([np.insert(perms, i, k, axis=1) for i in range(k + 1)])
    perms.setflags(write=False)
    return perms
