"""Tests for rlexp.downstream.bon_math: exact BoN@k against brute-force enumeration."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from rlexp.analysis.bootstrap import bootstrap_ci
from rlexp.downstream.bon_math import (
    bon_curve,
    bon_expected,
    default_ks,
    rank_agreement,
    selection_probabilities,
)
from rlexp.errors import ConfigError, DataError


def brute_force_bon(rm: list[float], gold: list[float], k: int) -> Fraction:
    """Average over every k-subset of the mean gold score over the subset's RM-tied maxima (exact)."""
    total, count = Fraction(0), 0
    for subset in itertools.combinations(range(len(rm)), k):
        top = max(rm[i] for i in subset)
        winners = [i for i in subset if rm[i] == top]
        total += Fraction(sum(Fraction(gold[i]) for i in winners), len(winners))
        count += 1
    return total / count


def brute_force_probs(rm: list[float], k: int) -> list[Fraction]:
    probs = [Fraction(0)] * len(rm)
    subsets = list(itertools.combinations(range(len(rm)), k))
    for subset in subsets:
        top = max(rm[i] for i in subset)
        winners = [i for i in subset if rm[i] == top]
        for i in winners:
            probs[i] += Fraction(1, len(winners) * len(subsets))
    return probs


def test_hand_computed_two_way_tie() -> None:
    # rm [1, 2, 2, 3], k = 2: subsets {01}->g1 {02}->g2 {03}->g3 {12}->(g1+g2)/2 {13}->g3 {23}->g3
    gold = [10.0, 20.0, 30.0, 40.0]
    assert bon_expected(np.array([1.0, 2.0, 2.0, 3.0]), np.array(gold), 2) == pytest.approx(
        (20 + 30 + 40 + 25 + 40 + 40) / 6
    )


@pytest.mark.parametrize("seed", range(6))
def test_closed_form_matches_enumeration_with_and_without_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for n in range(1, 8):
        rm_sets = [rng.normal(size=n), rng.integers(0, 3, size=n).astype(float), np.zeros(n)]
        gold = rng.normal(size=n)
        for rm in rm_sets:
            for k in range(1, n + 1):
                expected = brute_force_bon(list(rm), list(gold), k)
                assert bon_expected(rm, gold, k) == pytest.approx(float(expected), abs=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_selection_probabilities_match_enumeration(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    for n in (4, 6, 7):
        rm = rng.integers(0, 3, size=n).astype(float)
        for k in range(1, n + 1):
            probs = selection_probabilities(rm, k)
            expected = brute_force_probs(list(rm), k)
            assert probs == pytest.approx([float(p) for p in expected], abs=1e-14)
            assert probs.sum() == pytest.approx(1.0)
            for value in np.unique(rm):  # tied samples are equally likely to be picked
                group = probs[rm == value]
                assert np.ptp(group) < 1e-15


@pytest.mark.parametrize("seed", range(3))
def test_bon_curve_matches_per_prompt_and_enumeration(seed: int) -> None:
    rng = np.random.default_rng(200 + seed)
    n_prompts, n = 5, 6
    rm = rng.integers(0, 4, size=(n_prompts, n)).astype(float)
    rm[0] = rng.normal(size=n)  # one prompt without ties
    gold = rng.integers(0, 3, size=(n_prompts, n)).astype(float)
    out = bon_curve(rm, gold, ks=range(1, n + 1))
    assert out["ks"] == list(range(1, n + 1))
    for j, k in enumerate(out["ks"]):
        per = [float(brute_force_bon(list(rm[p]), list(gold[p]), k)) for p in range(n_prompts)]
        oracle = [float(brute_force_bon(list(gold[p]), list(gold[p]), k)) for p in range(n_prompts)]
        proxy = [float(brute_force_bon(list(rm[p]), list(rm[p]), k)) for p in range(n_prompts)]
        assert out["per_prompt"]["bon"][:, j] == pytest.approx(per, abs=1e-12)
        assert out["per_prompt"]["oracle"][:, j] == pytest.approx(oracle, abs=1e-12)
        assert out["per_prompt"]["proxy"][:, j] == pytest.approx(proxy, abs=1e-12)
        assert out["bon"][k] == pytest.approx(np.mean(per), abs=1e-12)
        assert [bon_expected(rm[p], gold[p], k) for p in range(n_prompts)] == pytest.approx(per, abs=1e-12)


def test_curve_properties_on_random_pools() -> None:
    rng = np.random.default_rng(7)
    rm = rng.normal(size=(40, 16))
    rm[:10] = np.round(rm[:10])  # some ties
    gold = 0.5 * rm + rng.normal(size=(40, 16))
    out = bon_curve(rm, gold)
    ks = out["ks"]
    assert ks == [1, 2, 4, 8, 16]
    assert out["bon"][1] == pytest.approx(gold.mean(), abs=1e-12)
    assert out["bon_at_1"] == pytest.approx(gold.mean(), abs=1e-12)
    assert out["oracle"][1] == pytest.approx(gold.mean(), abs=1e-12)
    assert out["first_k"][1] == pytest.approx(gold[:, 0].mean())
    oracle = [out["oracle"][k] for k in ks]
    proxy = [out["proxy"][k] for k in ks]
    assert all(b >= a - 1e-12 for a, b in itertools.pairwise(oracle))  # non-decreasing in k
    assert all(b >= a - 1e-12 for a, b in itertools.pairwise(proxy))
    assert np.all(out["per_prompt"]["oracle"] >= out["per_prompt"]["bon"] - 1e-12)
    assert out["oracle"][16] == pytest.approx(gold.max(axis=1).mean())
    assert out["proxy"][16] == pytest.approx(rm.max(axis=1).mean())
    # correlated RM: selection helps, and the normalised gain is in (0, 1]
    assert out["gain"][16] > 0
    assert 0 < out["normalised_gain"][16] <= 1 + 1e-12
    assert out["gain"][1] == 0.0 and out["normalised_gain"][1] is None
    for k in ks[1:]:
        expected = (out["bon"][k] - out["bon"][1]) / (out["oracle"][k] - out["bon"][1])
        assert out["normalised_gain"][k] == pytest.approx(expected)


def test_first_k_uses_first_samples_and_breaks_ties_to_earliest() -> None:
    rm = np.array([[1.0, 3.0, 3.0, 9.0], [5.0, 5.0, 5.0, 5.0]])
    gold = np.array([[10.0, 20.0, 30.0, 40.0], [1.0, 2.0, 3.0, 4.0]])
    out = bon_curve(rm, gold, ks=[1, 2, 3, 4])
    assert out["first_k"] == {1: 5.5, 2: 10.5, 3: 10.5, 4: 20.5}
    # the exact expectation averages the tied picks instead
    assert out["bon"][4] == pytest.approx((40.0 + 2.5) / 2)


def test_normalised_gain_is_none_without_headroom() -> None:
    rm = np.random.default_rng(0).normal(size=(3, 8))
    out = bon_curve(rm, np.ones((3, 8)), ks=[1, 4, 8])
    assert out["normalised_gain"] == {1: None, 4: None, 8: None}
    assert out["gain"][8] == pytest.approx(0.0)


def test_large_pool_is_exact_and_fast() -> None:
    rng = np.random.default_rng(1)
    n = 1024
    rm = np.round(rng.normal(size=n), 1)  # many ties
    gold = rng.normal(size=n)
    for k in (1, 2, 100, 512, 1023, 1024):
        assert selection_probabilities(rm, k).sum() == pytest.approx(1.0, abs=1e-12)
        assert bon_expected(rm, np.ones(n), k) == pytest.approx(1.0, abs=1e-12)
    top = rm == rm.max()
    assert bon_expected(rm, gold, n) == pytest.approx(gold[top].mean())
    assert bon_expected(gold, gold, n) == pytest.approx(gold.max())
    rm2 = rng.normal(size=n)
    out = bon_curve(np.stack([rm, rm2]), np.stack([gold, gold]))
    assert out["ks"] == default_ks(n) == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    assert out["per_prompt"]["bon"][:, -1] == pytest.approx([gold[top].mean(), gold[np.argmax(rm2)]])


def test_validation_errors() -> None:
    rm = np.zeros((2, 4))
    with pytest.raises(ConfigError, match="k=5 exceeds pool size n=4"):
        bon_curve(rm, rm, ks=[1, 5])
    with pytest.raises(ConfigError, match="k must be >= 1"):
        bon_curve(rm, rm, ks=[0])
    with pytest.raises(ConfigError, match="exceeds pool size"):
        bon_expected(np.zeros(3), np.zeros(3), 4)
    with pytest.raises(ConfigError):
        bon_expected(np.zeros(3), np.zeros(3), 1.5)  # type: ignore[arg-type]
    bad = rm.copy()
    bad[1, 2] = np.nan
    with pytest.raises(DataError, match="NaN in rm at prompt 1, sample 2"):
        bon_curve(bad, rm)
    with pytest.raises(DataError, match="NaN in gold at prompt 'q-17', sample 2"):
        bon_curve(rm, bad, prompt_ids=["q-3", "q-17"])
    with pytest.raises(DataError, match="shape"):
        bon_curve(rm, np.zeros((2, 5)))
    with pytest.raises(DataError, match="prompt ids"):
        bon_curve(rm, rm, prompt_ids=["only-one"])
    with pytest.raises(DataError):
        bon_expected(np.array([1.0, np.inf]), np.zeros(2), 1)


def test_default_ks() -> None:
    assert default_ks(1) == [1]
    assert default_ks(2) == [1, 2]
    assert default_ks(10) == [1, 2, 4, 8, 10]
    assert default_ks(16) == [1, 2, 4, 8, 16]
    with pytest.raises(ConfigError):
        default_ks(0)


def test_bootstrap_ci_matches_direct_computation() -> None:
    values = np.random.default_rng(5).normal(size=50)
    lo, hi = bootstrap_ci(values, n_boot=400, alpha=0.1, seed=3)
    rng = np.random.default_rng(3)
    means = values[rng.integers(0, 50, size=(400, 50))].mean(axis=1)
    assert (lo, hi) == pytest.approx(tuple(np.quantile(means, [0.05, 0.95])))
    assert lo < values.mean() < hi
    assert bootstrap_ci(values, n_boot=400, alpha=0.1, seed=3) == (lo, hi)  # deterministic
    assert bootstrap_ci(np.full(10, 2.5), n_boot=50) == (2.5, 2.5)


def test_bootstrap_ci_chunking_keeps_width_sensible() -> None:
    values = np.random.default_rng(6).normal(size=50_000)  # forces several chunks
    lo, hi = bootstrap_ci(values, n_boot=200)
    se = values.std() / np.sqrt(values.size)
    assert hi - lo == pytest.approx(2 * 1.96 * se, rel=0.3)


def test_bootstrap_ci_errors() -> None:
    with pytest.raises(DataError):
        bootstrap_ci(np.array([]))
    with pytest.raises(DataError, match="prompt 1"):
        bootstrap_ci(np.array([1.0, np.nan]))
    with pytest.raises(ConfigError):
        bootstrap_ci(np.ones(3), alpha=1.5)
    with pytest.raises(ConfigError):
        bootstrap_ci(np.ones(3), n_boot=0)


def test_rank_agreement_is_the_mean_within_prompt_spearman_over_prompts_that_can_have_one() -> None:
    from scipy import stats

    rng = np.random.default_rng(4)
    gold = rng.integers(0, 3, size=(6, 5)).astype(float)  # ties within prompts
    gold[1] = 0.5  # gold all tied: no BoN gain possible, left out
    rm = gold + rng.normal(scale=0.8, size=gold.shape)
    rm[2] = 1.0  # RM all tied: left out too
    out = rank_agreement(rm, gold)
    keep = [p for p in range(6) if np.ptp(gold[p]) > 0 and np.ptp(rm[p]) > 0]
    assert out["prompts"] == len(keep) == 4 and out["gold_varies"] == 5 and out["total_prompts"] == 6
    assert out["mean_spearman"] == pytest.approx(np.mean([stats.spearmanr(rm[p], gold[p]).statistic for p in keep]))
    assert rank_agreement(-gold[[0]], gold[[0]])["mean_spearman"] == pytest.approx(-1.0)
    assert rank_agreement(np.zeros((2, 3)), np.zeros((2, 3)))["mean_spearman"] is None
    with pytest.raises(DataError, match="same"):
        rank_agreement(np.zeros((2, 3)), np.zeros((2, 4)))
    bad = np.zeros((2, 3))
    bad[1, 1] = np.nan
    with pytest.raises(DataError):
        rank_agreement(bad, np.ones((2, 3)))
