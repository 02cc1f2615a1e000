"""Profile retrieval: rank a user's past posts by relevance to the current question.

The reference protocol uses Contriever (a dense encoder from the hub); rlexp's default is a small
self-contained Okapi BM25 so the whole pipeline runs offline and deterministically. Ranking
returns the post *records* reordered, never re-pairs ids with texts (reference §10.1).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from rlexp.data.schemas import ProfilePost
from rlexp.errors import ConfigError

RETRIEVAL_METHODS: tuple[str, ...] = ("bm25", "dense")
BM25_K1 = 1.5
BM25_B = 0.75

_WORD = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lower-cased alphanumeric word tokens (no stemming, no stop words)."""
    return _WORD.findall(text.lower())


def bm25_scores(query: str, documents: Sequence[str], *, k1: float = BM25_K1, b: float = BM25_B) -> np.ndarray:
    """Okapi BM25 score of every document for ``query`` (float64 array, one entry per document).

    ``idf = ln(1 + (N - n + 0.5) / (n + 0.5))`` (the non-negative variant, so a term present in
    every document never lowers a score); a query term repeated in the query counts repeatedly.
    """
    n_docs = len(documents)
    if n_docs == 0:
        return np.zeros(0, dtype=np.float64)
    query_counts = Counter(tokenize(query))
    if not query_counts:
        return np.zeros(n_docs, dtype=np.float64)
    terms = list(query_counts)
    doc_tokens = [Counter(tokenize(d)) for d in documents]
    # term frequencies restricted to the query's terms: (documents x query terms)
    tf = np.array([[counts.get(t, 0) for t in terms] for counts in doc_tokens], dtype=np.float64)
    doc_len = np.array([sum(c.values()) for c in doc_tokens], dtype=np.float64)
    avg_len = doc_len.mean()
    if avg_len == 0:  # every document is empty: nothing can match
        return np.zeros(n_docs, dtype=np.float64)
    df = (tf > 0).sum(axis=0)
    idf = np.log1p((n_docs - df + 0.5) / (df + 0.5))
    norm = k1 * (1.0 - b + b * doc_len / avg_len)
    per_term = idf * tf * (k1 + 1.0) / (tf + norm[:, None])
    qtf = np.array([query_counts[t] for t in terms], dtype=np.float64)
    return per_term @ qtf


def rank_posts(
    question: str,
    posts: Sequence[ProfilePost],
    *,
    method: str = "bm25",
    k1: float = BM25_K1,
    b: float = BM25_B,
) -> list[ProfilePost]:
    """The posts, most relevant to ``question`` first; ties keep their original order.

    Each post is scored on its text. ``method="dense"`` (Contriever-style) is not available
    offline and raises :class:`ConfigError`.
    """
    if method == "dense":
        raise ConfigError(
            "retrieval method 'dense' needs a local encoder path (e.g. a facebook/contriever-msmarco "
            "folder), which rlexp does not ship; use method 'bm25'"
        )
    if method != "bm25":
        raise ConfigError(f"unknown retrieval method {method!r}; valid: {', '.join(RETRIEVAL_METHODS)}")
    posts = list(posts)
    if len(posts) < 2:
        return posts
    scores = bm25_scores(question, [p.text for p in posts], k1=k1, b=b)
    # A stable sort on the negated scores keeps equal-score posts in their given order.
    order = np.argsort(-scores, kind="stable")
    return [posts[i] for i in order]


__all__ = ["BM25_B", "BM25_K1", "RETRIEVAL_METHODS", "bm25_scores", "rank_posts", "tokenize"]
