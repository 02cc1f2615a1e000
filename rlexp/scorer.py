"""The scorer interface: everything that turns (prompt, response, context) into a number.

Benchmarks, Best-of-N and PPO hold a :class:`Scorer` and never know which kind it is: a
sequence-classification reward model, a generative judge, a planner wrapper or a gold judge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from rlexp.data.schemas import ProfilePost
from rlexp.errors import ConfigError


@dataclass(frozen=True)
class ScoreInput:
    """One thing to score. ``hidden`` holds judge-only fields; reward models never read it."""

    prompt: str
    response: str
    profile: tuple[ProfilePost, ...] = ()
    hidden: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    profile_ranked: bool = False  # the profile is in retrieval order already (PromptItem.profile_ranked)
    # Earlier messages of a multi-turn conversation, (role, content), before the user's ``prompt``.
    turns: tuple[tuple[str, str], ...] = ()


@dataclass
class ScoreStats:
    """What a scorer counts while scoring (reported in records)."""

    items: int = 0
    truncated: int = 0
    parse_failures: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Scorer(Protocol):
    """Maps a batch of inputs to one float each, in input order."""

    name: str
    stats: ScoreStats

    def score(self, items: Sequence[ScoreInput]) -> np.ndarray: ...


def check_scorer(obj: Any, what: str = "reward") -> Scorer:
    """Fail with one line if ``obj`` is not a scorer."""
    if not isinstance(obj, Scorer):
        raise ConfigError(f"{what} {obj!r} is not a scorer (it needs .name, .stats and .score(items))")
    return obj
