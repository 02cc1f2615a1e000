"""The suite's gold judge: each task's library grader, run in worker processes with timeouts.

Graders run in a :mod:`pebble` process pool, one call per sample with its own timeout: a worker
that overruns (a math expression sympy cannot finish, a grader bug that loops) is killed and
replaced, and the sample counts as a failure, so a run never hangs. Processes, not threads:
math-verify's timeouts use ``signal.alarm``, which raises in any thread but a process's main one.
HumanEval+ programs run in a further guarded child (:mod:`rlexp.suite.humanevalplus`).

A sample no grader could grade scores 0, as a wrong answer would, and is counted per task and
reason in ``stats.extra``: ``grader_failures`` (the grader raised), ``grader_timeouts``,
``grader_missing_data`` (data a grader needs is not installed, e.g. IFEval's nltk ``punkt_tab``), with
the first ``grader_error`` message; the pool-scores record keeps them and the Best-of-N record repeats
them as ``gold_failures``.

AlpacaEval's gold is a preference, not a function of the text: the probability that a response
beats the task's reference output, by a preference judge: a reward model (``judge.rm``;
``sigmoid(r(response) - r(reference))``) or an LLM, local or served (``judge.model``, ``judge.endpoint``;
:class:`rlexp.scoring.judges.PairwiseJudge`). Its parse failures are counted with the graders'.
"""

from __future__ import annotations

import multiprocessing
import weakref
from collections.abc import Mapping, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Protocol

import numpy as np

from rlexp.errors import ConfigError
from rlexp.scorer import ScoreInput, Scorer, ScoreStats
from rlexp.suite import grade, task
from rlexp.suite.base import GraderDataMissing


def _grade_one(response: str, hidden: Mapping[str, Any]) -> float:
    score = float(grade(response, hidden))
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"grade {score} is outside [0, 1]")
    return score


def _import_graders() -> None:
    """A grading worker's initializer: import the grader libraries once, before any sample's clock
    starts, so a sample's timeout measures its grading, not a cold import (seconds on a loaded machine)."""
    import math_verify  # noqa: F401
    from lm_eval.api import metrics  # noqa: F401

    from rlexp.suite.ifeval import _quietly

    _quietly("utils")


def _stop(pool: Any) -> None:
    pool.stop()
    pool.join()


def judged_by_preference(hidden: Mapping[str, Any]) -> bool:
    """Whether a suite item's gold comes from the preference judge (AlpacaEval) rather than a grader."""
    return task(str(hidden["task"])).grade is None


class SuiteGraderJudge:
    """Gold scores of suite samples: library graders in processes, a preference judge for AlpacaEval."""

    def __init__(self, preference: PreferenceJudge | None = None, *, workers: int = 2, timeout: float = 60.0,
                 name: str = "grader", metrics: Mapping[str, str] | None = None) -> None:
        if workers < 1:
            raise ConfigError(f"judge.workers={workers} must be >= 1")
        if not timeout > 0:
            raise ConfigError(f"judge.timeout={timeout} must be > 0")
        self.preference = preference
        self.metrics = dict(metrics or {})  # task -> a metric other than its default (prompts.tasks.<task>.metric)
        self.workers = workers
        self.timeout = float(timeout)
        self.name = name
        self.stats = ScoreStats()
        self._pool: Any = None
        self._preference_failures = 0

    def score(self, items: Sequence[ScoreInput]) -> np.ndarray:
        """One gold score in [0, 1] per item, in input order."""
        out = np.zeros(len(items), dtype=np.float64)
        judged = [judged_by_preference(it.hidden) for it in items]
        by_judge = [i for i, j in enumerate(judged) if j]
        graded = [i for i, j in enumerate(judged) if not j]
        if by_judge:
            out[by_judge] = self._preferences([items[i] for i in by_judge])
        if graded:
            out[graded] = self._grade([items[i] for i in graded])
        self.stats.items += len(items)
        return out

    def _fail(self, task: str, kind: str, message: str) -> None:
        counts = self.stats.extra.setdefault(kind, {})
        counts[task] = counts.get(task, 0) + 1
        self.stats.extra.setdefault("grader_error", message[:300])

    def _grade(self, items: Sequence[ScoreInput]) -> np.ndarray:
        scores = np.zeros(len(items), dtype=np.float64)
        pool = self._workers()
        futures = [pool.schedule(_grade_one, (it.response, self._hidden(it.hidden)), timeout=self.timeout) for it in items]
        for i, (it, future) in enumerate(zip(items, futures, strict=True)):
            task = str(it.hidden["task"])
            try:
                scores[i] = future.result()
            except FutureTimeout:
                self._fail(task, "grader_timeouts", f"{task}: grading took over {self.timeout:g} s")
            except GraderDataMissing as exc:
                self._fail(task, "grader_missing_data", f"{task}: {exc}")
            except Exception as exc:  # noqa: BLE001 - any grader crash is this sample's failure
                self._fail(task, "grader_failures", f"{task}: {type(exc).__name__}: {exc}")
        return scores

    def _hidden(self, hidden: Mapping[str, Any]) -> dict[str, Any]:
        """An item's grader fields with the judge's metric for its task, where one is set."""
        metric = self.metrics.get(str(hidden["task"]))
        return {**hidden, "metric": metric} if metric else dict(hidden)

    def _workers(self) -> Any:
        """The process pool, started on first use and kept across calls (a pool scores in chunks, and
        each worker pays for importing the graders once); stopped when the judge is collected."""
        if self._pool is None:
            from pebble import ProcessPool

            # spawn: the parent holds torch's threads, which a forked child must not inherit.
            self._pool = ProcessPool(max_workers=self.workers, context=multiprocessing.get_context("spawn"),
                                     initializer=_import_graders)
            weakref.finalize(self, _stop, self._pool)
        return self._pool

    def _preferences(self, items: Sequence[ScoreInput]) -> np.ndarray:
        if self.preference is None:
            raise ConfigError("AlpacaEval samples need a preference judge: judge.rm=<reward model> or "
                              "judge.model=<LLM> (with judge.endpoint for a served one)")
        out = self.preference.preferences(items)
        self.stats.parse_failures += self.preference.stats.parse_failures - self._preference_failures
        self._preference_failures = self.preference.stats.parse_failures
        if "served" in self.preference.stats.extra:  # a served preference judge's requests and cache hits
            self.stats.extra["served"] = dict(self.preference.stats.extra["served"])
        return out


class PreferenceJudge(Protocol):
    """What judges AlpacaEval: P(response beats the reference output) per item, with its own stats."""

    stats: ScoreStats

    def preferences(self, items: Sequence[ScoreInput]) -> np.ndarray: ...


class RMPreference:
    """A reward model as AlpacaEval's judge: ``sigmoid(r(response) - r(reference))`` (Bradley-Terry)."""

    def __init__(self, scorer: Scorer) -> None:
        self.scorer = scorer
        self.stats = scorer.stats

    def preferences(self, items: Sequence[ScoreInput]) -> np.ndarray:
        """P(``item.response`` beats ``item.hidden['reference']``) for each item."""
        references = {it.prompt: it.hidden["reference"] for it in items}
        ref_inputs = [ScoreInput(prompt, ref) for prompt, ref in references.items()]
        ref_scores = dict(zip(references, self.scorer.score(ref_inputs), strict=True))
        own = self.scorer.score([ScoreInput(it.prompt, it.response) for it in items])
        diff = own - np.array([ref_scores[it.prompt] for it in items])
        return 1.0 / (1.0 + np.exp(-diff))
