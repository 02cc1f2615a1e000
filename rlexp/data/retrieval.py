"""Profile retrieval: rank a user's past posts by relevance to the current question.

The reference protocol uses Contriever (a dense encoder from the hub); rlexp's default is a small
self-contained Okapi BM25 so the whole pipeline runs offline and deterministically. ``dense``
(Contriever-style mean pooling + dot product) runs with a local encoder folder. Ranking
returns the post *records* reordered, never re-pairs ids with texts (reference §10.1).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

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


class DenseEncoder:
    """Contriever-style text encoder: masked mean pooling of a local model's last hidden states.

    Loaded from a local folder only (``local_files_only``: a retriever never downloads). The
    relevance of a post is the dot product of its embedding with the question's, as in the
    reference ranking scripts (downstream-real.md (b)); unlike them, encoding runs under
    ``torch.inference_mode()``.
    """

    def __init__(self, model_dir: str | os.PathLike[str], *, batch_size: int = 32, device: str | None = None) -> None:
        import torch  # heavy: only dense retrieval pays for it
        from transformers import AutoModel, AutoTokenizer

        path = Path(model_dir).expanduser()
        if not path.is_dir():
            raise ConfigError(f"dense retriever model {str(model_dir)!r} is not a local folder (no hub ids: give a "
                              "downloaded encoder folder, e.g. facebook/contriever-msmarco)")
        self.path = str(path.resolve())
        self.batch_size = batch_size
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(self.path, local_files_only=True)
            self.model = AutoModel.from_pretrained(self.path, local_files_only=True).to(self.device).eval()
        except (OSError, ValueError) as exc:
            raise ConfigError(f"dense retriever model {self.path}: cannot load: {' '.join(str(exc).split())[:200]}") from exc

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Mean-pooled embeddings (float32, one row per text); padding positions are left out."""
        import torch

        out = []
        with torch.inference_mode():
            for start in range(0, len(texts), self.batch_size):
                batch = self.tokenizer(list(texts[start : start + self.batch_size]), padding=True, truncation=True,
                                       return_tensors="pt").to(self.device)
                hidden = self.model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
                out.append(pooled.float().cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, 0), dtype=np.float32)

    def scores(self, query: str, documents: Sequence[str]) -> np.ndarray:
        """Dot product of each document's embedding with the query's (float64, one entry per document)."""
        if not documents:
            return np.zeros(0, dtype=np.float64)
        query_vec = self.embed([query])[0]
        return (self.embed(documents) @ query_vec).astype(np.float64)


@lru_cache(maxsize=4)
def dense_encoder(model_dir: str) -> DenseEncoder:
    """The encoder of a local folder, loaded once per process."""
    return DenseEncoder(model_dir)


def retriever(method: str, model: str | os.PathLike[str] | None = None) -> DenseEncoder | None:
    """Check a retrieval setting before any data is read: the dense encoder, or None for BM25.

    An unknown method, or ``dense`` without a local encoder folder, is a one-line :class:`ConfigError`.
    """
    if method not in RETRIEVAL_METHODS:
        raise ConfigError(f"unknown retrieval method {method!r}; valid: {', '.join(RETRIEVAL_METHODS)}")
    if method == "bm25":
        return None
    if not model:
        raise ConfigError(
            "retrieval method 'dense' needs a local encoder path (e.g. a facebook/contriever-msmarco "
            "folder: prompts.retriever_model=/path/to/contriever-msmarco), which rlexp does not ship; or use 'bm25'"
        )
    return dense_encoder(str(Path(model).expanduser().resolve()))


def rank_posts(
    question: str,
    posts: Sequence[ProfilePost],
    *,
    method: str = "bm25",
    encoder: DenseEncoder | None = None,
    k1: float = BM25_K1,
    b: float = BM25_B,
) -> list[ProfilePost]:
    """The posts, most relevant to ``question`` first; ties keep their original order.

    Each post is scored on its text. ``method="dense"`` needs ``encoder`` (see :func:`retriever`);
    without one it raises :class:`ConfigError`.
    """
    if method != "bm25" and (method not in RETRIEVAL_METHODS or encoder is None):
        retriever(method)  # raises: an unknown method, or dense without an encoder
    posts = list(posts)
    if len(posts) < 2:
        return posts
    texts = [p.text for p in posts]
    scores = encoder.scores(question, texts) if method == "dense" else bm25_scores(question, texts, k1=k1, b=b)
    # A stable sort on the negated scores keeps equal-score posts in their given order.
    order = np.argsort(-scores, kind="stable")
    return [posts[i] for i in order]


__all__ = [
    "BM25_B",
    "BM25_K1",
    "RETRIEVAL_METHODS",
    "DenseEncoder",
    "bm25_scores",
    "dense_encoder",
    "rank_posts",
    "retriever",
    "tokenize",
]
