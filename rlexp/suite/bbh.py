"""BIG-Bench Hard (``lukaemon/bbh``, 27 subtask configs, split ``test``): hard multi-step reasoning.

Regime: OLMES's ``bbh_<subtask>:cot-v1::tulu`` (``oe_eval/configs/tasks.py``) over the BBH task's
own defaults (``oe_eval/tasks/oe_eval_tasks/bbh.py``, ``GenericBBH.TASK_CONFIG_DEFAULTS`` and
``create_bbh_task``; ``chat_overrides`` applied since ``::tulu`` sets ``use_chat_format``); OLMES at
commit 99cf8bb. The exchanges are OLMES's own, not lm-eval's:

- shots: 3 fixed chain-of-thought exchanges per subtask, ``fewshot_source: STD:bbh_<subtask>``
  (Suzgun et al.'s prompts, ``shots/bbh.jsonl``), as earlier chat turns (``fewshot_as_multiturn``).
- user turn: ``Q: <input>\\nA: Let's think step by step.`` (``short_prefix``, ``use_cot``). The
  subtask's description (``BBH_DESCRIPTIONS``, ending in a blank line) starts the *first shot's*
  user turn, as OLMES's multiturn ``fewshot_context`` puts it; with ``shots=0`` (not the regime)
  the description is not shown. A shot's assistant turn is its ``target`` (its CoT ending "So the
  answer is X.").
- no prefill (``assistant_prefix: None``); at most 512 new tokens and no stop sequence
  (``stop_sequences: []``, "we rely on the chat format to provide the stop sequence").
- extraction (``answer_extract_fn: answer_regex``, ``_extract_answer_regex``): the subtask's answer
  pattern (``ANSWER``) is tried after the prefixes in ``_PREFIXES`` in turn, case-insensitively
  but for the bare pattern; the first prefix that matches gives its *last* match. Then quotes,
  brackets and ``**`` around the whole answer are dropped, and a multiple-choice letter gets its
  parentheses back (``c`` -> ``(c)``).
- metric: ``ExactMatch`` with ``ignore_case``, and ``ignore_punctuation`` except on
  ``dyck_languages`` (whose answers are punctuation), against the row's ``target``; the task
  score pools all rows (micro average over subtasks, ``bbh:cot-v1::tulu``).

lm-eval's own BBH filter (``(?<=the answer is )(.*)(?=.)``, case-sensitive, first match, last
character dropped) is not OLMES's ``cot-v1`` rule and is not used. Local files name their subtask
by file name (``date_understanding.jsonl``) or folder.
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

#: The metrics ``prompts.tasks.bbh.metric`` accepts (the first is the default).
METRICS = ("olmes",)
#: The 27 subtasks (OLMES ``oe_eval/data/bbh_tasks.py`` ``BBH_TASKS``).
SUBTASKS = ("boolean_expressions", "causal_judgement", "date_understanding", "disambiguation_qa", "dyck_languages",
            "formal_fallacies", "geometric_shapes", "hyperbaton", "logical_deduction_five_objects",
            "logical_deduction_seven_objects", "logical_deduction_three_objects", "movie_recommendation",
            "multistep_arithmetic_two", "navigate", "object_counting", "penguins_in_a_table",
            "reasoning_about_colored_objects", "ruin_names", "salient_translation_error_detection", "snarks",
            "sports_understanding", "temporal_sequences", "tracking_shuffled_objects_five_objects",
            "tracking_shuffled_objects_seven_objects", "tracking_shuffled_objects_three_objects", "web_of_lies",
            "word_sorting")
CHOICE = r"\([A-Z]\)"  # a multiple-choice answer, "(A)"
#: Each subtask's answer pattern (OLMES bbh.py ``BBH_ANSWER_REGEX``); a subtask not named is multiple choice.
ANSWER = {
    "boolean_expressions": "[tT]rue|[fF]alse", "causal_judgement": "[yY]es|[nN]o",
    "dyck_languages": "[\\]\\)\\}\\> ]+", "formal_fallacies": "[iI]nvalid|[vV]alid",
    "multistep_arithmetic_two": "-?\\d+", "navigate": "[nN]o|[yY]es", "object_counting": "\\d+",
    "sports_understanding": "[yY]es|[nN]o", "web_of_lies": "[yY]es|[nN]o", "word_sorting": "[a-z ]+",
}
# Where the answer may stand, most specific first ($ANS$: the answer pattern, one group). OLMES adds a
# stand-alone capital letter for multiple choice, written "\b([A-Z])\b" in a plain Python string: its
# "\b" are backspace characters, so that pattern never matches ordinary text; it is kept as written.
_PREFIXES = ("(?i)So the answer is ($ANS$)\\.?", "(?i)answer is ($ANS$)", "(?i)answer:.*?($ANS$)",
             "(?i)answer\\b.*?($ANS$)", "($ANS$)")
_LETTER_FALLBACK = "\b([A-Z])\b"
_LAST_RESORT = "(?i)($ANS$)"
# Wrappers removed when they enclose the whole answer (left, right), in this order; one whose left side
# is itself a valid answer is kept.
_WRAPPERS = (("$", "$"), ("\\(", "\\)"), ("(", ")"), ("**", "**"), ("***", "***"), ("\\[", "\\]"), ("'", "'"),
             ("`", "`"), ('"', '"'))


@functools.cache
def _exemplars() -> dict[str, dict[str, Any]]:
    """Subtask -> its description and 3 exchanges (``shots/bbh.jsonl``, OLMES's ``STD:bbh_*``)."""
    lines = resources.files("rlexp.suite").joinpath("shots/bbh.jsonl").read_text(encoding="utf-8")
    return {r["subtask"]: r for r in map(json.loads, filter(str.strip, lines.splitlines()))}


def subtasks() -> tuple[str, ...]:
    """The 27 subtask names (the hub configs read one by one)."""
    return SUBTASKS


def user_turn(question: str) -> str:
    """OLMES's chain-of-thought query (``short_prefix``)."""
    return f"Q: {question}\nA: Let's think step by step."


def gold_answer(target: str) -> str:
    """OLMES's label: a target with "answer is X." gives X, any other target is the answer itself."""
    found = re.search("(?<=answer is )(.*)(?=.)", target)
    return found[0] if found else target


def _prompt(row: Row) -> tuple[str, dict[str, Any]]:
    if row.group not in SUBTASKS:
        raise row.at.error("input", f"unknown BBH subtask {row.group!r} (named by the file, folder or hub config); "
                                    f"known: {', '.join(SUBTASKS[:5])}, ...")
    return user_turn(text(row, "input")), {"target": text(row, "target")}


def _shots(row: Row, pool: Sequence[Row], k: int) -> list[Shot]:
    """The subtask's first ``k`` exchanges, the description starting the first user turn."""
    regime = _exemplars()[row.group]
    if k > len(regime["shots"]):
        raise ConfigError(f"bbh: shots={k}, but OLMES's STD:bbh_{row.group} has {len(regime['shots'])} exchanges")
    shots = [(user_turn(s["input"]), s["target"].strip()) for s in regime["shots"][:k]]
    if shots:
        shots[0] = (regime["description"] + shots[0][0], shots[0][1])
    return shots


def extract(response: str, subtask: str) -> str:
    """OLMES's ``_extract_answer_regex``: the subtask's answer in the response, "" if none."""
    answer = ANSWER.get(subtask, CHOICE)
    choice = subtask not in ANSWER
    patterns = [*_PREFIXES, *([_LETTER_FALLBACK] if choice else []), _LAST_RESORT]
    found = ""
    for pattern in patterns:
        matches = re.findall(pattern.replace("$ANS$", answer), response)
        if matches:
            found = matches[-1]  # the last match of the first pattern that matches at all
            break
    for left, right in _WRAPPERS:
        if not re.match(answer, left):  # dyck_languages' answers are brackets: keep them
            found = re.sub(f"^{re.escape(left)}(.*){re.escape(right)}$", r"\1", found).strip()
    return f"({found})" if choice and len(found) == 1 else found


def grade(response: str, hidden: Mapping[str, Any]) -> float:
    """OLMES's exact match of the extracted answer against the target (``hidden['group']``: the subtask)."""
    from lm_eval.api.metrics import exact_match_hf_evaluate  # the same port of HF evaluate OLMES vendors

    subtask = str(hidden["group"])
    return float(exact_match_hf_evaluate([extract(response, subtask)], [gold_answer(str(hidden["target"]))],
                                         ignore_case=True,
                                         ignore_punctuation=subtask != "dyck_languages")["exact_match"])


TASK = SuiteTask(
    name="bbh", hub_id="lukaemon/bbh", split="test", required=("input", "target"), prompt=_prompt, grade=grade,
    shots=_shots, default_shots=3, configs=SUBTASKS,
    regime="3-shot CoT (OLMES's STD:bbh_*) as multiturn chat, 'Q: ... A: Let's think step by step.'",
    # OLMES's cot-v1::tulu sets stop_sequences to [] (the chat template's end of turn stops generation).
    max_new_tokens=512, stop=(), average="micro",  # bbh:cot-v1::tulu pools the 27 subtasks' rows
)
