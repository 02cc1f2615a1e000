"""Tests for rlexp.benchmarks.personalized_math (PRB reference §3)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from rlexp.benchmarks.personalized_math import (
    pairwise_accuracy,
    pairwise_judge_summary,
    parse_pairwise_verdict,
    seeded_positions,
)
from rlexp.errors import ConfigError, DataError


def test_pairwise_accuracy_counts_ties_as_errors() -> None:
    chosen = [1.0, 2.0, 3.0, 4.0, -1.0]
    rejected = [0.0, 2.0, 5.0, 1.0, -1.0]
    out = pairwise_accuracy(chosen, rejected)
    assert out["n"] == 5
    assert out["correct"] == 2  # pairs 0 and 3; pairs 1 and 4 are exact ties
    assert out["accuracy"] == pytest.approx(0.4)
    assert out["ties"] == 2
    assert out["mean_chosen"] == pytest.approx(9.0 / 5)
    assert out["mean_rejected"] == pytest.approx(7.0 / 5)
    assert out["mean_gap"] == pytest.approx(2.0 / 5)
    assert out["per_domain"] == {}


def test_pairwise_accuracy_per_domain() -> None:
    out = pairwise_accuracy([1, 1, 1, 0], [0, 1, 2, -1], domains=["Art", "Art", "Society", "Art"])
    assert out["per_domain"]["Art"] == {"n": 3, "correct": 2, "ties": 1, "accuracy": pytest.approx(2 / 3)}
    assert out["per_domain"]["Society"] == {"n": 1, "correct": 0, "ties": 0, "accuracy": 0.0}


def test_pairwise_accuracy_matches_numpy_on_random_data() -> None:
    rng = np.random.default_rng(0)
    c, r = rng.integers(0, 3, 200).astype(float), rng.integers(0, 3, 200).astype(float)
    out = pairwise_accuracy(c, r)
    assert out["accuracy"] == pytest.approx(np.mean(c > r))
    assert out["ties"] == int(np.sum(c == r))
    assert out["mean_gap"] == pytest.approx(np.mean(c - r))


def test_pairwise_accuracy_errors_name_the_index() -> None:
    with pytest.raises(DataError, match="pair 2, chosen"):
        pairwise_accuracy([1.0, 2.0, float("nan")], [0.0, 0.0, 0.0])
    with pytest.raises(DataError, match="pair 1, rejected"):
        pairwise_accuracy([1.0, 2.0], [0.0, float("nan")])
    with pytest.raises(DataError, match="3 chosen scores but 2"):
        pairwise_accuracy([1.0, 2.0, 3.0], [0.0, 0.0])
    with pytest.raises(DataError, match="domains"):
        pairwise_accuracy([1.0], [0.0], domains=["a", "b"])
    with pytest.raises(DataError, match="no pairs"):
        pairwise_accuracy([], [])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Reasoning: fits the user.\nResult: A", "A"),
        ("Reasoning...\n**Result:** B", "B"),
        ('"Result": "b"', "B"),
        ("RESULT:   a.", "A"),
        ("<think>... Result: B ...</think>\nResult: A", "A"),  # only the text after the last </think>
        ("<think>a</think>x</think>Result: B", "B"),
        ("Result: A is better. Final result: B", "A"),  # the FIRST result: counts
        ("Result: answer B", "A"),  # reference quirk: 'answer b' starts with 'a'
        ("Result: C", None),
        ("Result:", None),
        ("The answer is A", None),  # no result: marker
        ("<think>Result: A</think> I cannot decide", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_pairwise_verdict(text: str | None, expected: str | None) -> None:
    assert parse_pairwise_verdict(text) == expected


def test_seeded_positions_matches_reference_global_random() -> None:
    state = random.getstate()
    try:
        random.seed(42)  # what the reference does, once, before the loop
        expected = [random.random() < 0.5 for _ in range(500)]
    finally:
        random.setstate(state)
    assert seeded_positions(500) == expected
    assert seeded_positions(5) == [False, True, True, True, False]
    assert seeded_positions(500, seed=43) != expected
    assert seeded_positions(0) == []
    with pytest.raises(ConfigError):
        seeded_positions(-1)


def test_pairwise_judge_summary_reference_policy_sets_failures_to_a() -> None:
    verdicts = ["A", "B", None, "A", None, "B"]
    chosen_in_a = [True, True, True, False, False, False]
    out = pairwise_judge_summary(verdicts, chosen_in_a, failure_policy="reference")
    # effective: A(ok) B(x) A(ok) | A(x) A(x) B(ok)
    assert out["n"] == 6 and out["parse_failures"] == 2
    assert out["correct"] == 3
    assert out["accuracy"] == pytest.approx(0.5)
    assert out["accuracy_chosen_in_a"] == pytest.approx(2 / 3)
    assert out["accuracy_chosen_in_b"] == pytest.approx(1 / 3)
    assert out["position_bias"] == pytest.approx(1 / 3)
    assert (out["pred_a"], out["pred_b"]) == (4, 2)
    assert out["accuracy_excluding_failures"] == pytest.approx(2 / 4)


def test_pairwise_judge_summary_exclude_policy_drops_failures() -> None:
    verdicts = ["A", "B", None, "A", None, "B"]
    chosen_in_a = [True, True, True, False, False, False]
    out = pairwise_judge_summary(verdicts, chosen_in_a, failure_policy="exclude")
    assert out["parse_failures"] == 2
    assert out["correct"] == 2
    assert out["accuracy"] == pytest.approx(0.5)  # 2 of the 4 parsed
    assert out["accuracy_chosen_in_a"] == pytest.approx(1 / 2)
    assert out["accuracy_chosen_in_b"] == pytest.approx(1 / 2)
    assert out["position_bias"] == pytest.approx(0.0)
    assert (out["pred_a"], out["pred_b"], out["n_chosen_in_a"], out["n_chosen_in_b"]) == (2, 2, 2, 2)


def test_pairwise_judge_summary_empty_side_and_errors() -> None:
    out = pairwise_judge_summary(["A", "A"], [True, True])
    assert out["accuracy"] == 1.0
    assert out["accuracy_chosen_in_b"] is None and out["position_bias"] is None
    all_failed = pairwise_judge_summary([None, None], [True, False], failure_policy="exclude")
    assert all_failed["accuracy"] is None and all_failed["accuracy_excluding_failures"] is None
    with pytest.raises(ConfigError):
        pairwise_judge_summary(["A"], [True], failure_policy="drop")
    with pytest.raises(DataError, match="1 verdicts but 2"):
        pairwise_judge_summary(["A"], [True, False])
    with pytest.raises(DataError, match="verdict 0"):
        pairwise_judge_summary(["a"], [True])
    with pytest.raises(DataError):
        pairwise_judge_summary([], [])


def test_judge_pipeline_on_seeded_positions() -> None:
    # An always-"A" judge scores exactly the fraction of items with chosen in slot A.
    pos = seeded_positions(300)
    out = pairwise_judge_summary(["A"] * 300, pos)
    assert out["accuracy"] == pytest.approx(sum(pos) / 300)
    assert out["position_bias"] == 1.0
