"""Tests for rlexp.analysis.correlation, .ndcg and .bootstrap (PRB reference §8)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from rlexp.analysis.bootstrap import bootstrap_prompts, correlate, gain_differences
from rlexp.analysis.correlation import Corr, coefficients, kendall, pearson, spearman, spearman_exact_p
from rlexp.analysis.ndcg import DEFAULT_NDCG_VARIANTS, ndcg, ndcg_null, ndcg_values
from rlexp.errors import ConfigError, DataError

# ---------------------------------------------------------------------------------------------
# scipy wrappers
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_wrappers_equal_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=12)
    y = 0.3 * x + rng.normal(size=12)
    xi, yi = rng.integers(0, 4, size=15), rng.integers(0, 4, size=15)  # heavy ties
    for a, b in ((x, y), (xi, yi)):
        rho = stats.spearmanr(a, b)
        tau = stats.kendalltau(a, b)  # tau-b is scipy's default
        r = stats.pearsonr(a, b)
        assert tuple(spearman(a, b)) == pytest.approx((rho.statistic, rho.pvalue))
        assert tuple(kendall(a, b)) == pytest.approx((tau.statistic, tau.pvalue))
        assert tuple(pearson(a, b)) == pytest.approx((r.statistic, r.pvalue))


@pytest.mark.parametrize("seed", range(6))
def test_replicate_coefficients_equal_scipy(seed: int) -> None:
    # The bootstrap's p-value-free path, one stack of rows at a time, must give scipy's statistic per
    # row, ties included, and NaN for the rows where none is defined.
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(40, 9))
    y = -0.4 * x + rng.normal(size=(40, 9))
    xi, yi = rng.integers(0, 3, size=(40, 11)).astype(float), rng.integers(0, 4, size=(40, 11)).astype(float)
    xi[3], yi[5] = 1.0, 2.0  # constant rows: undefined
    scipy_of = {"spearman": stats.spearmanr, "kendall": stats.kendalltau, "pearson": stats.pearsonr}
    for xs, ys in ((x, y), (xi, yi), (x[:, :3], y[:, :3])):
        for name, reference in scipy_of.items():
            got = coefficients(name, xs, ys)
            for a, b, value in zip(xs, ys, got, strict=True):
                if np.ptp(a) == 0 or np.ptp(b) == 0:
                    assert np.isnan(value)
                else:
                    assert value == pytest.approx(reference(a, b).statistic, abs=1e-12)
    assert np.isnan(coefficients("spearman", np.arange(4.0).reshape(2, 2), np.arange(4.0).reshape(2, 2))).all()


def test_kendall_is_tau_b_not_tau_a() -> None:
    x, y = [1, 1, 2, 3], [1, 2, 2, 3]
    # concordant 4 (of pairs 02,03,13,23), discordant 0, ties only-x 1 (01), only-y 1 (12)
    tau_b = 4 / math.sqrt((4 + 0 + 1) * (4 + 0 + 1))
    assert kendall(x, y).value == pytest.approx(tau_b)


def test_wrappers_undefined_cases() -> None:
    few = spearman([1.0, 2.0], [2.0, 1.0])
    assert (few.value, few.pvalue, few.n) == (None, None, 2)
    assert "fewer than 3" in few.note
    flat = pearson([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])
    assert flat.value is None and flat.note == "constant benchmark scores"
    assert kendall([1.0, 2.0, 3.0], [4.0, 4.0, 4.0]).note == "constant downstream scores"
    stat, p = spearman([1, 2, 3, 4, 5], [1, 3, 2, 4, 5])
    assert stat == pytest.approx(0.9) and p is not None
    small = spearman([1, 2, 3, 4], [1, 3, 2, 4])
    assert small.value == pytest.approx(0.8) and small.pvalue is None and small.note == "not testable (n=4)"
    with pytest.raises(DataError, match="item 1"):
        spearman([1.0, float("nan"), 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(DataError, match="3 items but downstream has 2"):
        pearson([1.0, 2.0, 3.0], [1.0, 2.0])


# ---------------------------------------------------------------------------------------------
# NDCG
# ---------------------------------------------------------------------------------------------


def brute_force_ndcg(bench: list[float], down: list[float], relevance: str, gain: str, k: int | None) -> float | None:
    """Direct definition: enumerate every order of each tied benchmark block and average the DCG."""
    m = len(bench)
    if relevance in ("rank", "prb"):
        # rank 1 = best, ties get their average rank: 1 + #strictly better + (#tied others) / 2; prb: M + 1 - rank
        top = m + (relevance == "prb")
        rel = [top - (1 + sum(o > d for o in down) + (sum(o == d for o in down) - 1) / 2) for d in down]
    elif relevance == "minmax":
        lo, hi = min(down), max(down)
        if hi == lo:
            return None
        rel = [(d - lo) / (hi - lo) for d in down]
    else:
        rel = list(down)
    g = [r if gain == "linear" else 2.0**r - 1.0 for r in rel]
    cutoff = m if k is None else min(k, m)

    def dcg(order: list[int]) -> float:
        return sum(g[item] / math.log2(pos + 2) for pos, item in enumerate(order[:cutoff]))

    ideal = dcg(sorted(range(m), key=lambda i: -g[i]))
    if ideal <= 0:
        return None
    blocks = [[i for i in range(m) if bench[i] == v] for v in sorted(set(bench), reverse=True)]
    totals, count = 0.0, 0
    for perms in itertools.product(*(itertools.permutations(b) for b in blocks)):
        totals += dcg([i for block in perms for i in block])
        count += 1
    return totals / count / ideal


@pytest.mark.parametrize(("relevance", "gain"), DEFAULT_NDCG_VARIANTS)
@pytest.mark.parametrize("seed", range(5))
def test_ndcg_equals_brute_force_with_ties(relevance: str, gain: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for m in (1, 2, 3, 5, 7):
        bench = list(rng.integers(0, 3, size=m).astype(float))  # tied benchmark blocks
        down = list(rng.integers(0, 4, size=m) / 2.0)  # tied downstream scores, non-negative
        for k in (None, 1, 2, m + 3):
            expected = brute_force_ndcg(bench, down, relevance, gain, k)
            got = ndcg(bench, down, relevance=relevance, gain=gain, k=k)
            if expected is None:
                assert got is None
            else:
                assert got == pytest.approx(expected, abs=1e-12), (bench, down, k)


def test_ndcg_hand_computed() -> None:
    assert ndcg([3, 2, 1], [30, 20, 10]) == pytest.approx(1.0)
    # reversed, rank relevance: gains in benchmark order 0, 1, 2; ideal 2, 1, 0
    worst3 = (0 + 1 / math.log2(3) + 2 / 2) / (2 + 1 / math.log2(3) + 0)
    assert ndcg([1, 2, 3], [30, 20, 10]) == pytest.approx(worst3)
    # PRB §8: with six RMs and rank relevance the worst possible NDCG is about 0.61
    assert ndcg(range(6), range(6, 0, -1)) == pytest.approx(0.6086, abs=1e-4)
    # all benchmark scores tied: every position gets the mean gain
    disc = [1 / math.log2(i + 2) for i in range(3)]
    assert ndcg([5, 5, 5], [1, 2, 3]) == pytest.approx(1.0 * sum(disc) / (2 * disc[0] + 1 * disc[1]))
    # exp2 averages the gains, not the relevances: block of rel {0, 2} -> mean gain (0 + 3) / 2
    exp2_tied = (1.5 * disc[0] + 1.5 * disc[1] + 1 * disc[2]) / (3 * disc[0] + 1 * disc[1])
    assert ndcg([5, 5, 1], [0, 2, 1], gain="exp2") == pytest.approx(exp2_tied)
    # K = 1 only looks at the top-ranked RM
    assert ndcg([3, 2, 1], [20, 30, 10], k=1) == pytest.approx(1 / 2)


def test_ndcg_degenerate_and_errors() -> None:
    assert ndcg([1, 2, 3], [4, 4, 4], relevance="minmax") is None
    assert ndcg([1, 2, 3], [4, 4, 4], relevance="rank") == pytest.approx(1.0)
    assert ndcg([1, 2, 3], [0, 0, 0], relevance="raw") is None
    with pytest.raises(ConfigError, match="relevance"):
        ndcg([1, 2], [1, 2], relevance="dense")
    with pytest.raises(ConfigError, match="gain"):
        ndcg([1, 2], [1, 2], gain="log")
    with pytest.raises(ConfigError):
        ndcg([1, 2], [1, 2], k=0)
    with pytest.raises(DataError, match="non-negative"):
        ndcg([1, 2], [-1, 2], relevance="raw")
    with pytest.raises(DataError):
        ndcg([], [])
    with pytest.raises(DataError, match="overflows"):
        ndcg([1, 2], [0, 2000], relevance="raw", gain="exp2")


def test_ndcg_raw_linear_matches_sklearn_when_available() -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(11)
    bench, down = rng.integers(0, 3, size=8).astype(float), rng.random(8)
    assert ndcg(bench, down, relevance="raw") == pytest.approx(metrics.ndcg_score([down], [bench]))


@pytest.mark.parametrize(("relevance", "gain", "k"), [("rank", "linear", None), ("minmax", "exp2", 3), ("raw", "linear", 2)])
def test_ndcg_values_of_a_stack_equal_ndcg_bit_for_bit(relevance: str, gain: str, k: int | None) -> None:
    # Bootstrap replicates go through ndcg_values; every row must be exactly what ndcg() says (CIs are
    # compared byte for byte between commits), NaN where ndcg() returns None or raises.
    rng = np.random.default_rng(4)
    bench = rng.integers(0, 4, size=(60, 7)).astype(float)  # tied benchmark scores in most rows
    down = rng.integers(-1, 5, size=(60, 7)).astype(float)  # ties, negatives (raw raises), all-equal rows
    down[7], down[8] = 2.0, 0.0
    got = ndcg_values(relevance, gain, k)(bench, down)
    for a, b, value in zip(bench, down, got, strict=True):
        try:
            expected = ndcg(a, b, relevance=relevance, gain=gain, k=k)
        except DataError:
            expected = None
        assert np.isnan(value) if expected is None else value == expected
    assert not np.isnan(got).all()
    assert np.isnan(got).any() == (relevance != "rank")  # rank relevance is defined for every row


# ---------------------------------------------------------------------------------------------
# correlate / bootstrap
# ---------------------------------------------------------------------------------------------


def test_correlate_point_estimates_and_names() -> None:
    bench = [0.2, 0.5, 0.4, 0.9, 0.7, 0.1]
    down = [1.0, 1.3, 1.1, 1.6, 1.2, 1.05]
    out = correlate(bench, down, n_boot=0)
    names = [c.name for c in out]
    assert names[:3] == ["spearman", "kendall", "pearson"]
    assert names[3:] == [f"ndcg[{r},{g}]" for r, g in DEFAULT_NDCG_VARIANTS]
    assert out[0].value == pytest.approx(stats.spearmanr(bench, down).statistic)
    assert out[3].value == pytest.approx(ndcg(bench, down))
    assert all(c.ci_low is None for c in out)
    custom = correlate(bench, down, methods=("ndcg",), ndcg_variants=[("rank", "exp2", 3)], n_boot=0)
    assert [c.name for c in custom] == ["ndcg[rank,exp2]@3"]
    assert custom[0].value == pytest.approx(ndcg(bench, down, gain="exp2", k=3))


def test_correlate_bootstrap_resamples_items() -> None:
    rng = np.random.default_rng(2)
    bench = rng.normal(size=10)
    down = bench + rng.normal(scale=0.5, size=10)
    (rho,) = correlate(bench, down, methods=("spearman",), n_boot=150, seed=9)
    # independent replica of the resampling loop
    gen = np.random.default_rng(9)
    reps = []
    for _ in range(150):
        idx = gen.integers(0, 10, size=10)
        xb, yb = bench[idx], down[idx]
        if np.ptp(xb) > 0 and np.ptp(yb) > 0:
            reps.append(stats.spearmanr(xb, yb).statistic)
    assert (rho.ci_low, rho.ci_high) == pytest.approx(tuple(np.quantile(reps, [0.025, 0.975])))
    assert rho.ci_low <= rho.value <= rho.ci_high
    again = correlate(bench, down, methods=("spearman",), n_boot=150, seed=9)[0]
    assert (again.ci_low, again.ci_high) == (rho.ci_low, rho.ci_high)


def test_correlate_reports_undefined_replicates_and_bad_input() -> None:
    (rho,) = correlate([1.0, 2.0, 3.0], [1.0, 3.0, 2.0], methods=("spearman",), n_boot=200, seed=0)
    assert rho.note is not None and "bootstrap replicates undefined" in rho.note
    raw = correlate([1.0, 2.0, 3.0], [-1.0, 0.0, 1.0], methods=("ndcg",), ndcg_variants=[("raw", "linear")], n_boot=0)
    assert raw[0].value is None and "non-negative" in raw[0].note
    with pytest.raises(ConfigError, match="unknown correlation method"):
        correlate([1, 2, 3], [1, 2, 3], methods=("rbo",))
    with pytest.raises(ConfigError):
        correlate([1, 2, 3], [1, 2, 3], ndcg_variants=[("dense", "linear")])
    with pytest.raises(ConfigError):
        correlate([1, 2, 3], [1, 2, 3], alpha=0.0)


def test_bootstrap_prompts_paired_resampling() -> None:
    rng = np.random.default_rng(4)
    n_rms, n_prompts = 6, 40
    bench = rng.normal(size=n_rms)
    matrix = bench[:, None] + rng.normal(size=(n_rms, n_prompts))
    out = bootstrap_prompts(
        bench, matrix, methods=("pearson", "ndcg"), ndcg_variants=[("rank", "linear")], n_boot=100, seed=1
    )
    assert [c.name for c in out] == ["pearson", "ndcg[rank,linear]"]
    means = matrix.mean(axis=1)
    assert out[0].value == pytest.approx(stats.pearsonr(bench, means).statistic)
    assert out[1].value == pytest.approx(ndcg(bench, means))
    gen = np.random.default_rng(1)
    reps = []
    for _ in range(100):
        idx = gen.integers(0, n_prompts, size=n_prompts)  # same prompts for every RM
        reps.append(stats.pearsonr(bench, matrix[:, idx].mean(axis=1)).statistic)
    assert (out[0].ci_low, out[0].ci_high) == pytest.approx(tuple(np.quantile(reps, [0.025, 0.975])))


def test_bootstrap_prompts_errors() -> None:
    with pytest.raises(DataError, match="3 RMs but downstream_per_prompt has 2 rows"):
        bootstrap_prompts([1, 2, 3], np.zeros((2, 4)))
    bad = np.zeros((3, 4))
    bad[2, 1] = np.nan
    with pytest.raises(DataError, match="RM 2, prompt 1"):
        bootstrap_prompts([1, 2, 3], bad)
    with pytest.raises(DataError, match="no prompts"):
        bootstrap_prompts([1, 2, 3], np.zeros((3, 0)))


def test_corr_unpacks_to_value_and_pvalue() -> None:
    c = Corr("x", 0.5, 0.01, 10)
    value, pvalue = c
    assert (value, pvalue) == (0.5, 0.01)


def test_gain_differences_equal_a_direct_paired_bootstrap() -> None:
    rng = np.random.default_rng(7)
    n_rms, n_prompts, n_boot = 4, 30, 200
    matrix = rng.normal(size=(n_rms, n_prompts)) * 0.2 + np.array([0.0, 0.01, 0.3, -0.3])[:, None]
    out = gain_differences(matrix, n_boot=n_boot, seed=3)
    idx = np.random.default_rng(3).integers(0, n_prompts, size=(n_boot, n_prompts))
    for i, j in itertools.product(range(n_rms), repeat=2):
        reps = [matrix[i, row].mean() - matrix[j, row].mean() for row in idx]  # same prompts for both RMs
        assert out.diff[i, j] == pytest.approx(matrix[i].mean() - matrix[j].mean())
        assert (out.ci_low[i, j], out.ci_high[i, j]) == pytest.approx(tuple(np.quantile(reps, [0.025, 0.975])))
    sep = out.separated()
    assert not sep.diagonal().any() and (sep == sep.T).all()
    assert sep[2, 3] and sep[0, 2] and sep[0, 3]  # 0.3 apart with noise 0.2 / sqrt(30): separated
    assert out.n_separated_pairs() == int(np.triu(sep, 1).sum())


def test_gain_differences_pairing_removes_shared_prompt_noise() -> None:
    rng = np.random.default_rng(0)
    shared = rng.normal(size=40)  # prompt difficulty, common to every RM
    matrix = np.stack([shared, shared + 0.05, shared + 0.05])
    out = gain_differences(matrix, n_boot=300)
    # Unpaired, the 0.05 gap is far inside each RM's own CI (sd 1 over 40 prompts); paired it is exact.
    assert out.ci_low[1, 0] == pytest.approx(0.05) and out.ci_high[1, 0] == pytest.approx(0.05)
    assert out.n_separated_pairs() == 2  # (1, 0) and (2, 0); 1 and 2 are identical
    assert not out.separated()[1, 2]


def test_friedman_test_flags_a_real_rm_effect_and_holds_its_level_without_one() -> None:
    rng = np.random.default_rng(1)
    matrix = rng.normal(size=(5, 60)) + rng.normal(size=60)  # prompt effects shared by the RMs
    matrix[4] += 0.6
    out = gain_differences(matrix, n_boot=50)
    direct = stats.friedmanchisquare(*matrix)
    assert (out.friedman_statistic, out.friedman_pvalue) == pytest.approx((direct.statistic, direct.pvalue))
    assert out.friedman_pvalue < 1e-3
    # No RM effect: at alpha = 0.05 about 5% of worlds reject (binomial sd over 200 worlds: 1.5%).
    pvalues = [gain_differences(rng.normal(size=(5, 60)) + rng.normal(size=60), n_boot=1).friedman_pvalue for _ in range(200)]
    assert 0.01 <= np.mean(np.array(pvalues) < 0.05) <= 0.10
    two = gain_differences(matrix[:2], n_boot=10)
    assert two.friedman_statistic is None and two.friedman_pvalue is None  # Friedman needs 3 RMs
    ties = gain_differences(np.zeros((3, 8)), n_boot=10)
    assert ties.friedman_pvalue is None  # every gain ties: no test


def test_gain_differences_errors() -> None:
    with pytest.raises(DataError, match="RMs >= 2"):
        gain_differences(np.zeros((1, 5)))
    bad = np.zeros((2, 3))
    bad[1, 2] = np.inf
    with pytest.raises(DataError, match="RM 1, prompt 2"):
        gain_differences(bad)
    with pytest.raises(ConfigError, match="n_boot >= 1"):
        gain_differences(np.zeros((2, 3)), n_boot=0)


# ---------------------------------------------------------------------------------------------
# small-n p-values and NDCG's chance level
# ---------------------------------------------------------------------------------------------


def test_exact_spearman_p_at_small_n() -> None:
    # The audit's values: scipy's t-approximation gives 0.0, 0.0 and 0.0048 here.
    assert spearman_exact_p([1, 2, 3], [1, 2, 3]) == pytest.approx(1 / 3)
    assert spearman_exact_p([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(1 / 12)
    six = spearman([1, 2, 3, 4, 5, 6], [1, 2, 4, 3, 5, 6])
    assert six.value == pytest.approx(0.943, abs=5e-4) and six.pvalue == pytest.approx(1 / 60)
    assert stats.spearmanr([1, 2, 3, 4, 5, 6], [1, 2, 4, 3, 5, 6]).pvalue == pytest.approx(0.0048, abs=1e-4)
    for n in (3, 4):  # below 5 RMs no p-value is reported at all
        assert spearman(list(range(n)), list(range(n))).pvalue is None


@pytest.mark.parametrize("seed", range(3))
def test_exact_spearman_p_equals_scipy_permutation_test(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for n in (5, 7):
        x, y = rng.integers(0, 4, size=n).astype(float), rng.normal(size=n)  # ties in x
        if np.ptp(x) == 0:
            continue
        exact = stats.permutation_test((x,), lambda a, _y=y: stats.spearmanr(a, _y).statistic,
                                       permutation_type="pairings", n_resamples=np.inf).pvalue
        assert spearman_exact_p(x, y) == pytest.approx(exact, abs=1e-12)
        assert spearman(x, y).pvalue == pytest.approx(exact, abs=1e-12)
    # above the exact range: scipy's approximation again
    x, y = rng.normal(size=12), rng.normal(size=12)
    assert spearman(x, y).pvalue == pytest.approx(stats.spearmanr(x, y).pvalue)


def test_ndcg_null_mean_by_enumeration_and_closed_form() -> None:
    down = np.arange(6.0)  # rank relevance is rank-linear: M - rank
    null = ndcg_null(down)
    assert null is not None and null.exact
    # Second method: NDCG of every benchmark order, computed by the public ndcg().
    by_hand = [ndcg(np.asarray(order, dtype=float), down) for order in itertools.permutations(range(6))]
    assert null.mean == pytest.approx(np.mean(by_hand), abs=1e-12)
    assert null.mean == pytest.approx(0.80, abs=0.01)
    assert null.quantile(0.95) == pytest.approx(0.96, abs=0.01)
    observed = ndcg([6, 5, 4, 3, 1, 2], down)  # two worst swapped
    assert null.pvalue(observed) == pytest.approx(np.mean(np.asarray(by_hand) >= observed - 1e-12))
    assert null.normalise(1.0) == pytest.approx(1.0) and null.normalise(null.mean) == pytest.approx(0.0)
    # Past the enumeration limit: random orders, whose mean agrees with the closed form.
    big = ndcg_null(np.arange(12.0))
    assert big is not None and not big.exact and big.mean == pytest.approx(np.mean(big.draws), abs=0.003)
    assert ndcg_null(np.zeros(5), relevance="minmax") is None  # NDCG undefined: no null


def test_correlate_reports_ndcg_null() -> None:
    x, y = [1, 2, 3, 4, 5, 6], [1, 2, 4, 3, 5, 6]
    rows = {c.name: c for c in correlate(x, y, n_boot=0, ndcg_variants=[("rank", "linear")])}
    nd = rows["ndcg[rank,linear]"]
    null = ndcg_null(y)
    assert nd.null_mean == pytest.approx(null.mean) and nd.null_p == pytest.approx(null.pvalue(nd.value))
    assert nd.normalised == pytest.approx((nd.value - null.mean) / (1 - null.mean))
    assert rows["spearman"].null_mean is None


# Personalized RewardBench's published NDCGs (Best-of-N, PPO, Chatbot Arena-/PRISM-Personalized) with the
# downstream rank of each of its 6 RMs in benchmark order, and the Spearman values it prints for the first two.
PRB_PUBLISHED = [((1, 5, 3, 4, 6, 2), 0.9180, 0.2571), ((1, 4, 3, 5, 6, 2), 0.9265, 0.3714),
                 ((6, 2, 1, 3, 4, 5), 0.6586, None), ((6, 1, 2, 3, 5, 4), 0.7016, None)]


@pytest.mark.parametrize(("ranks", "published", "rho"), PRB_PUBLISHED)
def test_prb_variant_reproduces_the_papers_four_ndcgs(ranks: tuple[int, ...], published: float, rho: float | None) -> None:
    from rlexp.analysis.ndcg import PRB_VARIANT

    bench = np.arange(6, 0, -1, dtype=float)  # the benchmark's order: RM 0 first
    down = np.exp(-np.asarray(ranks, dtype=float))  # downstream rank 1 = the highest score
    rel, gain, k = PRB_VARIANT
    assert round(ndcg(bench, down, relevance=rel, gain=gain, k=k), 4) == published
    if rho is not None:
        assert round(spearman(bench, down).value, 4) == rho
    # The same value by hand: relevance M + 1 - rank, gain 2^rel - 1, discount log2(position + 1).
    gains = 2.0 ** (7 - np.asarray(ranks)) - 1
    discounts = 1 / np.log2(np.arange(2, 8))
    assert ndcg(bench, down, relevance=rel, gain=gain) == pytest.approx(gains @ discounts / (np.sort(gains)[::-1] @ discounts))
    # None of the other variants gives the paper's value.
    others = {(r, g) for r in ("rank", "minmax", "raw") for g in ("linear", "exp2")}
    assert all(round(ndcg(bench, down, relevance=r, gain=g), 4) != published for r, g in others)


def test_prb_variant_chance_level_at_six_rms() -> None:
    null = ndcg_null(np.arange(6.0), relevance="prb", gain="exp2")
    assert null is not None and null.exact and null.mean == pytest.approx(0.70, abs=0.01)
    # Bootstrap replicates rank each row as the single-row function does.
    from rlexp.analysis.ndcg import ndcg_values

    rng = np.random.default_rng(0)
    xs, ys = rng.normal(size=(5, 6)), rng.normal(size=(5, 6))
    values = ndcg_values("prb", "exp2", None)(xs, ys)
    assert values == pytest.approx([ndcg(x, y, relevance="prb", gain="exp2") for x, y in zip(xs, ys, strict=True)])
