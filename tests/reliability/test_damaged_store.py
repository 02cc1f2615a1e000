"""A damaged store: a record file cut short or emptied, a study ledger cut short, an artifact deleted or
cut short, a checkpoint whose save was killed. Each used to be a traceback. Now it is found and named in
one line, and either made again (where rlexp makes that record: the same id gives the same result) or
refused with the file to delete (a record a user names); `rlexp store check` lists them all."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from omegaconf import OmegaConf

from rlexp import cli
from rlexp.integrity import artifact_problem
from rlexp.runtime import RunContext, execute
from rlexp.store import Record, Store
from tests.conftest import env_with, one_line_error, rlexp_cmd

RID = "0123456789abcdef"


def _cut(path: Path, keep: float = 0.5) -> None:
    """Cut a file short as a crash would, in place (a copy first: the file may be a hard link)."""
    data = path.read_bytes()
    path.unlink()
    path.write_bytes(data[: int(len(data) * keep)])


def _safetensors(path: Path) -> Path:
    import numpy as np
    from safetensors.numpy import save_file

    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({"w": np.arange(256, dtype=np.float32)}, str(path))
    return path


def _parquet(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"x": list(range(100))}), path)
    return path


def _store_cmd(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(rlexp_cmd("store", *args), env=env_with(RLEXP_ROOT=str(root)), capture_output=True,
                          text=True, timeout=120)


# --- the store's own commands ------------------------------------------------------------------------


def test_store_ls_lists_what_it_can_and_counts_damaged_records(root: Path) -> None:
    store = Store(root / "runs")
    store.put(Record(id=RID, task="env", config={"seed": 1}, metrics={"x": 1.0}, ended=1.0))
    (store.root / "records" / "env" / f"{'1' * 16}.json").write_text("{}")
    cut = store.put(Record(id="2" * 16, task="train_rm", config={"seed": 2}))
    _cut(cut)
    out = _store_cmd(root, "ls")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert RID in out.stdout and "1 record(s)" in out.stdout
    assert "2 damaged record file(s) skipped (`rlexp store check` lists them)" in out.stdout


def test_store_show_of_a_record_cut_short_is_one_line(root: Path) -> None:
    path = Store(root / "runs").put(Record(id=RID, task="evaluate", config={"seed": 1}))
    _cut(path)
    line = one_line_error(_store_cmd(root, "show", RID[:8]))
    assert str(path) in line and "damaged" in line and "rlexp store check --fix" in line


def test_store_without_a_subcommand_is_one_line(root: Path) -> None:
    out = _store_cmd(root)
    line = one_line_error(out)
    assert not out.stdout and "rlexp store" in line and "{ls,show,check}" in line


def test_store_check_lists_damaged_records_and_orphans_and_fix_sets_them_aside(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = Store(tmp_path / "runs")
    art = store.artifact_dir
    whole = _parquet(art("sample", "a" * 16) / "pool.parquet")
    store.put(Record(id="a" * 16, task="sample", config={}, artifacts={"pool": store.relative(whole)}))
    gone = _parquet(art("sample", "b" * 16) / "pool.parquet")
    store.put(Record(id="b" * 16, task="sample", config={}, artifacts={"pool": store.relative(gone)}))
    gone.unlink()
    weights = _safetensors(art("train_rm", "c" * 16) / "model" / "model.safetensors")
    store.put(Record(id="c" * 16, task="train_rm", config={}, artifacts={"model": store.relative(weights.parent)}))
    _cut(weights)
    _cut(store.put(Record(id="d" * 16, task="evaluate", config={})))
    (store.root / "records" / "bon").mkdir()
    (store.root / "records" / "bon" / f"{'e' * 16}.json").write_text("{}")
    orphan = _parquet(art("sample", "f" * 16) / "chunks" / "chunk-00000.parquet").parents[1]

    assert cli.main(["store", "--store", str(store.root), "check"]) == 1
    out = capsys.readouterr().out
    listed = {ln.split()[0]: [] for ln in out.splitlines()}
    for ln in out.splitlines():
        listed[ln.split()[0]].append(ln)
    assert len(listed["damaged"]) == 4, out
    assert f"{gone} is missing" in out and f"{weights} is cut short" in out
    assert str(store.record_path("evaluate", "d" * 16)) in out and "no id, task, config" in out
    assert listed["orphaned"] == [f"orphaned  {orphan}: no record (left by a killed or failed run (train_rm and sample "
                                  "resume from it) or a deleted record; delete it when no run needs it)"]
    assert "5 record file(s) checked" in out and "4 damaged, 1 orphaned" in out

    assert cli.main(["store", "--store", str(store.root), "check", "--fix"]) == 0
    assert sum(ln.startswith("set aside ") for ln in capsys.readouterr().out.splitlines()) == 4
    assert sorted(p.name for p in (store.root / "records").glob("*/*.json")) == [f"{'a' * 16}.json"]
    assert (store.root / "damaged" / "train_rm" / ("c" * 16) / "artifacts" / "model" / "model.safetensors").is_file()
    assert cli.main(["store", "--store", str(store.root), "check"]) == 0
    assert "0 damaged, 1 orphaned artifact folder(s), 4 set aside in" in capsys.readouterr().out


# --- execute: a damaged record of a run is made again ----------------------------------------------


def _cfg(root: Path) -> Any:
    return OmegaConf.create({
        "paths": {"store": str(root / "runs"), "output_root": str(root / "out"), "cache": str(root / "cache")},
        "logger": {"kind": "none"}, "runtime": {"threads": 0}, "work": "damage",
    })


def _body(runs: list[str]) -> Callable[[RunContext], dict[str, Any]]:
    def body(ctx: RunContext) -> dict[str, Any]:
        runs.append(ctx.rid)
        ctx.add_artifact("pool", _parquet(ctx.work_dir / "pool.parquet"))
        ctx.add_artifact("model", _safetensors(ctx.work_dir / "model" / "model.safetensors").parent)
        return {"n": 100}
    return body


DAMAGE: dict[str, Callable[[Store, Record], None]] = {
    "record cut short": lambda store, rec: _cut(store.record_path(rec.task, rec.id)),
    "record emptied ({})": lambda store, rec: store.record_path(rec.task, rec.id).write_text("{}"),
    "record of another id": lambda store, rec: store.record_path(rec.task, rec.id).write_text(
        Record(id="f" * 16, task=rec.task, config={}).to_json()),
    "parquet deleted": lambda store, rec: store.resolve(rec.artifacts["pool"]).unlink(),
    "parquet cut short": lambda store, rec: _cut(store.resolve(rec.artifacts["pool"])),
    "weights cut short": lambda store, rec: _cut(store.resolve(rec.artifacts["model"]) / "model.safetensors", 0.9),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_record_is_set_aside_and_made_again(damage: str, tmp_path: Path,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    runs: list[str] = []
    first = execute("sample", _cfg(tmp_path), _body(runs))
    store = Store(tmp_path / "runs")
    DAMAGE[damage](store, first)
    with caplog.at_level(logging.WARNING, logger="rlexp"):
        again = execute("sample", _cfg(tmp_path), _body(runs))
    assert runs == [first.id, first.id] and again.id == first.id  # the same id: made again, not renamed
    assert store.intact("sample", first.id) is not None and store.damage(again) is None
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and f"record {first.id} is damaged" in warned[0] and "running it again" in warned[0]
    assert (store.root / "damaged" / "sample" / first.id / "record.json").is_file()
    # Whole now: a third run reuses it.
    assert execute("sample", _cfg(tmp_path), _body(runs)).id == first.id and len(runs) == 2


# --- the study's ledger ------------------------------------------------------------------------------


def test_a_study_ledger_cut_short_is_dropped_and_written_afresh(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from rlexp.step_ledger import StepLedger
    from rlexp.tasks.study_plan import Step

    store = Store(tmp_path / "runs")
    store.put(Record(id=RID, task="evaluate", config={}))
    step = Step("evaluate", "evaluate/x", ["rm=x"])
    StepLedger(store).remember([step], {step.key: (RID, None)})
    ledger_file = StepLedger(store).path
    _cut(ledger_file)
    with caplog.at_level(logging.WARNING, logger="rlexp"):
        ledger = StepLedger(store)
    assert ledger.known == {} and ledger.cached(step) is None
    assert any(f"step ledger {ledger_file} is damaged" in r.getMessage() for r in caplog.records)
    ledger.remember([step], {step.key: (RID, None)})
    assert json.loads(ledger_file.read_text())["steps"] == {StepLedger.key(step): RID}
    assert StepLedger(store).cached(step) == RID


def test_a_study_rerun_sends_a_step_whose_record_is_damaged_to_a_worker(tmp_path: Path) -> None:
    """The ledger decides a finished step in the parent only while its record is whole: a record file cut
    short or an artifact deleted sends the step to a worker, whose run makes the record again."""
    from rlexp.step_ledger import StepLedger
    from rlexp.tasks.study_plan import Step

    store = Store(tmp_path / "runs")
    steps = {name: Step("train_rm", f"train_rm/{name}", [f"data={name}"]) for name in ("whole", "cut", "deleted")}
    ids = {name: name[0] * 16 for name in steps}
    for rid in ids.values():
        weights = _safetensors(store.artifact_dir("train_rm", rid) / "model" / "model.safetensors")
        store.put(Record(id=rid, task="train_rm", config={}, artifacts={"model": store.relative(weights.parent)}))
    StepLedger(store).remember(list(steps.values()), {s.key: (ids[n], None) for n, s in steps.items()})
    _cut(store.record_path("train_rm", ids["cut"]))
    shutil.rmtree(store.artifact_dir("train_rm", ids["deleted"]) / "model")
    ledger = StepLedger(store)
    assert {name: ledger.cached(s) for name, s in steps.items()} == {"whole": ids["whole"], "cut": None, "deleted": None}


# --- runs on a tiny RM: records a user names, a pool, a checkpoint ------------------------------------

QUIET = ("logger=none", "progress=false")
TINY_LM = ("model=tiny_llama", *QUIET)
RM_ARGS = ("train_rm", "data=general", "data.max_rows=64", "trainer.num_train_epochs=1")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A root with the sandbox world and one RM trained on a tiny random chat model (used as its lineage
    and as the pools' policy): {"root", "lm", "rm"}."""
    from rlexp.models import tiny as tiny_models
    from tests._tiny_random import random_chat_model

    base = tmp_path_factory.mktemp("damaged")
    lm = base / "lm"
    model, tok = random_chat_model(tiny_models.TinySpec(
        arch="llama", chat_format="llama", vocab_size=300, hidden_size=32, num_layers=2, num_heads=2,
        intermediate_size=64, max_position=512, corpus="a", pretrain_epochs=0, sft_epochs=0, lr=1e-3,
        batch_size=8, max_length=128, seed=0))
    model.save_pretrained(lm, safe_serialization=True)
    tok.save_pretrained(lm)
    root = base / "root"
    out = subprocess.run(rlexp_cmd(*RM_ARGS, *TINY_LM, f"model.name_or_path={lm}"), env=env_with(RLEXP_ROOT=str(root)),
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    (rm,) = [p.stem for p in (root / "runs" / "records" / "train_rm").glob("*.json")]
    return {"root": root, "lm": lm, "rm": rm}


def _own(tiny: dict[str, Any], tmp_path: Path) -> tuple[Path, Store]:
    """A copy of the tiny root (real copies: a test cuts files short in place)."""
    root = tmp_path / "root"
    shutil.copytree(tiny["root"], root, ignore=shutil.ignore_patterns(".*.lock"))
    return root, Store(root / "runs")


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(rlexp_cmd(*args), env=env_with(RLEXP_ROOT=str(root)), capture_output=True, text=True,
                          timeout=900)


def test_evaluate_an_rm_whose_record_is_cut_short_is_one_line(tiny: dict[str, Any], tmp_path: Path) -> None:
    root, store = _own(tiny, tmp_path)
    path = store.record_path("train_rm", tiny["rm"])
    _cut(path)
    line = one_line_error(_run(root, "evaluate", *QUIET, f"rm={tiny['rm']}"))
    assert f"record file {path} is damaged" in line and "rlexp store check --fix" in line


@pytest.mark.slow
def test_rm_weights_cut_short_are_refused_by_evaluate_and_made_again_by_train_rm(tiny: dict[str, Any],
                                                                                   tmp_path: Path) -> None:
    root, store = _own(tiny, tmp_path)
    weights = store.resolve(store.get(tiny["rm"], "train_rm").artifacts["model"]) / "model.safetensors"
    _cut(weights)
    line = one_line_error(_run(root, "evaluate", *QUIET, f"rm={tiny['rm']}"))
    assert f"{weights} is cut short" in line and f"delete {store.record_path('train_rm', tiny['rm'])}" in line
    # The same train_rm again: the record is set aside and the RM trained again under the same id.
    out = _run(root, *RM_ARGS, *TINY_LM, f"model.name_or_path={tiny['lm']}")
    assert out.returncode == 0, out.stderr[-3000:]
    logged = out.stdout + out.stderr  # Hydra's job log goes to stdout
    assert f"train_rm: record {tiny['rm']} is damaged" in logged and "running it again" in logged
    assert artifact_problem(weights.parent) is None and store.intact("train_rm", tiny["rm"]) is not None
    assert (store.root / "damaged" / "train_rm" / tiny["rm"] / "record.json").is_file()


@pytest.mark.slow
def test_bon_samples_again_a_pool_whose_parquet_was_deleted(tiny: dict[str, Any], tmp_path: Path) -> None:
    root, store = _own(tiny, tmp_path)
    args = ("bon", *TINY_LM, f"rm={tiny['rm']}", f"policy={tiny['lm']}", "prompts=general", "prompts.limit=4",
            "sampling.n=2", "sampling.max_new_tokens=8", "n_boot=10")
    first = _run(root, *args)
    assert first.returncode == 0, first.stderr[-3000:]
    (pool,) = list(store.records("sample"))
    parquet = store.resolve(pool.artifacts["pool"])
    before = pq.read_table(parquet)
    parquet.unlink()
    again = _run(root, *args)
    assert again.returncode == 0, again.stderr[-3000:]
    logged = again.stdout + again.stderr  # Hydra's job log goes to stdout
    assert f"sample: record {pool.id} is damaged ({parquet} is missing)" in logged
    assert pq.read_table(parquet).equals(before)  # the same id, the same pool
    assert f"bon: record {next(store.records('bon')).id} exists, skipping" in logged


@pytest.mark.slow
def test_train_rm_killed_while_saving_a_checkpoint_resumes_from_the_one_before(tiny: dict[str, Any],
                                                                               tmp_path: Path) -> None:
    """transformers writes trainer_state.json last: a run killed while saving leaves a checkpoint without
    it, which a resume cannot read. The next run resumes from the checkpoint before."""
    root, store = _own(tiny, tmp_path)
    args = ("train_rm", "data=general", "data.max_rows=200", "trainer.per_device_train_batch_size=4",
            "trainer.save_steps=3", "trainer.num_train_epochs=1", *TINY_LM, f"model.name_or_path={tiny['lm']}")
    proc = subprocess.Popen(rlexp_cmd(*args), env=env_with(RLEXP_ROOT=str(root)), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline, states = time.time() + 600, []
    while time.time() < deadline and proc.poll() is None and not states:
        states = list((store.root / "artifacts" / "train_rm").glob("*/checkpoints/checkpoint-6/trainer_state.json"))
        time.sleep(0.02)
    assert states and proc.poll() is None, "no kill: training ended before its second checkpoint"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    checkpoints = states[0].parents[1]
    rid = checkpoints.parent.name
    *_, previous, newest = sorted(checkpoints.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    # As if killed inside the newest save, before transformers wrote its trainer state.
    (newest / "trainer_state.json").unlink(missing_ok=True)
    assert (previous / "trainer_state.json").is_file()
    out = _run(root, *args)
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"checkpoint {newest} is incomplete (no trainer_state.json: killed while saving); removed it" in out.stdout + out.stderr
    record = store.get(rid, "train_rm")
    assert str(record.info["resumed_from"]) == str(previous)


def test_a_resume_skips_and_removes_checkpoints_whose_save_was_cut_short(tmp_path: Path,
                                                                          caplog: pytest.LogCaptureFixture) -> None:
    """The choice the slow kill test above makes, without training: the newest checkpoint a resume can
    read (trainer_state.json whole, weights whole) is resumed from; each newer one (no trainer state,
    a trainer state cut short, weights cut short) is named in one line and removed."""
    from rlexp.models.reward_training import last_complete_checkpoint

    folder = tmp_path / "checkpoints"
    assert last_complete_checkpoint(folder) is None  # a first run: nothing to resume
    for step in (3, 6, 9, 12, 15):
        ckpt = folder / f"checkpoint-{step}"
        _safetensors(ckpt / "model.safetensors")
        (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    (folder / "checkpoint-15" / "trainer_state.json").unlink()
    _cut(folder / "checkpoint-12" / "trainer_state.json")
    _cut(folder / "checkpoint-9" / "model.safetensors")
    with caplog.at_level(logging.WARNING, logger="rlexp"):
        assert last_complete_checkpoint(folder) == folder / "checkpoint-6"
    assert sorted(p.name for p in folder.iterdir()) == ["checkpoint-3", "checkpoint-6"]
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    reasons = [w.split(" is incomplete (")[1].split(" (")[0].split(":")[0] for w in warned]
    assert reasons == ["no trainer_state.json", "trainer_state.json cut short", "model.safetensors is cut short"], warned
    assert all(w.endswith("killed while saving); removed it") for w in warned), warned
