"""The pool sampler: one prefill per prompt and one warper for temperature, top-k and top-p must not
change a single sample."""

from __future__ import annotations

import pytest
import torch

from rlexp.config.nodes import SamplingConfig
from rlexp.downstream.sampling import HFSampler
from rlexp.errors import ConfigError
from rlexp.models import tiny
from tests._tiny_random import random_chat_model


def _random_chat_model(arch: str, chat_format: str) -> tuple[object, object]:
    return random_chat_model(tiny.TinySpec(
        arch=arch, chat_format=chat_format, vocab_size=300, hidden_size=32, num_layers=2, num_heads=2,
        intermediate_size=64, max_position=512, corpus="a", pretrain_epochs=0, sft_epochs=0, lr=1e-3,
        batch_size=8, max_length=128, seed=0,
    ))


@pytest.mark.parametrize(("arch", "chat_format"), [("llama", "llama"), ("qwen2", "chatml")])
@pytest.mark.parametrize("temperature", [0.0, 1.0, 0.7])
@pytest.mark.parametrize("top_k", [None, 5])
def test_shared_prefill_gives_the_plain_generate_samples(arch: str, chat_format: str, temperature: float,
                                                         top_k: int | None) -> None:
    model, tok = _random_chat_model(arch, chat_format)
    sampler = HFSampler(model, tok)
    # Different lengths, so left padding and per-row positions are exercised.
    prompts = [
        [{"role": "user", "content": "rice"}],
        [{"role": "system", "content": "be brief"}, {"role": "user", "content": "how to cook bread in the garden " * 4}],
        [{"role": "user", "content": "camera paint knitting bike tomato"}],
    ]
    s = SamplingConfig(n=4, temperature=temperature, top_p=0.9, top_k=top_k, max_new_tokens=12)
    got = sampler.generate(prompts, s, seed=3)

    texts = [tok.apply_chat_template(m, add_generation_prompt=True, tokenize=False) for m in prompts]
    enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    torch.manual_seed(3)
    with torch.inference_mode():
        plain = model.generate(
            input_ids=enc["input_ids"].repeat_interleave(s.n, 0), attention_mask=enc["attention_mask"].repeat_interleave(s.n, 0),
            do_sample=temperature > 0, temperature=temperature or None, top_p=0.9 if temperature else None,
            top_k=(top_k or 0) if temperature else None,
            max_new_tokens=s.max_new_tokens, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
        )
    expected = []
    for row in plain[:, enc["input_ids"].shape[1]:].tolist():
        row = row[: row.index(tok.eos_token_id)] if tok.eos_token_id in row else [t for t in row if t != tok.pad_token_id]
        expected.append(tok.decode(row, skip_special_tokens=True).strip())
    assert [text for samples in got for text, _, _ in samples] == expected
    # The outputs differ between prompts (and between samples when sampling), so the comparison
    # means something.
    assert len(set(expected)) >= (3 if temperature == 0 else 6)
    assert all(len(samples) == s.n for samples in got)


def _first_tokens(sampler: HFSampler, top_k: int | None) -> set[str]:
    """The distinct first tokens of 256 samples for one prompt."""
    s = SamplingConfig(n=256, temperature=1.0, top_p=1.0, top_k=top_k, max_new_tokens=1)
    return {text for text, _, _ in sampler.generate([[{"role": "user", "content": "word"}]], s, seed=0)[0]}


def test_top_k_is_the_setting_not_the_generation_config_default() -> None:
    # A random model's next-token distribution is nearly flat over 300 tokens: without a cut, 256
    # draws give far more than 5 distinct tokens; transformers would cut at its default top_k=50 if
    # the sampler left top_k unset (the vLLM backend, like the papers' runs, has no cut).
    sampler = HFSampler(*_random_chat_model("llama", "llama"))
    assert len(_first_tokens(sampler, None)) > 50
    assert len(_first_tokens(sampler, 5)) <= 5
    with pytest.raises(ConfigError, match="sampling.top_k=0 must be null"):
        SamplingConfig(top_k=0)


def test_kept_draw_is_seeded_and_stays_within_the_cut() -> None:
    # draw=kept: another draw from the same distribution, so other samples than draw=full, the same ones
    # for the same seed; with top_k=1 both reduce to greedy decoding.
    sampler = HFSampler(*_random_chat_model("llama", "llama"))
    prompts = [[{"role": "user", "content": "rice"}], [{"role": "user", "content": "how to cook bread " * 3}]]
    kept = SamplingConfig(n=8, temperature=1.0, top_p=0.9, top_k=5, max_new_tokens=10, draw="kept")
    full = SamplingConfig(n=8, temperature=1.0, top_p=0.9, top_k=5, max_new_tokens=10)
    first = sampler.generate(prompts, kept, seed=3)
    assert sampler.generate(prompts, kept, seed=3) == first
    assert sampler.generate(prompts, kept, seed=4) != first
    assert first != sampler.generate(prompts, full, seed=3)
    assert len({t for row in first for t, _, _ in row}) >= 6
    greedy = SamplingConfig(n=2, temperature=0.0, max_new_tokens=10)
    one = SamplingConfig(n=2, temperature=1.0, top_p=0.9, top_k=1, max_new_tokens=10, draw="kept")
    assert sampler.generate(prompts, one, seed=5) == sampler.generate(prompts, greedy, seed=0)


def test_kept_draw_needs_the_hf_backend_and_a_top_k() -> None:
    for bad in ({"backend": "vllm", "top_k": 50}, {"top_k": None}, {"top_k": 50, "temperature": 0.0}):
        with pytest.raises(ConfigError, match="sampling.draw=kept needs"):
            SamplingConfig(draw="kept", **bad)
