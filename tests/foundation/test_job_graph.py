"""The study's job graph: a job runs once the records it needs exist, failures skip only dependants,
known records are never dispatched, and two workers overlap what a staged run kept apart."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from rlexp.job_graph import Job, run_jobs


def _work(payload: tuple[str, float, str]) -> tuple[str | None, str | None]:
    """A worker job: sleep, append ``start``/``end`` lines to a log, fail when the name says so."""
    name, seconds, log = payload
    with open(log, "a") as fh:
        fh.write(f"start {name} {time.time()}\n")
    time.sleep(seconds)
    with open(log, "a") as fh:
        fh.write(f"end {name} {time.time()}\n")
    return (None, f"{name} broke") if name.startswith("bad") else (f"id-{name}", None)


def _die(payload: tuple[str, float, str]) -> tuple[str | None, str | None]:
    """A worker that dies (as one killed for memory would) on the job named ``die``."""
    import os

    if payload[0] == "die":
        os._exit(1)
    return _work(payload)


def _times(log: Path) -> dict[tuple[str, str], float]:
    return {(w, n): float(t) for w, n, t in (line.split() for line in log.read_text().splitlines())}


def _job(key: str, log: Path, seconds: float = 0.0, *needs: str) -> Job:
    return Job(key, needs, lambda ids, k=key: (f"{k}<{','.join(ids[n] for n in needs)}>" if needs else k, seconds, str(log)))


def test_a_job_waits_for_its_needs_and_gets_their_record_ids(tmp_path: Path) -> None:
    log = tmp_path / "log"
    jobs = [_job("c", log, 0.0, "a", "b"), _job("a", log), _job("b", log)]
    out = run_jobs(jobs, _work, 1)
    assert out["c"] == ("id-c<id-a,id-b>", None)
    t = _times(log)
    assert t[("start", "c<id-a,id-b>")] >= max(t[("end", "a")], t[("end", "b")])


def test_a_failure_skips_only_the_jobs_that_need_it(tmp_path: Path) -> None:
    log = tmp_path / "log"
    jobs = [_job("bad", log), _job("after_bad", log, 0.0, "bad"), _job("later", log, 0.0, "after_bad"), _job("ok", log)]
    out = run_jobs(jobs, _work, 2)
    assert out["bad"] == (None, "bad broke")
    assert out["after_bad"] == (None, "not run: bad failed")
    assert out["later"] == (None, "not run: after_bad failed")
    assert out["ok"] == ("id-ok", None)
    assert "after_bad" not in log.read_text()


def test_a_decided_job_is_not_dispatched_and_its_dependants_still_run(tmp_path: Path) -> None:
    log = tmp_path / "log"
    finished: list[str] = []
    out = run_jobs([_job("a", log), _job("b", log, 0.0, "a")], _work, 1,
                   decided=lambda payload: "cached-a" if payload[0] == "a" else None,
                   finished=lambda key, _payload, _result: finished.append(key))
    assert out == {"a": ("cached-a", None), "b": ("id-b<cached-a>", None)}
    assert finished == ["b"] and "start a " not in log.read_text()


def test_two_workers_start_a_dependant_while_another_long_job_runs(tmp_path: Path) -> None:
    """The point of the graph: ``short``'s dependant does not wait for ``long`` (no stage barrier)."""
    log = tmp_path / "log"
    jobs = [_job("long", log, 3.0), _job("short", log, 0.2), _job("next", log, 0.2, "short")]
    out = run_jobs(jobs, _work, 2)
    assert all(err is None for _, err in out.values())
    t = _times(log)
    assert t[("end", "next<id-short>")] < t[("end", "long")]


def test_listed_order_decides_among_ready_jobs(tmp_path: Path) -> None:
    log = tmp_path / "log"
    run_jobs([_job(k, log) for k in ("first", "second", "third")], _work, 1)
    assert [line.split()[1] for line in log.read_text().splitlines() if line.startswith("start")] == ["first", "second", "third"]


def test_bad_graphs_are_refused_or_reported(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with pytest.raises(ValueError, match="needs 'x', which is not a job"):
        run_jobs([_job("a", log, 0.0, "x")], _work, 1)
    with pytest.raises(ValueError, match="share a key"):
        run_jobs([_job("a", log), _job("a", log)], _work, 1)
    out = run_jobs([_job("a", log, 0.0, "b"), _job("b", log, 0.0, "a")], _work, 1)
    assert out["a"][1] == out["b"][1] == "not run: its needs wait on each other"


def test_a_worker_that_dies_fails_its_job_and_the_next_jobs_get_a_fresh_executor(tmp_path: Path) -> None:
    log = tmp_path / "log"
    out = run_jobs([_job("die", log), _job("after", log, 0.0, "die")], _die, 2)
    assert out["die"][0] is None and out["die"][1].startswith("worker failed")
    assert out["after"] == (None, "not run: die failed")
    again = run_jobs([_job("a", log), _job("b", log, 0.0, "a")], _die, 2)
    assert again == {"a": ("id-a", None), "b": ("id-b<id-a>", None)}


def test_worker_count_is_the_setting_or_what_the_machine_holds() -> None:
    """A set count is kept; null takes one worker per usable core, fewer where memory would not hold
    them (a worker the size of all memory: one)."""
    import joblib
    import psutil

    from rlexp.errors import ConfigError
    from rlexp.job_graph import worker_count

    assert worker_count(3) == 3
    assert 1 <= worker_count(None) <= joblib.cpu_count()
    assert worker_count(None, per_worker_gib=1e-6) == joblib.cpu_count()  # memory for any number: the cores
    assert worker_count(None, per_worker_gib=psutil.virtual_memory().total / 2**30) == 1
    with pytest.raises(ConfigError, match=r"study.n_jobs=0: needs at least 1 worker"):
        worker_count(0, "study.n_jobs")
