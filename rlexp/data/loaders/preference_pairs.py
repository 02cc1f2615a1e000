"""Loading training preference pairs: rlexp's own pair files, plain ``prompt/chosen/rejected`` sets, hub chat sets."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from rlexp.data.loaders.sources import read_source, resolve_source
from rlexp.data.loaders.validation import (
    At,
    UniqueIds,
    check_kind,
    check_limit,
    optional_string,
    profile_posts,
    required_value,
    row_id,
    rubric_aspects,
    show_value,
    string_field,
    type_name,
)
from rlexp.data.schemas import PreferencePair, UserContext
from rlexp.errors import ConfigError


def _messages(value: list[Any], field: str, at: At) -> list[tuple[str, str]]:
    """A conversation as ``(role, content)`` turns; it must not be empty."""
    if not value:
        raise at.error(field, "is an empty conversation")
    out = []
    for j, msg in enumerate(value):
        if not isinstance(msg, Mapping):
            raise at.error(f"{field}[{j}]", f"expected a message {{role, content}}, got {type_name(msg)}")
        role, content = msg.get("role"), msg.get("content")
        if not isinstance(role, str):
            raise at.error(f"{field}[{j}].role", f"expected a string, got {type_name(role)} {show_value(role)}")
        if not isinstance(content, str):
            raise at.error(
                f"{field}[{j}].content", f"expected a string, got {type_name(content)} {show_value(content)}"
            )
        out.append((role, content))
    return out


def _response_and_prefix(value: list[Any], field: str, at: At) -> tuple[str, list[tuple[str, str]]]:
    """The final assistant message of a conversation and the turns before it."""
    msgs = _messages(value, field, at)
    role, content = msgs[-1]
    if role != "assistant":
        raise at.error(
            f"{field}[{len(msgs) - 1}].role", f"the last message must be the assistant's answer, got {role!r}"
        )
    return content, msgs[:-1]


def _prompt_from_turns(turns: list[tuple[str, str]], at: At, multi_turn: str) -> str:
    """The prompt string of the turns before the final answer.

    Only a single user turn maps onto a string prompt without loss. ``multi_turn="last_user"``
    explicitly accepts the loss (earlier turns and system messages are dropped, the last user
    turn is the prompt); the default refuses such rows.
    """
    if len(turns) == 1 and turns[0][0] == "user":
        return turns[0][1]
    if multi_turn == "last_user" and turns[-1][0] == "user":
        return turns[-1][1]
    roles = [r for r, _ in turns]
    raise at.error(
        "chosen",
        f"expected one user turn before the answer, got roles {roles}; pass multi_turn='last_user' "
        "to keep only the last user turn",
    )


def _from_conversations(
    row: Mapping[str, Any], chosen_raw: list[Any], rejected_raw: list[Any], at: At, multi_turn: str
) -> tuple[str, str, str]:
    """``(prompt, chosen, rejected)`` of a row whose ``chosen``/``rejected`` are message lists."""
    chosen, prefix_c = _response_and_prefix(chosen_raw, "chosen", at)
    rejected, prefix_r = _response_and_prefix(rejected_raw, "rejected", at)
    if prefix_c != prefix_r:
        raise at.error("rejected", "its turns before the final answer differ from chosen's")
    prompt_raw = row.get("prompt")
    if prefix_c:
        # The conversation itself says what was asked; a `prompt` column may hold only one
        # turn of a multi-turn conversation, not necessarily the one the answer responds to.
        prompt = _prompt_from_turns(prefix_c, at, multi_turn)
    elif isinstance(prompt_raw, list):  # prompt given as messages: a single user turn
        turns = _messages(prompt_raw, "prompt", at)
        if len(turns) != 1 or turns[0][0] != "user":
            raise at.error("prompt", "as a message list it must be exactly one user message")
        prompt = turns[0][1]
    else:
        prompt = string_field(row, "prompt", at)
    if not prompt.strip():
        raise at.error("prompt", "is empty")
    return prompt, chosen, rejected


def _pair(
    row: Mapping[str, Any], at: At, *, derived_id: str | None, default_source: str, multi_turn: str
) -> PreferencePair:
    """One validated pair; ``derived_id`` (files without an ``id`` column) replaces the row's id."""
    pair_id = derived_id if derived_id is not None else row_id(row, at)
    if derived_id is not None:
        at.row_id = derived_id
    chosen_raw = required_value(row, "chosen", at)
    rejected_raw = required_value(row, "rejected", at)

    if isinstance(chosen_raw, str) and isinstance(rejected_raw, str):
        chosen, rejected = chosen_raw, rejected_raw
        prompt = string_field(row, "prompt", at)
    elif isinstance(chosen_raw, list) and isinstance(rejected_raw, list):
        prompt, chosen, rejected = _from_conversations(row, chosen_raw, rejected_raw, at, multi_turn)
    else:
        raise at.error(
            "rejected",
            f"chosen and rejected must both be strings or both message lists, got "
            f"{type_name(chosen_raw)} and {type_name(rejected_raw)}",
        )
    if not chosen.strip():
        raise at.error("chosen", "is empty")
    if not rejected.strip():
        raise at.error("rejected", "is empty")
    if chosen == rejected:
        raise at.error("rejected", "identical to chosen")

    profile = profile_posts(row, at, required=False)
    aspects = rubric_aspects(row, at)
    narrative = optional_string(row, "narrative", at)
    context = (
        UserContext(profile=profile, rubric_aspects=aspects, narrative=narrative)
        if (profile or aspects or narrative)
        else None
    )
    source = optional_string(row, "source", at) or default_source
    return PreferencePair(id=pair_id, prompt=prompt, chosen=chosen, rejected=rejected, source=source, context=context)


def _source_name(source: str | os.PathLike[str]) -> str:
    """The default ``source`` of a file's pairs: the hub id, or the file (or folder) stem."""
    ref = resolve_source(source)
    return ref.value if ref.kind == "hub" else ref.path.stem


def load_pairs(
    source: str | os.PathLike[str],
    *,
    limit: int | None = None,
    split: str = "train",
    config: str | None = None,
    revision: str | None = None,
    name: str | None = None,
    multi_turn: Literal["error", "last_user"] = "error",
) -> list[PreferencePair]:
    """Load training preference pairs.

    Accepts rlexp's ``PAIRS_ARROW_SCHEMA`` (personalized pairs carry ``profile`` /
    ``rubric_aspects`` / ``narrative``), plain ``id/prompt/chosen/rejected`` files, and hub-style
    sets whose ``chosen``/``rejected`` are message lists ``[{role, content}, ...]``: the answer is
    the last (assistant) message and the prompt the single user turn before it (the ``prompt``
    column only when the conversations hold no turn before the answer). Both conversations must
    agree before the answer. Multi-turn or system-prompted rows are refused unless
    ``multi_turn="last_user"`` (keep the last user turn, drop the rest). Files without an ``id``
    column get ids ``<file stem>:<row>``; a row's ``source`` defaults to ``name`` or else the
    file stem / hub id.
    """
    check_limit(limit)
    if multi_turn not in ("error", "last_user"):
        raise ConfigError(f"multi_turn must be 'error' or 'last_user', got {multi_turn!r}")
    chunks = read_source(source, split=split, config=config, revision=revision)
    default_source = name or _source_name(source)
    ids = UniqueIds()
    pairs: list[PreferencePair] = []
    for chunk in chunks:
        check_kind(chunk, "pairs")
        stem = Path(chunk.label).stem if not chunk.label.startswith("hub:") else default_source
        has_ids = "id" in chunk.columns
        for i, (row, position) in enumerate(zip(chunk.rows, chunk.positions, strict=True)):
            at = At(chunk.label, position)
            derived = None if has_ids else f"{stem}:{i}"
            pair = _pair(row, at, derived_id=derived, default_source=default_source, multi_turn=multi_turn)
            ids.add(pair.id, at)
            pairs.append(pair)
    return pairs[:limit] if limit is not None else pairs
