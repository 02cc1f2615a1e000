"""A suite's scores aggregate as Tulu 3's do: the downstream average is the mean over tasks, MATH is the
mean of its subjects' means (``minerva_math::tulu``), BBH pools its subtasks' rows."""

from __future__ import annotations

import numpy as np
import pytest

from rlexp.data.schemas import PromptItem
from rlexp.downstream.prompt_groups import gains_by_group
from rlexp.tasks.bon import suite_weights


def _items(spec: list[tuple[str, str, int]]) -> list[PromptItem]:
    out = []
    for task, group, count in spec:
        out += [PromptItem(f"{task}:{group}:{i}", "q", "suite", hidden={"task": task, "group": group})
                for i in range(count)]
    return out


def test_math_is_the_mean_of_its_subjects_and_bbh_pools_its_rows() -> None:
    prompts = _items([("math", "algebra", 3), ("math", "geometry", 1), ("bbh", "navigate", 3), ("bbh", "snarks", 1)])
    # Every algebra answer right, the one geometry answer wrong; same pattern for BBH.
    gold = np.array([1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0])
    w = suite_weights(prompts)
    assert w is not None and w.mean() == pytest.approx(1.0)
    math, bbh = slice(0, 4), slice(4, 8)
    assert np.average(gold[math], weights=w[math]) == pytest.approx(0.5)  # (1 + 0) / 2 subjects
    assert np.average(gold[bbh], weights=w[bbh]) == pytest.approx(0.75)  # 3 of 4 rows
    assert np.average(gold, weights=w) == pytest.approx((0.5 + 0.75) / 2)  # the mean over tasks

    groups = gains_by_group(prompts, gold, n_boot=200, seed=0, means={"bon_at_n": gold}, weights=w)
    assert groups["math"]["gain"] == pytest.approx(0.5)
    assert groups["bbh"]["gain"] == pytest.approx(0.75)
    assert groups["math"]["bon_at_n"] == pytest.approx(0.5)
    assert groups["math"]["gain_ci"][0] <= 0.5 <= groups["math"]["gain_ci"][1]


def test_unweighted_groups_are_plain_means_and_other_prompt_sets_have_no_weights() -> None:
    prompts = _items([("gsm8k", "gsm8k", 2), ("popqa", "popqa", 3)])
    gain = np.array([0.0, 1.0, 1.0, 1.0, 0.0])
    plain = gains_by_group(prompts, gain, n_boot=100, seed=1)
    assert plain["popqa"]["gain"] == gain[2:].mean()
    assert plain == gains_by_group(prompts, gain, n_boot=100, seed=1, weights=np.ones(5))
    assert suite_weights([PromptItem("p", "q", "general")]) is None
