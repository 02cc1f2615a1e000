"""Run store: ids are stable content hashes; writes are atomic under concurrency and SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from rlexp.store import Record, Store, record_id

CFG = {"seed": 1, "trainer": {"epochs": 2, "lr": 3e-6}, "paths": {"store": "/a"}, "logger": {"kind": "wandb"}}


def test_same_config_same_id_across_processes() -> None:
    code = "import json,sys; from rlexp.store import record_id; print(record_id('t', json.loads(sys.argv[1]), {'data': 'x'}))"
    ids = {
        subprocess.run([sys.executable, "-c", code, json.dumps(CFG)], capture_output=True, text=True, check=True).stdout.strip()
        for _ in range(2)
    }
    assert ids == {record_id("t", CFG, {"data": "x"})}


def test_result_key_changes_id_path_and_logging_do_not() -> None:
    base = record_id("t", CFG)
    assert record_id("t", {**CFG, "seed": 2}) != base
    assert record_id("t", {**CFG, "trainer": {"epochs": 3, "lr": 3e-6}}) != base
    assert record_id("t", CFG, {"data": "y"}) != base
    assert record_id("t2", CFG) != base
    assert record_id("t", {**CFG, "paths": {"store": "/elsewhere"}}) == base
    assert record_id("t", {**CFG, "logger": {"kind": "none"}}) == base
    assert record_id("t", {**CFG, "tags": ["x"], "force": True, "progress": False}) == base


def test_renamed_trainer_keys_hash_under_their_old_names() -> None:
    # train_rm's trainer took TRL's field names; a store written before keeps its record ids.
    old = {"seed": 0, "trainer": {"epochs": 2.0, "batch_size": 16, "grad_accum": 1, "lr_scheduler": "linear",
                                  "warmup_ratio": 0.05, "learning_rate": 1e-3, "group_by_length": True}}
    new = {"seed": 0, "trainer": {"num_train_epochs": 2.0, "per_device_train_batch_size": 16,
                                  "gradient_accumulation_steps": 1, "lr_scheduler_type": "linear",
                                  "warmup_steps": 0.05, "learning_rate": 1e-3, "length_grouping": True}}
    assert record_id("train_rm", new) == record_id("train_rm", old)
    assert record_id("train_rm", {**new, "trainer": {**new["trainer"], "num_train_epochs": 3.0}}) != record_id("train_rm", old)
    # Only train_rm's trainer was renamed: PPO's TRL names (always TRL's) hash as they are.
    assert record_id("ppo", new) != record_id("ppo", old)


def _writer_script(store: Path, n: int, tag: str) -> str:
    return textwrap.dedent(
        f"""
        from rlexp.store import Record, Store
        s = Store({str(store)!r})
        for i in range({n}):
            s.put(Record(id=f"{tag}-{{i}}", task="t", config={{"blob": "x" * 200000, "i": i}}, metrics={{"i": i}}))
        """
    )


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    store = tmp_path / "store"
    procs = [subprocess.Popen([sys.executable, "-c", _writer_script(store, 15, f"w{j}")]) for j in range(4)]
    # Two writers also race on the same ids: the last rename wins, the file is always whole.
    procs += [subprocess.Popen([sys.executable, "-c", _writer_script(store, 15, "shared")]) for _ in range(2)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    files = sorted((store / "records" / "t").glob("*.json"))
    assert len(files) == 4 * 15 + 15
    for f in files:
        data = json.loads(f.read_text())
        assert data["config"]["blob"] == "x" * 200000
    assert not list((store / "records" / "t").glob(".*.tmp"))


def test_sigkill_mid_write_leaves_no_record(tmp_path: Path) -> None:
    store = tmp_path / "store"
    # A record big enough that writing it takes a while; kill the writer while it writes.
    script = textwrap.dedent(
        f"""
        import sys, time
        from rlexp.store import Record, Store
        s = Store({str(store)!r})
        class Slow(dict):
            pass
        rec = Record(id="big", task="t", config={{"blob": ["y" * 1000] * 200000}})
        orig = rec.to_json
        def slow_json():
            print("writing", flush=True)
            time.sleep(30)
            return orig()
        rec.to_json = slow_json
        s.put(rec)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "writing"
    time.sleep(0.3)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    s = Store(store)
    assert not s.exists("t", "big")
    assert list(s.records("t")) == []
    # The next run writes it.
    s.put(Record(id="big", task="t", config={"ok": True}))
    assert s.get("big", "t").config == {"ok": True}


def test_get_missing_record_is_store_error(tmp_path: Path) -> None:
    import pytest

    from rlexp.errors import StoreError

    with pytest.raises(StoreError, match="no record 'zzz'"):
        Store(tmp_path).get("zzz")


def test_unset_comparison_benchmarks_leave_an_evaluation_id_unchanged() -> None:
    # benchmark.arena/prism came after evaluate records existed: null drops them, any set value counts.
    old = {"seed": 0, "benchmark": {"name": "both", "rb2": {"source": "sandbox:rb2"}, "prb": None}}
    new = {**old, "benchmark": {**old["benchmark"], "arena": None, "prism": None}}
    assert record_id("evaluate", new) == record_id("evaluate", old)
    arena = {"source": "sandbox:arena", "user_context": "history", "k": 2}
    with_arena = {**old, "benchmark": {**new["benchmark"], "arena": arena}}
    assert record_id("evaluate", with_arena) != record_id("evaluate", old)
    assert record_id("evaluate", {**old, "benchmark": {**new["benchmark"], "arena": {**arena, "k": 3}}}) != record_id(
        "evaluate", with_arena)


def test_top_k_50_is_neutral_only_for_hf_pools() -> None:
    # Pools stored before sampling.top_k existed: hf ones were drawn with transformers' default cut of
    # 50 and keep their ids at top_k=50; vLLM ones had no cut, so top_k=50 is a new pool for them.
    from rlexp.config.nodes import SamplingBackend

    old = {"seed": 0, "sampling": {"n": 4, "top_p": 0.9}}
    for backend, neutral in ((None, True), ("hf", True), (SamplingBackend.hf, True), ("vllm", False),
                             (SamplingBackend.vllm, False)):
        before = {**old, "sampling": {**old["sampling"], **({} if backend is None else {"backend": backend})}}
        at_50 = {**before, "sampling": {**before["sampling"], "top_k": 50}}
        assert (record_id("sample", at_50) == record_id("sample", before)) is neutral, backend
        assert record_id("sample", {**before, "sampling": {**before["sampling"], "top_k": None}}) != record_id(
            "sample", before)


def test_the_default_draw_leaves_pool_ids_unchanged() -> None:
    # Every stored pool drew from transformers' multinomial: draw=full keeps its id, draw=kept is a new pool.
    from rlexp.config.choices import SamplingDraw

    old = {"seed": 0, "sampling": {"n": 4, "top_p": 0.9, "top_k": 50}}
    for full in ("full", SamplingDraw.full):
        assert record_id("sample", {**old, "sampling": {**old["sampling"], "draw": full}}) == record_id("sample", old)
    assert record_id("sample", {**old, "sampling": {**old["sampling"], "draw": "kept"}}) != record_id("sample", old)
