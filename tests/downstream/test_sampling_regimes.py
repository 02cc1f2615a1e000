"""A suite task's generation regime (prefill, stop sequences, a token ceiling) in the HF sampler: a
capped or stopped sample is exactly the uncapped one cut where OLMES would have stopped, and a prefill
is continued as if it ended the rendered prompt. The vLLM backend hands the engine the same regimes
(against a stand-in engine; the real one is tests/downstream/test_vllm_sampling.py)."""

from __future__ import annotations

import sys
from types import ModuleType, SimpleNamespace

import torch

from rlexp.config.nodes import SamplingConfig
from rlexp.data.schemas import PromptItem
from rlexp.downstream.sampling import HFSampler, Regime, finish, regime
from rlexp.models import tiny
from tests._tiny_random import random_chat_model

PROMPTS = [
    [{"role": "user", "content": "rice"}],
    [{"role": "user", "content": "how to cook bread in the garden " * 3}],
    [{"role": "user", "content": "camera paint knitting bike tomato"}],
]


def _sampler() -> tuple[HFSampler, object]:
    model, tok = random_chat_model(tiny.TinySpec(
        arch="llama", chat_format="llama", vocab_size=300, hidden_size=32, num_layers=2, num_heads=2,
        intermediate_size=64, max_position=512, corpus="a", pretrain_epochs=0, sft_epochs=0, lr=1e-3,
        batch_size=8, max_length=128, seed=0,
    ))
    return HFSampler(model, tok), tok


def test_token_caps_cut_each_row_where_a_capped_run_would() -> None:
    sampler, tok = _sampler()
    s = SamplingConfig(n=3, temperature=1.0, top_p=1.0, max_new_tokens=16)
    free = sampler.generate(PROMPTS, s, seed=5)
    caps = [Regime(max_new_tokens=4), Regime(), Regime(max_new_tokens=40)]  # 40: above the pool's 16
    capped = sampler.generate(PROMPTS, s, seed=5, regimes=caps)
    for p, r in enumerate(caps):
        for (text, count, reason), (free_text, free_count, _) in zip(capped[p], free[p], strict=True):
            assert count <= r.cap(16)
            assert count == min(free_count, r.cap(16))
            assert free_text.startswith(text)
            if count == 4 and p == 0 and free_count > 4:
                assert reason == "length"
    assert any(c < f for (_, c, _), (_, f, _) in zip(capped[0], free[0], strict=True))  # the cap bit somewhere


def test_stop_sequences_cut_the_text_before_the_first_one() -> None:
    sampler, _ = _sampler()
    s = SamplingConfig(n=4, temperature=1.0, top_p=1.0, max_new_tokens=20)
    free = sampler.generate(PROMPTS, s, seed=7)
    # A stop sequence the random model does produce: the third character of a long sample.
    sample = max((t for row in free for t, _, _ in row), key=len)
    stop = sample[2:4]
    regimes = [Regime(stop=(stop,))] * len(PROMPTS)
    stopped = sampler.generate(PROMPTS, s, seed=7, regimes=regimes)
    hits = 0
    for row, free_row in zip(stopped, free, strict=True):
        for (text, _, reason), (free_text, _, _) in zip(row, free_row, strict=True):
            assert stop not in text
            if stop in free_text:
                hits += 1
                assert reason == "stop"
                assert text == free_text[: free_text.index(stop)].strip()
            else:
                assert text == free_text
    assert hits >= 1


def test_a_prefill_is_continued_and_starts_the_sample() -> None:
    sampler, tok = _sampler()
    s = SamplingConfig(n=2, temperature=0.0, max_new_tokens=10)
    prefill = "Answer: the"
    got = sampler.generate(PROMPTS[:2], s, seed=1, regimes=[Regime(prefill=prefill)] * 2)
    for conv, samples in zip(PROMPTS[:2], got, strict=True):
        text = tok.apply_chat_template(conv, add_generation_prompt=True, tokenize=False) + prefill
        ids = tok(text, return_tensors="pt", add_special_tokens=False)["input_ids"]
        with torch.inference_mode():
            out = sampler.model.generate(input_ids=ids, do_sample=False, max_new_tokens=10,
                                         pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
        new = out[0, ids.shape[1]:].tolist()
        new = new[: new.index(tok.eos_token_id)] if tok.eos_token_id in new else new
        assert all(t == (prefill + tok.decode(new, skip_special_tokens=True)).strip() for t, _, _ in samples)


def test_finish_and_regime_of_an_item() -> None:
    r = Regime(prefill="Here:\n", stop=("Question:", "\n\n"), max_new_tokens=15)
    assert finish(" 42.\n\nQuestion: more", 9, "length", r) == ("Here:\n 42.", 9, "stop")
    assert finish("no stop here", 3, "eos", r) == ("Here:\nno stop here", 3, "eos")
    assert r.cap(512) == 15 and r.cap(8) == 8 and Regime().cap(64) == 64
    item = PromptItem("p", "q", "suite", prefill="A:", stop=("x",), max_new_tokens=3)
    assert regime(item) == Regime("A:", ("x",), 3)
    assert regime(PromptItem("p", "q", "general")) == Regime()


class _Tok:
    """A character tokenizer with a visible chat template (what the vLLM backend asks of its engine's)."""

    def apply_chat_template(self, conv, add_generation_prompt: bool, tokenize: bool) -> str:
        return "".join(f"<{m['role']}>{m['content']}" for m in conv) + "<assistant>"

    def __call__(self, text: str, add_special_tokens: bool) -> dict[str, list[int]]:
        return {"input_ids": [ord(c) for c in text]}


class _Engine:
    """vLLM's ``LLM`` as the regimes use it: ``chat`` for plain prompts, ``generate`` on token ids for
    prefilled ones. Like vLLM, a completion that met a stop string comes back cut before it, naming it."""

    def __init__(self, **kwargs) -> None:
        self.calls: list[tuple[str, list, list]] = []

    def _answer(self, params) -> SimpleNamespace:
        hit = params.stop[0] if params.stop else None
        done = SimpleNamespace(text=" 42.", token_ids=[5, 6], finish_reason="stop", stop_reason=hit)
        return SimpleNamespace(outputs=[done] * params.n)

    def chat(self, convs, params, use_tqdm: bool = False):
        self.calls.append(("chat", convs, params))
        return [self._answer(p) for p in params]

    def generate(self, prompts, params, use_tqdm: bool = False):
        self.calls.append(("generate", prompts, params))
        return [self._answer(p) for p in params]

    def get_tokenizer(self) -> _Tok:
        return _Tok()


def test_vllm_backend_applies_the_regimes(monkeypatch) -> None:
    """vLLM gets each prompt's own stop list and token cap; a prefilled prompt goes in as the rendered
    template + prefill (token ids) and its sample starts with the prefill, as in the HF sampler."""
    from rlexp.downstream.vllm_sampler import VLLMSampler

    vllm = ModuleType("vllm")
    vllm.LLM, vllm.SamplingParams = _Engine, SimpleNamespace  # type: ignore[attr-defined]
    platforms = ModuleType("vllm.platforms")
    platforms.current_platform = SimpleNamespace(is_cpu=lambda: False)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.platforms", platforms)
    sampler = VLLMSampler("m", seed=0)
    regimes = [Regime(prefill="Answer:", stop=("Question:",), max_new_tokens=512), Regime(),
               Regime(stop=("\n\n",), max_new_tokens=15)]
    got = sampler.generate(PROMPTS, SamplingConfig(n=2, max_new_tokens=64), seed=3, regimes=regimes)
    (kind, convs, plain), (kind2, ids, filled) = sampler.llm.calls
    assert (kind, kind2) == ("chat", "generate") and convs == PROMPTS[1:]
    assert [(p.max_tokens, p.stop) for p in plain] == [(64, None), (15, ["\n\n"])]
    assert [(p.max_tokens, p.stop) for p in filled] == [(64, ["Question:"])]
    assert ids == [{"prompt_token_ids": [ord(c) for c in "<user>rice<assistant>Answer:"]}]
    # The EOS that ended the unstopped sample is not counted (the HF backend's count).
    assert got == [[("Answer: 42.", 2, "stop")] * 2, [("42.", 1, "eos")] * 2, [("42.", 2, "stop")] * 2]
