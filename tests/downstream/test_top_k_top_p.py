"""The fused temperature/top-k/top-p warper keeps exactly the tokens transformers' three warpers keep;
the kept-token draw draws from their distribution."""

from __future__ import annotations

import pytest
import torch

from rlexp.downstream.top_k_top_p import KeptTokenDraw, TopKTopPWarper


class _Counting(TopKTopPWarper):
    """Counts the steps that fall back to transformers' warpers."""

    fallbacks = 0

    def _kept(self, scores):  # type: ignore[no-untyped-def]
        kept = super()._kept(scores)
        self.fallbacks += kept is None
        return kept


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
    for args in ((0.0, 50, 0.9), (1.0, 0, 0.9), (1.0, 50, 1.5)):
        with pytest.raises(ValueError, match="needs temperature > 0"):
            TopKTopPWarper(*args)


@pytest.mark.parametrize("rounded", [False, True])
def test_kept_token_draw_follows_the_warped_distribution(rounded: bool) -> None:
    # One row of logits repeated: the frequencies of 40,000 draws against the probabilities of the tokens
    # transformers' warpers keep (rounded logits tie and take the fallback path).
    gen = torch.Generator().manual_seed(1)
    logits = torch.randn(1, 300, generator=gen) * 2
    if rounded:
        logits = logits.round()
    draw = KeptTokenDraw(0.8, 20, 0.9)
    ids = torch.zeros(40_000, 3, dtype=torch.long)
    expected = draw.reference(ids[:1], logits).softmax(-1)[0]
    torch.manual_seed(0)
    out = draw(ids, logits.expand(40_000, -1).clone())
    assert (torch.isfinite(out).sum(-1) == 1).all() and (out.max(-1).values == 0).all()
    counts = torch.bincount(out.argmax(-1), minlength=300).double() / 40_000
    assert set(counts.nonzero().flatten().tolist()) <= set(expected.nonzero().flatten().tolist())
    assert 3 <= int((expected > 0).sum()) <= (300 if rounded else 20)  # ties at the k-th logit are all kept
    # A binomial frequency of 40,000 draws has SD <= 0.0025: 0.012 is ~5 SD.
    assert (counts - expected).abs().max() < 0.012
    torch.manual_seed(0)
    assert torch.equal(draw(ids, logits.expand(40_000, -1).clone()), out)  # seeded by torch's generator
