"""What a suite gold record says about its grading: the grader version in its cache key, and samples no
grader could grade (IFEval without nltk's punkt_tab) counted apart from wrong answers."""

from __future__ import annotations

from pathlib import Path

import nltk
import pytest

from rlexp.config.nodes import JudgeConfig, SuiteTaskConfig
from rlexp.scorer import ScoreInput
from rlexp.scoring.factory import judge_key
from rlexp.scoring.suite_grader import SuiteGraderJudge
from rlexp.suite import GRADER_VERSION, ifeval
from rlexp.suite.base import GraderDataMissing
from rlexp.suite.loading import load_task

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "suite"
SENTENCES = {"key": 7, "prompt": "Answer in fewer than 3 sentences.",
             "instruction_id_list": ["length_constraints:number_sentences"],
             "kwargs": [{"num_sentences": 3, "relation": "less than"}]}


def test_the_grader_version_is_part_of_the_gold_cache_key() -> None:
    key = judge_key(JudgeConfig(name="grader", rm="some/rm"), "suite")
    assert key["grader_version"] == GRADER_VERSION >= 2
    assert "grader_version" not in judge_key(JudgeConfig(), "general")  # the sandbox's judges keep their keys


def test_ifeval_without_punkt_is_missing_data_not_a_wrong_answer(tmp_path: Path) -> None:
    saved = list(nltk.data.path)
    nltk.data.path[:] = [str(tmp_path)]  # a machine without the data
    try:
        assert not ifeval.punkt_available()
        with pytest.raises(GraderDataMissing, match="punkt_tab"):
            ifeval.grade("One sentence. Two sentences.", SENTENCES)
        # A check that needs no tokenizer still grades.
        assert ifeval.grade("all lower case", {**SENTENCES, "instruction_id_list": ["change_case:english_lowercase"],
                                               "kwargs": [{}]}) == 1.0
    finally:
        nltk.data.path[:] = saved


def test_the_judge_counts_ungraded_samples_by_reason() -> None:
    judge = SuiteGraderJudge(workers=1, timeout=20.0)
    item = load_task("ifeval", SuiteTaskConfig(source=str(FIXTURES / "ifeval")))[0]
    hidden = {**item.hidden, **SENTENCES}
    scores = judge.score([ScoreInput(item.prompt, "One sentence. Two sentences.", (), hidden),
                          ScoreInput(item.prompt, "Too. Many. Sentences. Here.", (), hidden)])
    if ifeval.punkt_available():  # the grader ran: right and wrong are told apart
        assert scores.tolist() == [1.0, 0.0]
        assert "grader_missing_data" not in judge.stats.extra
    else:
        assert scores.tolist() == [0.0, 0.0]
        assert judge.stats.extra["grader_missing_data"] == {"ifeval": 2}
        assert "punkt_tab" in judge.stats.extra["grader_error"]
        assert "grader_failures" not in judge.stats.extra
