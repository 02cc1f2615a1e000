"""Write a correlation study to disk: tables (CSV, Markdown, LaTeX), figures and ``report.md``.

Layout of the output folder (the correlate record's artifact folder)::

    table.csv             one row per RM: factors, benchmark scores, downstream gains
    correlations.csv      long format: benchmark x downstream x statistic, value, p, CIs, n, note
    correlations.md/.tex  the same, one row per (benchmark, downstream) pair
    context.json          what the report needs besides the tables (records, duplicates, missing, curves)
    fig_*.png / fig_*.pdf the five figures (see rlexp.analysis.figures)
    report.md             summary, RM table, correlations, figures, records used, missing

:func:`render` redraws everything but the CSVs from those files alone (no store, no model), in
seconds.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from rlexp.analysis.figures import FIGURES, all_figures
from rlexp.analysis.table import (
    DESIGN_FACTORS,
    downstream_columns,
    main_benchmark_columns,
    summary,
    without_attrs,
)

STAT_LABELS = {"spearman": "Spearman ρ", "kendall": "Kendall τ-b", "pearson": "Pearson r"}
STAT_LATEX = {"spearman": r"Spearman $\rho$", "kendall": r"Kendall $\tau_b$", "pearson": r"Pearson $r$"}


def _nan(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _num(v: Any, digits: int = 3) -> str:
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        v = v.item()  # numpy scalar
    if _nan(v):
        return "n/a"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, (int, float)):
        return f"{float(v):.{digits}f}" if isinstance(v, float) else str(v)
    return str(v)


# ------------------------------------------------------------------------------------------------
# Markdown / LaTeX writers (no tabulate / jinja2 needed)
# ------------------------------------------------------------------------------------------------


def _md_escape(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table; ``|`` in cells is escaped."""
    lines = ["| " + " | ".join(_md_escape(h) for h in headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(_md_escape(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                  "ρ": r"$\rho$", "τ": r"$\tau$"}


def latex_escape(text: Any) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(text))


def latex_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, caption: str, label: str,
                escape_headers: bool = True) -> str:
    """A booktabs ``table`` with a ``tabular`` (needs ``\\usepackage{booktabs}``)."""
    rows = list(rows)
    spec = "ll" + "r" * (len(headers) - 2)
    head = " & ".join(latex_escape(h) if escape_headers else h for h in headers)
    body = "\n".join(" & ".join(latex_escape(c) for c in row) + r" \\" for row in rows)
    return "\n".join([
        r"\begin{table*}[t]", r"\centering", r"\footnotesize", rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
        head + r" \\", r"\midrule", body, r"\bottomrule", r"\end{tabular}",
        rf"\caption{{{latex_escape(caption)}}}", rf"\label{{{label}}}", r"\end{table*}", "",
    ])


# ------------------------------------------------------------------------------------------------
# correlation tables
# ------------------------------------------------------------------------------------------------


def _stat_order(corr: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(corr["statistic"].tolist())) if len(corr) else []


def _cell(row: pd.Series, *, with_p: bool = True, with_prompts: bool = True) -> str:
    if _nan(row["value"]):
        note = "" if _nan(row.get("note")) else str(row.get("note"))
        return "n/a (n<3)" if "fewer than" in note else "n/a (see notes)"
    text = f"{float(row['value']):.3f}"
    if not _nan(row["ci_low"]) and not _nan(row["ci_high"]):
        text += f" [{float(row['ci_low']):.2f}, {float(row['ci_high']):.2f}]"
    if with_p and not _nan(row["pvalue"]):
        text += f" p={float(row['pvalue']):.3g}"
    if with_prompts and not _nan(row.get("prompt_ci_low")) and not _nan(row.get("prompt_ci_high")):
        text += f" prompts [{float(row['prompt_ci_low']):.2f}, {float(row['prompt_ci_high']):.2f}]"
    return text


def _pairs(corr: pd.DataFrame, main: bool | None) -> list[tuple[str, str, pd.DataFrame]]:
    if corr.empty:
        return []
    sel = corr if main is None else corr[corr["main"].astype(bool) == main]
    out = []
    for (b, d), grp in sel.groupby(["benchmark", "downstream"], sort=False):
        out.append((str(b), str(d), grp.set_index("statistic")))
    return out


def _wide_rows(corr: pd.DataFrame, main: bool | None, stats: Sequence[str], *, with_p: bool = True,
               with_prompts: bool = True) -> list[list[str]]:
    rows = []
    for b, d, grp in _pairs(corr, main):
        n = int(grp["n"].iloc[0])
        rows.append([b, d, str(n), *[_cell(grp.loc[s], with_p=with_p, with_prompts=with_prompts)
                                     if s in grp.index else "n/a" for s in stats]])
    return rows


def _notes(corr: pd.DataFrame) -> list[str]:
    """One line per (pair, reason): why a value is n/a, missing CIs, undefined replicates."""
    out: list[str] = []
    if corr.empty:
        return out
    for (b, d, note), grp in corr[corr["note"].notna() & (corr["note"].astype(str) != "")].groupby(
        ["benchmark", "downstream", "note"], sort=False
    ):
        out.append(f"{b} × {d} ({', '.join(grp['statistic'].astype(str))}): {note}")
    return out


def correlations_markdown(corr: pd.DataFrame, settings: Mapping[str, Any], *, heading: str = "#") -> str:
    stats = _stat_order(corr)
    headers = ["benchmark", "downstream", "n", *[STAT_LABELS.get(s, s) for s in stats]]
    parts = [
        f"{heading} Correlations: benchmark score vs downstream gain",
        "",
        _legend(settings),
        "",
    ]
    if corr.empty:
        parts.append("No (benchmark, downstream) pair: the study has no benchmark or no downstream column.")
        return "\n".join(parts) + "\n"
    main_rows = _wide_rows(corr, True, stats)
    sub_rows = _wide_rows(corr, False, stats)
    if main_rows:
        parts += [f"{heading}# Main benchmark scores", "", markdown_table(headers, main_rows), ""]
    if sub_rows:
        parts += [f"{heading}# RB2 subsets and PRB domains", "", markdown_table(headers, sub_rows), ""]
    notes = _notes(corr)
    if notes:
        parts += [f"{heading}# Notes (why a value is n/a or has no CI)", "", *[f"- {n}" for n in notes], ""]
    return "\n".join(parts)


def _legend(settings: Mapping[str, Any]) -> str:
    level = 100 * (1 - float(settings.get("alpha", 0.05)))
    return (
        f"Cells: value [{level:g}% bootstrap CI over RMs, {settings.get('n_boot', 0)} resamples] p=p-value "
        "(Spearman/Kendall/Pearson, scipy); `prompts [..]` = CI from resampling prompts (BoN gains with "
        "per-prompt results). NDCG: "
        + ", ".join(f"`{v}`" for v in settings.get("ndcg_names", []))
        + " (relevance transform of the downstream score, gain, cutoff; PRB reference §8). "
        "n = RMs with both values; `n/a` = undefined (reason in the notes). "
        "CIs for subset/domain rows only with `boot_subsets=true`."
    )


def correlations_latex(corr: pd.DataFrame, settings: Mapping[str, Any]) -> str:
    stats = _stat_order(corr)
    headers = ["benchmark", "downstream", "$n$", *[STAT_LATEX.get(s, latex_escape(s)) for s in stats]]  # LaTeX already
    level = 100 * (1 - float(settings.get("alpha", 0.05)))
    out = ["% rlexp correlate: booktabs tables (\\usepackage{booktabs}); values with "
           f"{level:g}% bootstrap CIs over RMs; n/a = undefined.", ""]
    if corr.empty:
        return "\n".join([*out, "% no (benchmark, downstream) pair", ""])
    for main, caption, label in ((True, "main benchmark scores", "tab:corr-main"),
                                 (False, "RB2 subsets and PRB domains", "tab:corr-subsets")):
        rows = _wide_rows(corr, main, stats, with_p=False, with_prompts=False)
        if not rows:
            continue
        out.append(latex_table(
            headers, rows, escape_headers=False, label=label,
            caption=f"Correlation between benchmark score and downstream gain across reward models: {caption}. "
                    f"Brackets: {level:g}% bootstrap CI over RMs ({settings.get('n_boot', 0)} resamples).",
        ))
    return "\n".join(out)


# ------------------------------------------------------------------------------------------------
# report.md
# ------------------------------------------------------------------------------------------------


def _factor(v: Any) -> str:
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        v = v.item()
    if _nan(v):
        return "–"
    return f"{v:g}" if isinstance(v, float) else str(v)


def _rm_table(table: pd.DataFrame, context: Mapping[str, Any]) -> str:
    varying = [f for f in DESIGN_FACTORS if f in (context.get("varying_factors") or {})]
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


def _headline(table: pd.DataFrame, corr: pd.DataFrame) -> str:
    s = summary(table, corr)
    nd = s.get("ndcg_variant") or "ndcg"
    rows = []
    for d, entry in s["settings"].items():
        rb2 = entry.get("rb2/overall") or {}
        prb = entry.get("best_prb") or {}
        rows.append([d, _num(rb2.get("spearman")), _num(rb2.get("ndcg")), _num(rb2.get("n")),
                     prb.get("column", "–"), _num(prb.get("spearman")), _num(prb.get("ndcg")), _num(prb.get("n"))])
    if not rows:
        return "No downstream gain column: nothing to correlate."
    return markdown_table(["downstream", "RB2 ρ", f"RB2 {nd}", "n", "best PRB column", "PRB ρ", f"PRB {nd}", "n"], rows)


def _friedman_cell(test: Mapping[str, Any] | None) -> str:
    if not test or test.get("pvalue") is None:
        return "n/a (needs 3 RMs and untied gains)"
    return f"{_num(test['statistic'])} (p={float(test['pvalue']):.2g})"


def _bon_differences_section(context: Mapping[str, Any]) -> list[str]:
    """Whether the RMs' Best-of-N gains differ beyond prompt noise (paired bootstrap over prompts)."""
    diffs = context.get("bon_differences") or {}
    if not diffs:
        return []
    alpha = float((context.get("settings") or {}).get("alpha", 0.05))
    lines = ["## Do Best-of-N gains differ across RMs?", "",
             "Highest minus lowest gain on the shared prompts, with the CI of that difference when the "
             "prompts are resampled (paired: every RM chose from the same pool), and how many RM pairs "
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


def _bon_groups_section(context: Mapping[str, Any], table: pd.DataFrame) -> list[str]:
    """Best-of-N gain@n per prompt group (general kind / personalized domain), one table per setting."""
    groups = context.get("bon_groups") or {}
    if not groups:
        return []
    labels = table["label"].to_dict() if "label" in table else {}
    lines = ["## Best-of-N gain by prompt group", "",
             "gain@n (n = samples per prompt) with its bootstrap CI over the group's prompts: where each "
             "RM's gain comes from. RM–gold ρ: the mean within-prompt Spearman correlation of the RM's and "
             "the gold judge's scores of the pool's samples, over the prompts where both vary (how many of "
             "all prompts): how much of the RM's skill carries over to the policy's own samples.", ""]
    for setting, by_rm in sorted(groups.items()):
        names = sorted({g for v in by_rm.values() for g in v["groups"]})
        sizes = {g: next(v["groups"][g]["prompts"] for v in by_rm.values() if g in v["groups"]) for g in names}
        agreement = any(v.get("agreement") for v in by_rm.values())
        rows = []
        for rm, v in sorted(by_rm.items(), key=lambda kv: str(labels.get(kv[0], kv[0]))):
            a = v.get("agreement")
            cells = ([] if not agreement else
                     ["–" if not a else f"{_num(a['mean_spearman'])} ({a['prompts']} of {a['total_prompts']})"])
            for g in names:
                c = v["groups"].get(g)
                cells.append("–" if c is None else
                             f"{_num(c['gain'])} [{_num(c['gain_ci'][0])}, {_num(c['gain_ci'][1])}]")
            rows.append([labels.get(rm, rm), v.get("n"), *cells])
        lines += [f"### {setting}", "",
                  markdown_table(["RM", "n", *(["RM–gold ρ"] if agreement else []),
                                  *(f"{g} ({sizes[g]} prompts)" for g in names)], rows), ""]
    return lines


def report_markdown(table: pd.DataFrame, corr: pd.DataFrame, context: Mapping[str, Any],
                    settings: Mapping[str, Any]) -> str:
    n_ext = int(table["external"].astype(bool).sum()) if "external" in table else 0
    by_task = context.get("records_by_task", {})
    bench = context.get("columns", {}).get("benchmarks", [])
    main = main_benchmark_columns(bench)
    down = downstream_columns(table.columns)
    lines = [
        f"# Correlation study: {context.get('selection', '?')}",
        "",
        "## Summary",
        "",
        f"- **Reward models:** {len(table)} ({len(table) - n_ext} trained, {n_ext} external).",
        f"- **Records read:** {', '.join(f'{t} {n}' for t, n in by_task.items()) or 'none'}"
        f"{'; ' + str(len(context.get('duplicates', []))) + ' superseded duplicates' if context.get('duplicates') else ''}.",
        f"- **Benchmark columns:** {', '.join(f'`{c}`' for c in main) or 'none'}"
        f" (+{len(bench) - len(main)} subset/domain columns).",
        "- **Data ids** (benchmark data; BoN/PPO sample pools): "
        + ("; ".join(f"{k}: `{', '.join(v)}`" for k, v in (context.get("data_ids") or {}).items()) or "none")
        + ".",
        f"- **Downstream columns:** {', '.join(f'`{c}`' for c in down) or 'none'}"
        + (f" (BoN k: {', '.join(f'{s} k={k}' for s, k in context.get('k', {}).items())})" if context.get("k") else "")
        + ".",
        f"- **Statistics:** Spearman ρ, Kendall τ-b, Pearson r (with p-values), NDCG "
        f"{', '.join(settings.get('ndcg_names', []))}; "
        + (f"{100 * (1 - float(settings.get('alpha', 0.05))):g}% bootstrap CIs over RMs ({settings['n_boot']} "
           f"resamples, seed {settings.get('seed', 0)}) and over prompts for BoN gains."
           if settings.get("n_boot") else "no bootstrap CIs (n_boot=0)."),
    ]
    for w in context.get("warnings", []):
        lines.append(f"- **Warning:** {w}")
    lines += ["", "### Headline", "", _headline(table, corr), "",
              "## Reward models", "", _rm_table(table, context), "",
              "Full table (every RB2 subset and PRB domain, all factors): [table.csv](table.csv).", ""]

    lines += ["## What differs between RMs", ""]
    varying = context.get("varying_factors") or {}
    constant = context.get("constant_factors") or {}
    if varying:
        lines += [f"- **{f}** varies: {', '.join(str(v) for v in vals)}" for f, vals in varying.items()]
    else:
        lines.append("- No training factor varies between the trained RMs.")
    if constant:
        lines.append("- Shared by all trained RMs: " + ", ".join(f"{f}={v}" for f, v in constant.items()))
    if n_ext:
        lines.append(f"- {n_ext} external RM(s) (no train_rm record): factors unknown.")
    lines.append("")

    body = correlations_markdown(corr, settings, heading="##")
    lines += [body, "Machine-readable: [correlations.csv](correlations.csv); LaTeX: [correlations.tex](correlations.tex).", ""]

    uppers = context.get("upper_bounds") or []
    lines += ["## Upper bounds (judge rewards, excluded from correlations)", ""]
    if uppers:
        lines.append(markdown_table(
            ["setting", "reward", "gain", "CI", "gold before", "gold after", "record"],
            [[u["setting"], u["rm"], _num(u["gain"]), f"[{_num(u['gain_ci'][0])}, {_num(u['gain_ci'][1])}]",
              _num(u.get("gold_before")), _num(u.get("gold_after")), u["id"]] for u in uppers],
        ))
    else:
        lines.append("None in this study.")
    lines.append("")

    lines += _bon_differences_section(context)
    lines += _bon_groups_section(context, table)

    lines += ["## Figures", ""]
    captions = {
        "fig_scatter": "Benchmark score vs downstream gain (one panel per main benchmark and downstream setting; "
                       "dashed: least-squares line).",
        "fig_ndcg_bars": "Spearman ρ and NDCG of each main benchmark, per downstream setting (error bars: bootstrap CI).",
        "fig_subset_pearson": "Pearson r of RB2 overall and each RB2 subset, per downstream setting.",
        "fig_bon_curves": "Gold score of Best-of-N@k per RM, with the oracle and first-k curves.",
        "fig_ppo_lineage": "Benchmark score vs PPO gain, coloured by lineage match with the policy "
                           "(dashed lines: judge-reward upper bounds).",
    }
    for name in FIGURES:
        lines += [f"### {name}", "", captions[name], "", f"![{name}]({name}.png)", "", f"PDF: [{name}.pdf]({name}.pdf)", ""]

    lines += ["## Records used", ""]
    recs = context.get("records") or []
    labels = table["label"].to_dict() if "label" in table else {}
    lines.append(markdown_table(
        ["id", "task", "RM", "status", "settings"],
        [[r["id"], r["task"], labels.get(r.get("rm"), r.get("rm") or "–"), r["status"],
          ", ".join(f"{k}={v}" for k, v in (r.get("settings") or {}).items())] for r in recs],
    ))
    dups = context.get("duplicates") or []
    lines += ["", "### Duplicates (several records for one cell; the most recent is used)", ""]
    if dups:
        lines.append(markdown_table(["RM", "column", "used", "superseded"],
                                    [[labels.get(d["rm"], d["rm"]), d["column"], d["used"], d["superseded"]] for d in dups]))
    else:
        lines.append("None.")
    lines += ["", "## Missing", ""]
    missing = context.get("missing") or []
    lines += [f"- {m}" for m in missing] if missing else ["Nothing: every RM has every benchmark and downstream result."]
    lines.append("")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# writing
# ------------------------------------------------------------------------------------------------


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        return _jsonable(obj.item())
    return obj


def write_tables(out_dir: Path, table: pd.DataFrame, corr: pd.DataFrame, settings: Mapping[str, Any]) -> dict[str, Path]:
    """table.csv, correlations.csv and context.json (everything :func:`render` needs)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"table": out_dir / "table.csv", "correlations": out_dir / "correlations.csv",
             "context": out_dir / "context.json"}
    table.to_csv(paths["table"], index=True)
    corr.to_csv(paths["correlations"], index=False)
    context = {**table.attrs.get("context", {}), "settings": dict(settings)}
    paths["context"].write_text(json.dumps(_jsonable(context), indent=2, sort_keys=True, default=str))
    return paths


def render_documents(out_dir: Path, table: pd.DataFrame, corr: pd.DataFrame, context: Mapping[str, Any]) -> dict[str, Path]:
    """correlations.md/.tex, the five figures (PNG + PDF) and report.md."""
    out_dir = Path(out_dir)
    table = without_attrs(table)
    settings = dict(context.get("settings") or {})
    settings.setdefault("ndcg_names", [s for s in _stat_order(corr) if str(s).startswith("ndcg")])
    paths = {"correlations_md": out_dir / "correlations.md", "correlations_tex": out_dir / "correlations.tex",
             "report": out_dir / "report.md"}
    paths["correlations_md"].write_text(correlations_markdown(corr, settings))
    paths["correlations_tex"].write_text(correlations_latex(corr, settings))
    for name, files in all_figures(table, corr, context, out_dir).items():
        for f in files:
            paths[f"{name}.{f.suffix[1:]}"] = f
    paths["report"].write_text(report_markdown(table, corr, context, settings))
    return paths


def write_outputs(out_dir: Path, table: pd.DataFrame, corr: pd.DataFrame, settings: Mapping[str, Any]) -> dict[str, Path]:
    """Every output of a correlation study into ``out_dir``; returns name -> path."""
    settings = {**settings, "ndcg_names": [s for s in _stat_order(corr) if str(s).startswith("ndcg")]}
    paths = write_tables(out_dir, table, corr, settings)
    context = {**table.attrs.get("context", {}), "settings": settings}
    paths.update(render_documents(out_dir, table, corr, context))
    return paths


def load(out_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """table, correlations and context of a written study (the inverse of :func:`write_tables`)."""
    out_dir = Path(out_dir)
    table = pd.read_csv(out_dir / "table.csv", index_col=0)
    corr = pd.read_csv(out_dir / "correlations.csv")
    corr = corr.astype(object).where(corr.notna(), None)
    context = json.loads((out_dir / "context.json").read_text())
    table.attrs["context"] = context
    return table, corr, context


def render(out_dir: Path) -> dict[str, Path]:
    """Redraw the Markdown/LaTeX tables, figures and report of a written study from its files alone."""
    table, corr, context = load(out_dir)
    return render_documents(out_dir, table, corr, context)


__all__ = [
    "correlations_latex", "correlations_markdown", "latex_table", "load", "markdown_table",
    "render", "render_documents", "report_markdown", "write_outputs", "write_tables",
]
