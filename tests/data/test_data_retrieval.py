"""BM25 profile ranking."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rlexp.data.retrieval import bm25_scores, rank_posts, tokenize
from rlexp.data.schemas import ProfilePost
from rlexp.errors import ConfigError


def _posts(*texts: str) -> list[ProfilePost]:
    return [ProfilePost("c", f"id{i}", t) for i, t in enumerate(texts)]


def test_tokenize_lowercases_words() -> None:
    assert tokenize("Hello, World! It's 2024.") == ["hello", "world", "it", "s", "2024"]


def test_bm25_matches_the_okapi_formula() -> None:
    docs = ["cat sat", "dog dog ran far", "bird"]
    scores = bm25_scores("dog", docs)
    n, df, k1, b = 3, 1, 1.5, 0.75
    avg = (2 + 4 + 1) / 3
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    expected = idf * 2 * (k1 + 1) / (2 + k1 * (1 - b + b * 4 / avg))
    np.testing.assert_allclose(scores, [0.0, expected, 0.0], rtol=1e-12)


def test_ranking_sanity() -> None:
    posts = _posts("gardening tips", "my bread recipe", "bread bread bread crust", "bread")
    ranked = [p.id for p in rank_posts("how to bake bread", posts)]
    assert ranked[-1] == "id0"  # no overlap -> last
    # same term frequency: the shorter post wins (length normalisation)
    shorter = rank_posts("recipe", _posts("recipe", "recipe with many other words here"))
    assert [p.id for p in shorter] == ["id0", "id1"]


def test_ties_keep_the_original_order_and_records_stay_whole() -> None:
    posts = _posts("alpha", "beta", "alpha", "gamma", "beta")
    ranked = rank_posts("beta", posts)
    assert [p.id for p in ranked] == ["id1", "id4", "id0", "id2", "id3"]
    assert all(p is posts[int(p.id[2:])] for p in ranked)  # the same records, reordered
    assert rank_posts("", posts) == posts
    assert rank_posts("x", []) == []


def test_dense_and_unknown_methods() -> None:
    with pytest.raises(ConfigError, match="needs a local encoder path"):
        rank_posts("q", _posts("a", "b"), method="dense")
    with pytest.raises(ConfigError, match="unknown retrieval method 'tfidf'"):
        rank_posts("q", _posts("a", "b"), method="tfidf")
