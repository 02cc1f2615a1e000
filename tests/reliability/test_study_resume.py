"""The whole quick study: every output, page one, kill-and-resume at two points to identical tables,
the same record ids in two roots, and a cached rerun that only re-renders. (A second training seed is
checked without training: its steps in tests/foundation/test_study_config.py, its report in
tests/analysis/test_correlate.py.)"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import env_with, private_store, rlexp_cmd

pytestmark = pytest.mark.slow

FIGURES = ("fig_scatter", "fig_ndcg_bars", "fig_subset_pearson", "fig_bon_curves", "fig_ppo_lineage",
           "fig_benchmark_ranking")


def _study(root: Path, *extra: str, **kw) -> subprocess.Popen | subprocess.CompletedProcess:
    cmd = rlexp_cmd("study", "experiment=quick", "logger=none", "progress=false", *extra)
    env = env_with(RLEXP_ROOT=str(root))
    if kw.get("background"):
        return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)


def _report_dir(root: Path) -> Path:
    return next((root / "runs" / "artifacts" / "correlate").glob("*/report.md")).parent


def _check_page_one(text: str) -> None:
    """The report opens with the answer: question, grid, headline table with verdicts, key figure,
    findings; no record ids before the appendices."""
    page, appendices = text.split("\n# Appendices\n", 1)
    page, comparison = page.split("\n## Which benchmark predicts downstream best?\n", 1)
    # PRB's comparison: every benchmark (RB2, PRB per profile mode, the Arena/PRISM analogues) ranked
    # per downstream gain column.
    ranked = [line for line in comparison.splitlines() if line.startswith("| `")]
    assert len(ranked) == 5 * 4 and sum("Chatbot Arena-Personalized (history)" in r for r in ranked) == 4
    assert sum("PRISM-Personalized (history)" in r for r in ranked) == 4
    assert page.startswith("# Do benchmark scores predict downstream gains?")
    assert "**Question.**" in page and "**Grid.** 6 trained reward models" in page
    assert "`rb2/overall`" in page and "`prb/planner/accuracy` (PRB profile mode `planner`: downstream records)" in page
    table = [line for line in page.splitlines() if line.startswith("| `")]
    assert len(table) == 8  # 2 headline benchmarks x 4 gain columns (BoN and PPO on both prompt sets)
    assert all(re.search(r"\*\*(predicts|predicts inversely|no evidence|not testable \(n = \d+\))\*\*", line)
               for line in table)
    assert "not testable (n = 2)" in page  # 2 PPO RMs: no p-value, no verdict
    assert "![benchmark score vs downstream gain](fig_scatter.png)" in page
    findings = page.split("## Findings", 1)[1]
    assert 3 <= len(re.findall(r"^\d\. ", findings, flags=re.M)) <= 5
    assert not re.search(r"\b[0-9a-f]{16}\b", page)
    assert "## F. Provenance" in appendices and re.search(r"\b[0-9a-f]{16}\b", appendices)


def test_quick_study_outputs_and_resume(quick_study: tuple[Path, str], tmp_path: Path) -> None:
    # Its own store from nothing (the session's quick study, tests/conftest.py): the quick study builds
    # lighter lineages than the shared test world holds, so it starts at once instead of waiting for that world.
    first, stdout = quick_study
    report = _report_dir(first)
    for name in ("report.md", "table.csv", "correlations.csv", "correlations.md", "correlations.tex"):
        assert (report / name).stat().st_size > 0, name
    import matplotlib.image as mpimg

    for fig in FIGURES:
        png, pdf = report / f"{fig}.png", report / f"{fig}.pdf"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and mpimg.imread(png).size > 0
        assert pdf.read_bytes()[:4] == b"%PDF"
    assert "report:" in stdout
    _check_page_one((report / "report.md").read_text())

    # Killed twice (while training PPO, which runs first; then while evaluating), resumed each
    # time: the same tables as the uninterrupted run. The store starts with every record of the
    # first run but two PPO runs and two evaluations, as a killed study would have left it: enough
    # work left to be killed in twice, little enough not to redo half the study (a killed RM
    # training resumes from its checkpoint: tests/pipeline/test_train_rm_slow.py; a killed sampling
    # run: tests/pipeline/test_bon.py).
    second = tmp_path / "resumed"
    # Hard links, as a user's cache would share them: the store writes records by atomic rename and
    # the deleted records below are only unlinked, so the first store is left as it was.
    private_store(first, second, ("data", "lineage", "train_rm", "evaluate", "sample", "pool_scores", "bon", "ppo"))
    left = {task: sorted((second / "runs" / "records" / task).glob("*.json"))[:n] for task, n in (("ppo", 2), ("evaluate", 2))}
    for task, records in left.items():
        for record in records:
            record.unlink()
            shutil.rmtree(second / "runs" / "artifacts" / task / record.stem, ignore_errors=True)

    def count(task: str) -> int:
        return len(list((second / "runs" / "records" / task).glob("*.json")))

    for task in ("ppo", "evaluate"):
        at = count(task) + 1
        proc = _study(second, background=True)
        deadline = time.time() + 900
        while time.time() < deadline and proc.poll() is None and count(task) < at:
            time.sleep(0.3)
        assert proc.poll() is None, f"the study ended before {at} {task} records: no kill at this point"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        assert not (second / "runs" / "records" / "correlate").exists()
    done = _study(second)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (_report_dir(second) / "table.csv").read_text() == (report / "table.csv").read_text()
    assert (_report_dir(second) / "correlations.csv").read_text() == (report / "correlations.csv").read_text()

    # Two roots, one set of record ids: nothing hashes where the store lives (a PPO policy's pool
    # used to hash the policy's absolute path).
    def ids(root: Path) -> set[str]:
        return {str(p.relative_to(root / "runs" / "records")) for p in (root / "runs" / "records").glob("*/*.json")}

    assert ids(first) == ids(second), sorted(ids(first) ^ ids(second))
    assert not list((second / "runs" / "records").glob("*/.*.lock"))

    # Finished: a rerun only re-renders (every step is a cache hit).
    start = time.time()
    again = _study(second)
    assert again.returncode == 0
    assert "wrote record" not in again.stdout + again.stderr
    assert time.time() - start < 120
