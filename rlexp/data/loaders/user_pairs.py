"""Loading Chatbot Arena-Personalized and PRISM-Personalized (SynthesizeMe), and PRISM's survey.

Both sets (``MichaelR207/chatbot_arena_personalized_0125``, ``MichaelR207/prism_personalized_0125``)
have one row per vote: ``user_id``, the ``context`` message list up to the compared turn, single
``chosen``/``rejected`` messages whose role is ``model``, and a per-row ``split`` column that splits
each user's votes (reference: prb-comparison-benchmarks.md §2). Roles are mapped ``model`` ->
``assistant`` here, once, so chat templates see the usual names. The survey
(``HannahRoseKirk/prism-alignment``, config ``survey``) is read by :func:`load_prism_survey`.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Mapping
from typing import Any

from rlexp.data.loaders.sources import read_source
from rlexp.data.loaders.validation import (
    At,
    LoadedRows,
    UniqueIds,
    check_limit,
    optional_string,
    required_value,
    show_value,
    string_field,
    type_name,
    validated_rows,
)
from rlexp.data.schemas import PRISM_STATED_PREFS, USER_PAIR_SPLITS, UserPairItem, UserSurvey
from rlexp.errors import DataError

ARENA_HUB_ID = "MichaelR207/chatbot_arena_personalized_0125"
PRISM_HUB_ID = "MichaelR207/prism_personalized_0125"
PRISM_SURVEY_HUB_ID = "HannahRoseKirk/prism-alignment"
# File roles -> chat-template roles. `model` is how both sets name the assistant.
ROLES: dict[str, str] = {"user": "user", "model": "assistant", "assistant": "assistant", "system": "system"}
_SPLIT_ALIASES = {"validation": "val", "dev": "val"}


def _message(value: Any, field: str, at: At, *, answer: bool) -> tuple[str, str]:
    """One ``{role, content}`` message as (mapped role, content); an answer must be the model's."""
    if not isinstance(value, Mapping):
        raise at.error(field, f"expected one message object {{role, content}}, got {type_name(value)} {show_value(value)}")
    role, content = value.get("role"), value.get("content")
    if role not in ROLES:
        raise at.error(f"{field}.role", f"expected one of {', '.join(ROLES)}, got {show_value(role)}")
    if not isinstance(content, str) or not content.strip():
        raise at.error(f"{field}.content", f"expected a non-empty string, got {type_name(content)} {show_value(content)}")
    if answer and ROLES[role] != "assistant":
        raise at.error(f"{field}.role", f"an answer must be the model's (role 'model'), got {role!r}")
    return ROLES[role], content


def _context(row: Mapping[str, Any], at: At) -> tuple[tuple[str, str], ...]:
    """The conversation up to the compared turn: a non-empty message list ending with the user."""
    value = required_value(row, "context", at)
    if not isinstance(value, (list, tuple)) or not value:
        raise at.error("context", f"expected a non-empty list of messages, got {type_name(value)} {show_value(value)}")
    messages = tuple(_message(m, f"context[{j}]", at, answer=False) for j, m in enumerate(value))
    if messages[-1][0] != "user":
        raise at.error(f"context[{len(messages) - 1}].role", "the context must end with the user's message")
    for j, (role, _) in enumerate(messages):
        if role == "system" and j > 0:
            raise at.error(f"context[{j}].role", "a system message may only come first")
    return messages


def _split(row: Mapping[str, Any], at: At) -> str:
    value = string_field(row, "split", at).strip().lower()
    value = _SPLIT_ALIASES.get(value, value)
    if value not in USER_PAIR_SPLITS:
        raise at.error("split", f"expected one of {', '.join(USER_PAIR_SPLITS)}, got {show_value(row['split'])}")
    return value


def _flip(row: Mapping[str, Any], at: At) -> bool:
    value = row.get("flip")
    if value is None:
        return False
    if not isinstance(value, bool):
        raise at.error("flip", f"expected a boolean, got {type_name(value)} {show_value(value)}")
    return value


class _Ids:
    """Row ids: the sets have no id column, so a vote is ``<user>/<conversation>/<n-th vote in it>``."""

    def __init__(self) -> None:
        self.seen: Counter[tuple[str, str]] = Counter()

    def next(self, user: str, conversation: str) -> str:
        n = self.seen[(user, conversation)]
        self.seen[(user, conversation)] += 1
        return f"{user}/{conversation}/{n}"


class UserPairs(LoadedRows):
    """The loaded votes; ``skipped`` also counts rows repeating an earlier row."""


class _Unscorable(Exception):
    """A row that is well formed but cannot be scored; ``reason`` is its skip count's key."""

    def __init__(self, reason: str, error: DataError) -> None:
        super().__init__(reason)
        self.reason, self.error = reason, error


def _answer(row: Mapping[str, Any], field: str, at: At) -> str:
    """A chosen/rejected answer; an empty one cannot be scored (:class:`_Unscorable`)."""
    value = required_value(row, field, at)
    if isinstance(value, Mapping) and isinstance(value.get("content"), str) and not value["content"].strip() \
            and value.get("role") in ROLES:
        raise _Unscorable("empty answer", at.error(f"{field}.content", "an empty answer cannot be scored"))
    return _message(value, field, at, answer=True)[1]


def _convert(ids: _Ids) -> Any:
    def convert(row: dict[str, Any], at: At) -> UserPairItem:
        user = string_field(row, "user_id", at)
        conversation = optional_string(row, "conversation_id", at) or at.position.replace(" ", "")
        at.row_id = ids.next(user, conversation)
        context = _context(row, at)
        chosen = _answer(row, "chosen", at)
        rejected = _answer(row, "rejected", at)
        split = _split(row, at)
        if chosen == rejected:
            raise _Unscorable("chosen identical to rejected", at.error("rejected", "identical to chosen"))
        return UserPairItem(id=at.row_id, user_id=user, context=context, chosen=chosen, rejected=rejected,
                            split=split, flip=_flip(row, at), kind=optional_string(row, "type", at))

    return convert


def _skipping(convert: Any, strict: bool, skipped: Counter[str]) -> Any:
    """``convert`` that returns None for an unscorable row (counted in ``skipped``), or raises under ``strict``."""
    def run(row: dict[str, Any], at: At) -> UserPairItem | None:
        try:
            return convert(row, at)
        except _Unscorable as exc:
            if strict:
                raise exc.error from None
            skipped[exc.reason] += 1
            return None

    return run


def load_user_pairs(
    source: str | os.PathLike[str], *, split: str = "test", limit: int | None = None, revision: str | None = None,
    strict: bool = False,
) -> UserPairs:
    """Load Chatbot Arena-/PRISM-Personalized votes (hub id, a local file, or a folder of split files).

    ``split`` is the HF split (``train``/``validation``/``test``: they partition users); each item's
    own ``split`` is the row's column. ``limit`` keeps the first rows. Every row is validated; a bad
    one raises a one-line :class:`~rlexp.errors.DataError` naming file, row and field. A row that is
    well formed but cannot be scored (an empty answer, chosen identical to rejected: its two scores
    would tie) and a row repeating an earlier one (same user, conversation, context and answers: it
    would be scored twice, n doubled) are left out and counted by reason in the result's ``skipped``, as the
    published sets are used whole; ``strict`` refuses them instead.
    """
    check_limit(limit)
    chunks = read_source(source, split=split, config=None, revision=revision)
    skipped: Counter[str] = Counter()
    rows = validated_rows(chunks, "user_pairs", _skipping(_convert(_Ids()), strict, skipped))
    items: list[UserPairItem] = []
    seen: dict[tuple[Any, ...], str] = {}
    unique = UniqueIds()
    for item in rows:
        if item is None:
            continue
        key = (item.user_id, item.context, item.chosen, item.rejected)
        if key in seen:  # the ids count votes per conversation, so a repeated row gets a new id
            if strict:
                raise DataError(f"{source}: row {item.id} repeats row {seen[key]} (same user, context and answers)")
            skipped["duplicate of an earlier row"] += 1
            continue
        seen[key] = item.id
        unique.add(item.id, At(str(source), item.id))
        items.append(item)
    out = UserPairs(items, skipped)
    return out[:limit] if limit is not None else out


def _slider(value: Any, field: str, at: At) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or not 0 <= value <= 100:
        raise at.error(field, f"expected a 0-100 slider value or null, got {show_value(value)}")
    return int(round(value))


def _survey(row: dict[str, Any], at: At) -> UserSurvey:
    user = string_field(row, "user_id", at)
    at.row_id = user
    prefs = row.get("stated_prefs") or {}
    if not isinstance(prefs, Mapping):
        raise at.error("stated_prefs", f"expected an object of sliders, got {type_name(prefs)} {show_value(prefs)}")
    stated = tuple((k, v) for k in PRISM_STATED_PREFS if (v := _slider(prefs.get(k), f"stated_prefs.{k}", at)) is not None)
    return UserSurvey(user, optional_string(row, "self_description", at).strip(),
                      optional_string(row, "system_string", at).strip(), stated)


def load_prism_survey(
    source: str | os.PathLike[str], *, split: str = "train", revision: str | None = None
) -> dict[str, UserSurvey]:
    """PRISM's survey by user id (hub: config ``survey``; locally ``survey.jsonl`` or a folder of it)."""
    chunks = read_source(source, split=split, config="survey", revision=revision)
    out: dict[str, UserSurvey] = {}
    unique = UniqueIds("user_id")
    for chunk in chunks:
        if chunk.rows and not chunk.columns & {"self_description", "stated_prefs", "system_string"}:
            shown = ", ".join(sorted(chunk.columns)[:10])
            raise DataError(f"{chunk.label}: not a PRISM survey file (no self_description, stated_prefs or "
                            f"system_string column; columns: {shown})")
        for row, position in zip(chunk.rows, chunk.positions, strict=True):
            at = At(chunk.label, position)
            survey = _survey(row, at)
            unique.add(survey.user_id, at)
            out[survey.user_id] = survey
    return out
