"""What a suite gold record says about its grading: the grader version in its cache key, and samples no
grader could grade (IFEval without nltk's punkt_tab) counted apart from wrong answers."""

from __future__ import annotations

import dataclasses
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


def test_the_gold_record_keeps_the_counts(tmp_path: Path) -> None:
    """The judge's counts reach the pool's gold-scores record (``scorer_stats``, which Best-of-N repeats as
    ``gold_failures``): a sample whose grader raised is told apart from a wrong answer there."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from omegaconf import OmegaConf

    from rlexp import inputs
    from rlexp.runtime import RunContext, execute
    from rlexp.store import Store

    cfg = OmegaConf.create({"paths": {"store": str(tmp_path / "runs"), "output_root": str(tmp_path / "out"),
                                      "cache": str(tmp_path / "cache")},
                            "logger": {"kind": "none"}, "runtime": {"threads": 0}, "progress": False})
    item = load_task("gsm8k", SuiteTaskConfig(source=str(FIXTURES / "gsm8k")))[0]
    broken = dataclasses.replace(item, prompt_id="broken",  # its grader raises KeyError
                                 hidden={k: v for k, v in item.hidden.items() if k != "answer"})
    prompts = [item, broken]
    answers = ["Answer: So the answer is 72.", "Answer: So the answer is 5."]

    def sample(ctx: RunContext) -> dict:
        path = ctx.work_dir / "pool.parquet"
        pq.write_table(pa.table({"prompt_id": [p.prompt_id for p in prompts for _ in answers],
                                 "sample_index": [0, 1] * len(prompts), "text": answers * len(prompts)}), path)
        ctx.add_artifact("pool", path)
        return {}

    pool = execute("sample", cfg, sample)
    scores, sid = inputs.pool_scores(cfg, pool_record=pool, prompts=prompts, scorer_key={"judge": "grader"},
                                     make_scorer=lambda: SuiteGraderJudge(workers=1, timeout=20.0), role="gold")
    assert scores.tolist() == [[1.0, 0.0], [0.0, 0.0]]
    stats = Store(cfg.paths.store).get(sid).info["scorer_stats"]
    assert stats["items"] == 4 and stats["grader_failures"] == {"gsm8k": 2}
    assert "KeyError" in stats["grader_error"]
