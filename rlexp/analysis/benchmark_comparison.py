"""Personalized RewardBench's comparison of benchmarks: which benchmark ranks the RMs the way downstream does?

PRB's headline is a table of benchmarks (PRB, Chatbot Arena-Personalized, PRISM-Personalized) ×
downstream (Best-of-N, PPO), each cell the NDCG of the benchmark's RM ranking against the downstream
ranking. Here every main benchmark column of the study is a row (RB2 overall, PRB accuracy per
profile mode, the Arena/PRISM analogues per user context), each cell gives NDCG with its chance
level, Spearman and Kendall with their CIs over RMs, and the benchmarks are ranked by NDCG within
each downstream setting. Everything is read from the long correlation table; nothing is recomputed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from rlexp.analysis.columns import DOWNSTREAM_RE, gain_columns, main_benchmark_columns
from rlexp.analysis.markdown import markdown_table
from rlexp.analysis.values import is_missing, none_if_missing
from rlexp.data.schemas import USER_PAIR_SETS

FIGURE = "fig_benchmark_ranking"
_NAMES = {"rb2": "RewardBench 2", "prb": "Personalized RewardBench", **USER_PAIR_SETS}


def benchmark_name(column: str) -> str:
    """``prism/history/accuracy`` -> ``PRISM-Personalized (history)``."""
    parts = column.split("/")
    if parts[0] == "rb2":
        return _NAMES["rb2"]
    return f"{_NAMES.get(parts[0], parts[0])} ({parts[1]})"


def _stat(corr: pd.DataFrame, b: str, d: str, s: str) -> Mapping[str, Any]:
    hit = corr[(corr["benchmark"] == b) & (corr["downstream"] == d) & (corr["statistic"] == s)]
    return {} if hit.empty else hit.iloc[0].to_dict()


def comparison_rows(table: pd.DataFrame, corr: pd.DataFrame, ndcg_name: str | None) -> list[dict[str, Any]]:
    """One row per (downstream gain column, main benchmark), ranked by NDCG within each downstream column."""
    if corr is None or corr.empty:
        return []
    out: list[dict[str, Any]] = []
    for d in gain_columns(table.columns):
        rows = []
        for b in main_benchmark_columns(table.columns):
            nd = _stat(corr, b, d, ndcg_name) if ndcg_name else {}
            rho, tau = _stat(corr, b, d, "spearman"), _stat(corr, b, d, "kendall")
            rows.append({
                "downstream": d, "benchmark": b, "name": benchmark_name(b), "n": int(rho.get("n") or 0),
                "ndcg": none_if_missing(nd.get("value")), "ndcg_chance": none_if_missing(nd.get("null_mean")),
                "ndcg_p": none_if_missing(nd.get("null_p")), "ndcg_normalised": none_if_missing(nd.get("normalised")),
                "ndcg_ci": [none_if_missing(nd.get("ci_low")), none_if_missing(nd.get("ci_high"))],
                "spearman": none_if_missing(rho.get("value")), "spearman_p": none_if_missing(rho.get("pvalue")),
                "spearman_ci": [none_if_missing(rho.get("ci_low")), none_if_missing(rho.get("ci_high"))],
                "kendall": none_if_missing(tau.get("value")),
                "kendall_ci": [none_if_missing(tau.get("ci_low")), none_if_missing(tau.get("ci_high"))],
            })
        rows.sort(key=lambda r: (r["ndcg"] is None, -(r["ndcg"] or 0.0), -(r["spearman"] or -2.0)))
        for rank, r in enumerate(rows, 1):
            r["rank"] = rank
        out += rows
    return out


def _f(v: Any, digits: int = 2) -> str:
    return "n/a" if is_missing(v) else f"{float(v):.{digits}f}"


def _with_ci(value: Any, ci: Sequence[Any]) -> str:
    return _f(value) if is_missing(ci[0]) else f"{_f(value)} [{_f(ci[0])}, {_f(ci[1])}]"


def comparison_section(rows: Sequence[Mapping[str, Any]], ndcg_name: str | None, alpha: float = 0.05) -> list[str]:
    """The report's benchmark-comparison table (Markdown lines), the figure under it."""
    head = ["## Which benchmark predicts downstream best?", ""]
    if not rows:
        return [*head, "No comparison: the study has no main benchmark column or no downstream gain.", ""]
    level = f"{100 * (1 - alpha):g}%"
    body = [[f"`{r['downstream']}`", r["rank"], r["name"], r["n"],
             "n/a" if r["ndcg"] is None else f"{_f(r['ndcg'])} (chance {_f(r['ndcg_chance'])}, p = {_f(r['ndcg_p'], 3)})",
             _f(r["ndcg_normalised"]), _with_ci(r["spearman"], r["spearman_ci"]), _with_ci(r["kendall"], r["kendall_ci"])]
            for r in rows]
    header = ["downstream", "rank", "benchmark", "n", f"NDCG `{ndcg_name}` (chance level, null p)", "normalised NDCG",
              f"Spearman ρ [{level} CI]", f"Kendall τ-b [{level} CI]"]
    return [*head,
            "Personalized RewardBench compares benchmarks by how well each one's ranking of the reward models matches "
            "the ranking by downstream gain (NDCG, the paper's statistic). Every benchmark below scored the same RMs; "
            "within each downstream column the benchmarks are ranked by NDCG. Chance level: the mean NDCG of a random "
            "order of the same RMs; CIs resample RMs. With few RMs the ranks are fragile: read the CIs before the ranks.",
            "", markdown_table(header, body), "", f"![benchmarks ranked by predictive power]({FIGURE}.png)", ""]


def fig_benchmark_ranking(rows: Sequence[Mapping[str, Any]], out_dir: Path) -> list[Path]:
    """One panel per downstream gain column: each benchmark's normalised NDCG (bars, ranked) and Spearman ρ with its CI."""
    downs = list(dict.fromkeys(r["downstream"] for r in rows))
    cols = min(max(len(downs), 1), 2)
    nrows = -(-max(len(downs), 1) // cols)
    fig = Figure(figsize=(6.0 * cols, 0.5 * max(len(rows) // max(len(downs), 1), 2) * nrows + 1.6 * nrows),
                 layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrows, cols, squeeze=False).ravel())
    if not downs:
        axes[0].text(0.5, 0.5, "no benchmark or no downstream gain", ha="center", va="center",
                     transform=axes[0].transAxes, fontsize=11, color="0.4")
        axes[0].set_title("benchmarks ranked by predictive power", fontsize=9)
        axes[0].set_xticks([])
        axes[0].set_yticks([])
    for ax, d in zip(axes, downs, strict=False):
        mine = [r for r in rows if r["downstream"] == d][::-1]  # best on top
        ys = np.arange(len(mine))
        ax.barh(ys, [r["ndcg_normalised"] or 0.0 for r in mine], color="#1f77b4", alpha=0.75, label="normalised NDCG")
        rho = [np.nan if r["spearman"] is None else r["spearman"] for r in mine]
        lo = [np.nan if r["spearman_ci"][0] is None else r["spearman"] - r["spearman_ci"][0] for r in mine]
        hi = [np.nan if r["spearman_ci"][1] is None else r["spearman_ci"][1] - r["spearman"] for r in mine]
        ax.errorbar(rho, ys, xerr=[np.nan_to_num(lo), np.nan_to_num(hi)], fmt="o", color="#d62728", ms=4,
                    elinewidth=0.8, capsize=2, label="Spearman ρ (CI over RMs)")
        ax.set_yticks(ys, [f"{r['rank']}. {r['name']}" for r in mine], fontsize=7)
        ax.axvline(0, color="0.3", lw=0.6)
        ax.set_xlim(-1.05, 1.05)
        m = DOWNSTREAM_RE.match(d)
        ax.set_title(f"{m['task']}/{m['setting']} {m['stat']}" if m else d, fontsize=9)
        ax.tick_params(labelsize=7)
        ax.grid(axis="x", alpha=0.3)
    for ax in axes[max(len(downs), 1):]:
        ax.set_visible(False)
    if downs:
        axes[0].legend(fontsize=6, loc="lower left")
    paths = []
    for ext in ("png", "pdf"):
        path = Path(out_dir) / f"{FIGURE}.{ext}"
        fig.savefig(path, dpi=110)
        paths.append(path)
    return paths
