"""The vLLM backend against a stand-in engine (no vLLM needed; the real engine's run is
tests/downstream/test_vllm_sampling.py): chunked prefill off on CPU (a seeded request rewound by
chunked prefill crashes CPU generators), per-prompt seeds whose sample seeds never meet, token counts
without the EOS token as the HF backend counts them, the sampling dtype in the record, and a crashed
engine shut down."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from rlexp.config.nodes import SamplingConfig
from rlexp.data.schemas import PromptItem
from rlexp.downstream import vllm_sampler
from rlexp.downstream.sampling import HFSampler, write_pool
from rlexp.downstream.vllm_sampler import VLLMSampler, completion_tokens, engine_args
from rlexp.errors import ConfigError

EOS = 2


@dataclass
class Completion:
    token_ids: list[int]
    finish_reason: str = "stop"
    stop_reason: Any = None
    text: str = "hello"


@dataclass
class RequestOutput:
    outputs: list[Completion] = field(default_factory=list)


class Params:
    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)


class FakeLLM:
    """Records the engine's arguments and every request's params; each sample ends in EOS after 3 tokens."""

    made: list[dict[str, Any]] = []
    fail = False

    def __init__(self, **kw: Any) -> None:
        FakeLLM.made.append(kw)
        self.params: list[Params] = []
        self.shut = 0
        core = types.SimpleNamespace(shutdown=self._shutdown)
        self.llm_engine = types.SimpleNamespace(engine_core=core,
                                                model_config=types.SimpleNamespace(dtype="torch.bfloat16"))

    def _shutdown(self) -> None:
        self.shut += 1

    def chat(self, prompts: list[Any], params: list[Params], use_tqdm: bool = False) -> list[RequestOutput]:
        if FakeLLM.fail:
            raise RuntimeError("CPU Generator does not use offset")
        self.params.extend(params)
        return [RequestOutput([Completion([7, 8, 9, EOS]) for _ in range(p.n)]) for p in params]


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    platform = types.SimpleNamespace(cpu=True)
    mod = types.ModuleType("vllm")
    mod.LLM = FakeLLM  # type: ignore[attr-defined]
    mod.SamplingParams = Params  # type: ignore[attr-defined]
    platforms = types.ModuleType("vllm.platforms")
    platforms.current_platform = types.SimpleNamespace(is_cpu=lambda: platform.cpu)  # type: ignore[attr-defined]
    mod.platforms = platforms  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", mod)
    monkeypatch.setitem(sys.modules, "vllm.platforms", platforms)
    FakeLLM.made, FakeLLM.fail = [], False
    return platform


def settings(**kw: Any) -> SamplingConfig:
    base = {"n": 4, "max_new_tokens": 16, "temperature": 1.0, "top_p": 1.0, "chunk_prompts": 8, "batch_prompts": 3}
    return SamplingConfig(**{**base, **kw})


def items(k: int) -> list[PromptItem]:
    return [PromptItem(prompt_id=f"p{i}", prompt=f"question {i}", kind="general") for i in range(k)]


def test_chunked_prefill_is_off_on_cpu(fake_vllm: types.SimpleNamespace) -> None:
    VLLMSampler("m", seed=1, engine={"max_model_len": 1024})
    assert FakeLLM.made[-1] == {"model": "m", "seed": 1, "max_model_len": 1024, "enable_chunked_prefill": False}
    with pytest.raises(ConfigError, match="enable_chunked_prefill=true on CPU"):
        VLLMSampler("m", engine={"enable_chunked_prefill": True})
    fake_vllm.cpu = False  # a GPU engine keeps vLLM's defaults
    VLLMSampler("m", seed=1)
    assert FakeLLM.made[-1] == {"model": "m", "seed": 1}
    assert engine_args({"enable_chunked_prefill": True}, cpu=False) == {"enable_chunked_prefill": True}


def test_no_two_samples_share_a_seed(fake_vllm: types.SimpleNamespace, tmp_path: Path) -> None:
    # vLLM seeds a request's i-th sample with seed + i (ParentRequest): seed + prompt index per prompt gave
    # prompt p's sample 1 the stream of prompt p+1's sample 0, and batch b's prompts those of batch 0's.
    sampler = VLLMSampler("m", seed=0)
    s = settings()
    write_pool(sampler, items(8), s, tmp_path, seed=5)
    seeds = [p.seed + j for p in sampler.llm.params for j in range(p.n)]
    assert len(sampler.llm.params) == 8 and len(seeds) == 32
    assert len(set(seeds)) == len(seeds)


def test_token_count_leaves_out_eos_as_hf_does(fake_vllm: types.SimpleNamespace, tmp_path: Path) -> None:
    assert completion_tokens(Completion([7, 8, EOS])) == 2  # ended by EOS
    assert completion_tokens(Completion([7, 8, 9], finish_reason="length")) == 3
    assert completion_tokens(Completion([7, 8, 9], stop_reason="\n\n")) == 3  # a stop string: kept, as HF counts it
    assert completion_tokens(Completion([EOS])) == 0
    sampler = VLLMSampler("m")
    pool, info = write_pool(sampler, items(2), settings(n=2), tmp_path, seed=0)
    rows = pq.read_table(pool).to_pylist()
    assert {r["token_count"] for r in rows} == {3} and {r["finish_reason"] for r in rows} == {"eos"}
    assert info["dtype"] == "bfloat16"


def test_hf_token_count_and_dtype_match(tmp_path: Path) -> None:
    # The HF backend on the same token stream: 3 tokens then EOS count 3, as vLLM's [7, 8, 9, EOS] now does.
    import torch

    class Tok:
        chat_template = "x"
        eos_token_id = EOS
        pad_token_id = 0
        padding_side = "left"

        def apply_chat_template(self, m: Any, **kw: Any) -> str:
            return "q"

        def __call__(self, texts: list[str], **kw: Any) -> Any:
            out = {"input_ids": torch.tensor([[5]] * len(texts)), "attention_mask": torch.ones(len(texts), 1)}
            return types.SimpleNamespace(to=lambda d: out, **out)

        def decode(self, ids: list[int], **kw: Any) -> str:
            return " ".join(map(str, ids))

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))

        def generate(self, input_ids: Any, **kw: Any) -> Any:
            tail = torch.tensor([[7, 8, 9, EOS, 0]] * input_ids.shape[0])
            return torch.cat([input_ids, tail], dim=1)

    sampler = HFSampler(Model(), Tok())
    out = sampler.generate([[{"role": "user", "content": "q"}]], settings(n=2), seed=0)
    assert out[0] == [("7 8 9", 3, "eos")] * 2
    assert sampler.dtype == "float32"


def test_a_crashed_engine_is_shut_down(fake_vllm: types.SimpleNamespace, tmp_path: Path) -> None:
    sampler = VLLMSampler("m")
    FakeLLM.fail = True
    with pytest.raises(RuntimeError, match="does not use offset"):
        write_pool(sampler, items(2), settings(), tmp_path, seed=0)
    assert sampler.llm.shut == 1


def test_the_vllm_module_names_its_cpu_rule() -> None:
    # The reason is in the module, for whoever sets vllm_engine by hand.
    assert "set_offset" in (vllm_sampler.__doc__ or "")
