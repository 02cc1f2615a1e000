"""PopQA (``akariasai/PopQA``, split ``test``): short factual questions about entities.

Regime: OLMES's ``popqa::tulu`` (``oe_eval/configs/tasks.py``) over the PopQA task's own defaults
(``oe_eval/tasks/oe_eval_tasks/popqa.py``, ``TASK_CONFIG_DEFAULTS``); OLMES at commit 99cf8bb:

- shots: 15 fixed exchanges, ``fewshot_source: popqa`` (``shots/popqa.jsonl``: 16 PopQA rows, one
  per relation template; ``PopQA.fewshot_examples`` returns the first 15 for every question), as
  earlier chat turns (``fewshot_as_multiturn``). They are never drawn from the evaluated rows.
- user turn: ``Q: <question> A:``; a shot's assistant turn is its ``obj`` (``doc_to_target``).
  No prefill, no description.
- at most 15 new tokens, stop at a blank line (``\\n\\n``).
- metric (``process_results``): correct when some gold alias ``a`` (``possible_answers``, a JSON
  string in the hub data) satisfies ``a in pred``, ``a.lower() in pred`` or ``a.capitalize() in
  pred``; the prediction is not lower-cased. No installable library has PopQA (lm-eval has no such
  task), so the rule is these few lines. The task score is the mean over rows.

One difference, on purpose: the 16 exchanges are rows of PopQA's own ``test`` split, so OLMES shows
a question that is one of the first 15 its own answer. Here such a question (same ``id``, or the
same question text when the data has no ids) gets the 16th exchange in place of its own, so no
question ever sees its own answer; every other question sees exactly OLMES's 15.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

from rlexp.errors import ConfigError
from rlexp.suite.base import Row, Shot, SuiteTask, text

#: The metrics ``prompts.tasks.popqa.metric`` accepts (the first is the default).
METRICS = ("olmes",)


@functools.cache
def exemplars() -> tuple[dict[str, Any], ...]:
    """OLMES's ``popqa`` few-shot rows (``shots/popqa.jsonl``), in OLMES's order."""
    lines = resources.files("rlexp.suite").joinpath("shots/popqa.jsonl").read_text(encoding="utf-8")
    return tuple(json.loads(line) for line in lines.splitlines() if line.strip())


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


def user_turn(question: str) -> str:
    """OLMES's query (``doc_to_text``)."""
    return f"Q: {question} A:"


def _prompt(row: Row) -> tuple[str, dict[str, Any]]:
    return user_turn(text(row, "question")), {"answers": aliases(row)}


def _is_row(shot: Mapping[str, Any], row: Row) -> bool:
    """Whether a few-shot row is the evaluated row itself (by id, else by question)."""
    if row.data.get("id") is not None:
        return str(shot["id"]) == str(row.data["id"])
    return shot["question"] == row.data.get("question")


def _shots(row: Row, pool: Sequence[Row], k: int) -> list[Shot]:
    """OLMES's first ``k`` exchanges, the row's own exchange (if it is one) replaced by the next."""
    if k >= len(exemplars()):  # OLMES asserts the same: one exchange is always left over
        raise ConfigError(f"popqa: shots={k}, but OLMES's popqa source has {len(exemplars())} exchanges "
                          f"(at most {len(exemplars()) - 1})")
    others = [ex for ex in exemplars() if not _is_row(ex, row)]
    return [(user_turn(ex["question"]), str(ex["obj"]).strip()) for ex in others[:k]]


def grade(response: str, hidden: Mapping[str, Any]) -> float:
    """OLMES's alias match."""
    return float(any(a in response or a.lower() in response or a.capitalize() in response for a in hidden["answers"]))


TASK = SuiteTask(
    name="popqa", hub_id="akariasai/PopQA", split="test", required=("question", "possible_answers"),
    prompt=_prompt, grade=grade, shots=_shots, default_shots=15, id_field="id",
    regime="15-shot 'Q: ... A:' (OLMES's fixed popqa source) as multiturn chat, 15 tokens, stop at a blank line",
    max_new_tokens=15, stop=("\n\n",),
)
