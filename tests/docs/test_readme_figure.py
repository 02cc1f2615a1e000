"""The README's key figure is the study's: `scripts/readme_figure.py` redraws the report's own benchmark-comparison
figure from a study's report, the committed PNG is the drawing of the committed rows with today's plotting code,
the README quotes those rows, and where this checkout holds a finished `sandbox_study` the rows are its."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir

import rlexp.config
from rlexp.analysis.columns import gain_columns
from rlexp.store import Store
from rlexp.tasks.correlate import run

from ..analysis._fake_study import EXP, build

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "docs" / "images"


def _script():
    spec = importlib.util.spec_from_file_location("readme_figure", ROOT / "scripts" / "readme_figure.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pixels(path: Path) -> np.ndarray:
    return mpimg.imread(path)


def _committed() -> dict:
    return json.loads((IMAGES / "benchmark_ranking.json").read_text())


def test_the_script_redraws_the_reports_own_figure(tmp_path: Path) -> None:
    """On a study's store (a fake study's records, a real correlate run): the script finds the report, and its
    figure is the report's fig_benchmark_ranking pixel for pixel, drawn from the report's own numbers."""
    with initialize_config_dir(str(rlexp.config.CONF_DIR), version_base="1.3"):
        cfg = compose("correlate", overrides=["logger=none", f"select_experiment={EXP}", "n_boot=50"])
    store = Store(cfg.paths.store)
    build(store)
    record = run(cfg)

    script = _script()
    png, sidecar = script.write(Path(cfg.paths.store), EXP, tmp_path / "images")
    drawn = json.loads(sidecar.read_text())
    assert drawn["correlate_record"] == record.id and drawn["experiment"] == EXP
    report_png = store.resolve(record.artifacts["fig_benchmark_ranking.png"])
    assert np.array_equal(_pixels(png), _pixels(report_png))

    # the rows are the report's correlations: every benchmark x downstream gain, NDCG and Spearman as computed
    corr = pd.read_csv(store.resolve(record.artifacts["correlations"])).set_index(["benchmark", "downstream", "statistic"])
    rows = drawn["rows"]
    table = pd.read_csv(store.resolve(record.artifacts["table"]), index_col=0)
    gains = set(gain_columns(table.columns))
    assert {r["downstream"] for r in rows} == gains and len(gains) >= 4
    for r in rows:
        assert r["spearman"] == corr.loc[(r["benchmark"], r["downstream"], "spearman"), "value"]
        assert r["ndcg"] == corr.loc[(r["benchmark"], r["downstream"], drawn["ndcg_statistic"]), "value"]
    # ranked by NDCG within each downstream gain
    for d in gains:
        mine = sorted((r for r in rows if r["downstream"] == d), key=lambda r: r["rank"])
        assert [r["ndcg"] for r in mine] == sorted((r["ndcg"] for r in mine), reverse=True)

    # no report of the experiment asked for: one line, no traceback
    with pytest.raises(SystemExit, match="no correlate record of experiment 'sandbox_study'"):
        script.write(Path(cfg.paths.store), "sandbox_study", tmp_path / "none")


def test_the_committed_figure_is_its_rows_drawn_today(tmp_path: Path) -> None:
    committed = _committed()
    assert committed["experiment"] == "sandbox_study"
    png = _script().draw(committed["rows"], tmp_path / "figure.png")
    old, new = _pixels(IMAGES / "benchmark_ranking.png"), _pixels(png)
    assert old.shape == new.shape, "the plotting code changed the figure: run `make study && make figure`"
    assert float(np.abs(old - new).mean()) < 1e-3, "the plotting code changed the figure: run `make figure`"


def test_the_readme_quotes_the_committed_figure() -> None:
    """The caption's numbers are the figure's: PRB (planner) first on personalized Best-of-N, its NDCG and chance."""
    rows = [r for r in _committed()["rows"] if r["downstream"] == "bon/personalized/gain@16"]
    best = min(rows, key=lambda r: r["rank"])
    assert best["benchmark"] == "prb/planner/accuracy"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    caption = readme[readme.index("![") : readme.index("## Contents")]
    assert f"NDCG {best['ndcg']:.2f}" in caption
    assert f"a\nrandom order scores {best['ndcg_chance']:.2f}" in caption or \
        f"random order scores {best['ndcg_chance']:.2f}" in caption.replace("\n", " ")


def test_the_readme_headline_table_is_the_figures_study() -> None:
    """Each row of the README's trimmed page-one table: ρ, its CI and NDCG with chance, as the figure's rows hold them."""
    by_pair = {(r["benchmark"], r["downstream"]): r for r in _committed()["rows"]}
    readme = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    rows = [line for line in readme if re.match(r"^\| `[^`]+` \| `(bon|ppo)/", line)]
    assert len(rows) == 8
    for line in rows:
        cells = [c.strip() for c in line.strip("|").split("|")]
        r = by_pair[(cells[0].strip("`"), cells[1].strip("`"))]
        lo, hi = r["spearman_ci"]
        assert cells[2] == f"{r['spearman']:.2f} [{lo:.2f}, {hi:.2f}]", line
        assert cells[4] == f"{r['ndcg']:.2f} (chance {r['ndcg_chance']:.2f})", line


def test_the_committed_figure_is_this_checkouts_study() -> None:
    """After `make study` here, the committed rows must be the study's (else: `make figure`)."""
    store = Store(ROOT / "runs")
    script = _script()
    try:
        record = script.newest_report(store, "sandbox_study")
    except SystemExit:
        pytest.skip("no finished sandbox_study in this checkout's store (runs/); `make study` makes one")
    rows, _ = script.rows_of(store, record)
    committed = _committed()["rows"]
    assert len(rows) == len(committed)
    for mine, theirs in zip(rows, committed, strict=True):
        for key in ("downstream", "benchmark", "rank"):
            assert mine[key] == theirs[key], "the study's ranking moved: run `make figure`"
        for key in ("ndcg", "spearman", "ndcg_chance"):
            assert mine[key] == pytest.approx(theirs[key], abs=1e-9), "the study's numbers moved: run `make figure`"
