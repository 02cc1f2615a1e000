"""The fused temperature/top-k/top-p warper keeps exactly the tokens transformers' three warpers keep."""

from __future__ import annotations

import pytest
import torch

from rlexp.downstream.top_k_top_p import TopKTopPWarper


class _Counting(TopKTopPWarper):
    fallbacks = 0

    def _fallback(self, input_ids, scores):  # type: ignore[no-untyped-def]
        self.fallbacks += 1
        return super()._fallback(input_ids, scores)


@pytest.mark.parametrize("temperature", [1.0, 0.7])
@pytest.mark.parametrize(("top_k", "top_p"), [(50, 0.9), (5, 0.5), (1, 0.9), (300, 0.95), (1000, 0.9)])
def test_same_tokens_as_transformers_warpers(temperature: float, top_k: int, top_p: float) -> None:
    gen = torch.Generator().manual_seed(top_k)
    ids = torch.zeros(64, 3, dtype=torch.long)
    warper = _Counting(temperature, top_k, top_p)
    for step in range(40):
        scores = torch.randn(64, 300, generator=gen) * (0.5 + step % 6)
        got, expected = warper(ids, scores), warper.reference(ids, scores)
        assert torch.equal(got, expected), step
        kept = torch.isfinite(got).sum(-1)
        assert (kept >= 1).all() and (kept <= min(top_k, 300)).all()
    # Continuous logits never tie: every step took the fast path.
    assert warper.fallbacks == 0


def test_ties_fall_back_to_transformers_and_agree() -> None:
    gen = torch.Generator().manual_seed(0)
    ids = torch.zeros(64, 3, dtype=torch.long)
    warper = _Counting(1.0, 20, 0.6)
    for _ in range(40):
        # Logits on a coarse grid tie often, at the k-th value and across the top-p cut.
        scores = (torch.randn(64, 300, generator=gen) * 2).round()
        assert torch.equal(warper(ids, scores), warper.reference(ids, scores))
    assert warper.fallbacks > 0


def test_rejects_settings_it_does_not_fuse() -> None:
    for args in ((0.0, 50, 0.9), (1.0, 0, 0.9), (1.0, 50, 1.0)):
        with pytest.raises(ValueError, match="needs temperature > 0"):
            TopKTopPWarper(*args)
