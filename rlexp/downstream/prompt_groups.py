"""Downstream gains per prompt group: the sandbox's general task kind, a personalized prompt's domain, or
a RewardBench 2 suite task.

Why: an overall gain can hide that all of it comes from one kind of prompt (e.g. constraint following)
while the reward model is useless or harmful on the others. Best-of-N and PPO records both report it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rlexp.analysis.bootstrap import bootstrap_ci


def prompt_group(prompt: Any) -> str | None:
    """The group a prompt belongs to (its hidden ``task``, else its hidden ``domain``), or None."""
    hidden = prompt.hidden or {}
    name = hidden.get("task") or hidden.get("domain")
    return str(name) if name else None


def group_indices(prompts: Sequence[Any]) -> dict[str, list[int]]:
    """Prompt positions per group, groups sorted by name; empty when fewer than two groups (nothing to split)."""
    groups: dict[str, list[int]] = {}
    for i, p in enumerate(prompts):
        name = prompt_group(p)
        if name:
            groups.setdefault(name, []).append(i)
    return dict(sorted(groups.items())) if len(groups) >= 2 else {}


def gains_by_group(prompts: Sequence[Any], gain: np.ndarray, *, n_boot: int, seed: int,
                   means: Mapping[str, np.ndarray] | None = None) -> dict[str, dict[str, Any]]:
    """Per group: its number of prompts, the mean of their per-prompt ``gain`` and its bootstrap 95% CI
    (resampling the group's prompts), then the group mean of each per-prompt array in ``means`` under its
    name. Empty when the prompts carry fewer than two groups."""
    out = {}
    for name, ix in group_indices(prompts).items():
        lo, hi = bootstrap_ci(gain[ix], n_boot=n_boot, seed=seed)
        out[name] = {"prompts": len(ix), "gain": float(gain[ix].mean()), "gain_ci": [lo, hi],
                     **{key: float(values[ix].mean()) for key, values in (means or {}).items()}}
    return out
