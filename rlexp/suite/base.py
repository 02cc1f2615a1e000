"""What one downstream task of the RewardBench 2 suite is: its data, its prompt regime, its grader.

A :class:`SuiteTask` is a plain record of functions, one per task module (``gsm8k.py``, ...), so
each task reads top to bottom in its own file: which dataset and columns it needs, how a row
becomes the policy's prompt (with the Tulu 3 regime's few-shot turns), and which library grades a
response. :mod:`rlexp.suite.loading` turns a task and its settings into prompt items;
:func:`rlexp.suite.grade` grades one response (in a worker process: some graders use
``signal.alarm``, which only works in a process's main thread).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rlexp.data.loaders.validation import At

#: A few-shot example as one (user, assistant) exchange placed before the question.
Shot = tuple[str, str]


@dataclass(frozen=True)
class Row:
    """One dataset row with where it came from (for errors) and its subtask (MATH subject, BBH task)."""

    data: Mapping[str, Any]
    at: At
    group: str
    index: int = 0  # position in the task's full split (before any subsample)


@dataclass(frozen=True)
class SuiteTask:
    """One task of the suite.

    ``prompt(row)`` returns (the user turn the policy and the RM see, the grader's hidden fields);
    ``shots(row, pool, k)`` the k few-shot exchanges for ``row`` (``pool``: the rows of
    ``shot_split`` for a task that draws its shots from a split, empty for the tasks whose regime
    has fixed exemplars in ``rlexp/suite/shots/``); ``grade(response, hidden)`` is the
    library grader's score in [0, 1], or None for a task graded by a judge (AlpacaEval).
    """

    name: str
    hub_id: str
    split: str
    required: tuple[str, ...]
    prompt: Callable[[Row], tuple[str, dict[str, Any]]]
    grade: Callable[[str, Mapping[str, Any]], float] | None
    shots: Callable[[Row, Sequence[Row], int], list[Shot]] | None = None
    default_shots: int = 0
    shot_split: str | None = None
    # Hub configs read one by one (MATH subjects, BBH subtasks), or a function listing them.
    configs: tuple[str, ...] | Callable[[], tuple[str, ...]] = ()
    group_field: str | None = None  # the column naming a row's subtask, when rows carry it
    id_field: str | None = None  # the dataset's own row id, when it has one
    regime: str = ""  # the Tulu 3 regime in words (docs and records)
    # How OLMES's ``::tulu`` configuration generates (``oe_eval/configs/tasks.py`` and the task's
    # TASK_CONFIG_DEFAULTS with its chat_overrides applied). ``max_new_tokens``: ``max_gen_toks``, a
    # ceiling under ``sampling.max_new_tokens`` (None: that setting alone); ``stop``: ``stop_sequences``
    # (the response ends before the first); ``prefill``: ``assistant_prefix``, the text the assistant
    # turn starts with: the policy continues it and the pool's response is prefill + continuation.
    max_new_tokens: int | None = None
    stop: tuple[str, ...] = ()
    prefill: str = ""
    # How OLMES aggregates a task over its subtasks (``group``): "micro" pools the rows (BBH), "macro" is the
    # mean of the subtask means (MATH's 7 subjects, ``minerva_math::tulu``).
    average: str = "micro"


def text(row: Row, field: str) -> str:
    """A required non-empty string field of ``row`` (one-line error naming file, row and field)."""
    value = row.data.get(field)
    if value is None:
        raise row.at.error(field, "missing")
    if not isinstance(value, str) or not value.strip():
        raise row.at.error(field, f"expected a non-empty string, got {type(value).__name__} {str(value)[:40]!r}")
    return value


class GraderDataMissing(RuntimeError):
    """A grader needs data that is not installed here (IFEval's nltk ``punkt_tab``): the sample is not
    graded, and the gold record counts it apart from wrong answers and grader crashes."""
