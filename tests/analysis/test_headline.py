"""Page one's statistics on a fabricated RM table: declared columns, controls, strata, seeds, verdicts."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rlexp.analysis.correlation import spearman_exact_p
from rlexp.analysis.correlation_table import correlation_table
from rlexp.analysis.front_page import page_one
from rlexp.analysis.headline import headline_spec, seed_spread, subgroup_correlations, summarise, verdict
from rlexp.analysis.study_table import ColumnRoles, StudyContext, StudyTable

BENCH, DOWN = "rb2/overall", "bon/personalized/gain@16"


def _table(seeds: tuple[int, ...] = (0,)) -> pd.DataFrame:
    """Six working RMs whose benchmark says nothing about their gain, and three flipped controls that are
    worst on both: across all nine RMs the benchmark 'predicts', without the controls it does not."""
    rng = np.random.default_rng(7)
    rows = []
    specs = [("tiny_llama", "general"), ("tiny_qwen", "general"), ("tiny_llama", "personal"),
             ("tiny_qwen", "personal"), ("tiny_llama", "general"), ("tiny_qwen", "personal")]
    good_bench = [0.60, 0.62, 0.64, 0.66, 0.68, 0.70]
    good_gain = [0.04, 0.02, 0.06, 0.01, 0.05, 0.03]  # unrelated to the benchmark within the working RMs
    for seed in seeds:
        for i, (lin, mix) in enumerate(specs):
            rows.append({"lineage": lin, "mix": mix, "epochs": 1.0 + (i >= 4), "seed": seed,
                         BENCH: good_bench[i] + 0.01 * seed, DOWN: good_gain[i] + 0.002 * seed * (i % 2),
                         "prb/planner/accuracy": 0.5 + 0.02 * i, "prb/none/accuracy": 0.5 - 0.01 * i})
        for j, lin in enumerate(("tiny_llama", "tiny_qwen", "tiny_llama")):
            rows.append({"lineage": lin, "mix": "flipped", "epochs": 1.0 + j, "seed": seed, BENCH: 0.1 + 0.02 * j,
                         DOWN: -0.05 + 0.01 * j + rng.normal(0, 1e-4), "prb/planner/accuracy": 0.2 + 0.01 * j,
                         "prb/none/accuracy": 0.3})
    table = pd.DataFrame(rows)
    table.index = [f"rm{i:02d}" for i in range(len(table))]
    table["external"] = False
    table["lr"], table["train_profile"], table["model"] = 1e-3, "planner", table["lineage"]
    table["label"] = table.index
    return table


def test_declared_prb_column_not_the_best_one() -> None:
    table = _table()
    spec = headline_spec(table, ["planner"], prb_mode=None, controls=["flipped"])
    assert spec.benchmarks == ["rb2/overall", "prb/planner/accuracy"] and spec.prb_mode_source == "downstream records"
    assert spec.secondary == ["prb/none/accuracy"]
    declared = headline_spec(table, ["planner"], prb_mode="none", controls=[])
    assert declared.benchmarks == ["rb2/overall", "prb/none/accuracy"] and declared.prb_mode_source == "config"


def test_controls_and_strata_on_a_fabricated_table() -> None:
    table = _table()
    spec = headline_spec(table, ["planner"], prb_mode=None, controls=["flipped"])
    rows = {(r["benchmark"], r["downstream"], r["scope"]): r for r in subgroup_correlations(table, spec)}
    everyone = rows[(BENCH, DOWN, "all")]
    assert everyone["n"] == 9
    assert everyone["spearman"] == pytest.approx(stats.spearmanr(table[BENCH], table[DOWN]).statistic)
    assert everyone["pvalue"] == pytest.approx(spearman_exact_p(table[BENCH], table[DOWN]))
    assert everyone["verdict"] == "predicts"  # carried by the controls
    working = table[table["mix"] != "flipped"]
    no_ctl = rows[(BENCH, DOWN, "without controls")]
    assert no_ctl["n"] == 6
    assert no_ctl["spearman"] == pytest.approx(stats.spearmanr(working[BENCH], working[DOWN]).statistic)
    assert no_ctl["spearman"] < 0 and no_ctl["verdict"] == "no evidence"
    for mix, n in (("general", 3), ("personal", 3), ("flipped", 3)):
        part = table[table["mix"] == mix]
        cell = rows[(BENCH, DOWN, f"mix={mix}")]
        assert cell["n"] == n and cell["verdict"] == f"not testable (n = {n})"
        assert cell["spearman"] == pytest.approx(stats.spearmanr(part[BENCH], part[DOWN]).statistic)
    assert not any(scope.startswith("seed=") for _, _, scope in rows)  # one seed: no per-seed rows


def test_seed_spread_pools_the_within_configuration_variance() -> None:
    table = _table(seeds=(0, 1))
    spread = seed_spread(table, [DOWN])[DOWN]
    groups = table.groupby(["lineage", "mix", "epochs"])[DOWN]
    expected = math.sqrt(np.mean([g.var(ddof=1) for _, g in groups if len(g) >= 2]))
    assert spread["sd"] == pytest.approx(expected) and spread["seeds"] == 2 and spread["sd"] > 0
    assert seed_spread(_table(), [DOWN])[DOWN] == {"sd": None, "configs": 0, "seeds": 1}  # one seed: no spread
    spec = headline_spec(table, [], prb_mode="planner", controls=["flipped"])
    scopes = {r["scope"] for r in subgroup_correlations(table, spec)}
    assert {"seed=0", "seed=1"} <= scopes


def test_verdict_rule() -> None:
    assert verdict(4, 1.0, None, 0.05) == "not testable (n = 4)"
    assert verdict(6, 0.94, 0.0167, 0.05) == "predicts"
    assert verdict(6, -0.94, 0.0167, 0.05) == "predicts inversely"
    assert verdict(6, 0.5, 0.3, 0.05) == "no evidence"


def test_page_one_leads_with_the_answer() -> None:
    table = _table()
    context = StudyContext(
        downstream_profile_modes=["planner"], profile_modes=["none", "planner"],
        varying_factors={"lineage": ["tiny_llama", "tiny_qwen"], "mix": ["flipped", "general", "personal"]},
        columns=ColumnRoles(gain=[DOWN]))
    study = StudyTable(frame=table, context=context)
    corr = correlation_table(study, n_boot=50, ndcg=[("rank", "linear", None)])
    context.headline = summarise(study, corr, prb_mode=None, controls=["flipped"], alpha=0.05)
    rows = {(r["benchmark"], r["downstream"]): r for r in context.headline["rows"]}
    top = rows[(BENCH, DOWN)]
    assert top["verdict"] == "predicts" and top["n"] == 9
    assert top["ndcg_null_mean"] is not None and 0.0 <= top["ndcg_null_p"] <= 1.0
    text = "\n".join(page_one(study))
    assert text.startswith("# Do benchmark scores predict downstream gains?")
    assert "9 trained reward models from 2 lineages (tiny_llama, tiny_qwen) × 3 data mixes" in text
    assert "| `rb2/overall` | `bon/personalized/gain@16` | 9 |" in text and "**predicts**" in text
    assert "## Findings" in text and "Controls (flipped) matter most" in text
    assert "![" in text
