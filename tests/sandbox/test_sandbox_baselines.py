"""Untrained scorers stay near chance on both sandbox benchmarks."""

from __future__ import annotations

from rlexp.sandbox.baselines import (
    baseline_scorers,
    best_of_n_credit,
    compute_baselines,
    prb_accuracy,
    rb2_scores,
    ties_score,
)

from .conftest import Loaded

RB2_MAX = 0.45  # chance is 0.25
PRB_MAX = 0.60  # chance is 0.5


def test_manifest_baselines_are_under_the_thresholds(world: Loaded) -> None:
    base = world.manifest["baselines"]
    assert set(base["rb2"]) == set(baseline_scorers(0))
    for name, scores in base["rb2"].items():
        for subset, value in scores.items():
            assert value <= RB2_MAX, (name, subset, value)
    for name, accs in base["prb"].items():
        for domain, value in accs.items():
            assert value <= PRB_MAX, (name, domain, value)


def test_manifest_baselines_match_a_recomputation_from_the_files(world: Loaded) -> None:
    again = compute_baselines(world.rb2_items, world.prb_items, 0)
    assert again == world.manifest["baselines"]


def test_scoring_rules() -> None:
    assert best_of_n_credit([1.0, 0.0, 0.0, 0.0], 1) == 1.0
    assert best_of_n_credit([1.0, 1.0, 0.0, 0.0], 1) == 0.5
    assert best_of_n_credit([0.0, 1.0, 0.0, 0.0], 1) == 0.0
    assert best_of_n_credit([1.0, 1.0, 1.0, 1.0], 1) == 0.25
    # A perfect Ties scorer: correct answers far above incorrect ones, tied answers close together.
    perfect = [("ref:0", [10.0, 0.0, 0.0], 1), ("tied:0", [10.0, 10.1, 0.0, 0.0], 2)]
    assert ties_score(perfect) > 0.99
    constant = [("ref:0", [1.0, 1.0, 1.0], 1), ("tied:0", [1.0, 1.0, 1.0, 1.0], 2)]
    assert ties_score(constant) == 0.0


def test_an_oracle_scores_perfectly_and_an_anti_oracle_zero(world: Loaded) -> None:
    """The rules are not lenient: a scorer that knows the answers wins, its reverse loses."""
    items = [i for i in world.rb2_items if i.subset != "Ties"]
    good = {(i.prompt, i.chosen[0]) for i in items}
    oracle = rb2_scores(items, lambda p, r: float((p, r) in good))
    anti = rb2_scores(items, lambda p, r: -float((p, r) in good))
    assert oracle["overall"] == 1.0 and anti["overall"] == 0.0
    prb = world.prb_items
    chosen = {i.chosen for i in prb}
    assert prb_accuracy(prb, lambda q, r: float(r in chosen))["overall"] == 1.0
    assert prb_accuracy(prb, lambda q, r: 0.0)["overall"] == 0.0  # ties count as wrong
