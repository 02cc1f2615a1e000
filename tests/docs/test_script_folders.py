"""perf/ holds speed benchmarks only and experiments/ the research scripts, each listed in its folder's README;
a research script runs from its new home on a study's store."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rlexp.analysis.records import factors
from rlexp.store import Store

from ..analysis._fake_study import build

ROOT = Path(__file__).resolve().parents[2]


def _scripts(folder: str) -> set[str]:
    return {p.name for p in (ROOT / folder).glob("*.py") if not p.name.startswith("_")}


@pytest.mark.parametrize("folder", ["perf", "experiments"])
def test_every_script_is_listed_in_its_folders_readme(folder: str) -> None:
    readme = (ROOT / folder / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"(\w+\.py)", readme))
    assert _scripts(folder) <= listed, f"{folder}/README.md does not list {_scripts(folder) - listed}"


def test_research_scripts_left_perf() -> None:
    """Nothing in perf/ calls itself 'not a speed figure'; the research scripts live in experiments/."""
    for name in _scripts("perf"):
        assert "not a speed figure" not in (ROOT / "perf" / name).read_text(encoding="utf-8").lower(), name
    assert {"ppo_seeds.py", "ppo_by_length.py", "personal_ceiling.py", "personal_rm_dims.py"} <= _scripts("experiments")


def test_ppo_seeds_runs_from_experiments_on_a_studys_store(tmp_path: Path) -> None:
    """experiments/ppo_seeds.py on a store of three PPO seeds per RM: each seed's gain, as the records hold them."""
    root = tmp_path / "study"
    study = build(Store(root / "runs"), ppo_seeds=(0, 1, 2))
    done = subprocess.run([sys.executable, str(ROOT / "experiments" / "ppo_seeds.py")], cwd=tmp_path,
                          env={**os.environ, "RLEXP_ROOT": str(root)}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    store = Store(root / "runs")
    for rm, columns in study.ppo_seed_gains.items():
        f = factors(store.get(rm, "train_rm"))
        label = f"{f['lineage']} {f['mix']} e{float(f['epochs']):g}"
        for column, gains in columns.items():
            prompts = column.split("/")[1]
            row = next(line for line in lines if line.startswith(prompts) and f" {label} " in line)
            shown = " / ".join(f"{g:+.3f}" for g in gains)
            assert shown in row, (row, shown)
    assert any("Friedman" in line for line in lines)
