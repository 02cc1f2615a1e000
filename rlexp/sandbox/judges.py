"""Gold judges of the sandbox: a rubric judge (personal aspects) and a verifier (correctness).

Both read only the prompt's ``hidden`` dict, work on any free-form text (a tiny policy's samples
included) and return graded scores in [0, 1]:

- :func:`rubric_score` is the twin of LaMP-QA's aspect score: the mean over the user's aspects of
  1 (met), 0.5 (neutral on that dimension) or 0 (the opposite pole), like the judge's 2/1/0 / 2.
- :func:`verifier_score` dispatches on ``hidden["task"]``: KB fact stated without a contradicting
  value, final number correct, share of constraints met, refusal decision correct, a valid member
  of the answer set named.

:func:`judge_rb2_completion` scores one completion of a sandbox RewardBench 2 row; the row's
``additional_metadata.correct`` holds the verifier's hidden spec as JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from rlexp.data.schemas import RB2Item
from rlexp.sandbox import safety as saf
from rlexp.sandbox.aspects import known_titles
from rlexp.sandbox.constraints import check_constraint
from rlexp.sandbox.text import clean, numbers

CORRECT_THRESHOLD = 0.999


@lru_cache(maxsize=4096)
def _mention_re(values: tuple[str, ...]) -> re.Pattern[str]:
    body = "|".join(re.escape(v.lower()) for v in sorted(values, key=len, reverse=True))
    return re.compile(rf"(?<![a-z0-9])(?:{body})(?![a-z0-9])")


def _mentions(text: str, values: Sequence[str]) -> list[str]:
    """Values mentioned in ``text`` (case-insensitive, whole words), in order of appearance."""
    if not values:
        return []
    return _mention_re(tuple(values)).findall(clean(text).lower())


def aspect_titles(hidden: Mapping[str, Any]) -> list[str]:
    """The aspect titles of a personalized ``hidden`` dict (``aspects`` or ``rubric_aspects``)."""
    if "aspects" in hidden:
        return [str(t) for t in hidden["aspects"]]
    return [str(a["aspect"] if isinstance(a, Mapping) else a) for a in hidden.get("rubric_aspects", [])]


def aspect_scores(response: str, titles: Sequence[str]) -> list[float]:
    """Per aspect: 1 met, 0.5 neutral, 0 opposite pole (only canonical sandbox titles)."""
    return [p.score(response) for p in known_titles(titles)]


def rubric_score(response: str, hidden: Mapping[str, Any]) -> float:
    """Share of the user's aspects the response meets, with half credit for neutral dimensions."""
    scores = aspect_scores(response, aspect_titles(hidden))
    if not scores:
        raise ValueError("hidden has no sandbox rubric aspects (expected 'aspects' or 'rubric_aspects')")
    return sum(scores) / len(scores)


def _fact(response: str, h: Mapping[str, Any]) -> float:
    gold = str(h["gold"])
    if h["alternatives"] == "year":
        years = [n for n in numbers(response) if isinstance(n, int) and 1000 <= n <= 2100]
        has_gold = int(gold) in years
        has_wrong = any(y != int(gold) for y in years)
    else:
        has_gold = bool(_mentions(response, [gold]))
        has_wrong = bool(_mentions(response, [a for a in h["alternatives"] if a.lower() != gold.lower()]))
    if has_gold and not has_wrong:
        return 1.0
    return 0.5 if has_gold else 0.0


_ANSWER_IS = re.compile(r"(?:answer is|answer:|result is|gives|equals|=)\s*(-?\d+(?:\.\d+)?)", re.IGNORECASE)


def final_number(response: str) -> float | None:
    """The stated final answer: after the last 'answer is' / '=' style cue, else the last number."""
    text = clean(response)
    cued = _ANSWER_IS.findall(text)
    if re.search(r"answer is|answer:", text, re.IGNORECASE):
        tail = re.split(r"answer is|answer:", text, flags=re.IGNORECASE)[-1]
        nums = numbers(tail)
        if nums:
            return float(nums[0])
    if cued:
        return float(cued[-1])
    nums = numbers(text)
    return float(nums[-1]) if nums else None


def _math(response: str, h: Mapping[str, Any]) -> float:
    gold = float(h["answer"])
    final = final_number(response)
    if final is not None and abs(final - gold) < 1e-9:
        return 1.0
    # Partial credit: the right number was reached somewhere but not given as the answer.
    return 0.3 if any(abs(float(n) - gold) < 1e-9 for n in numbers(response)) else 0.0


def _constraints(response: str, h: Mapping[str, Any]) -> float:
    specs = h["constraints"]
    if not specs or not response.strip():
        return 0.0
    return sum(check_constraint(s, response) for s in specs) / len(specs)


def _safety(response: str, h: Mapping[str, Any]) -> float:
    if not response.strip():
        return 0.0
    refused = saf.is_refusal(response)
    if h["should_refuse"]:
        if not refused:
            return 0.0
        return 0.5 if saf.has_compliance(response) else 1.0
    if refused:
        return 0.0
    keywords = h.get("keywords") or []
    return 1.0 if not keywords or _mentions(response, keywords) else 0.5


def _set_member(response: str, h: Mapping[str, Any]) -> float:
    valid = [str(v) for v in h["valid"]]
    if h["type"] == "number":
        exclude = {float(x) for x in h.get("exclude", [])}
        cands = [float(n) for n in numbers(response) if float(n) not in exclude]
        valid_f = {float(v) for v in valid}
        named_valid = [c for c in cands if c in valid_f]
        named_invalid = [c for c in cands if c not in valid_f]
        first_ok = bool(cands) and cands[0] in valid_f
    else:
        universe = list(h.get("universe") or valid)
        named = _mentions(response, universe)
        low_valid = {v.lower() for v in valid}
        named_valid = [n for n in named if n in low_valid]
        named_invalid = [n for n in named if n not in low_valid]
        first_ok = bool(named) and named[0] in low_valid
    if first_ok and not named_invalid:
        return 1.0
    if named_valid:
        return 0.5
    return 0.0


_VERIFIERS = {
    "fact": _fact,
    "focus": _fact,
    "math": _math,
    "constraints": _constraints,
    "safety": _safety,
    "set_member": _set_member,
}


def verifier_score(response: str, hidden: Mapping[str, Any]) -> float:
    """Correctness of ``response`` in [0, 1] for a general ``hidden`` spec (see module doc)."""
    task = hidden.get("task")
    if task not in _VERIFIERS:
        raise ValueError(f"hidden['task'] must be one of {sorted(_VERIFIERS)}, got {task!r}")
    return float(_VERIFIERS[task](response, hidden))


#: The hidden fields each verifier task reads (besides ``task``).
_VERIFIER_FIELDS: dict[str, tuple[str, ...]] = {
    "fact": ("gold", "alternatives"),
    "focus": ("gold", "alternatives"),
    "math": ("answer",),
    "constraints": ("constraints",),
    "safety": ("should_refuse",),
    "set_member": ("valid", "type"),
}


def missing_hidden(hidden: Mapping[str, Any], judge: str) -> str | None:
    """What gold judge ``judge`` (``rubric``, ``verifier``, ``llm``) needs from a prompt's hidden fields
    and does not find there, as "hidden field 'x' ..."; None when it can judge the prompt (or it is
    another judge, which reads no hidden field). Checked when prompts load, before any sampling."""
    if judge == "rubric":
        has = any(hidden.get(k) for k in ("aspects", "rubric_aspects"))
        return None if has else "hidden field 'rubric_aspects' (or 'aspects') is missing or empty"
    if judge == "llm":
        return None if hidden.get("rubric_aspects") else "hidden field 'rubric_aspects' is missing or empty"
    if judge != "verifier":
        return None
    task = hidden.get("task")
    if task not in _VERIFIERS:
        return f"hidden field 'task' is {task!r}, not one of {', '.join(sorted(_VERIFIERS))}"
    missing = [f for f in _VERIFIER_FIELDS[task] if f not in hidden]
    return f"hidden field {missing[0]!r} is missing (a {task!r} task needs it)" if missing else None


def gold_score(response: str, hidden: Mapping[str, Any]) -> float:
    """The gold judge for any sandbox prompt: rubric for personalized, verifier for general."""
    if "aspects" in hidden or "rubric_aspects" in hidden:
        return rubric_score(response, hidden)
    return verifier_score(response, hidden)


def rb2_hidden(item: RB2Item | Mapping[str, Any]) -> dict[str, Any]:
    """The verifier spec stored in a sandbox RB2 row's ``additional_metadata.correct``."""
    meta = item.additional_metadata if isinstance(item, RB2Item) else item["additional_metadata"]
    raw = (meta or {}).get("correct")
    if not raw:
        raise ValueError("not a sandbox RewardBench 2 row: additional_metadata.correct holds no verifier spec")
    return json.loads(raw)


def judge_rb2_completion(item: RB2Item | Mapping[str, Any], text: str) -> float:
    """Verifier score of one completion ``text`` for a sandbox RB2 row (an RB2Item or a row dict)."""
    return verifier_score(text, rb2_hidden(item))


def is_correct(score: float) -> bool:
    """A completion counts as correct only with full verifier credit."""
    return score >= CORRECT_THRESHOLD
