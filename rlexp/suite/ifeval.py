"""IFEval (``google/IFEval``, split ``train``): verifiable instructions ("answer in 3 bullets").

Regime (Tulu 3 ``ifeval::tulu``): zero-shot, the row's ``prompt`` as the user turn. Grading is
lm-eval's IFEval checks (``lm_eval.tasks.ifeval.utils.process_results``), primary metric
``prompt_level_loose_acc``: 1.0 when every instruction holds in the loose reading (the response
also tried without its first/last line and without ``*``). The ``length_constraints:number_sentences``
check needs nltk's ``punkt_tab`` data (``python -m nltk.downloader punkt_tab``); without it that
instruction's grading fails and is counted.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Mapping
from typing import Any

from rlexp.suite.base import Row, SuiteTask, text

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


def grade(response: str, hidden: Mapping[str, Any]) -> float:
    """lm-eval's prompt-level loose accuracy of one response."""
    return float(results(response, hidden)[METRIC])


TASK = SuiteTask(
    name="ifeval", hub_id="google/IFEval", split="train", required=("prompt", "instruction_id_list", "kwargs"),
    prompt=_prompt, grade=grade, id_field="key", regime="0-shot",
)
