"""Parsers of LLM-judge outputs: LaMP-QA's ``{"match_score": 0|1|2}`` and PRB's list of scores.

Each returns None when the text holds no usable answer, so the caller can retry.
"""

from __future__ import annotations

import json
import re
from typing import Any

MATCH_SCORES: tuple[int, ...] = (0, 1, 2)


def _after_thinking(text: str) -> str:
    # Reasoning models may mention scores while thinking; only the final answer counts.
    return text.split("</think>")[-1]


_JSON_OBJECT_RE = re.compile(r"\{[^{}]*\}")
_MATCH_KEY_RE = re.compile(r"""["']?match_score["']?\s*[:=]\s*["']?(-?\d+(?:\.\d+)?)""", re.IGNORECASE)
# A lone 0/1/2 at the very end: not part of a larger number, a decimal, a negative or a fraction.
_TRAILING_SCORE_RE = re.compile(r"(?<![\w./-])([012])(?!\w|\.\d|/)\W*$")


def parse_match_score(text: str | None) -> int | None:
    """A LaMP-QA ``match_score`` (0, 1 or 2) from a judge's output, or None.

    Tried in order: the last JSON object holding ``match_score``; a looser ``match_score: N``
    (quotes, markdown or single quotes around it); finally a bare 0/1/2 ending the text (``"Score:
    2."``). A ``match_score`` that is present but outside {0, 1, 2} is a failure, not a reason to
    look further: the judge answered, wrongly.
    """
    if not text:
        return None
    tail = _after_thinking(text)
    for blob in reversed(_JSON_OBJECT_RE.findall(tail)):
        try:
            obj = json.loads(blob)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "match_score" in obj:
            return _as_match_score(obj["match_score"])
    keyed = _MATCH_KEY_RE.findall(tail)
    if keyed:
        return _as_match_score(keyed[-1])
    bare = _TRAILING_SCORE_RE.search(tail.strip())
    return int(bare.group(1)) if bare else None


def _as_match_score(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if not number.is_integer() or int(number) not in MATCH_SCORES:
        return None
    return int(number)


_LIST_RE = re.compile(r"\[([^\[\]]*)\]")


def parse_score_list(text: str | None) -> list[int] | None:
    """A list of 0/1/2 scores from a judge's output (its length is checked by the caller), or None.

    The last bracketed list wins (``[2, 0, 1]``, also inside a JSON object or a code block); without
    brackets, the last line made only of 0/1/2 separated by commas or spaces. Any entry that is not
    0, 1 or 2 makes the list a failure.
    """
    if not text:
        return None
    tail = _after_thinking(text)
    lists = _LIST_RE.findall(tail)
    if lists:
        body = lists[-1]
    else:
        lines = [ln.strip() for ln in tail.strip().splitlines() if ln.strip()]
        candidates = [ln for ln in lines if re.fullmatch(r"[\d\s,]+", ln)]
        if not candidates:
            return None
        body = candidates[-1]
    entries = [e.strip().strip("'\"") for e in re.split(r"[,\s]+", body.strip()) if e.strip()]
    if not entries:
        return None
    scores = [_as_match_score(e) for e in entries]
    if any(s is None for s in scores):
        return None
    return [int(s) for s in scores if s is not None]
