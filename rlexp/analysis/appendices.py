"""The report's appendices: subgroup correlations, reward models, downstream detail, figures and
provenance (record ids, data ids, library versions). Page one is :mod:`rlexp.analysis.front_page`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlexp.analysis.columns import DESIGN_FACTORS, downstream_columns, main_benchmark_columns
from rlexp.analysis.figures import FIGURES
from rlexp.analysis.markdown import fmt_num as _num
from rlexp.analysis.markdown import markdown_table
from rlexp.analysis.study_table import GroupGain, SeedGains, StudyContext, StudyTable
from rlexp.analysis.values import is_missing as _nan


def _factor(v: Any) -> str:
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        v = v.item()
    if _nan(v):
        return "–"
    return f"{v:g}" if isinstance(v, float) else str(v)


def _rm_table(study: StudyTable) -> str:
    table = study.frame
    varying = [f for f in DESIGN_FACTORS if f in study.context.varying_factors]
    cols = [*main_benchmark_columns(table.columns), *downstream_columns(table.columns),
            *[c for c in table.columns if c.endswith("/lineage_match")]]
    headers = ["RM", "id", *varying, *cols]
    rows = []
    for rm, r in table.iterrows():
        rid = str(rm)
        rows.append([r.get("label", rid), rid if len(rid) <= 16 else "…" + rid[-20:],
                     *[_factor(r[f]) for f in varying],
                     *[_num(r[c]) for c in cols]])
    return markdown_table(headers, rows)


def _friedman_cell(test: Mapping[str, Any] | None) -> str:
    if not test or test.get("pvalue") is None:
        return "n/a (needs 3 RMs and untied gains)"
    return f"{_num(test['statistic'])} (p={float(test['pvalue']):.2g})"


def _gain_differences_section(context: StudyContext) -> list[str]:
    """Whether the RMs' Best-of-N and PPO gains differ beyond prompt noise (paired bootstrap over prompts)."""
    diffs = context.gain_differences or {}
    if not diffs:
        return []
    alpha = float((context.settings or {}).get("alpha", 0.05))
    lines = ["### Do downstream gains differ across RMs?", "",
             "Highest minus lowest gain on the shared prompts, with the CI of that difference when the "
             "prompts are resampled (paired: for Best-of-N every RM chose from the same pool; for PPO every "
             "policy was evaluated on the same held-out prompts), and how many RM pairs "
             "differ beyond their paired CI. The highest and lowest are picked after the fact, so their "
             "difference is biased upwards; the pair count is the fairer summary, read against chance: with "
             f"no real differences about {100 * alpha:g}% of the pairs (alpha) would still be flagged. The "
             "Friedman test (prompts as blocks, RMs as treatments) asks the question once for all RMs: a small "
             "p-value says the RMs' per-prompt gains differ.", ""]
    rows = []
    for col, d in sorted(diffs.items()):
        if "note" in d:
            rows.append([col, "n/a", "n/a", "n/a", f"n/a ({d['note']})", "n/a", "n/a"])
            continue
        ci = d["difference_ci"]
        rows.append([col, f"{d['best']['label']} {_num(d['best']['gain'])}", f"{d['worst']['label']} {_num(d['worst']['gain'])}",
                     f"{_num(d['difference'])} [{_num(ci[0])}, {_num(ci[1])}]",
                     f"{d['pairs_separated']} of {d['pairs']}", _friedman_cell(d.get("friedman")), d["prompts"]])
    header = ["downstream", "highest", "lowest", "difference [CI]", "pairs differing", "Friedman χ² (p)", "prompts"]
    lines += [markdown_table(header, rows), ""]
    return lines


def _lineage_section(context: StudyContext) -> list[str]:
    """Same- vs other-lineage PPO gains with CIs over prompts (analysis/ppo_lineage.py)."""
    found = context.ppo_lineage or {}
    if not found:
        return []
    lines = ["### PPO: an RM of the policy's lineage vs one of another lineage", "",
             "Mean PPO gain of the RMs that share the policy's lineage and of those that do not, on the same "
             "held-out prompts, with 95% CIs from resampling prompts (paired, so the difference has its own CI). "
             "Control mixes are left out. Every PPO gain in this report is the final policy's: a run evaluated "
             "at checkpoints (eval_every) also records its best checkpoint's gain (metrics.gain_best_checkpoint), "
             "which RewardBench 2 reports but which is optimistic (the best of several noisy evaluations), so "
             "it is not used here.", ""]
    rows = []
    for col, d in sorted(found.items()):
        if "note" in d:
            rows.append([col, "n/a", "n/a", f"n/a ({d['note']})", "n/a"])
            continue

        def cell(g: dict[str, Any]) -> str:
            return f"{_num(g['gain'])} [{_num(g['ci'][0])}, {_num(g['ci'][1])}] (n={len(g['rms'])})"

        ci = d["difference_ci"]
        rows.append([col, cell(d["same"]), cell(d["other"]), f"{_num(d['difference'])} [{_num(ci[0])}, {_num(ci[1])}]",
                     d["prompts"]])
    lines += [markdown_table(["downstream", "same lineage", "other lineage", "difference [CI]", "prompts"], rows), ""]
    return lines


def _labels(table: Any) -> dict[str, str]:
    """RM id -> its readable label (empty when the table has none)."""
    return table["label"].to_dict() if "label" in table else {}


def _proxy_section(study: StudyTable) -> list[str]:
    """Per PPO run: the RM's score of the held-out samples before and after, against the gold gain."""
    proxy, cis = study.context.ppo_proxy, study.context.ppo_ci
    if not proxy:
        return []
    table = study.frame
    labels = _labels(table)
    lines = ["### PPO: the reward model's score vs the gold", "",
             "The mean score the RM gives the initial and the trained policy's samples of the held-out prompts "
             "(the proxy PPO optimised), beside the gold gain and the trained policy's final KL to the initial "
             "one. A proxy that rises while the gold does not is a reward the policy learned to please without "
             "improving by the gold judge's measure (over-optimisation). RM scores are not calibrated across "
             "RMs: compare a rise with the same RM's gold gain, not with another RM's rise.", ""]
    seeds = study.context.ppo_seeds or {}
    seeded = any(seeds.values())
    rows = []
    rose = above = below = 0
    for col in sorted(proxy):
        for rm, p in sorted(proxy[col].items(), key=lambda kv: str(labels.get(kv[0], kv[0]))):
            gain, ci = table.at[rm, col], cis[col][rm]  # filled with the proxy (cells._fill_ppo)
            shift = None if _nan(p["before"]) or _nan(p["after"]) else p["after"] - p["before"]
            rose += bool(shift is not None and shift > 0)
            above += bool(ci[0] is not None and ci[0] > 0)
            below += bool(ci[1] is not None and ci[1] < 0)
            rows.append([col, labels.get(rm, rm), f"{_num(p['before'])} → {_num(p['after'])}", _num(shift),
                         f"{_num(gain)} [{_num(ci[0])}, {_num(ci[1])}]",
                         *([seed_gains(seeds.get(col, {}).get(rm))] if seeded else []), _num(p["kl"])])
    runs = len(rows)
    lines += [f"The proxy rose in {rose} of {runs} runs; the gold gain's CI is above 0 in {above} and below 0 in {below}.", "",
              markdown_table(["downstream", "RM", "proxy before → after", "proxy rise", "gold gain [CI]",
                              *(["training seeds"] if seeded else []), "final KL"], rows), ""]
    if seeded:
        lines += [SEEDS_NOTE + " The proxy and the KL are the seeds' means.", ""]
    return lines


#: What a pooled PPO row means (rlexp/analysis/replicates.py).
SEEDS_NOTE = ("Pooled over training seeds (\"training seeds\": how many, then each seed's own gain): the gain is, per "
              "prompt, the mean of the seeds' gains, averaged over the prompts all seeds share; its CI resamples "
              "those prompts with the seeds fixed, so the seed-to-seed spread beside it is not inside it.")


def seed_gains(pooled: SeedGains | None) -> str:
    """``3: +0.013 / -0.008 / +0.001`` for a cell pooled over training seeds, "1" for one run."""
    if not pooled:
        return "1"
    return f"{len(pooled['seeds'])}: " + " / ".join(_num(g) for g in pooled["gains"])


def _group_columns(per_rm: list[dict[str, GroupGain]]) -> tuple[list[str], list[str]]:
    """The prompt groups any RM has, and their column headers (with each group's number of prompts)."""
    names = sorted({g for groups in per_rm for g in groups})
    sizes = {g: next(groups[g]["prompts"] for groups in per_rm if g in groups) for g in names}
    return names, [f"{g} ({sizes[g]} prompts)" for g in names]


def _group_cells(groups: dict[str, GroupGain], names: list[str]) -> list[str]:
    """One RM's gain [CI] per group, "–" where it has none."""
    return ["–" if (c := groups.get(g)) is None else f"{_num(c['gain'])} [{_num(c['gain_ci'][0])}, {_num(c['gain_ci'][1])}]"
            for g in names]


def _bon_groups_section(study: StudyTable) -> list[str]:
    """Best-of-N gain@n per prompt group (general kind / personalized domain), one table per setting."""
    table, groups = study.frame, study.context.bon_groups
    if not groups:
        return []
    labels = _labels(table)
    lines = ["### Best-of-N gain by prompt group", "",
             "gain@n (n = samples per prompt) with its bootstrap CI over the group's prompts: where each "
             "RM's gain comes from. RM–gold ρ: the mean within-prompt Spearman correlation of the RM's and "
             "the gold judge's scores of the pool's samples, over the prompts where both vary (how many of "
             "all prompts): how much of the RM's skill carries over to the policy's own samples.", ""]
    for setting, by_rm in sorted(groups.items()):
        names, headers = _group_columns([v["groups"] for v in by_rm.values()])
        agreement = any(v.get("agreement") for v in by_rm.values())
        rows = []
        for rm, v in sorted(by_rm.items(), key=lambda kv: str(labels.get(kv[0], kv[0]))):
            a = v.get("agreement")
            cells = ([] if not agreement else
                     ["–" if not a else f"{_num(a['mean_spearman'])} ({a['prompts']} of {a['total_prompts']})"])
            rows.append([labels.get(rm, rm), v.get("n"), *cells, *_group_cells(v["groups"], names)])
        lines += [f"#### {setting}", "",
                  markdown_table(["RM", "n", *(["RM–gold ρ"] if agreement else []), *headers], rows), ""]
    return lines


def _ppo_groups_section(study: StudyTable) -> list[str]:
    """PPO gold gain per prompt group, one table per PPO column."""
    table, groups = study.frame, study.context.ppo_groups
    if not groups:
        return []
    labels = _labels(table)
    lines = ["### PPO gain by prompt group", "",
             "The trained policy's mean gold minus the initial policy's, with its bootstrap CI over the group's "
             "prompts: which kinds of prompt an RM's PPO run moved, and which it moved the wrong way.", ""]
    for column, by_rm in sorted(groups.items()):
        names, headers = _group_columns(list(by_rm.values()))
        rows = [[labels.get(rm, rm), *_group_cells(g, names)]
                for rm, g in sorted(by_rm.items(), key=lambda kv: str(labels.get(kv[0], kv[0])))]
        lines += [f"#### {column.removesuffix('/gain')}", "", markdown_table(["RM", *headers], rows), ""]
    return lines



def subgroup_section(context: StudyContext) -> list[str]:
    """Appendix B: each headline pair without the controls, within each data mix and per seed."""
    headline = context.headline or {}
    groups = [g for g in headline.get("subgroups") or [] if g["scope"] != "all"]
    lines = ["## B. Headline pairs without controls, within each data mix, per seed", "",
             "A correlation across working and broken (control) RMs says little about ranking working ones, and one "
             "that holds only across data mixes may reflect the mix rather than the benchmark. Spearman ρ, exact p "
             "where n ≤ 10, verdict as on page one.", ""]
    if not groups:
        return [*lines, "No subgroup: the study has no control RMs, one data mix and one seed.", ""]
    rows = [[f"`{g['benchmark']}`", f"`{g['downstream']}`", g["scope"], g["n"], _num(g["spearman"]),
             _num(g["pvalue"]) if g["n"] >= 5 else "not testable", g["verdict"]] for g in groups]
    lines += [markdown_table(["benchmark", "downstream", "RMs", "n", "Spearman ρ", "p", "verdict"], rows), ""]
    spread = {c: v for c, v in (headline.get("seed_spread") or {}).items() if v.get("sd") is not None}
    if spread:
        lines += ["Seed-to-seed SD (pooled over configurations trained with several seeds):", "",
                  markdown_table(["column", "SD", "configurations", "seeds"],
                                 [[f"`{c}`", _num(v["sd"], 4), v["configs"], v["seeds"]] for c, v in spread.items()]), ""]
    return lines


def reward_models_section(study: StudyTable) -> list[str]:
    """Appendix C: the RM table and what differs between the RMs."""
    table, context = study.frame, study.context
    lines = ["## C. Reward models", "", _rm_table(study), "",
             "Full table (every RB2 subset and PRB domain, all factors): [table.csv](table.csv).", "",
             "What differs between RMs:", ""]
    n_ext = int(table["external"].astype(bool).sum()) if "external" in table else 0
    varying = context.varying_factors
    constant = context.constant_factors
    if varying:
        lines += [f"- **{f}** varies: {', '.join(str(v) for v in vals)}" for f, vals in varying.items()]
    else:
        lines.append("- No training factor varies between the trained RMs.")
    if constant:
        lines.append("- Shared by all trained RMs: " + ", ".join(f"{f}={v}" for f, v in constant.items()))
    if n_ext:
        lines.append(f"- {n_ext} external RM(s) (no train_rm record): factors unknown.")
    return [*lines, ""]


def downstream_section(study: StudyTable) -> list[str]:
    """Appendix D: judge-reward upper bounds, whether downstream gains differ, same- vs other-lineage PPO,
    each PPO run's proxy vs gold, BoN and PPO gains per prompt group."""
    uppers = study.context.upper_bounds
    lines = ["## D. Downstream detail", "", "### Upper bounds (judge rewards, excluded from correlations)", ""]
    if uppers:
        seeded = any(u.get("seeds") for u in uppers)
        lines.append(markdown_table(
            ["setting", "reward", "gain", "CI", *(["training seeds"] if seeded else []), "gold before", "gold after",
             "record"],
            [[u["setting"], u["rm"], _num(u["gain"]), f"[{_num(u['gain_ci'][0])}, {_num(u['gain_ci'][1])}]",
              *([seed_gains(u.get("seeds"))] if seeded else []), _num(u.get("gold_before")), _num(u.get("gold_after")),
              u["id"]] for u in uppers],
        ))
        if seeded:
            lines += ["", SEEDS_NOTE]
    else:
        lines.append("None in this study.")
    lines.append("")
    return (lines + _gain_differences_section(study.context) + _lineage_section(study.context) + _proxy_section(study)
            + _bon_groups_section(study) + _ppo_groups_section(study))


CAPTIONS = {
    "fig_scatter": "Benchmark score vs downstream gain, one panel per main benchmark and downstream setting (colour: "
                   "data mix; marker: lineage; error bars: the gain's CI over prompts; dashed: least-squares line).",
    "fig_ndcg_bars": "Spearman ρ and NDCG of each main benchmark, per downstream setting (error bars: bootstrap CI; "
                     "grey band: the 5-95% range of NDCG under a random order of the RMs, tick: its mean).",
    "fig_subset_pearson": "Pearson r of RB2 overall and each RB2 subset, per downstream setting.",
    "fig_bon_curves": "Gold score of Best-of-N@k per RM (colour: data mix; marker: lineage; line style: other "
                      "factors), with the oracle and first-k curves.",
    "fig_ppo_lineage": "Benchmark score vs PPO gain, coloured by lineage match with the policy "
                       "(dashed lines: judge-reward upper bounds).",
    "fig_benchmark_ranking": "Benchmarks ranked by how well they predict each downstream gain (Personalized "
                             "RewardBench's comparison): bars, normalised NDCG; dots, Spearman ρ with its CI over RMs.",
}


def figures_section() -> list[str]:
    """Appendix E: every figure, PNG inline and PDF linked."""
    lines = ["## E. Figures", ""]
    for name in FIGURES:
        lines += [f"### {name}", "", CAPTIONS[name], "", f"![{name}]({name}.png)", "", f"PDF: [{name}.pdf]({name}.pdf)", ""]
    return lines


def provenance_section(study: StudyTable, settings: Mapping[str, Any]) -> list[str]:
    """Appendix F: what was read (selection, records, data ids), statistics settings, versions."""
    table, context = study.frame, study.context
    by_task = context.records_by_task
    lines = [
        "## F. Provenance", "",
        f"- **Selection:** {'?' if context.selection is None else context.selection}",
        f"- **Records read:** {', '.join(f'{t} {n}' for t, n in by_task.items()) or 'none'}"
        f"{'; ' + str(len(context.duplicates)) + ' superseded duplicates' if context.duplicates else ''}.",
        "- **Data ids** (benchmark data; BoN/PPO sample pools): "
        + ("; ".join(f"{k}: `{', '.join(v)}`" for k, v in context.data_ids.items()) or "none") + ".",
        (f"- **BoN k:** {', '.join(f'{s} k={k}' for s, k in context.k.items())}" if context.k else "- **BoN k:** none"),
        f"- **Statistics:** Spearman ρ, Kendall τ-b, Pearson r, NDCG {', '.join(settings.get('ndcg_names', []))}; "
        + (f"{100 * (1 - float(settings.get('alpha', 0.05))):g}% bootstrap CIs over RMs ({settings.get('n_boot')} "
           f"resamples, seed {settings.get('seed', 0)}) and over prompts for BoN gains."
           if settings.get("n_boot") else "no bootstrap CIs (n_boot=0)."),
        "- **Versions:** " + (", ".join(f"{k} {v}" for k, v in (context.versions or {}).items()) or "unknown"),
    ]
    if context.external:
        ext = context.external
        lines.append(f"- **External results:** {ext['rms']} RMs from `{ext['path']}` (sha256 {ext['sha256'][:16]}); "
                     f"source: {ext['source']}.")
    lines += [f"- **Warning:** {w}" for w in context.warnings]
    recs = context.records
    labels = _labels(table)
    lines += ["", "### Records used", "", markdown_table(
        ["id", "task", "RM", "status", "settings"],
        [[r["id"], r["task"], labels.get(r.get("rm"), r.get("rm") or "–"), r["status"],
          ", ".join(f"{k}={v}" for k, v in (r.get("settings") or {}).items())] for r in recs],
    )]
    dups = context.duplicates
    lines += ["", "### Duplicates (several records for one cell; the most recent is used)", ""]
    if dups:
        lines.append(markdown_table(["RM", "column", "used", "superseded"],
                                    [[labels.get(d["rm"], d["rm"]), d["column"], d["used"], d["superseded"]] for d in dups]))
    else:
        lines.append("None.")
    lines += ["", "### Missing", ""]
    missing = context.missing
    lines += [f"- {m}" for m in missing] if missing else ["Nothing: every RM has every benchmark and downstream result."]
    return [*lines, ""]
