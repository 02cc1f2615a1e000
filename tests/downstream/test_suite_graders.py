"""The suite's graders agree with their libraries on fixture rows in the real schemas; bad input fails
in one line or counts as a failed sample, never hangs."""

from __future__ import annotations

import json
import time
from pathlib import Path

import psutil
import pytest

from rlexp.config.nodes import SuiteTaskConfig
from rlexp.errors import ConfigError, DataError
from rlexp.scorer import ScoreInput
from rlexp.scoring.suite_grader import SuiteGraderJudge
from rlexp.suite.loading import load_suite, load_task

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "suite"


def _items(task: str, **settings):
    return load_task(task, SuiteTaskConfig(source=str(FIXTURES / task), **settings))


@pytest.fixture(scope="module")
def judge():
    j = SuiteGraderJudge(workers=2, timeout=20.0)
    yield j


def _grade(judge: SuiteGraderJudge, item, *responses: str, **hidden) -> list[float]:
    return judge.score([ScoreInput(item.prompt, r, (), {**item.hidden, **hidden}) for r in responses]).tolist()


def test_gsm8k_matches_lm_eval_and_math_verify(judge) -> None:
    from lm_eval.api.metrics import exact_match_hf_evaluate
    from math_verify import parse, verify

    from rlexp.suite.gsm8k import IGNORE, extract

    item = _items("gsm8k")[0]  # gold 72
    responses = ["48/2 = 24, 48 + 24 = 72. So the answer is 72.", "#### 72", "So the answer is 71.", "I don't know",
                 "The answer is 72 clips, or 73.", r"The final answer is $\boxed{72}$."]
    got = _grade(judge, item, *responses)
    assert got == [1.0, 1.0, 0.0, 0.0, 0.0, 1.0]  # OLMES's last number, not lm-eval's flexible "$." match
    for r, g in zip(responses, got, strict=True):
        lib = exact_match_hf_evaluate([extract(r)], ["72"], regexes_to_ignore=IGNORE, ignore_case=True)["exact_match"]
        assert g == lib
    # math-verify agrees wherever the response's last number is its answer.
    assert all(verify(parse("72"), parse(r)) == bool(g) for r, g in zip(responses[:4], got[:4], strict=True))
    assert _grade(judge, _items("gsm8k")[3], "1,203 apples in all")[0] == 1.0  # commas inside numbers


def test_math_matches_math_verify(judge) -> None:
    from math_verify import parse, verify

    item = _items("math")[0]  # \boxed{\frac{1}{2}}
    responses = [r"Final Answer: The final answer is $\frac{1}{2}$. I hope it is correct.", r"so $\boxed{0.5}$",
                 r"The answer is $\boxed{3}$", "no idea at all", r"\boxed{\frac{1}{2"]
    got = _grade(judge, item, *responses)
    assert got[:4] == [1.0, 1.0, 0.0, 0.0]
    for r, g in zip(responses, got, strict=True):
        assert g == float(verify(parse(item.hidden["solution"]), parse(r)))


def test_ifeval_matches_lm_eval(judge) -> None:
    from rlexp.suite.ifeval import _quietly

    lower, words, bullets = _items("ifeval")
    cases = [(lower, "rivers flow to the sea and feed the land.", 1.0), (lower, "Rivers Flow.", 0.0),
             (words, "The cat is a small soft animal that purrs and sleeps all day long. "
                     "Is there anything else I can help with?", 1.0),
             (words, "A cat. Is there anything else I can help with?", 0.0),
             (bullets, "* apple\n* pear\n* plum", 1.0), (bullets, "* apple\n* pear", 0.0)]
    for item, response, expected in cases:
        got = _grade(judge, item, response)[0]
        doc = {k: item.hidden[k] for k in ("key", "prompt", "instruction_id_list", "kwargs")}
        assert got == float(_quietly("utils").process_results(doc, [response])["prompt_level_loose_acc"]) == expected


def test_bbh_popqa_rules(judge) -> None:
    boolean, _, date = _items("bbh")
    assert boolean.shots and "Let's think step by step" in boolean.shots[0][0]  # OLMES's STD:bbh exchanges
    # OLMES's cot-v1 answer_regex: a bare "False" is still the answer (tests/downstream/test_suite_olmes_extraction.py).
    assert _grade(judge, boolean, "not True is False. So the answer is False.", "So the answer is True.",
                  "False") == [1.0, 0.0, 1.0]
    assert _grade(judge, date, "Tomorrow is 12/25/1937. So the answer is (B).", "So the answer is (A).",
                  "The answer is (b)") == [1.0, 0.0, 1.0]
    rankin, lima, _ = _items("popqa")
    assert all(rankin.hidden["answers"] and s[0] != rankin.prompt for s in rankin.shots)
    assert _grade(judge, rankin, "He was a Politician.", "a political leader", "a farmer") == [1.0, 1.0, 0.0]
    assert _grade(judge, lima, "peru", "It is in Chile") == [1.0, 0.0]


def test_humanevalplus_pass_fail_loop_crash(judge) -> None:
    add = _items("humanevalplus")[0]
    good = "```python\ndef add(x: int, y: int):\n    return x + y\n```"
    body_only = "```python\n    return x + y\n```"
    wrong = "```python\ndef add(x, y):\n    return x - y\n```"
    loop = "```python\ndef add(x, y):\n    while True:\n        pass\n```"
    crash = "```python\ndef add(x, y):\n    raise SystemExit(0)\n```"
    net = "```python\nimport socket\ndef add(x, y):\n    socket.create_connection(('127.0.0.1', 9))\n    return x + y\n```"
    start = time.monotonic()
    got = _grade(judge, add, good, body_only, wrong, loop, crash, "no code at all", net, timeout=3)
    assert got == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert time.monotonic() - start < 30


def test_grader_crash_and_hang_are_counted_failures() -> None:
    judge = SuiteGraderJudge(workers=1, timeout=2.0)
    item = _items("gsm8k")[0]
    broken = {k: v for k, v in item.hidden.items() if k != "answer"}  # the grader raises KeyError
    scores = judge.score([ScoreInput(item.prompt, "So the answer is 72.", (), broken),
                          ScoreInput(item.prompt, "So the answer is 72.", (), item.hidden)])
    assert scores.tolist() == [0.0, 1.0]
    assert judge.stats.extra["grader_failures"] == {"gsm8k": 1}
    assert "KeyError" in judge.stats.extra["grader_error"]
    # A grader that never returns: killed at the timeout, counted, and the pool goes on.
    hang = SuiteGraderJudge(workers=1, timeout=1.0)
    he = _items("humanevalplus")[0]
    loop = "```python\ndef add(x, y):\n    while True:\n        pass\n```"
    start = time.monotonic()
    out = hang.score([ScoreInput(he.prompt, loop, (), {**he.hidden, "timeout": 60}),
                      ScoreInput(he.prompt, "```python\ndef add(x, y):\n    return x + y\n```", (), he.hidden)])
    assert out.tolist() == [0.0, 1.0]
    assert hang.stats.extra["grader_timeouts"] == {"humanevalplus": 1}
    assert time.monotonic() - start < 30
    # The killed worker's sample process went with it (no orphan left looping on a core).
    time.sleep(0.5)
    assert not [p.pid for p in psutil.process_iter(["cmdline"]) if "_no_network" in " ".join(p.info["cmdline"] or [])]


def test_suite_loading_shots_limits_and_ids() -> None:
    items = load_suite({"gsm8k": SuiteTaskConfig(source=str(FIXTURES / "gsm8k"), shots=1),
                        "math": SuiteTaskConfig(source=str(FIXTURES / "math"))})
    gsm = [i for i in items if i.hidden["task"] == "gsm8k"]
    assert len(gsm) == 4 and all(len(i.shots) == 1 for i in gsm)
    # OLMES's fixed STD:GSM8k exemplars (package data), not rows of the fixture's train split
    assert gsm[0].shots[0][1].startswith("Answer: There are 15 trees") and gsm[0].shots == gsm[3].shots
    assert {i.hidden["group"] for i in items if i.hidden["task"] == "math"} == {"Prealgebra", "Algebra",
                                                                                 "Counting & Probability"}
    assert all(i.kind == "suite" for i in items)
    a = [i.prompt_id for i in _items("popqa", limit=2, seed=1)]
    assert a == [i.prompt_id for i in _items("popqa", limit=2, seed=1)] and len(a) == 2
    draws = {tuple(i.prompt_id for i in _items("popqa", limit=2, seed=s)) for s in range(8)}
    assert len(draws) > 1  # the seed picks the subsample


def test_bad_suite_input_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown downstream task 'gsm9k'"):
        load_task("gsm9k", SuiteTaskConfig(source=str(FIXTURES / "gsm8k")))
    bad = tmp_path / "test.jsonl"
    bad.write_text(json.dumps({"question": "1+1?"}) + "\n")
    with pytest.raises(DataError, match="gsm8k needs column 'answer'") as err:
        load_task("gsm8k", SuiteTaskConfig(source=str(bad), shots=0))
    assert "\n" not in str(err.value)
    bad.write_text(json.dumps({"question": "1+1?", "answer": "two"}) + "\n")
    with pytest.raises(DataError, match="field 'answer': has no '#### <number>'"):
        load_task("gsm8k", SuiteTaskConfig(source=str(bad), shots=0))
    bad.write_text(json.dumps({"key": 1, "prompt": "hi", "instruction_id_list": ["no:such"], "kwargs": [{}]}) + "\n")
    with pytest.raises(DataError, match="unknown instruction id 'no:such'"):
        load_task("ifeval", SuiteTaskConfig(source=str(bad)))
    odd = tmp_path / "odd_task.jsonl"
    odd.write_text(json.dumps({"input": "x", "target": "y"}) + "\n")
    with pytest.raises(DataError, match="unknown BBH subtask 'odd_task'"):
        load_task("bbh", SuiteTaskConfig(source=str(odd)))
    with pytest.raises(ConfigError, match="limit"):
        load_task("popqa", SuiteTaskConfig(source=str(FIXTURES / "popqa"), limit=-1))
