"""Write a correlation study to disk: tables (CSV, Markdown, LaTeX), figures and ``report.md``.

Layout of the output folder (the correlate record's artifact folder)::

    table.csv             one row per RM: factors, benchmark scores, downstream gains
    correlations.csv      long format: benchmark x downstream x statistic, value, p, CIs, n, note
    correlations.md/.tex  the same, one row per (benchmark, downstream) pair
    context.json          what the report needs besides the tables (records, duplicates, missing, curves)
    fig_*.png / fig_*.pdf the six figures (see rlexp.analysis.figures)
    report.md             summary, RM table, correlations, figures, records used, missing

:func:`render` redraws everything but the CSVs from those files alone (no store, no model), in
seconds.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import pandas as pd

from rlexp.analysis.appendices import (
    downstream_section,
    figures_section,
    provenance_section,
    reward_models_section,
    subgroup_section,
)
from rlexp.analysis.benchmark_comparison import comparison_rows, comparison_section
from rlexp.analysis.correlation import MIN_TESTABLE
from rlexp.analysis.external import group_section
from rlexp.analysis.figures import all_figures
from rlexp.analysis.front_page import page_one
from rlexp.analysis.markdown import markdown_table
from rlexp.analysis.study_table import StudyContext, StudyTable
from rlexp.analysis.suite_table import suite_section
from rlexp.analysis.values import is_missing as _nan

STAT_LABELS = {"spearman": "Spearman ρ", "kendall": "Kendall τ-b", "pearson": "Pearson r"}
STAT_LATEX = {"spearman": r"Spearman $\rho$", "kendall": r"Kendall $\tau_b$", "pearson": r"Pearson $r$"}


# ------------------------------------------------------------------------------------------------
# Markdown / LaTeX writers (no tabulate / jinja2 needed)
# ------------------------------------------------------------------------------------------------


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                  "ρ": r"$\rho$", "τ": r"$\tau$"}


def latex_escape(text: Any) -> str:
    """``text`` with LaTeX's special characters (and ρ, τ) escaped for a tabular cell."""
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
    elif with_p and str(row.name) in STAT_LABELS and int(row["n"]) < MIN_TESTABLE:
        text += " (not testable)"
    if with_p and not _nan(row.get("null_mean")):
        text += f" chance {float(row['null_mean']):.2f} p={float(row['null_p']):.2g}"
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


def correlations_markdown(corr: pd.DataFrame, settings: Mapping[str, Any], *, heading: str = "#",
                          title: str = "Correlations: benchmark score vs downstream gain") -> str:
    """The correlation tables as Markdown: main benchmark rows, subset/domain rows, then the notes."""
    stats = _stat_order(corr)
    headers = ["benchmark", "downstream", "n", *[STAT_LABELS.get(s, s) for s in stats]]
    parts = [
        f"{heading} {title}",
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
    """The correlation tables as booktabs LaTeX (values and RM-bootstrap CIs; no p-values)."""
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


def report_markdown(study: StudyTable, corr: pd.DataFrame, settings: Mapping[str, Any]) -> str:
    """The whole report: page one (answer first), then appendices A-F (details and provenance)."""
    lines = page_one(study)
    ndcg_name = next((str(s) for s in _stat_order(corr) if str(s).startswith("ndcg")), None)
    alpha = float((study.context.headline or {}).get("alpha", 0.05))
    lines += comparison_section(comparison_rows(study.frame, corr, ndcg_name), ndcg_name, alpha)
    lines += group_section(study.context)
    lines += ["---", "", "# Appendices", "",
              "A. Correlations of every benchmark column · B. Headline pairs without controls, within each data "
              "mix and per seed · C. Reward models · D. Downstream detail · E. Figures · F. Provenance", ""]
    body = correlations_markdown(corr, settings, heading="##", title="A. Correlations: every benchmark column")
    lines += [body, "Machine-readable: [correlations.csv](correlations.csv); LaTeX: [correlations.tex](correlations.tex).", ""]
    lines += subgroup_section(study.context)
    lines += reward_models_section(study)
    lines += downstream_section(study)
    lines += suite_section(study)
    lines += figures_section()
    lines += provenance_section(study, settings)
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# writing
# ------------------------------------------------------------------------------------------------


def write_tables(out_dir: Path, study: StudyTable, corr: pd.DataFrame, settings: Mapping[str, Any]) -> dict[str, Path]:
    """table.csv, correlations.csv and context.json (everything :func:`render` needs).

    ``context.json`` is the study's context with ``settings`` in it (the study itself is left as it is).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"table": out_dir / "table.csv", "correlations": out_dir / "correlations.csv",
             "context": out_dir / "context.json"}
    study.frame.to_csv(paths["table"], index=True)
    corr.to_csv(paths["correlations"], index=False)
    context = replace(study.context, settings=dict(settings))
    paths["context"].write_text(json.dumps(context.to_json(), indent=2, sort_keys=True, default=str))
    return paths


def render_documents(out_dir: Path, study: StudyTable, corr: pd.DataFrame) -> dict[str, Path]:
    """correlations.md/.tex, the six figures (PNG + PDF) and report.md (settings from ``study.context``)."""
    out_dir = Path(out_dir)
    settings = dict(study.context.settings or {})
    settings.setdefault("ndcg_names", [s for s in _stat_order(corr) if str(s).startswith("ndcg")])
    paths = {"correlations_md": out_dir / "correlations.md", "correlations_tex": out_dir / "correlations.tex",
             "report": out_dir / "report.md"}
    paths["correlations_md"].write_text(correlations_markdown(corr, settings))
    paths["correlations_tex"].write_text(correlations_latex(corr, settings))
    for name, files in all_figures(study, corr, out_dir).items():
        for f in files:
            paths[f"{name}.{f.suffix[1:]}"] = f
    paths["report"].write_text(report_markdown(study, corr, settings))
    return paths


def _versions() -> dict[str, str]:
    out = {}
    for name in ("rlexp", "torch", "transformers", "trl", "numpy", "scipy", "pandas"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            continue
    return out


def write_outputs(out_dir: Path, study: StudyTable, corr: pd.DataFrame, settings: Mapping[str, Any]) -> dict[str, Path]:
    """Every output of a correlation study into ``out_dir``; returns name -> path.

    Records the library versions in ``study.context`` (unless already there) before writing.
    """
    settings = {**settings, "ndcg_names": [s for s in _stat_order(corr) if str(s).startswith("ndcg")]}
    if study.context.versions is None:
        study.context.versions = _versions()
    paths = write_tables(out_dir, study, corr, settings)
    rendered = StudyTable(frame=study.frame, context=replace(study.context, settings=settings))
    paths.update(render_documents(out_dir, rendered, corr))
    return paths


def load(out_dir: Path) -> tuple[StudyTable, pd.DataFrame]:
    """The study table and correlations of a written study (the inverse of :func:`write_tables`)."""
    out_dir = Path(out_dir)
    table = pd.read_csv(out_dir / "table.csv", index_col=0)
    corr = pd.read_csv(out_dir / "correlations.csv")
    corr = corr.astype(object).where(corr.notna(), None)
    context = StudyContext.from_json(json.loads((out_dir / "context.json").read_text()))
    return StudyTable(frame=table, context=context), corr


def render(out_dir: Path) -> dict[str, Path]:
    """Redraw the Markdown/LaTeX tables, figures and report of a written study from its files alone."""
    study, corr = load(out_dir)
    return render_documents(out_dir, study, corr)


__all__ = [
    "correlations_latex", "correlations_markdown", "latex_table", "load", "markdown_table",
    "render", "render_documents", "report_markdown", "write_outputs", "write_tables",
]
