"""RewardBench 2's downstream Table: Pearson r across RMs between each RB2 column (average and subsets)
and each suite task's Best-of-N gain, plus the "downstream average" (unweighted mean over tasks).

Rows are the tasks, columns the RB2 columns, as in the paper (reference rewardbench2.md §5). Pearson,
not a rank statistic, because that is what the paper reports; gain@n and BoN@n differ by a per-task
constant (every RM selects from the same pool), so the r is the paper's either way.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from rlexp.analysis.correlation import pearson
from rlexp.analysis.markdown import fmt_num, markdown_table
from rlexp.analysis.study_table import StudyTable
from rlexp.data.schemas import RB2_SUBSETS
from rlexp.suite import TASKS

AVERAGE = "Downstream avg"


def suite_settings(study: StudyTable) -> list[str]:
    """The BoN settings whose prompt groups are all suite tasks."""
    out = []
    for setting, by_rm in sorted(study.context.bon_groups.items()):
        names = {g for v in by_rm.values() for g in v["groups"]}
        if names and names <= set(TASKS):
            out.append(setting)
    return out


def task_gains(study: StudyTable, setting: str) -> pd.DataFrame:
    """[RM x task] BoN gain@n, plus the downstream average column (tasks in the suite's order)."""
    by_rm = study.context.bon_groups[setting]
    tasks = [t for t in TASKS if any(t in v["groups"] for v in by_rm.values())]
    rows = {rm: {t: v["groups"].get(t, {}).get("gain") for t in tasks} for rm, v in by_rm.items()}
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=tasks).astype(float)
    frame[AVERAGE] = frame[tasks].mean(axis=1, skipna=False)
    return frame


def suite_correlations(study: StudyTable, setting: str) -> pd.DataFrame:
    """Pearson r, rows = tasks + the downstream average, columns = ``rb2/overall`` and the RB2 subsets.

    Each r is over the RMs that have both values (as the main correlation table pairs them): an RM
    without an RB2 evaluation, or without a task's gain, drops out of that pair only."""
    gains = task_gains(study, setting)
    columns = [c for c in ["rb2/overall", *(f"rb2/{s}" for s in RB2_SUBSETS)] if c in study.frame.columns]
    rms = [rm for rm in gains.index if rm in study.frame.index]
    out: dict[str, dict[str, Any]] = {}
    for task in gains.columns:
        out[task] = {}
        for c in columns:
            pair = pd.DataFrame({"rb2": pd.to_numeric(study.frame.loc[rms, c], errors="coerce"),
                                 "gain": gains.loc[rms, task]}).dropna()
            out[task][c] = pearson(pair["rb2"].tolist(), pair["gain"].tolist()).value
    return pd.DataFrame.from_dict(out, orient="index", columns=columns)


def suite_section(study: StudyTable) -> list[str]:
    """The report's section: one table per suite setting, with the RMs' per-task gains below it."""
    settings = suite_settings(study)
    if not settings:
        return []
    lines = ["### RewardBench 2 vs the downstream suite", "",
             "Pearson r across RMs between each RewardBench 2 column and each task's Best-of-N gain@n "
             "(rows: tasks; the paper's Table). *Downstream avg* is the unweighted mean over tasks. Each r is over "
             "the RMs with both values. n/a: undefined (fewer than 3 such RMs, or a constant column).", ""]
    labels = study.frame["label"].to_dict() if "label" in study.frame else {}
    for setting in settings:
        corr = suite_correlations(study, setting)
        header = ["task", *(("RB2 avg" if c == "rb2/overall" else c[4:]) for c in corr.columns)]
        rows = [[f"**{t}**" if t == AVERAGE else t, *(fmt_num(v, 2) for v in r)] for t, r in corr.iterrows()]
        gains = task_gains(study, setting)
        gain_rows = [[labels.get(rm, rm), *(fmt_num(v) for v in r)] for rm, r in gains.iterrows()]
        lines += [f"#### {setting} ({len(gains)} RMs)", "", markdown_table(header, rows), "",
                  "Gain@n per task:", "", markdown_table(["RM", *gains.columns], gain_rows), ""]
    return lines
