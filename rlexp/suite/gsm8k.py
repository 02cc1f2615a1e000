"""GSM8K (``openai/gsm8k``, config ``main``, split ``test``): grade-school word problems.

Regime: OLMES's ``gsm8k::tulu`` (``oe_eval/configs/tasks.py``) over the GSM8K task's own defaults
(``oe_eval/tasks/oe_eval_tasks/gsm8k.py``, ``TASK_CONFIG_DEFAULTS``), whose ``chat_overrides`` apply
because ``::tulu`` sets ``use_chat_format`` (``base_task.py`` ``Task.__init__`` with ``utils.py``
``apply_chat_overrides``); OLMES at commit 99cf8bb. Every value below is that merge's:

- shots: the 8 fixed chain-of-thought exemplars of Wei et al. (2022), ``fewshot_source: STD:GSM8k``
  (``shots/gsm8k.jsonl``), the same 8 before every question, as earlier chat turns
  (``fewshot_as_multiturn``); never rows of a GSM8K split.
- user turn: ``Question: <question>``. OLMES's query is ``Question: ...\\nAnswer:``, and
  ``fewshot_context`` strips the ``assistant_prefix`` (and the whitespace before it) from the end
  of every user turn.
- assistant turn of a shot: ``Answer: <exemplar answer>`` (``concat_with_space`` of the prefix and
  ``doc_to_target``, which is the exemplar's own CoT ending "So the answer is N.").
- prefill: ``Answer:`` (``assistant_prefix``); the policy continues it.
- at most 512 new tokens, stop at ``Question:``.
- extraction: ``_extract_answer`` without ``answer_regexes``: commas between two digits removed,
  then the last number (``[-+]?\\d*\\.\\d+|\\d+``); the whole text when there is none. A sign is
  kept only on a decimal (``-5`` gives ``5``), the gold gets the same rule (``_clean_short_answer``).
- metric: ``ExactMatch`` with ``ignore_case`` and ``regexes_to_ignore`` below, against the number
  after ``####``; the task score is the mean over rows.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

from rlexp.errors import ConfigError
from rlexp.suite.base import Row, Shot, SuiteTask, text

#: The metrics ``prompts.tasks.gsm8k.metric`` accepts (the first is the default).
METRICS = ("olmes",)
#: OLMES gsm8k.py ``metric_kwargs``: removed from prediction and gold before they are compared.
IGNORE = [",", "\\$", "(?s).*#### ", "\\.$"]
#: ``assistant_prefix`` of the task's ``chat_overrides``.
PREFIX = "Answer:"
# OLMES gsm8k.py ``_extract_answer``: the numbers it looks for, and thousands commas it removes first.
_NUMBER = re.compile(r"[-+]?\d*\.\d+|\d+")
_DIGIT_COMMA = re.compile(r"(\d),(\d)")


@functools.cache
def exemplars() -> tuple[dict[str, str], ...]:
    """OLMES's ``STD:GSM8k`` exemplars (``shots/gsm8k.jsonl``), in OLMES's order."""
    lines = resources.files("rlexp.suite").joinpath("shots/gsm8k.jsonl").read_text(encoding="utf-8").splitlines()
    return tuple(json.loads(line) for line in lines if line.strip())


def gold_answer(answer: str) -> str:
    """The text after ``####`` of a GSM8K solution (OLMES's ``short_answer``)."""
    return answer.split("####")[-1].strip()


def user_turn(question: str) -> str:
    """OLMES's query ``Question: <q>\\nAnswer:`` with the prefix and the whitespace before it stripped."""
    return f"Question: {question}".rstrip()


def _prompt(row: Row) -> tuple[str, dict[str, Any]]:
    answer = text(row, "answer")
    if "####" not in answer:
        raise row.at.error("answer", "has no '#### <number>' final answer")
    return user_turn(text(row, "question")), {"answer": gold_answer(answer)}


def _shots(row: Row, pool: Sequence[Row], k: int) -> list[Shot]:
    """The first ``k`` fixed exemplars (OLMES's ``fewshot_examples`` takes ``source[:k]``)."""
    if k > len(exemplars()):
        raise ConfigError(f"gsm8k: shots={k}, but OLMES's STD:GSM8k has {len(exemplars())} exemplars")
    return [(user_turn(ex["question"]), f"{PREFIX} {ex['answer'].strip()}") for ex in exemplars()[:k]]


def extract(response: str) -> str:
    """OLMES's answer: the last number once commas inside numbers are gone, else the whole text."""
    cleaned = _DIGIT_COMMA.sub(r"\1\2", response)
    numbers = _NUMBER.findall(cleaned)
    return numbers[-1] if numbers else cleaned


def grade(response: str, hidden: Mapping[str, Any]) -> float:
    """1.0 if the response's answer equals the gold's under OLMES's exact match."""
    from lm_eval.api.metrics import exact_match_hf_evaluate  # the same port of HF evaluate OLMES vendors

    found, gold = extract(response), extract(str(hidden["answer"]))
    return float(exact_match_hf_evaluate([found], [gold], regexes_to_ignore=IGNORE, ignore_case=True)["exact_match"])


TASK = SuiteTask(
    name="gsm8k", hub_id="openai/gsm8k", split="test", required=("question", "answer"), prompt=_prompt,
    grade=grade, shots=_shots, default_shots=8, configs=("main",),
    regime="8-shot CoT (OLMES's STD:GSM8k) as multiturn chat, prefill 'Answer:', stop 'Question:'",
    # OLMES's stop_sequences are ["Question:", "</s>", "<|im_end|>"]; the two chat-template end tokens are
    # left out: the policy's chat template ends its turn with its own EOS, which ends generation.
    max_new_tokens=512, stop=("Question:",), prefill=PREFIX,
)
