"""The whole study: every output of the quick preset, resume after SIGKILL, re-render only."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import env_with, rlexp_cmd

pytestmark = pytest.mark.slow

FIGURES = ("fig_scatter", "fig_ndcg_bars", "fig_subset_pearson", "fig_bon_curves", "fig_ppo_lineage")


def _seed_store(src: Path, dst: Path) -> None:
    """A new store holding only the shared inputs (sandbox, lineages), as a user's cache would."""
    for task in ("data", "lineage"):
        for sub in ("records", "artifacts"):
            if (src / "runs" / sub / task).exists():
                shutil.copytree(src / "runs" / sub / task, dst / "runs" / sub / task)


def _study(root: Path, **kw) -> subprocess.Popen | subprocess.CompletedProcess:
    cmd = rlexp_cmd("study", "experiment=quick", "logger=none", "progress=false")
    env = env_with(RLEXP_ROOT=str(root))
    if kw.get("background"):
        return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)


def _report_dir(root: Path) -> Path:
    return next((root / "runs" / "artifacts" / "correlate").glob("*/report.md")).parent


def test_quick_study_outputs_and_resume(world: Path, rms: dict[str, str], tmp_path: Path) -> None:
    first = tmp_path / "uninterrupted"
    _seed_store(world, first)
    out = _study(first)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    report = _report_dir(first)
    for name in ("report.md", "table.csv", "correlations.csv", "correlations.md", "correlations.tex"):
        assert (report / name).stat().st_size > 0, name
    import matplotlib.image as mpimg

    for fig in FIGURES:
        png, pdf = report / f"{fig}.png", report / f"{fig}.pdf"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and mpimg.imread(png).size > 0
        assert pdf.read_bytes()[:4] == b"%PDF"
    assert "report:" in out.stdout

    # Killed mid-way and resumed: the same tables as the uninterrupted run.
    second = tmp_path / "resumed"
    _seed_store(first, second)  # the quick preset's own (lighter) lineages, built by the first run
    proc = _study(second, background=True)
    deadline = time.time() + 900
    while time.time() < deadline and proc.poll() is None:
        if len(list((second / "runs" / "records" / "evaluate").glob("*.json"))) >= 3:
            break
        time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (second / "runs" / "records" / "correlate").exists()
    done = _study(second)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (_report_dir(second) / "table.csv").read_text() == (report / "table.csv").read_text()
    assert (_report_dir(second) / "correlations.csv").read_text() == (report / "correlations.csv").read_text()

    # Finished: a rerun only re-renders (every step is a cache hit).
    start = time.time()
    again = _study(second)
    assert again.returncode == 0
    assert "wrote record" not in again.stdout + again.stderr
    assert time.time() - start < 120
