"""The statistics of a study's RM table: the long correlation table, whether BoN and PPO gains
differ, and the compact summary kept in the correlate record.

:func:`correlation_table` correlates every benchmark column with every downstream column using
:mod:`rlexp.analysis.bootstrap`; BoN gain columns whose RMs all have per-prompt results also get
a CI from resampling prompts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rlexp.analysis.bootstrap import bootstrap_prompts, correlate, gain_differences
from rlexp.analysis.columns import (
    DOWNSTREAM_RE,
    benchmark_columns,
    downstream_columns,
    gain_columns,
    main_benchmark_columns,
)
from rlexp.analysis.correlation import MIN_ITEMS, Corr
from rlexp.analysis.ndcg import ndcg_variants
from rlexp.analysis.records import short_name
from rlexp.analysis.replicates import mean_over_seeds
from rlexp.analysis.study_table import StudyTable

CORR_COLUMNS: tuple[str, ...] = (
    "benchmark", "downstream", "statistic", "value", "pvalue", "ci_low", "ci_high",
    "prompt_ci_low", "prompt_ci_high", "null_mean", "null_p", "normalised", "n", "n_boot", "main", "note",
)
#: CORR_COLUMNS that hold a number or None (never NaN: the CSV and the report read None as n/a).
_NUMBER_COLUMNS: tuple[str, ...] = ("value", "pvalue", "ci_low", "ci_high", "prompt_ci_low", "prompt_ci_high",
                                    "null_mean", "null_p", "normalised")


def _bon_k(column: str) -> int | None:
    """The k of a ``bon/<setting>/gain@<k>`` column; None for any other column."""
    m = DOWNSTREAM_RE.match(column)
    return int(m["stat"][5:]) if m and m["task"] == "bon" and m["stat"].startswith("gain@") else None


def gain_column(column: str) -> tuple[str, int | None] | None:
    """("bon", k) for a ``bon/<setting>/gain@<k>`` column, ("ppo", None) for ``ppo/<setting>/gain``."""
    k = _bon_k(column)
    if k is not None:
        return "bon", k
    m = DOWNSTREAM_RE.match(column)
    return ("ppo", None) if m and m["task"] == "ppo" and m["stat"] == "gain" else None


def per_prompt_matrix(paths: Mapping[str, str | Sequence[str]], rms: Sequence[str], k: int | None,
                      cache: dict[str, pd.DataFrame]) -> tuple[np.ndarray | None, str | None]:
    """``[RMs, prompts]`` per-prompt gains, prompts aligned by id: BoN's gain at ``k`` (bon@k -
    bon_at_1), or PPO's gain (gold after - before) when ``k`` is None. An RM with several files (a
    PPO setting run over several training seeds) gets, per prompt, the mean of their gains on the
    prompts all of them have (rlexp/analysis/replicates.py)."""
    what = "PPO" if k is None else "BoN"
    frames = []
    for rm in rms:
        files = paths.get(rm)
        if not files:
            return None, f"no per-prompt {what} results for RM {short_name(rm)}"
        replicates = []
        for path in [files] if isinstance(files, str) else files:  # a str: a context.json written before 2026-12-05
            if path not in cache:
                try:
                    cache[path] = pd.read_parquet(path)
                except (OSError, ValueError) as exc:
                    return None, f"per-prompt {what} results unreadable for RM {short_name(rm)} ({exc.__class__.__name__})"
            frame = cache[path]
            needed = ["gain"] if k is None else [f"bon@{k}", "bon_at_1"]
            if "prompt_id" not in frame or any(c not in frame for c in needed):
                return None, f"per-prompt {what} results of RM {short_name(rm)} lack {needed[0]}"
            gain = frame["gain"] if k is None else frame[f"bon@{k}"] - frame["bon_at_1"]
            replicates.append(pd.Series(gain.to_numpy(dtype=float), index=frame["prompt_id"].astype(str)))
        frames.append(mean_over_seeds(replicates))
    common = frames[0].index
    for s in frames[1:]:
        common = common.intersection(s.index)
    if len(common) == 0:
        return None, f"the RMs' per-prompt {what} results share no prompt"
    matrix = np.stack([s.reindex(common).to_numpy(dtype=float) for s in frames])
    return matrix, None


def correlation_table(
    study: StudyTable,
    *,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
    ndcg: Sequence[tuple[str, str, int | None]] | None = None,
    boot_subsets: bool = False,
) -> pd.DataFrame:
    """Every (benchmark column, downstream column) pair x statistic, long format (:data:`CORR_COLUMNS`).

    Statistics come from :func:`rlexp.analysis.bootstrap.correlate` (RMs with both values; CIs by
    resampling RMs). For BoN gain columns with per-prompt results for every RM
    (``study.context.per_prompt``), ``prompt_ci_*`` is the CI of
    :func:`~rlexp.analysis.bootstrap.bootstrap_prompts` (prompts resampled). Bootstrap CIs are
    computed for the main benchmark columns (``rb2/overall``, ``prb/<mode>/accuracy``), and for
    subsets/domains only with ``boot_subsets``. With fewer than 3 RMs every statistic, NDCG
    included, is undefined: ``value`` is None and ``note`` says why.
    """
    variants = list(ndcg) if ndcg is not None else ndcg_variants()
    table = study.frame
    bench = benchmark_columns(table.columns)
    main = set(main_benchmark_columns(bench))
    cache: dict[str, pd.DataFrame] = {}
    rows: list[dict[str, Any]] = []
    for b in bench:
        for d in downstream_columns(table.columns):
            pair = table[[b, d]].apply(pd.to_numeric, errors="coerce").dropna()
            x, y = pair[b].to_numpy(float), pair[d].to_numpy(float)
            n = len(pair)
            boot = n_boot if (b in main or boot_subsets) and n >= MIN_ITEMS else 0
            results = correlate(x, y, n_boot=boot, seed=seed, ndcg_variants=variants, alpha=alpha)
            prompt: dict[str, Corr] = {}
            prompt_note = None
            k = _bon_k(d)
            if boot and k is not None and d in study.context.per_prompt:
                matrix, prompt_note = per_prompt_matrix(study.context.per_prompt[d], list(pair.index), k, cache)
                if matrix is not None:
                    prompt = {c.name: c for c in bootstrap_prompts(
                        x, matrix, n_boot=boot, seed=seed, ndcg_variants=variants, alpha=alpha)}
            for corr in results:
                note = f"no prompt CI: {prompt_note}" if prompt_note and b in main else None
                rows.append({"benchmark": b, "downstream": d, **_cells(corr, prompt.get(corr.name), n, note),
                             "n": n, "n_boot": boot, "main": b in main})
    out = pd.DataFrame(rows, columns=list(CORR_COLUMNS))
    for col in _NUMBER_COLUMNS:
        out[col] = out[col].astype(object).where(out[col].notna(), None)
    return out


def _cells(corr: Corr, prompt: Corr | None, n: int, prompt_note: str | None) -> dict[str, Any]:
    """One statistic's cells of the long table, from its RM bootstrap and its prompt bootstrap."""
    value, pvalue, lo, hi, note = corr.value, corr.pvalue, corr.ci_low, corr.ci_high, corr.note
    if n < MIN_ITEMS:  # NDCG is computable for 2 RMs, but no statistic is meaningful there
        value = pvalue = lo = hi = None
        note = f"undefined: fewer than {MIN_ITEMS} RMs with both values (n={n})"
    elif value is None:
        lo = hi = None  # no interval around an undefined point estimate
    if prompt_note:
        note = (f"{note}; " if note else "") + prompt_note
    with_prompt = prompt is not None and value is not None
    return {
        "statistic": corr.name, "value": value, "pvalue": pvalue, "ci_low": lo, "ci_high": hi,
        "prompt_ci_low": prompt.ci_low if with_prompt else None,
        "prompt_ci_high": prompt.ci_high if with_prompt else None,
        # NDCG's chance level (mean, p) and normalised value; None for the other statistics.
        "null_mean": corr.null_mean if value is not None else None,
        "null_p": corr.null_p if value is not None else None,
        "normalised": corr.normalised if value is not None else None,
        "note": note,
    }


def downstream_gain_differences(
    study: StudyTable, *, n_boot: int = 1000, alpha: float = 0.05, seed: int = 0
) -> dict[str, dict[str, Any]]:
    """Per BoN and PPO gain column: do the RMs' gains differ beyond prompt noise? (paired bootstrap).

    For each ``bon/<setting>/gain@k`` or ``ppo/<setting>/gain`` column whose RMs all have per-prompt
    results (PPO: every policy is evaluated on the same held-out prompts): the highest and
    lowest gain, their difference with its CI, how many RM pairs differ beyond the CI, and the
    Friedman test over prompts (see :func:`~rlexp.analysis.bootstrap.gain_differences`). A column
    without per-prompt results, or with fewer than 2 RMs, gets ``note`` instead.
    """
    table = study.frame
    out: dict[str, dict[str, Any]] = {}
    cache: dict[str, pd.DataFrame] = {}
    for col in downstream_columns(table.columns):
        kind = gain_column(col)
        if kind is None:
            continue
        k = kind[1]
        rms = [str(r) for r in pd.to_numeric(table[col], errors="coerce").dropna().index]
        if len(rms) < 2:
            out[col] = {"note": f"fewer than 2 RMs with a gain (n={len(rms)})"}
            continue
        matrix, note = per_prompt_matrix(study.context.per_prompt.get(col, {}), rms, k, cache)
        if matrix is None or n_boot < 1:
            out[col] = {"note": note or "n_boot=0: no bootstrap"}
            continue
        diffs = gain_differences(matrix, n_boot=n_boot, seed=seed, alpha=alpha)
        hi, lo = int(np.argmax(diffs.means)), int(np.argmin(diffs.means))
        out[col] = {
            "rms": len(rms), "prompts": int(matrix.shape[1]), "n_boot": n_boot,
            "best": {"rm": rms[hi], "label": str(table.loc[rms[hi], "label"]), "gain": float(diffs.means[hi])},
            "worst": {"rm": rms[lo], "label": str(table.loc[rms[lo], "label"]), "gain": float(diffs.means[lo])},
            "difference": float(diffs.diff[hi, lo]),
            "difference_ci": [float(diffs.ci_low[hi, lo]), float(diffs.ci_high[hi, lo])],
            "pairs": len(rms) * (len(rms) - 1) // 2, "pairs_separated": diffs.n_separated_pairs(),
            "friedman": {"statistic": diffs.friedman_statistic, "pvalue": diffs.friedman_pvalue},
        }
    return out


def summary(study: StudyTable, corr: pd.DataFrame, prb_column: str | None = None) -> dict[str, Any]:
    """Compact record metrics: per downstream gain column, Spearman and NDCG of rb2/overall and of
    the declared headline PRB column (``prb_column``; None = the first PRB accuracy column); plus counts.

    The PRB column is never chosen by its result: picking the best of several after the fact
    overstates how well PRB predicts."""
    table, context = study.frame, study.context
    ndcg_names = [s for s in corr["statistic"].unique() if str(s).startswith("ndcg")] if len(corr) else []
    ndcg_name = ndcg_names[0] if ndcg_names else None

    def stat(b: str, d: str, s: str | None) -> float | None:
        if s is None:
            return None
        hit = corr[(corr.benchmark == b) & (corr.downstream == d) & (corr.statistic == s)]
        return None if hit.empty or hit.iloc[0]["value"] is None else float(hit.iloc[0]["value"])

    def n_of(b: str, d: str) -> int:
        hit = corr[(corr.benchmark == b) & (corr.downstream == d)]
        return 0 if hit.empty else int(hit.iloc[0]["n"])

    settings: dict[str, Any] = {}
    prb_cols = [c for c in main_benchmark_columns(table.columns) if c.startswith("prb/")]
    for d in gain_columns(table.columns):
        entry: dict[str, Any] = {}
        if "rb2/overall" in table:
            entry["rb2/overall"] = {"spearman": stat("rb2/overall", d, "spearman"), "ndcg": stat("rb2/overall", d, ndcg_name),
                                    "n": n_of("rb2/overall", d)}
        if prb_cols:
            col = prb_column if prb_column in prb_cols else prb_cols[0]
            entry["prb"] = {"column": col, "spearman": stat(col, d, "spearman"), "ndcg": stat(col, d, ndcg_name),
                            "n": n_of(col, d)}
        settings[d] = entry
    downstream = downstream_columns(table.columns)
    return {
        "n_rms": int(len(table)),
        "n_rms_trained": int((~table["external"].astype(bool)).sum()) if "external" in table else int(len(table)),
        "n_rms_with": {c: int(table[c].notna().sum()) for c in [*main_benchmark_columns(table.columns), *downstream]},
        "records": context.records_by_task,
        "k": context.k,
        "ndcg_variant": ndcg_name,
        "settings": settings,
        "n_duplicates": len(context.duplicates),
        "n_missing": len(context.missing),
    }
