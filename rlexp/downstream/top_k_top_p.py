"""Temperature, top-k and top-p in one logits warper: the same kept tokens as transformers'
``TemperatureLogitsWarper``, ``TopKLogitsWarper`` and ``TopPLogitsWarper`` in that order, without
sorting the whole vocabulary at every step; and, opt-in, a draw among those kept tokens only.

transformers' top-p sorts every row of the vocabulary, most of it already cut to ``-inf`` by top-k;
with a tiny policy that sort and the top-k before it cost about as much as the model's forward pass
(the sandbox's 2,048-token vocabulary, 128 rows a step; ``perf/sampling_warper.py`` times both). Here
the cumulative probabilities come from a row holding the same values at the same places as
transformers' sorted row (``-inf`` first, then the k kept logits ascending), so its softmax and
cumulative sum are the same floats, and the same tokens are cut. Where that equivalence rests on an
order the sort leaves open (ties at the k-th logit, or across the top-p cut) the step falls back to
transformers' warpers.

``generate``'s own draw, ``torch.multinomial``, then draws an exponential variate for every token of
the vocabulary (a Gumbel-max draw), about as costly again. :class:`KeptTokenDraw` draws among the k
candidates instead: the same distribution, other random numbers, so other samples.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import LogitsProcessor
from transformers.generation.logits_process import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper


class TopKTopPWarper(LogitsProcessor):
    """``scores / temperature``, then top-k, then top-p (``min_tokens_to_keep=1``), as ``generate`` applies them."""

    def __init__(self, temperature: float, top_k: int, top_p: float) -> None:
        if not (temperature > 0 and top_k > 0 and 0 < top_p <= 1):
            raise ValueError(f"needs temperature > 0, top_k > 0 and 0 < top_p <= 1, got {temperature}, {top_k}, {top_p}")
        self.top_k, self.top_p = top_k, top_p
        self._cuts = [TopKLogitsWarper(top_k), TopPLogitsWarper(top_p)]
        self._scale = TemperatureLogitsWarper(temperature) if temperature != 1.0 else None

    def reference(self, input_ids: Any, scores: torch.Tensor) -> torch.Tensor:
        """transformers' own warpers, one after the other."""
        return self._fallback(input_ids, self._scaled(input_ids, scores))

    def __call__(self, input_ids: Any, scores: torch.Tensor) -> torch.Tensor:
        scores = self._scaled(input_ids, scores)
        kept = self._kept(scores)
        if kept is None:
            return self._fallback(input_ids, scores)
        _, indices, removed = kept
        drop = torch.ones_like(scores, dtype=torch.bool).scatter_(-1, indices, removed)
        return scores.masked_fill(drop, float("-inf"))

    def _scaled(self, input_ids: Any, scores: torch.Tensor) -> torch.Tensor:
        return scores if self._scale is None else self._scale(input_ids, scores)

    def _kept(self, scores: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
        """The k largest logits (descending), their token ids, and which of them top-p removes; None
        where transformers' result would depend on how its sort orders equal logits."""
        k = min(self.top_k, scores.shape[-1])
        values, indices = torch.topk(scores, k)
        # transformers keeps every token tied with the k-th logit; then a row keeps more than k.
        if ((scores >= values[..., -1:]).sum(-1) != k).any():
            return None
        ascending = values.flip(-1)
        row = torch.full_like(scores, float("-inf"))
        row[..., -k:] = ascending
        remove = row.softmax(-1).cumsum(-1)[..., -k:] <= (1 - self.top_p)
        remove[..., -1] = False
        # Which of two tied logits straddling the cut goes is the sort's choice, not the values'.
        cut = remove.sum(-1)
        rows = (cut > 0).nonzero().squeeze(-1)
        if len(rows) and (ascending[rows, cut[rows] - 1] == ascending[rows, cut[rows]]).any():
            return None
        return values, indices, remove.flip(-1)

    def _fallback(self, input_ids: Any, scores: torch.Tensor) -> torch.Tensor:
        # ``scores`` are already divided by the temperature.
        for warper in self._cuts:
            scores = warper(input_ids, scores)
        return scores


class KeptTokenDraw(TopKTopPWarper):
    """Draws each row's next token among the tokens :class:`TopKTopPWarper` keeps, with probabilities
    proportional to their softmax (a Gumbel-max draw over k tokens instead of the vocabulary), and
    returns logits in which only that token is finite: ``generate`` must run greedy
    (``do_sample=False``) and then emits it. Random numbers come from torch's global generator."""

    def __call__(self, input_ids: Any, scores: torch.Tensor) -> torch.Tensor:
        scores = self._scaled(input_ids, scores)
        kept = self._kept(scores)
        if kept is None:
            candidates = self._fallback(input_ids, scores)
            indices = None
        else:
            values, indices, removed = kept
            candidates = values.masked_fill(removed, float("-inf"))
        probs = candidates.softmax(-1)
        choice = (probs / torch.empty_like(probs).exponential_()).argmax(-1, keepdim=True)
        token = choice if indices is None else indices.gather(-1, choice)
        return torch.full_like(scores, float("-inf")).scatter_(-1, token, 0.0)
