"""RewardBench 2's downstream suite: GSM8K, MATH, IFEval, BBH, PopQA, AlpacaEval 2, HumanEval+.

Each task is one module (data, Tulu 3 prompt regime, grader from the field's own library; see
``shared/reference/downstream-real.md`` (a)). ``prompts=<task>`` or ``prompts=rb2_suite`` loads
them as prompt items of kind ``suite`` whose ``hidden`` names the task; the ``grader`` gold judge
grades a response with :func:`grade` in worker processes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlexp.errors import ConfigError
from rlexp.suite import alpacaeval, bbh, gsm8k, humanevalplus, ifeval, minerva_math, popqa
from rlexp.suite.base import SuiteTask

#: The suite in RewardBench 2's order (its Table: rows are these tasks).
TASKS: dict[str, SuiteTask] = {
    t.TASK.name: t.TASK for t in (gsm8k, minerva_math, ifeval, alpacaeval, bbh, popqa, humanevalplus)
}
#: The prompt kind of suite items: the gold judge picks the task graders for it.
KIND = "suite"
#: The version of rlexp's own grading code (extraction, sandbox, metrics), part of the gold judge's cache
#: key beside the grader libraries' versions: a grade made by older code is never reused. 2: OLMES's
#: Tulu 3 extraction for GSM8K and BBH, the HumanEval+ sandbox that passes only a program whose tests ran.
GRADER_VERSION = 2


def task(name: str) -> SuiteTask:
    """The suite task ``name``, or a one-line error listing the known ones."""
    if name not in TASKS:
        raise ConfigError(f"unknown downstream task {name!r}; known: {', '.join(TASKS)}")
    return TASKS[name]


def grade(response: str, hidden: Mapping[str, Any]) -> float:
    """The task's library grade of one response (``hidden['task']`` names the task)."""
    grader = task(str(hidden["task"])).grade
    if grader is None:
        raise ConfigError(f"task {hidden['task']!r} is graded by a preference judge, not by a function")
    return grader(response, hidden)
