"""PopQA (``akariasai/PopQA``, split ``test``): short factual questions about entities.

Regime (Tulu 3 ``popqa::tulu``): 15-shot ``Q: ... A:`` exchanges taken from rows of *other*
relation templates (``prop_id``), so no shot gives the pattern of the question away. Grading is
OLMES's ``popqa.py`` rule, which no installable library exposes (lm-eval has no PopQA task), so it
is these few lines: correct when some gold alias ``a`` satisfies ``a in pred``,
``a.lower() in pred`` or ``a.capitalize() in pred``; the prediction is not lower-cased.
``possible_answers`` is a JSON string in the hub data.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from rlexp.suite.base import Row, Shot, SuiteTask, text


def aliases(row: Row) -> list[str]:
    """The gold aliases of a row (``possible_answers``: a JSON list, or a list)."""
    value = row.data.get("possible_answers")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise row.at.error("possible_answers", f"is not valid JSON ({exc.msg})") from exc
    if not isinstance(value, list) or not value or not all(isinstance(a, str) for a in value):
        raise row.at.error("possible_answers", "expected a non-empty list of strings")
    return value


def _prompt(row: Row) -> tuple[str, dict[str, Any]]:
    return f"Q: {text(row, 'question')} A:", {"answers": aliases(row)}


def _shots(row: Row, pool: Sequence[Row], k: int) -> list[Shot]:
    own = row.data.get("prop_id")
    picked = [s for s in pool if s.data.get("prop_id") != own][:k]
    return [(f"Q: {s.data['question']} A:", aliases(s)[0]) for s in picked]


def grade(response: str, hidden: Mapping[str, Any]) -> float:
    """OLMES's alias match."""
    return float(any(a in response or a.lower() in response or a.capitalize() in response for a in hidden["answers"]))


TASK = SuiteTask(
    name="popqa", hub_id="akariasai/PopQA", split="test", required=("question", "possible_answers"),
    prompt=_prompt, grade=grade, shots=_shots, default_shots=15, id_field="id",
    regime="15-shot 'Q: ... A:' from other relation templates",
)
