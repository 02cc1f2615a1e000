"""Temperature, top-k and top-p in one logits warper: the same kept tokens as transformers'
``TemperatureLogitsWarper``, ``TopKLogitsWarper`` and ``TopPLogitsWarper`` in that order, without
sorting the whole vocabulary at every step.

transformers' top-p sorts every row of the vocabulary, most of it already cut to ``-inf`` by top-k;
with a tiny policy that sort and the top-k before it cost about as much as the model's forward pass
(the sandbox's 2,048-token vocabulary, 128 rows a step; ``perf/sampling_warper.py`` times both). Here the cumulative probabilities come from a row holding the same
values at the same places as transformers' sorted row (``-inf`` first, then the k kept logits
ascending), so its softmax and cumulative sum are the same floats, and the same tokens are cut.
Where that equivalence rests on an order the sort leaves open (ties at the k-th logit, or across
the top-p cut) the step falls back to transformers' warpers.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import LogitsProcessor
from transformers.generation.logits_process import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper


class TopKTopPWarper(LogitsProcessor):
    """``scores / temperature``, then top-k, then top-p (``min_tokens_to_keep=1``), as ``generate`` applies them."""

    def __init__(self, temperature: float, top_k: int, top_p: float) -> None:
        if not (temperature > 0 and top_k > 0 and 0 < top_p < 1):
            raise ValueError(f"needs temperature > 0, top_k > 0 and 0 < top_p < 1, got {temperature}, {top_k}, {top_p}")
        self.temperature, self.top_k, self.top_p = temperature, top_k, top_p
        self._reference = [TopKLogitsWarper(top_k), TopPLogitsWarper(top_p)]
        self._scale = TemperatureLogitsWarper(temperature) if temperature != 1.0 else None

    def reference(self, input_ids: Any, scores: torch.Tensor) -> torch.Tensor:
        """transformers' own warpers, one after the other."""
        if self._scale is not None:
            scores = self._scale(input_ids, scores)
        for warper in self._reference:
            scores = warper(input_ids, scores)
        return scores

    def __call__(self, input_ids: Any, scores: torch.Tensor) -> torch.Tensor:
        if self._scale is not None:
            scores = self._scale(input_ids, scores)
        k = min(self.top_k, scores.shape[-1])
        values, indices = torch.topk(scores, k)  # descending
        # transformers keeps every token tied with the k-th logit; then a row keeps more than k.
        if ((scores >= values[..., -1:]).sum(-1) != k).any():
            return self._fallback(input_ids, scores)
        ascending = values.flip(-1)
        row = torch.full_like(scores, float("-inf"))
        row[..., -k:] = ascending
        remove = row.softmax(-1).cumsum(-1)[..., -k:] <= (1 - self.top_p)
        remove[..., -1] = False
        # Which of two tied logits straddling the cut goes is the sort's choice, not the values'.
        cut = remove.sum(-1)
        rows = (cut > 0).nonzero().squeeze(-1)
        if len(rows) and (ascending[rows, cut[rows] - 1] == ascending[rows, cut[rows]]).any():
            return self._fallback(input_ids, scores)
        drop = torch.ones_like(scores, dtype=torch.bool).scatter_(-1, indices.flip(-1), remove)
        return scores.masked_fill(drop, float("-inf"))

    def _fallback(self, input_ids: Any, scores: torch.Tensor) -> torch.Tensor:
        # ``scores`` are already divided by the temperature.
        for warper in self._reference:
            scores = warper(input_ids, scores)
        return scores
