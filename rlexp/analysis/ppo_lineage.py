"""Same- vs cross-lineage PPO: does an RM of the policy's own lineage make a better PPO reward?

The RB2 paper's question. Per PPO gain column, the RMs that share the policy's lineage and those
that do not (control mixes such as the flipped RM left out: they measure something else) are
compared on the same held-out prompts: each group's per-prompt gain is the mean over its RMs, and
prompts are resampled (paired) for the CI of each group's gain and of their difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from rlexp.analysis.bootstrap import prompt_draws
from rlexp.analysis.columns import downstream_columns
from rlexp.analysis.correlation_table import gain_column, per_prompt_matrix
from rlexp.analysis.study_table import StudyTable
from rlexp.analysis.values import lineage_flag


def _interval(boot: np.ndarray, alpha: float) -> list[float]:
    lo, hi = np.quantile(boot, [alpha / 2.0, 1.0 - alpha / 2.0])
    return [float(lo), float(hi)]


def lineage_gains(study: StudyTable, *, controls: Sequence[str] = (), n_boot: int = 1000, alpha: float = 0.05,
                  seed: int = 0) -> dict[str, dict[str, Any]]:
    """Per ``ppo/<setting>/gain`` column: the same- and other-lineage groups' gains with CIs over prompts
    and their difference (see module doc); ``note`` instead where a group is empty or lacks per-prompt gains."""
    table = study.frame
    out: dict[str, dict[str, Any]] = {}
    for col in downstream_columns(table.columns):
        if gain_column(col) != ("ppo", None):
            continue
        match_col = col.rsplit("/", 1)[0] + "/lineage_match"
        gains = pd.to_numeric(table[col], errors="coerce")
        keep = gains.notna()
        if "mix" in table:
            keep &= ~table["mix"].astype(str).isin([str(c) for c in controls])
        match = table[match_col].map(lineage_flag) if match_col in table else pd.Series(None, index=table.index)
        groups = {name: [str(r) for r in table.index[keep & match.map(lambda v, f=flag: v is f)]]
                  for name, flag in (("same", True), ("other", False))}
        if not groups["same"] or not groups["other"]:
            out[col] = {"note": f"needs RMs of both kinds (same lineage: {len(groups['same'])}, "
                                f"other: {len(groups['other'])})"}
            continue
        matrix, note = per_prompt_matrix(study.context.per_prompt.get(col, {}), groups["same"] + groups["other"], None, {})
        if matrix is None or n_boot < 1:
            out[col] = {"note": note or "n_boot=0: no bootstrap"}
            continue
        n_same = len(groups["same"])
        same, other = matrix[:n_same].mean(axis=0), matrix[n_same:].mean(axis=0)
        idx = prompt_draws(matrix.shape[1], n_boot, seed)
        boot_same, boot_other = same[idx].mean(axis=1), other[idx].mean(axis=1)
        out[col] = {
            "prompts": int(matrix.shape[1]), "n_boot": n_boot, "controls_excluded": [str(c) for c in controls],
            "same": {"rms": groups["same"], "gain": float(same.mean()), "ci": _interval(boot_same, alpha)},
            "other": {"rms": groups["other"], "gain": float(other.mean()), "ci": _interval(boot_other, alpha)},
            "difference": float(same.mean() - other.mean()),
            "difference_ci": _interval(boot_same - boot_other, alpha),
        }
    return out
