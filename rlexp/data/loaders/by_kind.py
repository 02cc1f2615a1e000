"""Loading records by kind name (``rb2``, ``prb``, ``pairs``, ``prompts``), for tasks that take the kind from config."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from rlexp.data.loaders.personalized_rewardbench import load_prb
from rlexp.data.loaders.preference_pairs import load_pairs
from rlexp.data.loaders.prompt_sets import load_prompts
from rlexp.data.loaders.rewardbench2 import load_rb2
from rlexp.errors import ConfigError

LOADERS: dict[str, Callable[..., list[Any]]] = {
    "rb2": load_rb2,
    "prb": load_prb,
    "pairs": load_pairs,
    "prompts": load_prompts,
}
"""Record kind -> loader, for tasks that take the kind from config."""


def load_records(kind: str, source: str | os.PathLike[str], **kwargs: Any) -> list[Any]:
    """Dispatch to the loader of ``kind`` (``rb2``, ``prb``, ``pairs``, ``prompts``)."""
    loader = LOADERS.get(kind)
    if loader is None:
        raise ConfigError(f"unknown record kind {kind!r}; valid: {', '.join(LOADERS)}")
    return loader(source, **kwargs)
