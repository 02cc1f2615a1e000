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
                   means: Mapping[str, np.ndarray] | None = None,
                   weights: np.ndarray | None = None) -> dict[str, dict[str, Any]]:
    """Per group: its number of prompts, the mean of their per-prompt ``gain`` and its bootstrap 95% CI
    (resampling the group's prompts), then the group mean of each per-prompt array in ``means`` under its
    name. Empty when the prompts carry fewer than two groups.

    ``weights`` (per prompt) make each group's means weighted means: a suite task averaged over its
    subtasks as OLMES does (MATH's subjects). As for the overall gain, the bootstrap resamples the
    prompts' values times their weights normalised to mean 1 within the group."""
    out = {}
    for name, ix in group_indices(prompts).items():
        w = np.ones(len(ix)) if weights is None else np.asarray(weights, dtype=np.float64)[ix]
        w = w / w.mean()
        lo, hi = bootstrap_ci(gain[ix] * w, n_boot=n_boot, seed=seed)
        out[name] = {"prompts": len(ix), "gain": float(np.mean(gain[ix] * w)), "gain_ci": [lo, hi],
                     **{key: float(np.mean(values[ix] * w)) for key, values in (means or {}).items()}}
    return out
