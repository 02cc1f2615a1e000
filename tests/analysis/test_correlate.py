"""`rlexp correlate` end to end on a fake study written into the run store (no model anywhere)."""

from __future__ import annotations

import json
import math
import shutil
import time
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from scipy import stats

import rlexp.config
from rlexp.analysis import report
from rlexp.analysis.figures import FIGURES
from rlexp.analysis.markdown import fmt_num
from rlexp.analysis.ndcg import ndcg
from rlexp.analysis.records import collect
from rlexp.analysis.table import build_table
from rlexp.errors import ConfigError, DataError
from rlexp.store import Store
from rlexp.tasks.correlate import run

from ._fake_study import EXP, agreement, build, by_group, ppo_by_group

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MAIN = ("rb2/overall", "prb/none/accuracy", "prb/raw/accuracy")
GAINS = ("bon/personalized/gain@16", "bon/general/gain@16", "ppo/personalized/gain", "ppo/general/gain")


def _cfg(*overrides: str):
    with initialize_config_dir(str(rlexp.config.CONF_DIR), version_base="1.3"):
        return compose("correlate", overrides=["logger=none", *overrides])


def _store(cfg) -> Store:
    return Store(cfg.paths.store)


def _outputs(store: Store, record) -> Path:
    return store.resolve(record.artifacts["report"]).parent


def _check_png(path: Path) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, path
    image = mpimg.imread(path)
    assert image.ndim == 3 and image.shape[0] > 50 and image.shape[1] > 50, path
    assert float(np.ptp(image)) > 0, f"{path} is blank"


def _check_pdf(path: Path) -> None:
    data = path.read_bytes()
    assert data[:4] == b"%PDF", path
    assert len(data) > 1000 and b"%%EOF" in data[-64:], path


# -------------------------------------------------------------------------------------------------


def test_full_study_outputs_values_and_cache() -> None:
    cfg = _cfg(f"select_experiment={EXP}", "n_boot=50")
    store = _store(cfg)
    study = build(store)

    t0 = time.time()
    record = run(cfg)
    first_run_s = time.time() - t0
    out = _outputs(store, record)

    # every output exists; figures are valid PNG (readable back) and PDF
    for name in ("table.csv", "correlations.csv", "correlations.md", "correlations.tex", "report.md", "context.json"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    for fig in FIGURES:
        _check_png(out / f"{fig}.png")
        _check_pdf(out / f"{fig}.pdf")
        assert f"{fig}.png" in record.artifacts and f"{fig}.pdf" in record.artifacts

    # the table: one row per RM, the newest record of a duplicated cell, judge runs excluded
    table = pd.read_csv(out / "table.csv", index_col=0)
    assert sorted(table.index) == sorted(study.rms)
    for rm in study.rms:
        for col, value in study.expected[rm].items():
            assert table.at[rm, col] == pytest.approx(value, abs=1e-12), (rm, col)
    assert (table["rb2/overall"] > 0.1).all()  # the superseded evaluation (overall 0.01) is not used
    for col in ("lineage", "mix", "epochs", "lr", "checkpoint", "train_profile", "seed",
                "rb2/Factuality", "rb2/Ties", "prb/none/Society_and_Culture", "bon/general/ngain@16"):
        assert col in table.columns, col
    assert table["ppo/personalized/lineage_match"].tolist() == (table["lineage"] == "tiny_llama").tolist()

    # correlations equal scipy's on the table's columns
    corr = pd.read_csv(out / "correlations.csv")
    assert set(GAINS) <= set(corr["downstream"])
    for b in MAIN:
        for d in GAINS:
            x, y = table[b].to_numpy(float), table[d].to_numpy(float)
            rows = corr[(corr.benchmark == b) & (corr.downstream == d)].set_index("statistic")
            assert rows.loc["spearman", "value"] == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
            # n = 6: the exact permutation p, not scipy's t-approximation
            exact = stats.permutation_test((x,), lambda a, _y=y: stats.spearmanr(a, _y).statistic,
                                           permutation_type="pairings", n_resamples=np.inf).pvalue
            assert rows.loc["spearman", "pvalue"] == pytest.approx(exact, abs=1e-12)
            assert rows.loc["kendall", "value"] == pytest.approx(stats.kendalltau(x, y, variant="b").statistic, abs=1e-12)
            assert rows.loc["pearson", "value"] == pytest.approx(stats.pearsonr(x, y).statistic, abs=1e-12)
            for rel in ("rank", "minmax", "raw"):
                assert rows.loc[f"ndcg[{rel},linear]", "value"] == pytest.approx(ndcg(x, y, relevance=rel), abs=1e-12)
            assert (rows["n"] == 6).all()
            spear = rows.loc["spearman"]
            assert spear["ci_low"] <= spear["ci_high"] and spear["n_boot"] == 50
            # BoN gains have per-prompt results: a prompt-resampling CI as well
            assert math.isnan(spear["prompt_ci_low"]) == (not d.startswith("bon/"))
    # a structured signal: RB2 overall predicts personalized BoN gain in this fake study
    top = corr[(corr.benchmark == "rb2/overall") & (corr.downstream == "bon/personalized/gain@16")
               & (corr.statistic == "spearman")]
    assert float(top["value"].iloc[0]) > 0.5

    # record metrics: compact summary
    m = record.metrics
    assert m["n_rms"] == 6 and m["k"] == {"bon/general": 16, "bon/personalized": 16}
    s = m["settings"]["bon/personalized/gain@16"]
    assert s["rb2/overall"]["spearman"] == pytest.approx(float(top["value"].iloc[0]))
    assert s["prb"]["column"] == "prb/none/accuracy"  # declared (first PRB column), never the best by result
    assert m["n_duplicates"] == 2
    assert set(record.inputs.values()) == set(sum(study.records.values(), []))

    # the report: sections, embedded figures, records used, duplicates, judge upper bound
    text = (out / "report.md").read_text()
    assert text.startswith("# Do benchmark scores predict downstream gains?")
    for heading in ("## Findings", "# Appendices", "## A. Correlations", "## B. Headline pairs", "## C. Reward models",
                    "## D. Downstream detail", "## E. Figures", "## F. Provenance", "### Records used", "### Missing",
                    "### Upper bounds"):
        assert heading in text, heading
    for fig in FIGURES:
        assert f"![{fig}]({fig}.png)" in text
    for rid in sum(study.records.values(), []):
        assert rid in text
    assert "superseded" in text and "judge:rubric" in text
    assert "| 0.450 | [0.000, 0.900] | 0.400 | 0.850 |" in text  # a 0.0 bound stays a score, not "0"
    assert "**lineage** varies" in text and "**epochs** varies" in text
    tex = (out / "correlations.tex").read_text()
    assert r"\begin{tabular}" in tex and r"\toprule" in tex and r"Art\_and\_Entertainment" in tex
    md = (out / "correlations.md").read_text()
    assert "| rb2/overall | bon/personalized/gain@16 | 6 |" in md

    # second run: the record is found, nothing is recomputed
    mtime = store.record_path("correlate", record.id).stat().st_mtime_ns
    t0 = time.time()
    again = run(cfg)
    assert again.id == record.id and again.ended == record.ended
    assert store.record_path("correlate", record.id).stat().st_mtime_ns == mtime
    assert time.time() - t0 < max(1.0, first_run_s / 3)



def test_report_shows_bon_gain_by_prompt_group() -> None:
    cfg = _cfg(f"select_experiment={EXP}", "n_boot=0")
    store = _store(cfg)
    study = build(store)
    text = (_outputs(store, run(cfg)) / "report.md").read_text()
    section = text.split("### Best-of-N gain by prompt group", 1)[1].split("\n## ", 1)[0]
    assert "#### bon/general" in section and "#### bon/personalized" not in section  # only general has groups
    assert "fact (14 prompts)" in section and "math (10 prompts)" in section
    assert "RM–gold ρ" in section
    for i, _ in enumerate(study.rms):
        a = agreement(i)
        assert f"| {fmt_num(a['mean_spearman'])} ({a['prompts']} of {a['total_prompts']}) |" in section
        fact, math_ = by_group(i)["fact"], by_group(i)["math"]
        assert f"{fmt_num(fact['gain'])} [{fmt_num(fact['gain_ci'][0])}, {fmt_num(fact['gain_ci'][1])}]" in section
        assert f"{fmt_num(math_['gain'])} [{fmt_num(math_['gain_ci'][0])}," in section


def test_report_shows_ppo_gain_by_prompt_group() -> None:
    """The PPO records' per-group gains (only the general ones carry groups here, as records written before
    PPO kept them carry none) make one table per PPO column, every RM's gain and CI per group."""
    cfg = _cfg(f"select_experiment={EXP}", "n_boot=0")
    store = _store(cfg)
    study = build(store)
    out = _outputs(store, run(cfg))
    section = (out / "report.md").read_text().split("### PPO gain by prompt group", 1)[1].split("\n## ", 1)[0]
    assert "#### ppo/general" in section and "#### ppo/personalized" not in section
    header = next(line for line in section.splitlines() if line.startswith("| RM"))
    assert header.split("|")[2:4] == [" constraints (12 prompts) ", " safety (12 prompts) "]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| RM")]
    assert len(rows) == len(study.rms)
    for i, _ in enumerate(study.rms):
        for g in ppo_by_group(i).values():
            assert f"| {fmt_num(g['gain'])} [{fmt_num(g['gain_ci'][0])}, {fmt_num(g['gain_ci'][1])}] |" in section
    context = json.loads((out / "context.json").read_text())
    assert set(context["ppo_groups"]) == {"ppo/general/gain"} and len(context["ppo_groups"]["ppo/general/gain"]) == len(study.rms)


def test_two_training_seeds_report_per_seed_rho_and_the_seed_spread() -> None:
    """Every RM configuration trained with seeds 0 and 1 (the study's ``study.seeds=[0,1]``): the grid
    names both seeds, page one gives ρ per seed beside the pooled ρ and the seed-to-seed SD of the
    gains, and appendix B repeats each headline pair per seed."""
    cfg = _cfg(f"select_experiment={EXP}", "n_boot=0")
    store = _store(cfg)
    study = build(store, train_seeds=(0, 1))
    out = _outputs(store, run(cfg))
    table = pd.read_csv(out / "table.csv", index_col=0)
    assert len(study.rms) == 12 and sorted(table["seed"].unique()) == [0, 1]
    page, appendices = (out / "report.md").read_text().split("\n# Appendices\n", 1)
    assert "**Grid.** 12 trained reward models" in page and "2 seeds (0, 1)" in page
    assert "ρ per seed (range)" in page and "Seed-to-seed SD of the downstream gains" in page
    assert "| seed=0 |" in appendices and "| seed=1 |" in appendices


def test_report_says_whether_bon_gains_differ_beyond_prompt_noise() -> None:
    cfg = _cfg(f"select_experiment={EXP}", "n_boot=200")
    store = _store(cfg)
    build(store)
    record = run(cfg)
    study = build_table(collect(store, experiment=EXP))
    table = study.frame
    col = "bon/personalized/gain@16"
    d = record.metrics["gain_differences"][col]
    gains = pd.to_numeric(table[col], errors="coerce").dropna()
    assert d["rms"] == len(gains) and d["pairs"] == len(gains) * (len(gains) - 1) // 2
    assert d["best"]["gain"] == pytest.approx(gains.max()) and d["worst"]["gain"] == pytest.approx(gains.min())
    assert d["difference"] == pytest.approx(gains.max() - gains.min())
    assert d["difference_ci"][0] <= d["difference"] <= d["difference_ci"][1]
    assert 0 <= d["pairs_separated"] <= d["pairs"]
    text = (_outputs(store, record) / "report.md").read_text()
    section = text.split("### Do downstream gains differ across RMs?", 1)[1].split("\n### ", 1)[0]
    ci = d["difference_ci"]
    assert f"| {col} | {d['best']['label']} {fmt_num(d['best']['gain'])} |" in section
    assert f"{fmt_num(d['difference'])} [{fmt_num(ci[0])}, {fmt_num(ci[1])}]" in section
    assert f"{d['pairs_separated']} of {d['pairs']}" in section
    # The Friedman test over the same per-prompt gains, as scipy computes it.
    paths = study.context.per_prompt[col]
    matrix = []
    for rm in gains.index:
        (path,) = paths[str(rm)]  # one file: a BoN pool is not repeated over seeds
        rows = pd.read_parquet(path).sort_values("prompt_id")
        matrix.append((rows["bon@16"] - rows["bon_at_1"]).to_numpy())
    assert d["friedman"]["pvalue"] == pytest.approx(stats.friedmanchisquare(*matrix).pvalue)
    assert f"(p={d['friedman']['pvalue']:.2g})" in section


def test_fewer_than_three_rms_is_undefined_not_a_number() -> None:
    cfg0 = _cfg()
    store = _store(cfg0)
    study = build(store)
    two = study.rms[:2]
    # explicit records: each RM's profile-none evaluation (RB2 + PRB) and its personalized BoN
    ids = [rid for rm in two for rid in (study.by_rm[rm]["evaluate"][-2], study.by_rm[rm]["bon"][0])]
    cfg = _cfg(f"records=[{','.join(repr(i) for i in ids)}]", "n_boot=20")
    record = run(cfg)
    assert set(record.inputs.values()) == set(ids) | set(two)  # + the train_rm records (factors)
    out = _outputs(store, record)
    corr = pd.read_csv(out / "correlations.csv")
    assert len(corr) > 0 and (corr["n"] == 2).all()
    assert corr["value"].isna().all() and corr["ci_low"].isna().all() and corr["pvalue"].isna().all()
    assert corr["note"].str.contains("fewer than 3 RMs").all()
    # NDCG is computable for 2 items, but is reported as undefined too
    assert corr[corr.statistic.str.startswith("ndcg")]["value"].isna().all()
    md = (out / "correlations.md").read_text()
    assert "n/a" in md and "fewer than 3 RMs" in md
    s = record.metrics["settings"]["bon/personalized/gain@16"]["rb2/overall"]
    assert s["spearman"] is None and s["ndcg"] is None and s["n"] == 2
    for fig in FIGURES:
        _check_png(out / f"{fig}.png")

    # re-rendering from the written files alone (no store, no model) redraws everything in seconds
    shutil.rmtree(store.root / "records")
    for fig in FIGURES:
        (out / f"{fig}.png").unlink()
    (out / "report.md").unlink()
    t0 = time.time()
    paths = report.render(out)
    assert time.time() - t0 < 20
    for fig in FIGURES:
        _check_png(paths[f"{fig}.png"])
    assert "fewer than 3 RMs" in paths["report"].read_text()


def test_empty_study_is_a_clear_error() -> None:
    cfg = _cfg("select_experiment=no_such_study")
    build(_store(cfg))
    with pytest.raises(DataError, match=r"no records for study experiment 'no_such_study'") as err:
        run(cfg)
    assert "\n" not in str(err.value)
    assert not list((_store(cfg).root / "records").glob("correlate/*.json"))


def test_only_train_rm_records_is_a_clear_error() -> None:
    cfg = _cfg(f"select_experiment={EXP}")
    store = _store(cfg)
    study = build(store, downstream=False)
    for task in ("evaluate",):
        for rid in study.records[task]:
            store.record_path(task, rid).unlink()
    with pytest.raises(DataError, match=r"no records for study .*6 train_rm record"):
        run(cfg)


def test_incompatible_benchmark_data_is_a_clear_error() -> None:
    cfg = _cfg("select_experiment=mixed")
    store = _store(cfg)
    build(store, experiment="mixed", downstream=False, tag="a",
          specs=(("tiny_llama", "general", 1.0, 1e-3, 0.5), ("tiny_llama", "general", 2.0, 1e-3, 0.6)))
    build(store, experiment="mixed", rb2_data="data-rb2-OTHER", downstream=False, duplicate=False, tag="b",
          specs=(("tiny_qwen", "personal", 2.0, 1e-3, 0.7), ("tiny_qwen", "personal", 3.0, 1e-3, 0.65)))
    with pytest.raises(DataError, match=r"incompatible benchmarks: rb2 scores come from different rb2 data") as err:
        run(cfg)
    msg = str(err.value)
    assert "data-rb2-OTHER" in msg and "data-rb2-aaaaaaaa" in msg and "\n" not in msg


def test_records_selection_k_and_profile_modes() -> None:
    cfg0 = _cfg()
    store = _store(cfg0)
    study = build(store)
    ids = [rid for task in ("evaluate", "bon") for rid in study.records[task]]
    collection = collect(store, record_ids=ids)
    table = build_table(collection, k=4, profile_modes=["raw"]).frame
    assert "bon/personalized/gain@4" in table and "bon/personalized/gain@16" not in table
    assert "prb/raw/accuracy" in table and "prb/none/accuracy" not in table
    assert not any(c.startswith("ppo/") for c in table.columns)
    assert table["lineage"].notna().all()  # factors come from the train_rm records even when not selected
    with pytest.raises(DataError, match="not found"):
        collect(store, record_ids=["ffffffffffffffff"])
    with pytest.raises(ConfigError):
        run(_cfg("records=[a]", "rms=[b]"))
    # A choice field is an enum: Hydra rejects a bad value when composing, before any record is read.
    with pytest.raises(ConfigCompositionException, match="profile_modes"):
        _cfg(f"select_experiment={EXP}", "profile_modes=[rawr]")


def test_no_downstream_draws_empty_figures() -> None:
    cfg = _cfg(f"select_experiment={EXP}", "n_boot=0")
    store = _store(cfg)
    build(store, downstream=False)
    record = run(cfg)
    out = _outputs(store, record)
    for fig in FIGURES:
        _check_png(out / f"{fig}.png")
        _check_pdf(out / f"{fig}.pdf")
    text = (out / "report.md").read_text()
    assert "no bon/" not in text  # no downstream column at all: nothing is 'missing' per RM
    assert record.metrics["settings"] == {}


def test_two_policies_split_the_downstream_setting() -> None:
    from dataclasses import replace

    cfg = _cfg()
    store = _store(cfg)
    study = build(store)
    for rm in study.rms[:3]:  # BoN of three RMs with a second policy: its own column, never mixed
        rec = store.get(study.by_rm[rm]["bon"][0], "bon")
        assert rec.config["prompts"]["name"] == "personalized"
        store.put(replace(rec, id=rec.id[::-1], info={**rec.info, "policy_lineage": "tiny_qwen"},
                          inputs={**rec.inputs, "pool": "pool-qwen"}))
    study = build_table(collect(store, experiment=EXP), k=None, profile_modes=None)
    table = study.frame
    assert "bon/personalized[tiny_llama]/gain@16" in table and "bon/personalized[tiny_qwen]/gain@16" in table
    assert "bon/personalized/gain@16" not in table
    assert table["bon/personalized[tiny_qwen]/gain@16"].notna().sum() == 3
    assert table["bon/personalized[tiny_llama]/gain@16"].notna().sum() == 6
    assert "bon/general/gain@16" in table  # one policy there: no suffix
    context = study.context
    assert not [d for d in context.duplicates if d["column"].startswith("bon/")] and not context.warnings


def test_figures_are_logged_to_wandb_as_images() -> None:
    cfg = _cfg(f"select_experiment={EXP}", "n_boot=0", "logger=wandb", "logger.mode=offline")
    store = _store(cfg)
    build(store)
    record = run(cfg)
    images = list((Path(cfg.paths.output_root) / "correlate").rglob("offline-run-*/files/media/images/figures/*.png"))
    assert {next(f for f in FIGURES if p.name.startswith(f + "_")) for p in images} == set(FIGURES)
    assert record.metrics["headline"]  # page one's rows are in the record too


def test_benchmark_comparison_table_ranks_every_benchmark_per_downstream() -> None:
    """PRB's comparison: RB2, PRB and the Arena/PRISM columns ranked by NDCG per downstream gain, with
    chance level, Spearman and Kendall CIs; the ranks follow correlations.csv; the figure is drawn."""
    cfg = _cfg(f"select_experiment={EXP}", "n_boot=50")
    store = _store(cfg)
    study = build(store, comparison=True)
    record = run(cfg)
    out = _outputs(store, record)
    table = pd.read_csv(out / "table.csv", index_col=0)
    for rm in study.rms:
        for col in ("arena/history/accuracy", "prism/history/accuracy"):
            assert table.at[rm, col] == pytest.approx(study.expected[rm][col], abs=1e-12)
    corr = pd.read_csv(out / "correlations.csv")
    # The table's NDCG is the definition that reproduces PRB's published values (first in the config).
    ndcg = corr[(corr["statistic"] == "ndcg[prb,exp2]") & corr["main"].astype(bool)]
    text = (out / "report.md").read_text()
    section = text.split("## Which benchmark predicts downstream best?")[1].split("\n## ")[0].split("\n---\n")[0]
    assert "NDCG `ndcg[prb,exp2]` (chance level, null p)" in section
    benches = ["RewardBench 2", "Personalized RewardBench (none)", "Personalized RewardBench (raw)",
               "Chatbot Arena-Personalized (history)", "PRISM-Personalized (history)"]
    for d in GAINS:
        rows = [ln for ln in section.splitlines() if ln.startswith(f"| `{d}` |")]
        assert sorted(r.split(" | ")[2] for r in rows) == sorted(benches), d
        assert [int(r.split(" | ")[1]) for r in rows] == list(range(1, len(benches) + 1))
        # The ranking is NDCG's: each row's NDCG is at least the next one's.
        values = [float(r.split(" | ")[4].split(" ")[0]) for r in rows]
        assert values == sorted(values, reverse=True)
        best = ndcg[ndcg["downstream"] == d].sort_values("value", ascending=False).iloc[0]
        assert f"{best['value']:.2f} (chance {best['null_mean']:.2f}" in rows[0]
        assert all("[" in r.split(" | ")[6] and "[" in r.split(" | ")[7] for r in rows)  # ρ and τ with CIs
    # arena tracks the RMs' quality, as the downstream gains do; prism is noise: arena ranks above prism.
    bon = [ln for ln in section.splitlines() if ln.startswith("| `bon/personalized/gain@16` |")]
    names = [r.split(" | ")[2] for r in bon]
    assert names.index("Chatbot Arena-Personalized (history)") < names.index("PRISM-Personalized (history)")
    _check_png(out / "fig_benchmark_ranking.png")
    assert "fig_benchmark_ranking.png" in section


def test_report_compares_same_and_other_lineage_ppo_gains() -> None:
    cfg = _cfg(f"select_experiment={EXP}", "n_boot=200")
    store = _store(cfg)
    build(store)
    record = run(cfg)
    table = build_table(collect(store, experiment=EXP)).frame
    text = (_outputs(store, record) / "report.md").read_text()
    for col in ("ppo/personalized/gain", "ppo/general/gain"):
        d = record.metrics["ppo_lineage"][col]
        setting = col.rsplit("/", 1)[0]
        kept = table[~table["mix"].isin(["flipped"])]  # the study's control mix is left out
        gains = pd.to_numeric(kept[col], errors="coerce")
        same = gains[kept[f"{setting}/lineage_match"].astype(bool)]
        other = gains[~kept[f"{setting}/lineage_match"].astype(bool)]
        assert sorted(d["same"]["rms"]) == sorted(map(str, same.index)) and len(same) >= 1 and len(other) >= 1
        # Per-prompt gains average to each RM's gain, so the group means are the means of the RMs' gains.
        assert d["same"]["gain"] == pytest.approx(same.mean()) and d["other"]["gain"] == pytest.approx(other.mean())
        assert d["difference"] == pytest.approx(same.mean() - other.mean())
        for g in (d["same"], d["other"]):
            assert g["ci"][0] <= g["gain"] <= g["ci"][1]
        # The fake study's other-lineage RMs lose 0.12: the paired CI sees it.
        assert d["difference_ci"][0] > 0
        # The PPO columns are in the differences table too (paired over the held-out prompts).
        assert record.metrics["gain_differences"][col]["rms"] == pd.to_numeric(table[col], errors="coerce").notna().sum()
    section = text.split("### PPO: an RM of the policy's lineage vs one of another lineage", 1)[1].split("\n### ", 1)[0]
    # Each PPO run's proxy (its RM's score) before and after, beside its gold gain; counted from the records.
    proxy = text.split("### PPO: the reward model's score vs the gold", 1)[1].split("\n### ", 1)[0]
    runs = [r for r in collect(store, experiment=EXP).results if r.task == "ppo" and not r.config["rm"].startswith("judge:")]
    rose = sum(r.metrics["proxy_after"] > r.metrics["proxy_before"] for r in runs)
    above, below = sum(r.metrics["gain_ci"][0] > 0 for r in runs), sum(r.metrics["gain_ci"][1] < 0 for r in runs)
    assert 0 < rose < len(runs)
    assert f"The proxy rose in {rose} of {len(runs)} runs; the gold gain's CI is above 0 in {above} and below 0 in {below}." in proxy
    for r in runs:
        m = r.metrics
        assert (f"| {fmt_num(m['proxy_before'])} → {fmt_num(m['proxy_after'])} | {fmt_num(m['proxy_after'] - m['proxy_before'])} | "
                f"{fmt_num(m['gain'])} [{fmt_num(m['gain_ci'][0])}, {fmt_num(m['gain_ci'][1])}] | {fmt_num(m['final_kl'])} |") in proxy
    d = record.metrics["ppo_lineage"]["ppo/general/gain"]
    assert f"| ppo/general/gain | {fmt_num(d['same']['gain'])} [{fmt_num(d['same']['ci'][0])}, " in section


def test_ppo_runs_over_training_seeds_are_pooled_per_prompt() -> None:
    """Every PPO run and the upper bound with seeds 0, 1 and 2 (the study's ``study.ppo_seeds``), plus an
    older run of one seed: each RM's PPO cell pools its three seeds, per prompt, into one gain with a CI
    over prompts; the older run of a seed is superseded, no seed is; the correlations, the RMs'
    gain differences and the upper bound read the pooled gains; appendix D shows each seed's gain."""
    from rlexp.analysis.bootstrap import bootstrap_ci
    from rlexp.analysis.replicates import per_prompt_gains
    from tests.analysis._fake_study import _Clock, _record

    cfg = _cfg(f"select_experiment={EXP}", "n_boot=200")
    store = _store(cfg)
    study = build(store, ppo_seeds=(0, 1, 2))
    rm0 = study.rms[0]
    # An older run of seed 1 for the first RM (ended before every other record): superseded by the newer one.
    clock = _Clock()
    clock.t -= 10_000
    old = _record("ppo", ("old-ppo", 1), clock, config={"rm": rm0, "prompts": {"name": "general"}, "algorithm": "ppo",
                                                       "model": {"lineage": "tiny_llama"}, "seed": 1},
                  inputs={"policy": "pol", "rm": rm0, "train_prompts": "t-general", "baseline_pool": "base-general-s1"},
                  metrics={"gain": 9.0, "gain_ci": [8.0, 10.0]}, info={"judge": {"name": "verifier"}, "policy_lineage": "tiny_llama"})
    study.add(old, rm0)
    out = _outputs(store, run(cfg))
    table = pd.read_csv(out / "table.csv", index_col=0)
    context = json.loads((out / "context.json").read_text())
    for rm in study.rms:
        for col in ("ppo/general/gain", "ppo/personalized/gain"):
            seeds = study.ppo_seed_gains[rm][col]
            assert table.at[rm, col] == pytest.approx(np.mean(seeds), abs=1e-12)
            assert context["ppo_seeds"][col][rm] == {"seeds": [0, 1, 2], "gains": pytest.approx(seeds)}
            files = context["per_prompt"][col][rm]
            assert len(files) == 3
            pooled = per_prompt_gains(files).to_numpy()
            assert list(context["gain_ci"][col][rm]) == pytest.approx(list(bootstrap_ci(pooled, n_boot=1000, seed=0)))
    assert [d["superseded"] for d in context["duplicates"] if d["task"] == "ppo"] == [old.id]
    # The upper bound: one line for the three judge runs, their pooled gain.
    (upper,) = context["upper_bounds"]
    assert upper["gain"] == pytest.approx(np.mean([0.45, 0.46, 0.47]), abs=1e-12) and upper["seeds"]["seeds"] == [0, 1, 2]
    # Correlations and the gain differences use the pooled gains.
    corr = pd.read_csv(out / "correlations.csv")
    row = corr[(corr["benchmark"] == "rb2/overall") & (corr["downstream"] == "ppo/general/gain") & (corr["statistic"] == "spearman")]
    expected = stats.spearmanr(table["rb2/overall"], table["ppo/general/gain"]).statistic
    assert float(row["value"].iloc[0]) == pytest.approx(expected)
    best = context["gain_differences"]["ppo/general/gain"]["best"]
    assert best["gain"] == pytest.approx(table["ppo/general/gain"].max()) and best["rm"] == table["ppo/general/gain"].idxmax()
    report_md = (out / "report.md").read_text()
    # Page one reads the PPO seeds' spread against the pooled CI (no RM was trained over seeds here).
    page = report_md.split("\n# Appendices\n", 1)[0]
    assert "`ppo/general/gain`" in page.split("Seed-to-seed SD of the downstream gains", 1)[1] and "(6 configurations × 3 seeds)" in page
    assert "| training seeds |" in report_md and "3: " + " / ".join(fmt_num(g) for g in study.ppo_seed_gains[rm0]["ppo/general/gain"]) in report_md
