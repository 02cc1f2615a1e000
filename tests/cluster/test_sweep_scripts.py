"""The stage-by-stage sweeps (launch/sweeps/*.sh): every stage of both papers is there, in order, on
the launcher LAUNCHER names, and every command composes (its first sweep value of each key), so a
renamed key or preset breaks this test rather than a researcher's cluster allocation.

The scripts run against an `rlexp` on PATH that logs its arguments (and answers `store ls --ids`
with two made-up record ids); each logged command is then composed by rlexp's own Hydra."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

SWEEPS = REPO / "launch" / "sweeps"
FAKE_RLEXP = """#!/usr/bin/env bash
printf '%s\\n' "$(printf '%q ' "$@")" >> "$RLEXP_FAKE_LOG"
if [ "$1" = store ] && [[ " $* " == *" --ids "* ]]; then echo 0123456789abcdef,fedcba9876543210; fi
"""


def _commands(script: str, launcher: str, tmp_path: Path) -> list[list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "rlexp").write_text(FAKE_RLEXP)
    (bin_dir / "rlexp").chmod(0o755)
    log = tmp_path / f"{script}.{launcher}.log"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "RLEXP_FAKE_LOG": str(log), "LAUNCHER": launcher}
    out = subprocess.run(["bash", str(SWEEPS / script)], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return [shlex.split(line) for line in log.read_text().splitlines()]


def _first_values(args: list[str]) -> tuple[list[str], list[str]]:
    """(task overrides with each sweep's first value, Hydra's own overrides)."""
    task, hydra = [], []
    for arg in args:
        if arg in ("-m", "--multirun"):
            continue
        key, _, value = arg.partition("=")
        (hydra if key.startswith("hydra") else task).append(f"{key}={value.split(',')[0]}")
    return task, hydra


@pytest.mark.parametrize(("script", "stages"), [
    ("sandbox_grid.sh", ["train_rm", "evaluate", "evaluate", "sample", "bon", "correlate"]),
    ("paper_rb2.sh", ["train_rm", "evaluate", "sample", "bon", "ppo", "correlate"]),
    ("paper_prb.sh", ["train_rm", "evaluate", "evaluate", "sample", "bon", "ppo", "correlate"]),
])
def test_every_stage_of_a_sweep_composes_on_slurm(script: str, stages: list[str], tmp_path: Path) -> None:
    from rlexp.runtime import compose_task

    commands = [c for c in _commands(script, "slurm", tmp_path) if c[0] != "store"]
    assert [c[0] for c in commands] == stages
    for command in commands:
        task, hydra = _first_values(command[1:])
        if command[0] != "correlate":
            assert "-m" in command and "hydra/launcher=slurm" in hydra, command
            if script != "sandbox_grid.sh" and command[0] in ("train_rm", "ppo"):  # a GPU job, sized per stage
                assert any(h.startswith("hydra.launcher.gpus_per_node=") and not h.endswith("=0") for h in hydra)
        cfg = compose_task(command[0], ["logger=none", *task])
        assert cfg.task_name == command[0]


def test_a_sweep_runs_on_this_machine_or_refuses_an_unknown_launcher(tmp_path: Path) -> None:
    joblib = [c for c in _commands("sandbox_grid.sh", "joblib", tmp_path) if c[0] == "train_rm"][0]
    assert "hydra/launcher=joblib_cpu" in joblib and not any(a.startswith("hydra.launcher.gpus") for a in joblib)
    basic = [c for c in _commands("paper_rb2.sh", "basic", tmp_path) if c[0] == "train_rm"][0]
    assert not any(a.startswith("hydra") for a in basic)
    out = subprocess.run(["bash", str(SWEEPS / "paper_prb.sh")], env={**os.environ, "LAUNCHER": "pbs"},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and out.stderr.strip() == "paper_prb.sh: LAUNCHER=pbs: expected slurm, joblib or basic"
