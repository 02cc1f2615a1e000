"""Loading records by name from config: a record kind (``rb2``, ``prb``, ``pairs``, ``prompts``), a prompt-set format."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rlexp.data.loaders.lampqa import DEFAULT_PROFILE_K, load_lampqa
from rlexp.data.loaders.personalized_rewardbench import load_prb
from rlexp.data.loaders.preference_pairs import load_pairs
from rlexp.data.loaders.prompt_sets import load_prompts
from rlexp.data.loaders.rewardbench2 import load_rb2
from rlexp.data.loaders.tulu3_prefs import load_tulu3_prefs
from rlexp.data.loaders.user_pairs import load_user_pairs
from rlexp.data.schemas import PromptItem
from rlexp.errors import ConfigError

LOADERS: dict[str, Callable[..., list[Any]]] = {
    "rb2": load_rb2,
    "prb": load_prb,
    "pairs": load_pairs,
    "prompts": load_prompts,
    "user_pairs": load_user_pairs,
}
"""Record kind -> loader, for tasks that take the kind from config."""


def load_records(kind: str, source: str | os.PathLike[str], **kwargs: Any) -> list[Any]:
    """Dispatch to the loader of ``kind`` (``rb2``, ``prb``, ``pairs``, ``prompts``)."""
    loader = LOADERS.get(kind)
    if loader is None:
        raise ConfigError(f"unknown record kind {kind!r}; valid: {', '.join(LOADERS)}")
    return loader(source, **kwargs)


PROMPT_FORMATS: tuple[str, ...] = ("rlexp", "lampqa", "tulu3_prefs")
"""``prompts.format`` values: rlexp's own prompt files (:func:`load_prompts`), LaMP-QA rows (:func:`load_lampqa`)
or the Tulu 3 preference mixture's prompts (:func:`load_tulu3_prefs`)."""


def load_prompt_set(
    settings: Mapping[str, Any], source: str, split: str, source_id: str | None = None
) -> tuple[list[PromptItem], str]:
    """The prompts of a ``prompts`` config node read from ``source``, and the id of what determines them.

    ``source_id`` names the source in the id instead of the path (a sandbox record id). Keys a
    node lacks take their defaults, so a node written before a key existed loads as before.
    """
    fmt = str(settings.get("format") or "rlexp")
    limit = settings.get("limit")
    if fmt == "rlexp":
        return load_prompts(source, split=split, limit=limit), f"{source_id or source}:{split}"
    if fmt == "tulu3_prefs":
        return load_tulu3_prefs(source, split=split, limit=limit), f"tulu3_prefs:{source_id or source}:{split}:limit={limit}"
    if fmt != "lampqa":
        raise ConfigError(f"unknown prompts.format {fmt!r}; valid: {', '.join(PROMPT_FORMATS)}")
    domains = settings.get("domains")
    domains = None if domains is None else [str(d) for d in ([domains] if isinstance(domains, str) else domains)]
    method = str(settings.get("retriever") or "bm25")
    model = settings.get("retriever_model")
    # Only dense reads the encoder, so only then does it name (and change) the prompt set.
    model = str(Path(str(model)).expanduser().resolve()) if model and method == "dense" else None
    k = settings.get("profile_k", DEFAULT_PROFILE_K)
    items = load_lampqa(source, split=split, domains=domains, limit=limit, retriever=method, retriever_model=model,
                        profile_k=k)
    shown = ",".join(domains) if domains is not None else "all"
    model_part = f",model={model}" if model else ""
    return items, f"lampqa:{source_id or source}:{split}:domains={shown},retriever={method}{model_part},k={k},limit={limit}"
