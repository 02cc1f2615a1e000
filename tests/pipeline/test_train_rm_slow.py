"""Slow train_rm checks: resume after SIGKILL, DeepSpeed ZeRO-2/3 on CPU."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from rlexp.store import Store
from tests.conftest import QWEN, env_with, private_store, rlexp_cmd

pytestmark = pytest.mark.slow


def test_killed_during_epoch_two_resumes_from_checkpoint(world: Path, rms: dict[str, str], tmp_path: Path) -> None:
    args = ["train_rm", "logger=none", *QWEN, "data=general", "trainer.num_train_epochs=2",
            "trainer.save_steps=20", "data.max_rows=600", "seed=3"]
    # Stores of its own (the world's data and lineages hard-linked): a kept test world
    # (RLEXP_TEST_WORLD) holds this run's record from an earlier session.
    killed, other = (private_store(world, tmp_path / name, ("data", "lineage")) for name in ("killed", "uninterrupted"))
    env = env_with(RLEXP_ROOT=str(killed))
    proc = subprocess.Popen(rlexp_cmd(*args), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # 540 training pairs / batch 16 = 34 steps per epoch: checkpoint-40 is in epoch 2.
    deadline = time.time() + 600
    found = None
    while time.time() < deadline and proc.poll() is None:
        hits = list((killed / "runs" / "artifacts" / "train_rm").glob("*/checkpoints/checkpoint-40/trainer_state.json"))
        if hits:
            found = hits[0]
            break
        time.sleep(0.2)
    assert found is not None, "no epoch-2 checkpoint appeared"
    time.sleep(0.5)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    rid = found.parents[2].name
    store = Store(killed / "runs")
    assert not store.exists("train_rm", rid)
    out = subprocess.run(rlexp_cmd(*args), env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    rec = store.get(rid, "train_rm")
    assert rec.info["resumed_from"] and rec.info["resumed_from"].endswith(("checkpoint-40", "checkpoint-60"))
    assert rec.metrics["train/steps"] == 68 and rec.metrics["heldout/n"] == 60

    # The same run uninterrupted, in another store: the same record id (ids do not depend on the
    # root), the same model (each epoch's data order is seeded, so the resumed epoch replays its own
    # batches), and the resumed record's train/loss covers the whole run, not only the resumed steps.
    ref = subprocess.run(rlexp_cmd(*args), env=env_with(RLEXP_ROOT=str(other)), capture_output=True, text=True, timeout=900)
    assert ref.returncode == 0, ref.stderr[-2000:]
    # Without notices a user cannot act on (rlexp.models.loading.quiet_libraries): transformers' renamed
    # checkpointing option, DeepSpeed's "no GPU found" in every process.
    assert "is deprecated" not in ref.stderr and "Setting accelerator to CPU" not in ref.stderr, ref.stderr[-2000:]
    whole = Store(other / "runs").get(rid, "train_rm")
    assert whole.info["resumed_from"] is None
    assert rec.metrics["train/loss"] == pytest.approx(whole.metrics["train/loss"], abs=1e-6)
    assert rec.metrics["heldout/accuracy"] == pytest.approx(whole.metrics["heldout/accuracy"])


@pytest.mark.parametrize("stage", ["zero2", "zero3"])
def test_deepspeed_on_cpu(world: Path, rms: dict[str, str], stage: str, tmp_path: Path) -> None:
    extensions = tmp_path / "torch_extensions"
    env = env_with(RLEXP_ROOT=str(world), TORCH_EXTENSIONS_DIR=str(extensions))
    out = subprocess.run(
        rlexp_cmd("train_rm", "logger=none", "model=tiny_llama", "data=general", f"deepspeed={stage}",
                  "data.max_rows=200", "trainer.save_steps=1000"),
        env=env, capture_output=True, text=True, timeout=1200,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    recs = [r for r in Store(world / "runs").records("train_rm") if r.info["lineage"]["deepspeed"] == stage]
    assert recs and recs[-1].metrics["train/steps"] > 0
    # One process: no C++ op compiled (the shared-memory collectives op would take ~45 s of g++).
    assert not extensions.exists() or not any(extensions.iterdir()), sorted(p.name for p in extensions.iterdir())
