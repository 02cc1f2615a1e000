"""`rlexp study ... study.dry_run=true`: the bill before any GPU work. Each paper preset's plan lists
every kind of step it would run, as many as the study would run, with the preset's cluster sizes; no
judge is probed and nothing is written."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import env_with, rlexp_cmd


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["paper_rb2", "paper_prb"])
def test_a_paper_plan_lists_its_steps_and_their_resources(preset: str, tmp_path: Path) -> None:
    from rlexp.runtime import compose_task
    from rlexp.tasks.study import StudyPlan, study_jobs

    out = subprocess.run(rlexp_cmd("study", f"experiment={preset}", "study.dry_run=true", "logger=none"),
                         env=env_with(RLEXP_ROOT=str(tmp_path)), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = {line.split()[0]: line.split()[1:] for line in out.stdout.splitlines()[2:] if line and line[0].isalpha()}
    cfg = compose_task("study", [f"experiment={preset}", "logger=none", "study.dry_run=true"])
    expected = Counter(j.key.split("/", 1)[0] for j in study_jobs(StudyPlan(cfg)))
    for kind, n in expected.items():
        res = cfg.study.resources[kind]
        steps, gpus, _, _, hours, gpu_hours = rows[kind]
        assert (int(steps), int(gpus), float(hours)) == (n, res.gpus, round(res.time_min / 60, 1)), kind
        assert float(gpu_hours) == pytest.approx(n * res.gpus * res.time_min / 60, abs=0.5)
    assert {"train_rm", "evaluate", "sample", "bon"} <= set(expected) and "correlate" in rows
    assert "nothing was run" in out.stdout
    assert not (tmp_path / "runs" / "records").exists()  # not even the sandbox
