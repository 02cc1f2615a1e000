"""Loading downstream prompt sets (``PROMPTS_ARROW_SCHEMA``): the prompts a policy answers for Best-of-N."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from rlexp.data.loaders.sources import read_source
from rlexp.data.loaders.validation import (
    At,
    UniqueIds,
    check_limit,
    profile_posts,
    row_id,
    string_field,
    type_name,
    validated_rows,
)
from rlexp.data.schemas import PromptItem
from rlexp.errors import DataError

PROMPT_KINDS: tuple[str, ...] = ("personalized", "general")


def _hidden(row: Mapping[str, Any], at: At) -> dict[str, Any]:
    """The hidden judge fields: a JSON object, or a string holding one (absent / empty reads as ``{}``)."""
    value = row.get("hidden")
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise at.error("hidden", f"is not valid JSON ({exc.msg} at column {exc.colno})") from exc
    if not isinstance(value, dict):
        raise at.error("hidden", f"expected a JSON object, got {type_name(value)}")
    return value


def _prompt_item(row: Mapping[str, Any], at: At) -> PromptItem:
    """One validated prompt; a personalized prompt needs a profile."""
    prompt_id = row_id(row, at, "prompt_id")
    prompt = string_field(row, "prompt", at)
    kind = string_field(row, "kind", at)
    if kind not in PROMPT_KINDS:
        raise at.error("kind", f"unknown kind {kind!r}; valid: {', '.join(PROMPT_KINDS)}")
    profile = profile_posts(row, at, required=False)
    if kind == "personalized" and not profile:
        raise at.error("profile", "a personalized prompt needs at least one profile post")
    return PromptItem(prompt_id=prompt_id, prompt=prompt, kind=kind, profile=profile, hidden=_hidden(row, at))


def load_prompts(
    source: str | os.PathLike[str],
    *,
    split: str = "eval",
    limit: int | None = None,
    config: str | None = None,
    revision: str | None = None,
) -> list[PromptItem]:
    """Load a downstream prompt set (``PROMPTS_ARROW_SCHEMA``; ``hidden`` is a JSON object string).

    ``kind`` is ``personalized`` (needs a non-empty profile) or ``general``; ``prompt_id`` must
    be unique; a source without any prompt (an empty file) is a DataError naming it.
    """
    check_limit(limit)
    ids = UniqueIds("prompt_id")

    def convert(row: dict[str, Any], at: At) -> PromptItem:
        item = _prompt_item(row, at)
        ids.add(item.prompt_id, at)
        return item

    items = validated_rows(read_source(source, split=split, config=config, revision=revision), "prompts", convert)
    if not items:  # an empty file: nothing to sample or judge, and every later step would fail on it
        raise DataError(f"{os.fspath(source)}: holds no prompts (split {split!r}); a prompt set needs at least one")
    return items[:limit] if limit is not None else items
