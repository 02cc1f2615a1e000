"""BIG-Bench Hard (``lukaemon/bbh``, 27 subtask configs, split ``test``): hard multi-step reasoning.

Regime (Tulu 3 ``bbh:cot-v1::tulu``): 3-shot chain of thought; the exchanges, the subtask's
description and the ``Q: ... A: Let's think step by step.`` template are lm-eval's own
(``lm_eval/tasks/bbh/cot_fewshot/<subtask>.yaml``). Grading is lm-eval's: the ``get-answer``
regex filter (text after "the answer is", first match) and ``exact_match`` against ``target``.
Local files name their subtask by file name (``date_understanding.jsonl``) or folder.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rlexp.suite.base import Row, Shot, SuiteTask, text

ANSWER = r"(?<=the answer is )(.*)(?=.)"  # lm-eval _cot_fewshot_template_yaml, filter get-answer


def _fewshot_dir() -> Path:
    import lm_eval.tasks

    return Path(lm_eval.tasks.__file__).parent / "bbh" / "cot_fewshot"


@functools.cache
def subtasks() -> tuple[str, ...]:
    """The 27 subtask names lm-eval ships few-shot prompts for."""
    return tuple(sorted(p.stem for p in _fewshot_dir().glob("*.yaml") if not p.stem.startswith("_")))


@functools.cache
def _regime(subtask: str) -> dict[str, Any]:
    import yaml

    path = _fewshot_dir() / f"{subtask}.yaml"
    if not path.is_file():
        return {}
    return yaml.safe_load(path.read_text())


def _question(description: str, question: str) -> str:
    return f"{description}Q: {question}\nA: Let's think step by step."


def _prompt(row: Row) -> tuple[str, dict[str, Any]]:
    if row.group not in subtasks():
        raise row.at.error("input", f"unknown BBH subtask {row.group!r} (named by the file, folder or hub config); "
                                    f"known: {', '.join(subtasks()[:5])}, ...")
    description = str(_regime(row.group).get("description", ""))
    return _question(description, text(row, "input")), {"target": text(row, "target")}


def _shots(row: Row, pool: Sequence[Row], k: int) -> list[Shot]:
    samples = (_regime(row.group).get("fewshot_config") or {}).get("samples") or []
    return [(f"Q: {s['input']}\nA: Let's think step by step.", str(s["target"])) for s in samples[:k]]


def extract(response: str) -> str:
    """lm-eval's ``get-answer`` filter: the text after "the answer is" (``[invalid]`` if absent)."""
    from lm_eval.filters.extraction import RegexFilter

    return RegexFilter(regex_pattern=ANSWER, group_select=0).apply([[response]], [{}])[0][0]


def grade(response: str, hidden: Mapping[str, Any]) -> float:
    """lm-eval's exact match of the extracted answer against the target."""
    from lm_eval.api.metrics import exact_match_hf_evaluate

    return float(exact_match_hf_evaluate([extract(response)], [str(hidden["target"])])["exact_match"])


TASK = SuiteTask(
    name="bbh", hub_id="lukaemon/bbh", split="test", required=("input", "target"), prompt=_prompt, grade=grade,
    shots=_shots, default_shots=3, configs=subtasks, regime="3-shot CoT (lm-eval's exchanges) as multiturn chat",
)
