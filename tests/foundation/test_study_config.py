"""`rlexp study` rejects a grid it cannot run before doing any work."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import rlexp_cmd


def _study(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(rlexp_cmd("study", "logger=none", *args), capture_output=True, text=True, timeout=120)


def test_empty_grid_is_one_line(root: Path) -> None:
    out = _study("study.mixes=[]")
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "study grid is empty" in out.stderr
    assert not (root / "runs").exists()


def test_bad_choice_in_a_later_stage_fails_before_the_first(root: Path) -> None:
    # PPO's stage comes last; its bad choice must not wait for the RMs to train.
    out = _study("study.overrides.ppo=['algorithm=bogus']")
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "bogus" in out.stderr and "ppo" in out.stderr
    assert not (root / "runs" / "records").exists()


def test_override_for_an_unknown_task_is_one_line(root: Path) -> None:
    out = _study("study.overrides.trian_rm=['data.max_rows=10']")
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "study.overrides.trian_rm" in out.stderr
    assert not (root / "runs").exists()
