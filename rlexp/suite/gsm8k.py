"""GSM8K (``openai/gsm8k``, config ``main``, split ``test``): grade-school word problems.

Regime (Tulu 3 ``gsm8k::tulu``): chain-of-thought few-shot exchanges as earlier chat turns
(8 by default, drawn from the ``train`` split), each answer ending "So the answer is N.".
Grading is lm-eval's ``flexible-extract`` rule (the last number in the response) scored with
lm-eval's ``exact_match`` under OLMES's normalisation (case, commas, ``$``, a trailing period);
the gold is the number after ``####``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from rlexp.suite.base import Row, Shot, SuiteTask, text

# lm-eval gsm8k.yaml, filter "flexible-extract": the last match of this pattern.
FLEXIBLE = r"(-?[$0-9.,]{2,})|(-?[0-9]+)"
# OLMES gsm8k::tulu exact-match settings.
IGNORE = [",", "\\$", "(?s).*#### ", "\\.$"]
_CALCULATOR = re.compile(r"<<[^>]*>>")


def gold_answer(answer: str) -> str:
    """The number after ``####`` of a GSM8K solution."""
    return answer.split("####")[-1].strip()


def _prompt(row: Row) -> tuple[str, dict[str, Any]]:
    answer = text(row, "answer")
    if "####" not in answer:
        raise row.at.error("answer", "has no '#### <number>' final answer")
    return text(row, "question"), {"answer": gold_answer(answer)}


def _shots(row: Row, pool: Sequence[Row], k: int) -> list[Shot]:
    out = []
    for shot in pool[:k]:
        steps = _CALCULATOR.sub("", str(shot.data["answer"]).split("####")[0]).strip()
        out.append((str(shot.data["question"]), f"{steps}\nSo the answer is {gold_answer(str(shot.data['answer']))}."))
    return out


def extract(response: str) -> str:
    """lm-eval's flexible extraction: the last number in the response, ``[invalid]`` if none."""
    from lm_eval.filters.extraction import RegexFilter

    return RegexFilter(regex_pattern=FLEXIBLE, group_select=-1).apply([[response]], [{}])[0][0]


def grade(response: str, hidden: Mapping[str, Any]) -> float:
    """1.0 if the extracted number equals the gold answer under OLMES's normalisation."""
    from lm_eval.api.metrics import exact_match_hf_evaluate

    found = extract(response)
    return float(exact_match_hf_evaluate([found], [str(hidden["answer"])], regexes_to_ignore=IGNORE,
                                         ignore_case=True)["exact_match"])


TASK = SuiteTask(
    name="gsm8k", hub_id="openai/gsm8k", split="test", required=("question", "answer"), prompt=_prompt,
    grade=grade, shots=_shots, default_shots=8, shot_split="train", configs=("main",),
    regime="8-shot CoT as multiturn chat, answers end 'So the answer is N.'",
)
