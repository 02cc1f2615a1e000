"""The planner recovers users' aspects from their profiles; raw checkers separate users."""

from __future__ import annotations

import random
from collections import defaultdict

from rlexp.sandbox import DIMENSIONS, format_plan, infer_aspects, planner_quality
from rlexp.sandbox.knobs import knobs_for
from rlexp.sandbox.planner import PLAN_HEADER, dimension_margins
from rlexp.sandbox.users import PoleBalancer, make_user

from .conftest import Loaded


def _cases(world: Loaded) -> list[tuple[tuple, list[str]]]:
    return [(i.profile, [a.aspect for a in i.rubric_aspects]) for i in world.prb_items]


def test_planner_recall_and_precision_are_reasonable(world: Loaded) -> None:
    q = planner_quality(_cases(world))
    assert q.recall > 0.6
    assert q.precision > 0.5
    reported = world.manifest["planner"]["prb_users"]
    assert abs(reported["recall"] - q.recall) < 1e-3 and abs(reported["precision"] - q.precision) < 1e-3


def test_planner_output_and_plan_format(world: Loaded) -> None:
    profile = world.prb_items[0].profile
    titles = infer_aspects(profile)
    assert titles == infer_aspects(profile)  # deterministic
    assert len(infer_aspects(profile, max_aspects=1)) <= 1
    assert infer_aspects(()) == []
    plan = format_plan(titles).splitlines()
    assert plan[0] == PLAN_HEADER and plan[1:] == [f"- {t}" for t in titles]


def test_raw_checkers_make_users_distinguishable(world: Loaded) -> None:
    """On every dimension, users who hold a pole have profiles that lean clearly to that pole."""
    margins: dict[tuple[str, int], list[float]] = defaultdict(list)
    for profile, titles in _cases(world):
        m = dimension_margins(profile)
        for t in titles:
            pole = next(p for d in DIMENSIONS for p in d.poles if p.title == t)
            margins[(pole.dim, pole.side)].append(m[pole.dim])
    for d in DIMENSIONS:
        first, second = margins[(d.name, 0)], margins[(d.name, 1)]
        assert first and second, d.name
        assert sum(first) / len(first) > 0.3, d.name
        assert sum(second) / len(second) < -0.3, d.name


def test_profiles_get_harder_to_read_with_difficulty() -> None:
    def recall(difficulty: float) -> float:
        rng, balancer, knobs = random.Random(7), PoleBalancer(), knobs_for(difficulty)
        users = [make_user(f"u{i}", "Society_and_Culture", knobs, balancer, rng) for i in range(60)]
        return planner_quality((u.profile, u.titles) for u in users).recall

    assert recall(0.0) > recall(1.0)
