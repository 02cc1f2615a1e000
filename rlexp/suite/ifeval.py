"""IFEval (``google/IFEval``, split ``train``): verifiable instructions ("answer in 3 bullets").

Regime (Tulu 3 ``ifeval::tulu``): zero-shot, the row's ``prompt`` as the user turn. Grading is
lm-eval's IFEval checks (``lm_eval.tasks.ifeval.utils.process_results``), primary metric
``prompt_level_loose_acc``: 1.0 when every instruction holds in the loose reading (the response
also tried without its first/last line and without ``*``). OLMES's ``ifeval::tulu`` generates up to
2,048 tokens with no stop sequence (the chat template's end of turn ends the answer).

Some checks (``length_constraints:number_sentences``, ``change_case:capital_word_frequency``, ...)
tokenize with nltk and need its ``punkt_tab`` data, which is not a Python package: ``make setup``
downloads it into the virtual environment (``.venv/nltk_data``) where GitHub is reachable, and
:func:`punkt_available` says whether it is there. Without it such a sample is not graded: it raises
:class:`~rlexp.suite.base.GraderDataMissing`, scores 0 and is counted as ``grader_missing_data`` in the
gold record (never mixed with wrong answers).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Mapping
from typing import Any

from rlexp.suite.base import GraderDataMissing, Row, SuiteTask, text

METRIC = "prompt_level_loose_acc"


def _prompt(row: Row) -> tuple[str, dict[str, Any]]:
    prompt = text(row, "prompt")
    ids = row.data.get("instruction_id_list")
    kwargs = row.data.get("kwargs")
    if not isinstance(ids, list | tuple) or not ids or not all(isinstance(i, str) for i in ids):
        raise row.at.error("instruction_id_list", "expected a non-empty list of instruction ids")
    if not isinstance(kwargs, list | tuple) or len(kwargs) != len(ids) or not all(isinstance(k, dict) for k in kwargs):
        raise row.at.error("kwargs", f"expected a list of {len(ids)} objects (one per instruction id)")
    unknown = [i for i in ids if i not in _quietly("instructions_registry").INSTRUCTION_DICT]
    if unknown:
        raise row.at.error("instruction_id_list", f"unknown instruction id {unknown[0]!r}")
    hidden = {"key": row.data.get("key"), "prompt": prompt, "instruction_id_list": list(ids),
              "kwargs": [dict(k) for k in kwargs]}
    return prompt, hidden


def _quietly(module: str) -> Any:
    """An lm-eval ifeval module; importing it tries to download nltk data and prints the failure offline."""
    import importlib

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return importlib.import_module(f"lm_eval.tasks.ifeval.{module}")


def results(response: str, hidden: Mapping[str, Any]) -> dict[str, Any]:
    """lm-eval's four IFEval metrics of one response."""
    doc = {"key": hidden.get("key"), "prompt": hidden["prompt"], "instruction_id_list": hidden["instruction_id_list"],
           "kwargs": hidden["kwargs"]}
    return _quietly("utils").process_results(doc, [response])


def punkt_available() -> bool:
    """Whether nltk's ``punkt_tab`` data (some IFEval checks' sentence and word tokenizer) is installed."""
    import nltk

    try:
        nltk.data.find("tokenizers/punkt_tab/english/")
    except LookupError:
        return False
    return True


def grade(response: str, hidden: Mapping[str, Any]) -> float:
    """lm-eval's prompt-level loose accuracy of one response.

    Raises:
        GraderDataMissing: a check of this prompt needs nltk's ``punkt_tab``, which is not installed.
    """
    try:
        return float(results(response, hidden)[METRIC])
    except LookupError as exc:
        if "punkt" not in str(exc):
            raise
        raise GraderDataMissing("IFEval needs nltk's punkt_tab data, not installed here (make setup downloads it "
                                "where GitHub is reachable; or run python -m nltk.downloader -d .venv/nltk_data "
                                "punkt_tab)") from None


TASK = SuiteTask(
    name="ifeval", hub_id="google/IFEval", split="train", required=("prompt", "instruction_id_list", "kwargs"),
    prompt=_prompt, grade=grade, id_field="key", regime="0-shot", max_new_tokens=2048,
)
