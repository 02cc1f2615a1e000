"""GSM8K, MATH, BBH and PopQA items carry OLMES's ``::tulu`` regimes (OLMES at commit 99cf8bb):
fixed few-shot exemplars from the package's data (never rows of the evaluated split), OLMES's
user-turn templates, prefill, stop sequences and token ceilings, and a selectable metric.

The expected turns below are what OLMES's ``Task.fewshot_context`` (``oe_eval/tasks/base_task.py``,
chat format with ``fewshot_as_multiturn``) builds from the task's ``doc_to_text``/``doc_to_target``
and ``assistant_prefix``, worked out by hand from that code."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from rlexp.config.nodes import SuiteTaskConfig
from rlexp.errors import ConfigError
from rlexp.suite import TASKS, grade
from rlexp.suite.loading import METRICS, load_task, suite_metrics

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "suite"


def _items(task: str, **settings):
    return load_task(task, SuiteTaskConfig(source=str(FIXTURES / task), **settings))


def test_shot_files_ship_in_the_package_with_their_source() -> None:
    shots = resources.files("rlexp.suite").joinpath("shots")
    readme = shots.joinpath("README.md").read_text(encoding="utf-8")
    assert "99cf8bb" in readme and "fewshot_sources.py" in readme
    counts = {name: sum(1 for line in shots.joinpath(f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
                        if line.strip()) for name in ("gsm8k", "minerva_math", "bbh", "popqa")}
    assert counts == {"gsm8k": 8, "minerva_math": 4, "bbh": 27, "popqa": 16}


def test_gsm8k_regime() -> None:
    items = _items("gsm8k")
    first = items[0]
    # doc_to_text "Question: <q>\nAnswer:" with the assistant_prefix "Answer:" stripped off the user turn.
    assert first.prompt == ("Question: Natalia sold clips to 48 of her friends in April, and then she sold half as "
                            "many clips in May. How many clips did Natalia sell altogether in April and May?")
    assert len(first.shots) == 8 and all(i.shots == first.shots for i in items)
    # STD:GSM8k (Wei et al.), the assistant turn concat_with_space(assistant_prefix, doc_to_target).
    assert first.shots[0] == (
        "Question: There are 15 trees in the grove. Grove workers will plant trees in the grove today. After they "
        "are done, there will be 21 trees. How many trees did the grove workers plant today?",
        "Answer: There are 15 trees originally. Then there were 21 trees after some more were planted. So there "
        "must have been 21 - 15 = 6. So the answer is 6.")
    assert first.shots[-1][0].startswith("Question: Olivia has $23.") and first.shots[-1][1].endswith("answer is 8.")
    assert (first.prefill, first.stop, first.max_new_tokens) == ("Answer:", ("Question:",), 512)
    # Nothing of the fixture's own train split (or test rows) is a shot.
    own = {json.loads(line)["question"] for f in ("train.jsonl", "test.jsonl")
           for line in (FIXTURES / "gsm8k" / f).read_text().splitlines()}
    assert not own & {s[0].removeprefix("Question: ") for s in first.shots}
    # The policy's text starts with the prefill; the grader reads it as OLMES reads its continuation.
    assert grade("Answer: 48 + 24 = 72. So the answer is 72.", first.hidden) == 1.0


def test_math_regime() -> None:
    items = _items("math")
    first = items[0]
    assert first.prompt == "Problem:\nWhat is $\\frac{1}{4} + \\frac{1}{4}$?\n\nSolution:"
    assert all(i.prompt.endswith("\n\nSolution:") for i in items)
    assert len(first.shots) == 4 and all(i.shots == first.shots for i in items)  # the same for every subject
    user, assistant = first.shots[0]
    assert user == "Problem:\nFind the domain of the expression  $\\frac{\\sqrt{x-2}}{\\sqrt{5-x}}$.}\n\nSolution:"
    assert assistant.startswith("The expressions inside each square root must be non-negative.")
    assert assistant.endswith("Final Answer: The final answer is $[2,5)$. I hope it is correct.")
    assert first.shots[3][1].endswith("Final Answer: The final answer is $-\\frac{2}{3}$. I hope it is correct.")
    assert (first.prefill, first.stop, first.max_new_tokens) == ("", (), 1024)
    assert [i.hidden["group"] for i in items] == ["Prealgebra", "Algebra", "Counting & Probability"]


def test_bbh_regime() -> None:
    boolean, _, date = _items("bbh")
    assert boolean.prompt == "Q: not ( True ) and ( True ) is\nA: Let's think step by step."
    assert len(boolean.shots) == 3
    # The description opens the first shot's user turn only (multiturn fewshot_context, idx == 0).
    assert boolean.shots[0][0] == ("Evaluate the result of a random Boolean expression.\n\n"
                                   "Q: not ( ( not not True ) ) is\nA: Let's think step by step.")
    assert boolean.shots[1][0] == "Q: True and False and not True and True is\nA: Let's think step by step."
    assert boolean.shots[0][1].startswith("Remember that (i) expressions inside brackets")
    assert boolean.shots[0][1].endswith("So the answer is False.")
    assert date.shots[0][0].startswith("Infer the date from context.\n\nQ: Today is Christmas Eve of 1937.")
    assert "Infer the date" not in date.prompt
    assert (boolean.prefill, boolean.stop, boolean.max_new_tokens) == ("", (), 512)
    assert len(_items("bbh", shots=1)[0].shots) == 1


def test_popqa_regime_and_shots_never_show_an_evaluated_answer(tmp_path: Path) -> None:
    items = _items("popqa")
    rankin = items[0]
    assert rankin.prompt == "Q: What is George Rankin's occupation? A:"
    assert len(rankin.shots) == 15 and all(i.shots == rankin.shots for i in items)
    assert rankin.shots[0] == ("Q: What is Thomas Widdrington's occupation? A:", "politician")
    assert rankin.shots[-1] == ("Q: Who is the mother of Terry Fox? A:", "Betty Fox")  # OLMES's 15th of 16
    assert (rankin.prefill, rankin.stop, rankin.max_new_tokens) == ("", ("\n\n",), 15)
    # Shots are the package's, whatever the subsample: no evaluated question is another's shot.
    for seed in range(3):
        drawn = _items("popqa", limit=2, seed=seed)
        asked = {i.prompt for i in drawn}
        assert all(s[0] not in asked for i in drawn for s in i.shots)
    # A question that is one of OLMES's shot rows never sees its own answer: the 16th takes its place.
    widdrington = {"id": 5985932, "question": "What is Thomas Widdrington's occupation?",
                   "possible_answers": json.dumps(["politician", "political leader"])}
    other = {"id": 1, "question": "Who is the mother of Ada?", "possible_answers": json.dumps(["Anne"])}
    path = tmp_path / "test.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (widdrington, other)))
    own, rest = load_task("popqa", SuiteTaskConfig(source=str(path)))
    assert own.prompt not in {s[0] for s in own.shots} and len(own.shots) == 15
    assert own.shots[-1] == ("Q: What is the capital of Kingdom of Italy? A:", "Florence")
    assert rest.shots == rankin.shots


def test_metric_setting_selects_olmes_and_rejects_unknown_in_one_line() -> None:
    response = r"so the answer is $\boxed{\frac{1}{2}}$."  # right, without Minerva's closing sentence
    default = _items("math")[0]  # gold \frac{1}{2}
    assert grade(response, default.hidden) == 1.0  # math-verify
    assert grade(response, {**default.hidden, "metric": "olmes"}) == 0.0  # OLMES's exact match
    assert METRICS["math"] == ("math_verify", "olmes") and all(METRICS[t] == ("olmes",) for t in ("gsm8k", "bbh",
                                                                                                  "popqa"))
    # The metric is the gold judge's: the items (and so the pool) are the same whatever it is.
    assert _items("math", metric="olmes") == _items("math")
    tasks = {"math": {"source": str(FIXTURES / "math"), "metric": "olmes"}, "gsm8k": {"metric": "olmes"},
             "bbh": {}}
    assert suite_metrics(tasks) == {"math": "olmes"}  # gsm8k's only metric is its default
    with pytest.raises(ConfigError, match=r"prompts.tasks.math.metric='exact' is unknown.*math_verify, olmes") as err:
        _items("math", metric="exact")
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="ifeval's metric must be left unset"):
        load_task("ifeval", SuiteTaskConfig(source=str(FIXTURES / "ifeval"), metric="olmes"))


def test_the_metric_keys_the_gold_scores_not_the_pool() -> None:
    from rlexp.config.nodes import JudgeConfig
    from rlexp.scorer import ScoreInput
    from rlexp.scoring.factory import judge_key
    from rlexp.scoring.suite_grader import SuiteGraderJudge
    from rlexp.store import HASH_NEUTRAL, record_id

    olmes = {"tasks": {"math": {"metric": "olmes"}}}
    judge = JudgeConfig(name="grader", rm="some/rm")
    assert judge_key(judge, "suite", olmes)["metrics"] == {"math": "olmes"}
    assert "metrics" not in judge_key(judge, "suite", {"tasks": {"math": {"metric": "math_verify"}}})
    # A record's config never hashes the metric: every suite task has its neutral entry.
    assert all(HASH_NEUTRAL[(t, "metric")] is None for t in TASKS)
    config = {"prompts": {"tasks": {"math": {"limit": 5, "metric": None}}}}
    with_olmes = {"prompts": {"tasks": {"math": {"limit": 5, "metric": "olmes"}}}}
    assert record_id("sample", config, {}) == record_id("sample", with_olmes, {})
    # The judge hands its metric to the grader.
    item = _items("math")[0]
    response = r"so the answer is $\boxed{\frac{1}{2}}$."
    graded = [SuiteGraderJudge(workers=1, metrics=m).score([ScoreInput(item.prompt, response, (), item.hidden)])[0]
              for m in ({}, {"math": "olmes"})]
    assert graded == [1.0, 0.0]


def test_fixed_shots_refuse_a_shot_split_and_too_many_shots() -> None:
    with pytest.raises(ConfigError, match="gsm8k's shots are fixed exemplars") as err:
        _items("gsm8k", shot_split="train")
    assert "\n" not in str(err.value)
    for task, k, have in (("gsm8k", 9, 8), ("math", 5, 4), ("bbh", 4, 3), ("popqa", 16, 16)):
        with pytest.raises(ConfigError, match=f"{task}: shots={k}, but OLMES's .* has {have}"):
            _items(task, shots=k)
    assert _items("gsm8k", shots=0)[0].shots == ()


def test_regime_fields_on_the_tasks() -> None:
    regimes = {name: (TASKS[name].max_new_tokens, TASKS[name].stop, TASKS[name].prefill)
               for name in ("gsm8k", "math", "bbh", "popqa")}
    assert regimes == {"gsm8k": (512, ("Question:",), "Answer:"), "math": (1024, (), ""), "bbh": (512, (), ""),
                       "popqa": (15, ("\n\n",), "")}
    assert all(TASKS[n].shot_split is None for n in regimes)  # no task draws shots from a split any more
    assert (TASKS["math"].average, TASKS["bbh"].average) == ("macro", "micro")
