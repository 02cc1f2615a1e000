"""A real Hydra multirun with the joblib launcher; W&B offline runs land in the job's folder."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from tests.conftest import env_with, rlexp_cmd


def test_joblib_multirun_writes_two_records(root: Path) -> None:
    out = subprocess.run(
        rlexp_cmd("env", "-m", "seed=1,2", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "logger=none"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    records = list((root / "runs" / "records" / "env").glob("*.json"))
    assert len(records) == 2
    # Sweep subdirs follow override_dirname with the seed appended separately.
    jobs = sorted(p.parent.name for p in (root / "outputs" / "env" / "multiruns").rglob("metrics.json"))
    assert jobs == ["seed=1", "seed=2"]


def test_wandb_offline_run_inside_output_folder(root: Path) -> None:
    out = subprocess.run(
        rlexp_cmd("env", "logger=wandb"), capture_output=True, text=True, timeout=300, env=env_with(WANDB_MODE="offline")
    )
    assert out.returncode == 0, out.stderr
    runs = list((root / "outputs" / "env" / "runs").rglob("offline-run-*"))
    assert len(runs) == 1
    job_dir = runs[0].parent.parent
    assert (job_dir / "metrics.json").exists() and (job_dir / ".hydra" / "config.yaml").exists()


def test_unset_wandb_mode_does_not_block(root: Path) -> None:
    env = env_with(WANDB_API_KEY="x" * 40)
    env.pop("WANDB_MODE", None)
    start = time.time()
    out = subprocess.run(rlexp_cmd("env", "logger=wandb"), capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    assert time.time() - start < 60
    assert list((root / "outputs").rglob("offline-run-*"))
    # The API key never reaches the record.
    rec = next((root / "runs" / "records" / "env").glob("*.json")).read_text()
    assert "x" * 40 not in rec
