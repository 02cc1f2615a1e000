"""External results in `rlexp correlate`: the CSV format's checks, RewardBench 2's Table 8 correlated on its
own (the statistics pinned against scipy over the file's rows), and an external file beside store records."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from scipy import stats

import rlexp.config
from rlexp.analysis.external import read_external
from rlexp.errors import DataError
from rlexp.store import Store
from rlexp.tasks.correlate import run

from ..conftest import env_with, rlexp_cmd
from ._fake_study import EXP, build

TABLE8 = Path(__file__).resolve().parents[2] / "docs" / "reproductions" / "rb2_table8.csv"


def _cfg(*overrides: str):
    with initialize_config_dir(str(rlexp.config.CONF_DIR), version_base="1.3"):
        return compose("correlate", overrides=["logger=none", *overrides])


def _rows(path: Path) -> list[dict[str, str]]:
    """The file's rows read with the csv module alone (an independent reader of the transcription)."""
    lines = [ln for ln in path.read_text().splitlines() if not ln.startswith("#")]
    return list(csv.DictReader(lines))


def test_table8_transcription_has_the_papers_17_rms_in_its_groups() -> None:
    rows = _rows(TABLE8)
    assert len(rows) == 17
    assert [r["group"] for r in rows].count("on-policy") == 12  # 9 in-distribution + 3 with flipped labels
    assert [r["group"] for r in rows].count("off-policy") == 3 and [r["group"] for r in rows].count("ood-prompts") == 2
    assert [r["name"] for r in rows if r["mix"] == "flipped"] == ["on-policy-weak-1", "on-policy-weak-2", "on-policy-weak-3"]
    table = read_external(TABLE8)
    assert table.source.startswith("RewardBench 2 (Malik et al., arXiv 2506.01937 v1), appendix Table 8")
    assert table.rows["on-policy-1"]["rb2/overall"] == 68.7 and table.rows["on-policy-weak-3"]["ppo/tulu3_eval/score"] == 38.0


def test_correlate_reproduces_table8_correlations_as_scipy_computes_them() -> None:
    cfg = _cfg(f"external={TABLE8}", "n_boot=200")
    record = run(cfg)
    store = Store(cfg.paths.store)
    out = store.resolve(record.artifacts["report"]).parent
    rows = _rows(TABLE8)
    rb2 = np.array([float(r["rb2/overall"]) for r in rows])
    down = {"bon/rb2_suite/score": np.array([float(r["bon/rb2_suite/score"]) for r in rows]),
            "ppo/tulu3_eval/score": np.array([float(r["ppo/tulu3_eval/score"]) for r in rows])}
    corr = pd.read_csv(out / "correlations.csv")
    for col, y in down.items():
        got = corr[(corr["benchmark"] == "rb2/overall") & (corr["downstream"] == col)].set_index("statistic")
        assert got.at["pearson", "value"] == pytest.approx(stats.pearsonr(rb2, y).statistic, abs=1e-12)
        assert got.at["pearson", "pvalue"] == pytest.approx(stats.pearsonr(rb2, y).pvalue, rel=1e-9)
        assert got.at["spearman", "value"] == pytest.approx(stats.spearmanr(rb2, y).statistic, abs=1e-12)
        assert got.at["spearman", "pvalue"] == pytest.approx(stats.spearmanr(rb2, y).pvalue, rel=1e-9)
    # The paper's headline for BoN holds on its own table: Pearson 0.915 over the 17 RMs.
    assert stats.pearsonr(rb2, down["bon/rb2_suite/score"]).statistic == pytest.approx(0.915, abs=5e-4)

    # Page one: both pairs over the 17 RMs, then Pearson and Spearman within each of the paper's groups.
    text = (out / "report.md").read_text()
    page = text.split("\n# Appendices\n", 1)[0]
    assert "17 reward models of external results (RewardBench 2 (Malik et al." in page
    for col in down:
        assert f"| `rb2/overall` | `{col}` | 17 |" in page
    context = json.loads((out / "context.json").read_text())
    groups = {(g["downstream"], g["scope"]): g for g in context["external_groups"]}
    on = [r for r in rows if r["group"] == "on-policy"]
    x_on = [float(r["rb2/overall"]) for r in on]
    for col in down:
        y_on = [float(r[col]) for r in on]
        g = groups[(col, "on-policy")]
        assert g["n"] == 12
        assert g["pearson"]["value"] == pytest.approx(stats.pearsonr(x_on, y_on).statistic, abs=1e-12)
        assert g["spearman"]["value"] == pytest.approx(stats.spearmanr(x_on, y_on).statistic, abs=1e-12)
        assert g["pearson"]["ci"][0] is not None and g["pearson"]["pvalue"] == pytest.approx(stats.pearsonr(x_on, y_on).pvalue)
        assert groups[(col, "off-policy")]["n"] == 3 and "pvalue" not in groups[(col, "off-policy")]["spearman"] or \
            groups[(col, "off-policy")]["spearman"]["pvalue"] is None  # below 5 RMs: no p
        assert groups[(col, "ood-prompts")]["n"] == 2 and "pearson" not in groups[(col, "ood-prompts")]
    assert "## External results: over all their RMs and within each group" in page
    # Provenance: the file, its hash and its source; the record's inputs hold the content's hash.
    assert f"**External results:** 17 RMs from `{TABLE8}`" in text
    assert record.inputs == {"external": context["external"]["sha256"][:16]}


def test_an_edited_external_file_is_a_new_correlation(tmp_path: Path) -> None:
    path = tmp_path / "t8.csv"
    path.write_text(TABLE8.read_text())
    first = run(_cfg(f"external={path}", "n_boot=0"))
    assert run(_cfg(f"external={path}", "n_boot=0")).id == first.id  # the same content: found
    path.write_text(TABLE8.read_text().replace("on-policy-1,on-policy,tulu3_8b,,68.7", "on-policy-1,on-policy,tulu3_8b,,67.7"))
    assert run(_cfg(f"external={path}", "n_boot=0")).id != first.id


def test_external_rows_sit_beside_store_records(tmp_path: Path) -> None:
    cfg = _cfg(f"select_experiment={EXP}", "n_boot=0")
    study = build(Store(cfg.paths.store))
    path = tmp_path / "published.csv"
    path.write_text("# source: three published RMs, by hand\n"
                    "name,lineage,rb2/overall,bon/general/gain@16\n"
                    "pub-a,llama,0.61,0.020\npub-b,qwen,0.55,\npub-c,,0.70,0.031\n")
    record = run(_cfg(f"select_experiment={EXP}", f"external={path}", "n_boot=0"))
    out = Store(cfg.paths.store).resolve(record.artifacts["table"])
    table = pd.read_csv(out, index_col=0)
    assert set(study.rms) | {"pub-a", "pub-b", "pub-c"} == set(table.index)
    assert table.loc[["pub-a", "pub-b", "pub-c"], "external"].all() and not table.loc[list(study.rms), "external"].any()
    assert table.at["pub-a", "lineage"] == "llama" and np.isnan(table.at["pub-b", "bon/general/gain@16"])
    assert table.at["pub-c", "rb2/overall"] == 0.70
    context = json.loads((out.parent / "context.json").read_text())
    assert any(note.startswith("RM pub-b: no ") and "bon/general" in note for note in context["missing"])
    assert len(record.inputs) > 1 and "external" in record.inputs  # the records and the file


BAD = [
    ("name,rb2/overall\na,0.5\n", "no '# source: ...' line"),
    ("# source: x\nrm,rb2/overall\na,0.5\n", "the header has no 'name' column"),
    ("# source: x\nname,rb2/overal\na,0.5\n", ":2: unknown column 'rb2/overal'"),
    ("# source: x\nname,rb2/overall\na,0.5\na,0.6\n", ":4: name 'a' repeats line 3"),
    ("# source: x\nname,rb2/overall\na,high\n", ":3: column 'rb2/overall' must be a number, got 'high'"),
    ("# source: x\nname,rb2/overall\na,0.5,1\n", ":3: 3 cells, the header has 2"),
    ("# source: x\nname,lineage\na,llama\n", "no benchmark and no downstream column"),
    ("# source: x\nname,ppo/s/gain,ppo/s/lineage_match\na,0.1,maybe\n", "must be true or false, got 'maybe'"),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_a_bad_external_file_is_one_line_naming_file_and_line(text: str, message: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(DataError) as err:
        read_external(path)
    assert message in str(err.value) and str(path) in str(err.value) and "\n" not in str(err.value)


def test_the_cli_refuses_a_missing_external_file_in_one_line(tmp_path: Path) -> None:
    out = subprocess.run(rlexp_cmd("correlate", f"external={tmp_path / 'nowhere.csv'}", "logger=none"),
                         env=env_with(RLEXP_ROOT=str(tmp_path / "root")), capture_output=True, text=True, timeout=300)
    assert out.returncode == 2
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert lines[-1].startswith("rlexp correlate: error: external results") and "nowhere.csv" in lines[-1], out.stderr
    assert not (tmp_path / "root" / "runs" / "records").exists()
