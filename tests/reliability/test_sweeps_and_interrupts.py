"""Sweeps, Ctrl-C and a full disk end in one line too (reliability, round two, group 4).

A sweep runs every job it can and then exits 2 when one failed, its last line counting them; a value
too long for a folder name no longer stops the jobs after it; Ctrl-C during a study is one line and
exit code 130, with no worker left running; a disk that fills up during `rlexp data` is one line and
exit code 2, with no record and no artifact folder. The sweeps run the console entry in this process
(as tests/reliability/test_bad_inputs.py); Ctrl-C and the full disk need a process of their own.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from rlexp.runtime import quote
from rlexp.store import Store
from tests.conftest import env_with, private_store, rlexp_cmd
from tests.reliability.test_bad_inputs import _run_cli

INTERRUPTED = "rlexp study: interrupted (rerun the same command to resume)"


def _records(root: Path, task: str) -> list[str]:
    return sorted(p.stem for p in (root / "runs" / "records" / task).glob("*.json"))


def _lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.strip()]


def test_a_sweep_whose_jobs_all_fail_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, stderr = _run_cli(["evaluate", "-m", "rm=ffffffffffffffff,eeeeeeeeeeeeeeee", "logger=none"],
                            {"RLEXP_ROOT": str(tmp_path)}, capsys)
    errors = [ln for ln in _lines(stderr) if ln.startswith("rlexp")]
    assert code == 2, stderr[-2000:]
    assert "Traceback" not in stderr
    assert len(errors) == 3 and "ffffffffffffffff" in errors[0] and "eeeeeeeeeeeeeeee" in errors[1], errors
    assert _lines(stderr)[-1].startswith("rlexp evaluate: error: 2 of 2 sweep jobs failed"), stderr[-1000:]
    assert not _records(tmp_path, "evaluate")


@pytest.mark.slow
def test_a_bad_job_in_the_middle_of_a_sweep_keeps_the_others_and_exits_2(
        world_root: Path, rms: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = private_store(world_root, tmp_path / "root")
    good = [rms["llama_general"], rms["qwen_general"]]
    sweep = f"rm={quote(good[0])},ffffffffffffffff,{quote(good[1])}"
    code, stderr = _run_cli(["evaluate", "-m", sweep, "benchmark=rb2", "benchmark.rb2.limit=4", "logger=none",
                             "progress=false"], {"RLEXP_ROOT": str(root)}, capsys)
    assert code == 2, stderr[-2000:]
    assert "Traceback" not in stderr
    assert _lines(stderr)[-1].startswith("rlexp evaluate: error: 1 of 3 sweep jobs failed"), stderr[-1000:]
    # The good jobs, before and after the bad one, wrote their records.
    store = Store(root / "runs")
    rms_scored = sorted(store.get(rid, "evaluate").inputs["rm"] for rid in _records(root, "evaluate"))
    assert rms_scored == sorted(good)


def test_a_sweep_value_too_long_for_a_folder_name_stops_no_job(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    code, stderr = _run_cli(["env", "-m", f"note=a,{'y' * 300},b", "logger=none"], {"RLEXP_ROOT": str(tmp_path)},
                            capsys)
    assert code == 0, stderr[-2000:]
    assert "Traceback" not in stderr
    assert len(_records(tmp_path, "env")) == 3
    # Each job has a folder of its own, the long one cut to the filesystem's 255 bytes.
    jobs = [p.parent for p in (tmp_path / "outputs" / "env" / "multiruns").rglob(".hydra")]
    assert len(jobs) == 3 and all(len(p.name.encode()) <= 255 for job in jobs for p in (job, job.parent))


def _read_lines(stream: object, into: list[str]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        into.append(line)


@pytest.mark.slow
def test_ctrl_c_during_a_study_is_one_line_and_exit_130(world_root: Path, rms: dict[str, str],
                                                         tmp_path: Path) -> None:
    root = private_store(world_root, tmp_path / "root")
    # Its own session, so that Ctrl-C reaches the study and its worker processes, as from a terminal.
    proc = subprocess.Popen(
        rlexp_cmd("study", "experiment=quick", "logger=none", "progress=false", "study.n_jobs=2"),
        env=env_with(RLEXP_ROOT=str(root)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    out: list[str] = []  # Hydra's log lines
    lines: list[str] = []
    readers = [threading.Thread(target=_read_lines, args=(stream, into), daemon=True)
               for stream, into in ((proc.stdout, out), (proc.stderr, lines))]
    for reader in readers:
        reader.start()
    deadline = time.time() + 240
    while not any("worker process(es)" in ln for ln in out) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    time.sleep(5)  # the workers are running steps
    assert proc.poll() is None, "".join(lines)[-2000:]
    os.killpg(proc.pid, signal.SIGINT)
    # 180 s, not 60: with the SLURM study test running beside it on CI's 2 cores, the interrupted study once
    # took over 60 s to exit (fresh CI, 2026-12-07; alone it exits in seconds). Speed is not what is tested.
    try:
        proc.wait(timeout=180)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        pytest.fail("the study did not exit within 180 s of Ctrl-C; its stderr ends:\n" + "".join(lines)[-2000:])
    finally:
        for reader in readers:
            reader.join(timeout=10)
    stderr = "".join(lines)
    assert proc.returncode == 130, stderr[-2000:]
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr[-3000:]
    assert _lines(stderr)[-1] == INTERRUPTED
    # No worker outlives the study: the whole process group is gone.
    for _ in range(50):
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        pytest.fail("a process of the interrupted study is still running")


def _small_file_limit() -> None:
    """In the child: writes past 256 KiB fail with EFBIG (a full disk's stand-in without root: a tiny
    tmpfs gives ENOSPC the same way) instead of killing the process with SIGXFSZ."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, 256 * 1024))


@pytest.mark.skipif(not hasattr(resource, "RLIMIT_FSIZE"), reason="no file size limit on this platform")
def test_full_disk_during_data_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    root = tmp_path / "root"
    done = subprocess.run(rlexp_cmd("data", "logger=none", "progress=false"), env=env_with(RLEXP_ROOT=str(root)),
                          capture_output=True, text=True, preexec_fn=_small_file_limit, timeout=600)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert _lines(done.stderr)[-1] == (f"rlexp data: error: file too large while writing under {root}: free some space "
                                       "(or raise the limit) and rerun the same command")
    assert not _records(root, "data")
    artifacts = root / "runs" / "artifacts" / "data"
    assert not artifacts.exists() or not any(artifacts.iterdir()), sorted(map(str, artifacts.rglob("*")))[:5]
