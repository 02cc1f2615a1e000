"""Every benchmark label is verified by the gold judges over the whole generated set."""

from __future__ import annotations

from rlexp.sandbox import POLES_BY_TITLE, dimension_state, is_correct, judge_rb2_completion

from .conftest import Loaded


def test_every_rb2_chosen_is_correct_and_every_rejected_incorrect(world: Loaded) -> None:
    for row in world.rb2_rows:
        for text in row["chosen"]:
            assert is_correct(judge_rb2_completion(row, text)), (row["id"], text)
        for text in row["rejected"]:
            assert judge_rb2_completion(row, text) <= 0.5, (row["id"], text)


def test_every_prb_chosen_meets_and_rejected_violates_all_aspects(world: Loaded) -> None:
    for item in world.prb_items:
        assert 2 <= len(item.rubric_aspects) <= 4
        for aspect in item.rubric_aspects:
            pole = POLES_BY_TITLE[aspect.aspect]
            assert pole.check(item.chosen), (item.id, aspect.aspect)
            assert not pole.check(item.rejected), (item.id, aspect.aspect)
            # A violation is the opposite pole, not just missing markers.
            assert dimension_state(pole.dim, item.rejected) == 1 - pole.side
            assert aspect.evidence in item.narrative


def test_personal_training_pairs_follow_the_same_rule(world: Loaded) -> None:
    for row in world.pairs["personal"][:800]:
        for aspect in row["rubric_aspects"]:
            pole = POLES_BY_TITLE[aspect["aspect"]]
            assert pole.check(row["chosen"]) and not pole.check(row["rejected"])


def test_length_bias_chosen_is_always_the_longer_answer(world: Loaded) -> None:
    assert all(len(r["chosen"]) > len(r["rejected"]) for r in world.pairs["length_bias"])
