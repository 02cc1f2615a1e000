"""Two identical runs at once: the second waits for the first and reuses its record; a killed
holder never blocks the next run."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from pathlib import Path

from omegaconf import OmegaConf

from rlexp.runtime import execute
from rlexp.store import Store


def _cfg(root: Path, **extra):
    return OmegaConf.create({
        "paths": {"store": str(root / "runs"), "output_root": str(root / "out"), "cache": str(root / "cache")},
        "logger": {"kind": "none"}, "runtime": {"threads": 0}, "work": "slow-count", **extra,
    })


def _run(root: str, sleep: float) -> None:
    def body(ctx):
        with open(Path(root) / "bodies.txt", "a") as fh:  # one line per execution of the work
            fh.write(f"{os.getpid()}\n")
        time.sleep(sleep)
        (ctx.work_dir / "result.txt").write_text("done")
        ctx.add_artifact("result", ctx.work_dir / "result.txt")
        return {"pid": os.getpid()}

    rec = execute("env", _cfg(Path(root)), body)
    with open(Path(root) / "records.txt", "a") as fh:
        fh.write(f"{rec.id}\n")


def test_second_identical_run_waits_and_reuses(tmp_path: Path) -> None:
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_run, args=(str(tmp_path), 3.0)) for _ in range(2)]
    for p in procs:
        p.start()
        time.sleep(0.3)
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert len((tmp_path / "bodies.txt").read_text().split()) == 1  # the work ran once
    ids = (tmp_path / "records.txt").read_text().split()
    assert len(ids) == 2 and ids[0] == ids[1]
    assert not list((tmp_path / "runs" / "records" / "env").glob(".*.lock"))  # nothing left behind


def test_a_killed_holder_does_not_block(tmp_path: Path) -> None:
    ctx = mp.get_context("fork")
    holder = ctx.Process(target=_run, args=(str(tmp_path), 120.0))
    holder.start()
    deadline = time.time() + 30
    while time.time() < deadline and not (tmp_path / "bodies.txt").exists():
        time.sleep(0.05)
    os.kill(holder.pid, signal.SIGKILL)
    holder.join()
    assert not list(Store(tmp_path / "runs").records("env"))
    start = time.time()
    _run(str(tmp_path), 0.0)
    assert time.time() - start < 20
    assert len((tmp_path / "bodies.txt").read_text().split()) == 2 and len(list(Store(tmp_path / "runs").records("env"))) == 1


def test_a_failed_run_leaves_no_empty_artifact_folder(tmp_path: Path) -> None:
    def body(ctx):
        (ctx.work_dir / "sub").mkdir()
        raise RuntimeError("boom")

    try:
        execute("env", _cfg(tmp_path, work="fails"), body)
    except RuntimeError:
        pass
    assert not list((tmp_path / "runs" / "artifacts" / "env").glob("*"))
    assert not list(Store(tmp_path / "runs").records())
