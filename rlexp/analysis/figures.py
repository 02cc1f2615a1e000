"""The study's figures, each saved as PNG and PDF (matplotlib, Agg; no pyplot global state).

* ``fig_scatter``: benchmark score vs downstream gain, one panel per (main benchmark, downstream
  setting), least-squares line and Spearman / Kendall / NDCG in each panel.
* ``fig_ndcg_bars``: Spearman and NDCG per main benchmark, one panel per downstream setting
  (Personalized RewardBench's comparison).
* ``fig_subset_pearson``: Pearson r of RB2 overall and of each RB2 subset, one panel per
  downstream setting (RewardBench 2's table).
* ``fig_bon_curves``: gold score of BoN@k per RM with the oracle and first-k curves, one panel per
  prompt set.
* ``fig_ppo_lineage``: benchmark score vs PPO gain, coloured by whether the RM shares the
  policy's lineage; judge-reward runs drawn as reference lines.

A figure without data is one panel saying "no data", so every file always exists.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from rlexp.analysis.benchmark_comparison import comparison_rows, fig_benchmark_ranking
from rlexp.analysis.columns import DOWNSTREAM_RE, gain_columns, main_benchmark_columns
from rlexp.analysis.correlation import spearman
from rlexp.analysis.ndcg import ndcg_null
from rlexp.analysis.plot_style import RMStyle, legend_handles, place_labels, rm_styles
from rlexp.analysis.study_table import StudyContext, StudyTable
from rlexp.analysis.values import is_missing, lineage_flag
from rlexp.errors import DataError

FIGURES: tuple[str, ...] = ("fig_scatter", "fig_ndcg_bars", "fig_subset_pearson", "fig_bon_curves", "fig_ppo_lineage",
                            "fig_benchmark_ranking")
FORMATS: tuple[str, ...] = ("png", "pdf")
_PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]


def _fmt(v: Any, digits: int = 2) -> str:
    return "n/a" if is_missing(v) else f"{float(v):.{digits}f}"


def _stat(corr: pd.DataFrame, b: str, d: str, s: str) -> pd.Series | None:
    if corr is None or corr.empty:
        return None
    hit = corr[(corr["benchmark"] == b) & (corr["downstream"] == d) & (corr["statistic"] == s)]
    return None if hit.empty else hit.iloc[0]


def _value(corr: pd.DataFrame, b: str, d: str, s: str) -> float | None:
    row = _stat(corr, b, d, s)
    return None if row is None or is_missing(row["value"]) else float(row["value"])


def _ndcg_names(corr: pd.DataFrame) -> list[str]:
    if corr is None or corr.empty:
        return []
    return [s for s in dict.fromkeys(corr["statistic"].tolist()) if str(s).startswith("ndcg")]


def _short_setting(col: str) -> str:
    m = DOWNSTREAM_RE.match(col)
    return f"{m['task']}/{m['setting']} {m['stat']}" if m else col


def _grid(n: int, max_cols: int = 4) -> tuple[int, int]:
    cols = min(max(n, 1), max_cols)
    return math.ceil(max(n, 1) / cols), cols


def _new(rows: int, cols: int, w: float = 4.0, h: float = 3.3) -> tuple[Figure, np.ndarray]:
    fig = Figure(figsize=(w * cols, h * rows), layout="constrained")
    axes = np.atleast_2d(fig.subplots(rows, cols, squeeze=False))
    return fig, axes


def _no_data(ax: Any, title: str, why: str = "no data") -> None:
    ax.text(0.5, 0.5, why, ha="center", va="center", transform=ax.transAxes, fontsize=11, color="0.4")
    ax.set_title(title, fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])


def _save(fig: Figure, out_dir: Path, name: str) -> list[Path]:
    paths = []
    for ext in FORMATS:
        path = out_dir / f"{name}.{ext}"
        fig.savefig(path, dpi=110)
        paths.append(path)
        fig.set_layout_engine("none")  # keep the first layout: the second format need not redo it
    return paths


def _empty(out_dir: Path, name: str, title: str, why: str = "no data") -> list[Path]:
    fig, axes = _new(1, 1, 5, 3.5)
    _no_data(axes[0, 0], title, why)
    return _save(fig, out_dir, name)


# ------------------------------------------------------------------------------------------------


def _gain_errors(context: StudyContext, d: str, rms: Sequence[str], values: Sequence[float]) -> np.ndarray | None:
    """``[2, n]`` error bars from each RM's CI of the gain over prompts (None when no RM has one)."""
    cis = (context.gain_ci or context.ppo_ci or {}).get(d, {})
    if not cis:
        return None
    lo_hi = [cis.get(str(rm)) or [None, None] for rm in rms]
    return np.array([[0.0 if is_missing(lo) else max(v - lo, 0.0) for v, (lo, _) in zip(values, lo_hi, strict=True)],
                     [0.0 if is_missing(hi) else max(hi - v, 0.0) for v, (_, hi) in zip(values, lo_hi, strict=True)]])


def fig_scatter(study: StudyTable, corr: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Benchmark score vs downstream gain per (main benchmark, gain column), with the gains' prompt CIs."""
    table = study.frame
    benches = [b for b in main_benchmark_columns(table.columns) if table[b].notna().any()]
    downs = [d for d in gain_columns(table.columns) if table[d].notna().any()]
    if not benches or not downs:
        return _empty(out_dir, "fig_scatter", "benchmark score vs downstream gain")
    ndcg = (_ndcg_names(corr) or [None])[0]
    styles = rm_styles(table)
    fig, axes = _new(len(benches), len(downs))
    for i, b in enumerate(benches):
        for j, d in enumerate(downs):
            ax = axes[i, j]
            pair = table[[b, d, "label"]].dropna(subset=[b, d])
            title = f"{b} vs {_short_setting(d)}"
            if pair.empty:
                _no_data(ax, title)
                continue
            err = _gain_errors(study.context, d, [str(r) for r in pair.index], pair[d].tolist())
            for n, (rm, r) in enumerate(pair.iterrows()):
                st = styles[str(rm)]
                ax.errorbar([r[b]], [r[d]], yerr=None if err is None else err[:, n:n + 1], fmt=st.marker, ms=5,
                            color=st.colour, mfc=st.colour if st.filled else "white", ecolor=st.colour, elinewidth=0.7,
                            capsize=1.5, alpha=0.9, zorder=3)
            x, y = pair[b].to_numpy(float), pair[d].to_numpy(float)
            if len(pair) >= 2 and np.ptp(x) > 0:
                slope, icpt = np.polyfit(x, y, 1)
                xs = np.linspace(x.min(), x.max(), 20)
                ax.plot(xs, slope * xs + icpt, color="0.2", lw=1, ls="--", zorder=2)
            rho, tau = _value(corr, b, d, "spearman"), _value(corr, b, d, "kendall")
            nd = _value(corr, b, d, ndcg) if ndcg else None
            text = f"ρ={_fmt(rho)}  τ={_fmt(tau)}\nNDCG={_fmt(nd)}  n={len(pair)}"
            ax.text(0.03, 0.97, text, transform=ax.transAxes, va="top", fontsize=7,
                    bbox={"boxstyle": "round", "fc": "white", "ec": "0.8", "alpha": 0.8})
            ax.set_title(title, fontsize=9)
            ax.set_xlabel(b, fontsize=8)
            ax.set_ylabel(d, fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3)
            place_labels(ax, x, y, [str(v) for v in pair["label"]])
    fig.legend(handles=legend_handles(styles), fontsize=7, loc="outside right upper", title="RMs", title_fontsize=7)
    return _save(fig, out_dir, "fig_scatter")


def _bars(ax: Any, groups: Sequence[str], series: Sequence[tuple[str, list[Any], list[Any], list[Any]]],
          title: str, ylabel: str) -> None:
    """Grouped bars: ``series`` = (name, values, ci_lows, ci_highs); None values print "n/a"."""
    width = 0.8 / max(len(series), 1)
    xs = np.arange(len(groups))
    for s, (name, vals, los, his) in enumerate(series):
        pos = xs - 0.4 + width * (s + 0.5)
        heights = [0.0 if is_missing(v) else float(v) for v in vals]
        err = np.array([[np.nan if is_missing(v) or is_missing(lo) else max(float(v) - float(lo), 0.0) for v, lo in zip(vals, los, strict=True)],
                        [np.nan if is_missing(v) or is_missing(hi) else max(float(hi) - float(v), 0.0) for v, hi in zip(vals, his, strict=True)]])
        ax.bar(pos, heights, width * 0.95, label=name, color=_PALETTE[s % len(_PALETTE)])
        has_ci = ~np.isnan(err).any(axis=0)
        if has_ci.any():  # error bars only where a CI exists (none for subsets without boot_subsets)
            ax.errorbar(pos[has_ci], np.asarray(heights)[has_ci], yerr=err[:, has_ci], fmt="none", ecolor="black",
                        elinewidth=0.8, capsize=2)
        for p, v in zip(pos, vals, strict=True):
            if is_missing(v):
                ax.text(p, 0.02, "n/a", ha="center", va="bottom", fontsize=6, rotation=90, color="0.3")
    ax.axhline(0, color="0.3", lw=0.6)
    ax.set_xticks(xs)
    ax.set_xticklabels(groups, rotation=20, ha="right", fontsize=7)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.tick_params(labelsize=7)
    ax.grid(axis="y", alpha=0.3)


def _series(corr: pd.DataFrame, benches: Sequence[str], d: str, stat: str) -> tuple[str, list, list, list]:
    rows = [_stat(corr, b, d, stat) for b in benches]
    vals = [None if r is None else r["value"] for r in rows]
    los = [None if r is None else r["ci_low"] for r in rows]
    his = [None if r is None else r["ci_high"] for r in rows]
    return stat, vals, los, his


_NDCG_NAME = re.compile(r"^ndcg\[(?P<rel>\w+),(?P<gain>\w+)\](?:@(?P<k>\d+))?$")


def _null_bands(ax: Any, table: pd.DataFrame, benches: Sequence[str], d: str, stats: Sequence[str]) -> None:
    """Behind each NDCG bar: the 5-95% range of NDCG under a random order of the same RMs, and its mean."""
    width = 0.8 / max(len(stats), 1)
    for s, stat in enumerate(stats):
        m = _NDCG_NAME.match(str(stat))
        if not m:
            continue
        for g, b in enumerate(benches):
            down = table[[b, d]].apply(pd.to_numeric, errors="coerce").dropna()[d]
            if len(down) < 3:
                continue
            try:
                null = ndcg_null(down.to_numpy(float), m["rel"], m["gain"], None if m["k"] is None else int(m["k"]))
            except DataError:
                continue
            if null is None:
                continue
            pos = g - 0.4 + width * (s + 0.5)
            lo, hi = null.quantile(0.05), null.quantile(0.95)
            ax.add_patch(Rectangle((pos - width / 2, lo), width, hi - lo, color="0.6", alpha=0.35, zorder=0,
                                   label="NDCG of a random order (5-95%)" if s == 1 and g == 0 else None))
            ax.plot([pos - width / 2, pos + width / 2], [null.mean] * 2, color="0.2", lw=1.0, zorder=4)


def fig_ndcg_bars(table: pd.DataFrame, corr: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Spearman and NDCG per main benchmark (NDCG against its random-order band), per gain column."""
    benches = main_benchmark_columns(table.columns)
    downs = gain_columns(table.columns)
    if not benches or not downs or corr is None or corr.empty:
        return _empty(out_dir, "fig_ndcg_bars", "Spearman and NDCG per benchmark")
    stats = ["spearman", *_ndcg_names(corr)]
    rows, cols = _grid(len(downs), 2)
    fig, axes = _new(rows, cols, 5.0, 3.4)
    for idx, d in enumerate(downs):
        ax = axes.flat[idx]
        _bars(ax, benches, [_series(corr, benches, d, s) for s in stats], _short_setting(d), "correlation")
        _null_bands(ax, table, benches, d, stats)
        ax.set_ylim(min(-1.05, ax.get_ylim()[0]), 1.15)
        if idx == 0:
            ax.legend(fontsize=6, loc="lower left")
    for ax in list(axes.flat)[len(downs):]:
        ax.set_visible(False)
    return _save(fig, out_dir, "fig_ndcg_bars")


def fig_subset_pearson(table: pd.DataFrame, corr: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Pearson r of RB2 overall and of each RB2 subset, per gain column."""
    subsets = [c for c in table.columns if c.startswith("rb2/") and table[c].notna().any()]
    downs = gain_columns(table.columns)
    if not subsets or not downs or corr is None or corr.empty:
        return _empty(out_dir, "fig_subset_pearson", "Pearson r per RB2 subset")
    rows, cols = _grid(len(downs), 2)
    fig, axes = _new(rows, cols, 5.0, 3.4)
    names = [s.split("/", 1)[1] for s in subsets]
    for idx, d in enumerate(downs):
        ax = axes.flat[idx]
        _, vals, los, his = _series(corr, subsets, d, "pearson")
        _bars(ax, names, [("pearson", vals, los, his)], f"Pearson r: RB2 vs {_short_setting(d)}", "Pearson r")
        ax.set_ylim(min(-1.05, ax.get_ylim()[0]), 1.1)
    for ax in list(axes.flat)[len(downs):]:
        ax.set_visible(False)
    return _save(fig, out_dir, "fig_subset_pearson")


def fig_bon_curves(study: StudyTable, out_dir: Path) -> list[Path]:
    """Gold score of BoN@k per RM, with the oracle and first-k curves, one panel per prompt set."""
    table = study.frame
    curves = {s: c for s, c in study.context.curves.items() if c}
    if not curves:
        return _empty(out_dir, "fig_bon_curves", "BoN@k curves")
    labels = table["label"].to_dict() if "label" in table else {}
    styles = rm_styles(table)
    rows, cols = _grid(len(curves), 2)
    fig, axes = _new(rows, cols, 5.0, 3.6)
    for idx, (setting, per_rm) in enumerate(sorted(curves.items())):
        ax = axes.flat[idx]
        oracle: dict[int, list[float]] = {}
        first: dict[int, list[float]] = {}
        for rm, cur in sorted(per_rm.items(), key=lambda kv: str(labels.get(kv[0], kv[0]))):
            ks = cur["ks"]
            st = styles.get(str(rm)) or RMStyle("0.5", "x", "-", True, "external", "external")
            ax.plot(ks, [np.nan if is_missing(v) else v for v in cur["bon"]], marker=st.marker, ms=3.5, lw=1.2,
                    ls=st.linestyle, color=st.colour, mfc=st.colour if st.filled else "white",
                    label=str(labels.get(rm, rm[:8])))
            for kk, o, f in zip(ks, cur["oracle"], cur["first_k"], strict=True):
                if not is_missing(o):
                    oracle.setdefault(kk, []).append(float(o))
                if not is_missing(f):
                    first.setdefault(kk, []).append(float(f))
        if oracle:
            ks = sorted(oracle)
            ax.plot(ks, [np.mean(oracle[x]) for x in ks], color="black", ls="--", lw=1.4, label="oracle")
        if first:
            ks = sorted(first)
            ax.plot(ks, [np.mean(first[x]) for x in ks], color="0.5", ls=":", lw=1.2, label="first-k (mean over RMs)")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("k (samples)", fontsize=8)
        ax.set_ylabel("gold score of BoN@k", fontsize=8)
        ax.set_title(f"Best-of-N: {setting}", fontsize=9)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, loc="best")
    for ax in list(axes.flat)[len(curves):]:
        ax.set_visible(False)
    return _save(fig, out_dir, "fig_bon_curves")


def fig_ppo_lineage(study: StudyTable, corr: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Benchmark score vs PPO gain by lineage match with the policy; judge-reward runs as reference lines."""
    table, context = study.frame, study.context
    ppo = [d for d in gain_columns(table.columns) if not d.startswith("bon/") and table[d].notna().any()]
    benches = [b for b in main_benchmark_columns(table.columns) if table[b].notna().any()]
    uppers = context.upper_bounds
    if not ppo or not benches:
        return _empty(out_dir, "fig_ppo_lineage", "benchmark score vs PPO gain by lineage match")
    cis = context.ppo_ci
    fig, axes = _new(len(ppo), len(benches))
    styles = {True: ("#2ca02c", "o", "same lineage as policy"), False: ("#d62728", "s", "other lineage"),
              None: ("0.5", "^", "lineage unknown")}
    for i, d in enumerate(ppo):
        match_col = d.rsplit("/", 1)[0] + "/lineage_match"
        for j, b in enumerate(benches):
            ax = axes[i, j]
            title = f"{b} vs {_short_setting(d)}"
            pair = table.dropna(subset=[b, d])
            if pair.empty:
                _no_data(ax, title)
                continue
            for key, (colour, marker, name) in styles.items():
                flags = pair[match_col] if match_col in pair else pd.Series([None] * len(pair), index=pair.index)
                sel = pair[flags.map(lambda v, k=key: lineage_flag(v) is k)]
                if sel.empty:
                    continue
                lo_hi = [cis.get(d, {}).get(rm, [None, None]) for rm in sel.index]
                yerr = np.array([[0.0 if is_missing(lo) else max(v - lo, 0.0) for v, (lo, _) in zip(sel[d], lo_hi, strict=True)],
                                 [0.0 if is_missing(hi) else max(hi - v, 0.0) for v, (_, hi) in zip(sel[d], lo_hi, strict=True)]])
                ax.errorbar(sel[b], sel[d], yerr=yerr, fmt=marker, color=colour, ms=5, capsize=2, lw=0.8, label=name)
            setting = d.rsplit("/", 1)[0]
            for u in uppers:
                if u.get("setting") == setting and not is_missing(u.get("gain")):
                    ax.axhline(u["gain"], color="0.3", ls="--", lw=0.9)
                    ax.text(0.99, u["gain"], f" {u['rm']}", transform=ax.get_yaxis_transform(), ha="right",
                            va="bottom", fontsize=6, color="0.3")
            rho = _value(corr, b, d, "spearman")
            text = f"ρ all={_fmt(rho)} (n={len(pair)})"
            match = pair[match_col].map(lineage_flag) if match_col in pair else pd.Series([None] * len(pair), index=pair.index)
            same = pair[match.map(lambda v: v is True)]
            if len(same) >= 2:
                text += f"\nρ same lineage={_fmt(spearman(same[b], same[d]).value)} (n={len(same)})"
            ax.text(0.03, 0.03, text, transform=ax.transAxes, va="bottom", fontsize=7,
                    bbox={"boxstyle": "round", "fc": "white", "ec": "0.8", "alpha": 0.8})
            ax.set_title(title, fontsize=9)
            ax.set_xlabel(b, fontsize=8)
            ax.set_ylabel(f"{d} (gold after - before)", fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3)
            if i == 0 and j == 0:
                ax.legend(fontsize=6, loc="center right")
    return _save(fig, out_dir, "fig_ppo_lineage")


def all_figures(study: StudyTable, corr: pd.DataFrame, out_dir: Path) -> dict[str, list[Path]]:
    """Draw the six figures into ``out_dir``; returns name -> [png, pdf]."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return {
        "fig_scatter": fig_scatter(study, corr, out_dir),
        "fig_ndcg_bars": fig_ndcg_bars(study.frame, corr, out_dir),
        "fig_subset_pearson": fig_subset_pearson(study.frame, corr, out_dir),
        "fig_bon_curves": fig_bon_curves(study, out_dir),
        "fig_ppo_lineage": fig_ppo_lineage(study, corr, out_dir),
        "fig_benchmark_ranking": fig_benchmark_ranking(
            comparison_rows(study.frame, corr, next(iter(_ndcg_names(corr)), None)), out_dir),
    }
