"""Page one of a correlation study: the declared headline pairs, their verdicts, and the checks
that say whether a correlation can be trusted.

The headline columns are fixed before the numbers are read (``correlate.headline``): RB2 overall
and the PRB accuracy of one declared profile mode (by default the mode the downstream RMs scored
with), against every downstream gain column. For each pair the page shows Spearman's rho with
its bootstrap CI and exact p, NDCG against its chance level, and a verdict; then the same
correlation without the control RMs (e.g. flipped labels) and within each data mix, because a
correlation across "working vs broken" RMs says little about ranking working ones; and, when the
study trained several seeds, the seed-to-seed spread.

Everything here reads the RM table and the long correlation table; nothing loads a model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from rlexp.analysis.columns import gain_columns, main_benchmark_columns
from rlexp.analysis.correlation import MIN_ITEMS, MIN_TESTABLE, spearman
from rlexp.analysis.study_table import Interval, SeedGains, StudyTable
from rlexp.analysis.values import is_missing, none_if_missing

#: Factors that identify one training configuration apart from its seed.
CONFIG_FACTORS: tuple[str, ...] = ("lineage", "model", "mix", "epochs", "lr", "train_profile")


@dataclass
class HeadlineSpec:
    """Which columns page one reports, and why (declared in the config or derived from records)."""

    benchmarks: list[str]
    downstream: list[str]
    prb_mode: str | None
    prb_mode_source: str  # "config" | "downstream records" | "no PRB column"
    controls: list[str]
    secondary: list[str] = field(default_factory=list)  # main benchmark columns not on page one


def headline_spec(table: pd.DataFrame, downstream_modes: Sequence[str], *, prb_mode: str | None,
                  controls: Sequence[str]) -> HeadlineSpec:
    """The headline benchmark columns: ``rb2/overall`` and ``prb/<mode>/accuracy``.

    ``prb_mode`` from the config wins; otherwise the profile mode the downstream (BoN/PPO) records
    scored with (``downstream_modes``, :attr:`StudyContext.downstream_profile_modes`), when they
    agree on one. The PRB columns of other modes are secondary.
    """
    main = main_benchmark_columns(table.columns)
    prb_cols = [c for c in main if c.startswith("prb/")]
    source = "config"
    if prb_mode is None:
        modes = list(downstream_modes)
        prb_mode, source = (modes[0], "downstream records") if len(modes) == 1 else (None, "no single downstream mode")
    chosen = f"prb/{prb_mode}/accuracy" if prb_mode is not None else None
    if chosen not in prb_cols:
        # Declared mode not evaluated (or none declared): fall back to the first PRB column, and say so.
        fallback = prb_cols[0] if prb_cols else None
        if fallback is not None:
            source = f"{source}: prb/{prb_mode}/accuracy absent, first PRB column used" if prb_mode else source
            prb_mode, chosen = fallback.split("/")[1], fallback
        else:
            source, chosen = "no PRB column", None
    benchmarks = [c for c in ("rb2/overall", chosen) if c is not None and c in main]
    return HeadlineSpec(benchmarks=benchmarks, downstream=gain_columns(table.columns), prb_mode=prb_mode,
                        prb_mode_source=source, controls=[str(c) for c in controls],
                        secondary=[c for c in main if c not in benchmarks])


def verdict(n: int, value: float | None, pvalue: float | None, alpha: float) -> str:
    """The plain-language reading of one Spearman correlation (rule in docs/tasks.md)."""
    if n < MIN_TESTABLE:
        return f"not testable (n = {n})"
    if value is None or pvalue is None:
        return "undefined"
    if pvalue < alpha:
        return "predicts" if value > 0 else "predicts inversely"
    return "no evidence"


def _pair(table: pd.DataFrame, b: str, d: str) -> pd.DataFrame:
    return table[[b, d]].apply(pd.to_numeric, errors="coerce").dropna()


def _scoped(table: pd.DataFrame, b: str, d: str, scope: str, alpha: float) -> dict[str, Any]:
    pair = _pair(table, b, d)
    n = len(pair)
    out: dict[str, Any] = {"benchmark": b, "downstream": d, "scope": scope, "n": n,
                           "spearman": None, "pvalue": None, "verdict": f"not testable (n = {n})"}
    if n >= MIN_ITEMS:
        corr = spearman(pair[b].to_numpy(float), pair[d].to_numpy(float))
        out.update(spearman=corr.value, pvalue=corr.pvalue, verdict=verdict(n, corr.value, corr.pvalue, alpha))
    return out


def _trained(table: pd.DataFrame) -> pd.DataFrame:
    return table[~table["external"].astype(bool)] if "external" in table else table


def subgroup_correlations(table: pd.DataFrame, spec: HeadlineSpec, alpha: float = 0.05) -> list[dict[str, Any]]:
    """Spearman of every headline pair in every scope: ``all``, ``without controls``, ``mix=<m>`` per
    data mix of the trained RMs, and ``seed=<s>`` per seed when several seeds were trained."""
    trained = _trained(table)
    mixes = sorted({str(m) for m in trained.get("mix", pd.Series(dtype=object)).dropna()})
    seeds = sorted({str(s) for s in trained.get("seed", pd.Series(dtype=object)).dropna()})
    is_control = table["mix"].astype(str).isin(spec.controls) if "mix" in table else pd.Series(False, table.index)
    rows: list[dict[str, Any]] = []
    for b in spec.benchmarks:
        for d in spec.downstream:
            rows.append(_scoped(table, b, d, "all", alpha))
            start = len(rows)
            if is_control.any():
                rows.append(_scoped(table[~is_control], b, d, "without controls", alpha))
            if len(mixes) > 1:
                rows += [_scoped(trained[trained["mix"].astype(str) == m], b, d, f"mix={m}", alpha) for m in mixes]
            if len(seeds) > 1:
                rows += [_scoped(trained[trained["seed"].astype(str) == s], b, d, f"seed={s}", alpha) for s in seeds]
            rows[start:] = [r for r in rows[start:] if r["n"] > 0]  # e.g. a mix no PPO pick trained on
    return rows


def seed_spread(table: pd.DataFrame, columns: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Seed-to-seed standard deviation of each column over configurations trained with several seeds.

    RMs are grouped by :data:`CONFIG_FACTORS`; a group with at least two seeds contributes its
    sample variance, and the reported ``sd`` pools them (root of the mean variance). ``sd`` is None
    when no configuration has two seeds (then the CIs cover prompt/RM resampling only).
    """
    trained = _trained(table)
    factors = [f for f in CONFIG_FACTORS if f in trained]
    out: dict[str, dict[str, Any]] = {}
    for col in columns:
        if col not in trained or not factors:
            continue
        frame = trained[[*factors, col]].copy()
        frame[factors] = frame[factors].astype(str)
        frame[col] = pd.to_numeric(frame[col], errors="coerce")
        groups = [g[col].dropna() for _, g in frame.groupby(factors, sort=True)]
        repeated = [g for g in groups if len(g) >= 2]
        sd = _pooled_sd(repeated) if repeated else None
        out[col] = {"sd": sd, "configs": len(repeated), "seeds": max((len(g) for g in groups), default=0)}
    return out


def ppo_seed_spread(ppo_seeds: Mapping[str, Mapping[str, SeedGains]]) -> dict[str, dict[str, Any]]:
    """:func:`seed_spread` of the PPO columns pooled over training seeds with the RM fixed
    (``study.ppo_seeds``; :attr:`StudyContext.ppo_seeds`): each RM's own seeds are one configuration."""
    out: dict[str, dict[str, Any]] = {}
    for col, per_rm in ppo_seeds.items():
        repeated = [v["gains"] for v in per_rm.values() if len(v["gains"]) >= 2]
        if repeated:
            out[col] = {"sd": _pooled_sd(repeated), "configs": len(repeated), "seeds": max(len(g) for g in repeated)}
    return out


def _pooled_sd(groups: Sequence[Any]) -> float:
    """The root of the groups' mean sample variance: one SD for several configurations' seeds."""
    return float(math.sqrt(np.mean([np.var(np.asarray(g, dtype=float), ddof=1) for g in groups])))


def _corr_row(corr: pd.DataFrame, b: str, d: str, stat: str) -> Mapping[str, Any] | None:
    if corr.empty:
        return None
    hit = corr[(corr["benchmark"] == b) & (corr["downstream"] == d) & (corr["statistic"] == stat)]
    return None if hit.empty else hit.iloc[0].to_dict()


def headline_rows(corr: pd.DataFrame, spec: HeadlineSpec, subgroups: Sequence[Mapping[str, Any]],
                  spread: Mapping[str, Mapping[str, Any]], *, ndcg_name: str | None, alpha: float) -> list[dict[str, Any]]:
    """One row per headline (benchmark, downstream) pair, JSON-serialisable (see :func:`summarise`)."""
    rows = []
    for b in spec.benchmarks:
        for d in spec.downstream:
            rho = _corr_row(corr, b, d, "spearman") or {}
            nd = (_corr_row(corr, b, d, ndcg_name) if ndcg_name else None) or {}
            n = int(rho.get("n") or 0)
            value, p = none_if_missing(rho.get("value")), none_if_missing(rho.get("pvalue"))
            scopes = [s for s in subgroups if s["benchmark"] == b and s["downstream"] == d and s["scope"] != "all"]
            seed_rhos = [s["spearman"] for s in scopes if s["scope"].startswith("seed=") and s["spearman"] is not None]
            rows.append({
                "benchmark": b, "downstream": d, "n": n, "spearman": value, "pvalue": p,
                "ci": [none_if_missing(rho.get("ci_low")), none_if_missing(rho.get("ci_high"))],
                "prompt_ci": [none_if_missing(rho.get("prompt_ci_low")), none_if_missing(rho.get("prompt_ci_high"))],
                "ndcg": none_if_missing(nd.get("value")), "ndcg_null_mean": none_if_missing(nd.get("null_mean")),
                "ndcg_null_p": none_if_missing(nd.get("null_p")), "ndcg_normalised": none_if_missing(nd.get("normalised")),
                "verdict": verdict(n, value, p, alpha),
                "scopes": scopes,
                "seed_rho_range": [min(seed_rhos), max(seed_rhos)] if len(seed_rhos) > 1 else None,
                "downstream_seed_sd": (spread.get(d) or {}).get("sd"),
            })
    return rows


def _fmt(v: Any, digits: int = 2) -> str:
    return "n/a" if is_missing(v) else f"{float(v):.{digits}f}"


def _p(v: Any) -> str:
    return "n/a" if is_missing(v) else f"{float(v):.2g}"


def findings(rows: Sequence[Mapping[str, Any]], spec: HeadlineSpec, gain_ci: Mapping[str, Mapping[str, Interval]],
             spread: Mapping[str, Mapping[str, Any]], alpha: float) -> list[str]:
    """Three to five sentences the headline numbers support, each with its evidence.

    ``gain_ci``: per gain column, each RM's CI over prompts (:attr:`StudyContext.gain_ci`), read
    against the seed-to-seed spread.
    """
    out: list[str] = []
    testable = [r for r in rows if not r["verdict"].startswith("not testable") and r["spearman"] is not None]
    if testable:
        best = max(testable, key=lambda r: r["spearman"])
        out.append(
            f"Strongest headline agreement: `{best['benchmark']}` vs `{best['downstream']}`, ρ = {_fmt(best['spearman'])} "
            f"[{_fmt(best['ci'][0])}, {_fmt(best['ci'][1])}], p = {_p(best['pvalue'])}, n = {best['n']} ({best['verdict']}).")
    counts: dict[str, int] = {}
    for r in rows:
        key = "not testable" if r["verdict"].startswith("not testable") else r["verdict"]
        counts[key] = counts.get(key, 0) + 1
    if rows:
        out.append(f"Of {len(rows)} headline pairs: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
                   + f" (Spearman, α = {alpha:g}; fewer than {MIN_TESTABLE} RMs is not testable).")
    controls = [(r, s) for r in testable for s in r["scopes"] if s["scope"] == "without controls"]
    if controls:
        r, s = max(controls, key=lambda rs: abs((rs[0]["spearman"] or 0) - (rs[1]["spearman"] or 0)))
        out.append(
            f"Controls ({', '.join(spec.controls)}) matter most for `{r['benchmark']}` vs `{r['downstream']}`: "
            f"ρ = {_fmt(r['spearman'])} with them (n = {r['n']}), {_fmt(s['spearman'])} without "
            f"(n = {s['n']}, {s['verdict']}).")
    ndcg_rows = [r for r in rows if r["ndcg"] is not None and r["ndcg_null_p"] is not None]
    if ndcg_rows:
        above = [r for r in ndcg_rows if r["ndcg_null_p"] < alpha]
        r = max(ndcg_rows, key=lambda x: x["ndcg_normalised"] if x["ndcg_normalised"] is not None else -9)
        out.append(
            f"NDCG beats a random order of the RMs (p < {alpha:g}) in {len(above)} of {len(ndcg_rows)} pairs; "
            f"a random order already scores {_fmt(r['ndcg_null_mean'])} on average. Best: `{r['benchmark']}` vs "
            f"`{r['downstream']}` NDCG {_fmt(r['ndcg'])} (normalised {_fmt(r['ndcg_normalised'])}, null p = {_p(r['ndcg_null_p'])}).")
    sds = {c: v for c, v in spread.items() if v.get("sd") is not None and c in spec.downstream}
    if sds:
        half = _prompt_ci_half_widths(gain_ci)
        out.append("Seed-to-seed SD of the downstream gains, next to the mean half-width of one RM's prompt CI: "
                   + "; ".join(f"`{c}` {_fmt(v['sd'], 3)} vs {_fmt(half.get(c), 3)} ({v['configs']} configurations × "
                               f"{v['seeds']} seeds)" for c, v in sds.items())
                   + ". Where the seed SD is comparable, a CI over prompts alone (one seed, or seeds pooled and held fixed) understates the uncertainty.")
    else:
        out.append("Every configuration ran with one seed, so the CIs cover prompt and RM resampling only, not "
                   "training variance (set `study.seeds` to measure it, or `study.ppo_seeds` for PPO alone).")
    return out[:5]


def _prompt_ci_half_widths(gain_ci: Mapping[str, Mapping[str, Interval]]) -> dict[str, float]:
    """Per gain column: the mean half-width of the RMs' CIs over prompts (the record's own gain CI)."""
    out = {}
    for col, per_rm in gain_ci.items():
        widths = [(hi - lo) / 2 for lo, hi in per_rm.values() if lo is not None and hi is not None]
        if widths:
            out[col] = float(np.mean(widths))
    return out


def summarise(study: StudyTable, corr: pd.DataFrame, *, prb_mode: str | None,
              controls: Sequence[str], alpha: float) -> dict[str, Any]:
    """Everything page one shows, JSON-serialisable (stored as :attr:`StudyContext.headline`)."""
    table = study.frame
    spec = headline_spec(table, study.context.downstream_profile_modes, prb_mode=prb_mode, controls=controls)
    ndcg_names = [s for s in dict.fromkeys(corr["statistic"].tolist()) if str(s).startswith("ndcg")] if len(corr) else []
    ndcg_name = ndcg_names[0] if ndcg_names else None
    subgroups = subgroup_correlations(table, spec, alpha)
    spread = seed_spread(table, [*spec.benchmarks, *spec.downstream])
    for col, pooled in ppo_seed_spread(study.context.ppo_seeds or {}).items():
        if col in spec.downstream and (spread.get(col) or {}).get("sd") is None:
            spread[col] = pooled
    rows = headline_rows(corr, spec, subgroups, spread, ndcg_name=ndcg_name, alpha=alpha)
    return {"spec": asdict(spec), "ndcg": ndcg_name, "alpha": alpha, "rows": rows, "subgroups": subgroups,
            "seed_spread": spread, "findings": findings(rows, spec, study.context.gain_ci, spread, alpha)}
