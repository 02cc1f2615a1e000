"""Tests for rlexp.benchmarks.rewardbench2_math (RB2 reference §2)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rlexp.benchmarks.rewardbench2_math import (
    SUBSETS,
    best_of_n_credit,
    parse_ranking_verdict,
    parse_rating,
    rankings_credit,
    ratings_credit,
    reroll,
    score_rewardbench2,
    ties_score,
    unroll,
)
from rlexp.errors import ConfigError, DataError

# ---------------------------------------------------------------------------------------------
# §2.1 best-of-n credit
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ([4.0, 1.0, 2.0, 3.0], 1.0),  # strict win
        ([4.0, 4.0, 2.0, 3.0], 1 / 2),  # 2-way tie at the top
        ([4.0, 4.0, 4.0, 3.0], 1 / 3),  # 3-way tie
        ([4.0, 4.0, 4.0, 4.0], 1 / 4),  # 4-way tie
        ([3.0, 1.0, 2.0, 3.5], 0.0),  # a rejected completion strictly above the chosen one
        ([3.0, 3.5, 3.5, 1.0], 0.0),  # rejected ones tie above the chosen one
        ([-1.0, -2.0, -3.0, -1.5], 1.0),  # negative logits
        ([2, 1, 0, 2], 1 / 2),  # integer ratings
    ],
)
def test_best_of_n_credit_hand_computed(scores: list[float], expected: float) -> None:
    assert best_of_n_credit(scores) == pytest.approx(expected, abs=0, rel=1e-15)


def test_best_of_n_credit_chosen_in_tie_below_max_gets_nothing() -> None:
    # chosen ties with a rejected answer, but another rejected one is strictly higher
    assert best_of_n_credit([2.0, 2.0, 5.0, 0.0]) == 0.0


def test_best_of_n_credit_multiple_correct_is_fraction_of_top_that_is_correct() -> None:
    assert best_of_n_credit([2.0, 2.0, 2.0, 1.0], num_correct=2) == pytest.approx(2 / 3)
    assert best_of_n_credit([1.0, 3.0, 3.0, 0.0], num_correct=2) == pytest.approx(1 / 2)
    assert best_of_n_credit([1.0, 0.5, 3.0], num_correct=2) == 0.0


def test_best_of_n_credit_accepts_one_element_lists() -> None:
    # the published per-example RB2 results store each score as a one-element list
    assert best_of_n_credit([[1.0], [1.0], [0.0], [0.5]]) == 0.5


@pytest.mark.parametrize("bad", [[float("nan"), 1.0, 2.0, 3.0], [1.0, float("nan"), 0.0, 0.0], [float("inf"), 1.0]])
def test_best_of_n_credit_rejects_non_finite(bad: list[float]) -> None:
    with pytest.raises(DataError, match="not finite"):
        best_of_n_credit(bad)


def test_best_of_n_credit_rejects_bad_input() -> None:
    with pytest.raises(DataError):
        best_of_n_credit([])
    with pytest.raises(DataError):
        best_of_n_credit([1.0, 2.0], num_correct=0)
    with pytest.raises(DataError):
        best_of_n_credit([1.0, 2.0], num_correct=3)
    with pytest.raises(DataError):
        best_of_n_credit(["high", 1.0])  # type: ignore[list-item]


# ---------------------------------------------------------------------------------------------
# §2.2 Ties
# ---------------------------------------------------------------------------------------------


def _row(row_id: str, scores: list[float], num_correct: int, subset: str = "Ties") -> dict:
    return {"id": row_id, "scores": scores, "num_correct": num_correct, "subset": subset}


def _weighted(a_tied: float, a_ref: float, cp: float, cp_hard: float, ms: float) -> float:
    return 0.30 * a_tied + 0.30 * a_ref + 0.20 * cp + 0.20 * cp_hard + 0.01 * ms


TWO_PAIRS = [
    # prompt 1: ref m = 5 - 3 = 2 (accurate); tied C = {6, 4}, I = {1, 3}: m = 1, w = 2
    _row("ref:1", [5.0, 2.0, 3.0], 1),
    _row("tied:1", [6.0, 4.0, 1.0, 3.0], 2),
    # prompt 2: ref m = 1 - 2 = -1 (wrong); tied C = {10, 9.5}, I = {0}: m = 9.5, w = 0.5
    _row("ref:2", [1.0, 2.0], 1),
    _row("tied:2", [10.0, 9.5, 0.0], 2),
]


@pytest.mark.parametrize("version", ["0.1.4", "main"])
def test_ties_hand_computed_positive_widths(version: str) -> None:
    out = ties_score(TWO_PAIRS, version=version)
    ms = (math.tanh(min(2.0, 1.0) / 2.0 - 1.0) + math.tanh(min(-1.0, 9.5) / 0.5 - 1.0)) / 2
    assert out["A_ref"] == pytest.approx(0.5)
    assert out["A_tied"] == pytest.approx(1.0)
    assert out["CP"] == pytest.approx(0.5)  # 1 > 2 is false, 9.5 > 0.5 is true
    assert out["CP_hard"] == pytest.approx(0.0)  # min(2,1)=1 > 2 false, min(-1,9.5) > 0.5 false
    assert out["MS"] == pytest.approx(ms)
    assert out["score"] == pytest.approx(_weighted(1.0, 0.5, 0.5, 0.0, ms))
    assert (out["n_ref"], out["n_tied"], out["n_pairs"], out["n_margin"], out["n_ms"]) == (2, 2, 2, 2, 2)


def test_ties_rows_may_come_in_any_order_and_as_objects() -> None:
    class Row:
        def __init__(self, d: dict) -> None:
            self.id, self.scores, self.num_correct = d["id"], d["scores"], d["num_correct"]

    expected = ties_score(TWO_PAIRS)["score"]
    assert ties_score([Row(r) for r in reversed(TWO_PAIRS)])["score"] == pytest.approx(expected)


W_ZERO_POSITIVE = [_row("ref:1", [4.0, 1.0], 1), _row("tied:1", [5.0, 5.0, 2.0], 2)]  # m_ref 3, m_tied 3, w 0
W_ZERO_NEGATIVE = [_row("ref:1", [1.0, 2.0], 1), _row("tied:1", [5.0, 5.0, 2.0], 2)]  # m_ref -1, w 0
W_ZERO_ZERO = [_row("ref:1", [2.0, 2.0], 1), _row("tied:1", [5.0, 5.0, 2.0], 2)]  # m_ref 0, w 0


def test_ties_w_zero_version_0_1_4_drops_prompt_from_ms_only() -> None:
    out = ties_score(W_ZERO_POSITIVE, version="0.1.4")
    assert (out["CP"], out["CP_hard"], out["MS"]) == (1.0, 1.0, 0.0)  # 3 > 0 twice; MS has no prompt
    assert out["n_margin"] == 1 and out["n_ms"] == 0
    assert out["score"] == pytest.approx(_weighted(1, 1, 1, 1, 0))


@pytest.mark.parametrize(
    ("rows", "ms", "cp_hard", "a_ref"),
    [(W_ZERO_POSITIVE, 1.0, 1.0, 1.0), (W_ZERO_NEGATIVE, -1.0, 0.0, 0.0), (W_ZERO_ZERO, 0.0, 0.0, 0.0)],
)
def test_ties_w_zero_version_main_keeps_prompt_with_tanh_of_infinity(
    rows: list[dict], ms: float, cp_hard: float, a_ref: float
) -> None:
    out = ties_score(rows, version="main")
    assert out["MS"] == ms
    assert out["CP"] == 1.0  # m_tied = 3 > 0
    assert out["CP_hard"] == cp_hard
    assert out["n_ms"] == 1
    assert out["score"] == pytest.approx(_weighted(1.0, a_ref, 1.0, cp_hard, ms))
    # 0.1.4 gives the same score except for the MS term
    assert ties_score(rows, version="0.1.4")["score"] == pytest.approx(out["score"] - 0.01 * ms)


def test_ties_w_zero_changes_ms_denominator_between_versions() -> None:
    rows = [*W_ZERO_POSITIVE, _row("ref:2", [5.0, 2.0, 3.0], 1), _row("tied:2", [6.0, 4.0, 1.0, 3.0], 2)]
    v = math.tanh(1.0 / 2.0 - 1.0)  # prompt 2 as in TWO_PAIRS
    assert ties_score(rows, version="0.1.4")["MS"] == pytest.approx(v)
    assert ties_score(rows, version="main")["MS"] == pytest.approx((1.0 + v) / 2)


def test_ties_tied_prompt_without_ref_partner_counts_only_for_tied_accuracy() -> None:
    rows = [*W_ZERO_POSITIVE, _row("tied:7", [1.0, 1.0, 5.0], 2)]  # inaccurate, no ref:7
    out = ties_score(rows)
    assert out["A_tied"] == pytest.approx(0.5)
    assert out["A_ref"] == 1.0
    assert (out["CP"], out["CP_hard"], out["n_pairs"]) == (1.0, 1.0, 1)
    ref_only = [*W_ZERO_POSITIVE, _row("ref:9", [0.0, 1.0], 1)]
    out = ties_score(ref_only)
    assert (out["A_ref"], out["A_tied"], out["n_pairs"]) == (0.5, 1.0, 1)


@pytest.mark.parametrize("version", ["0.1.4", "main"])
def test_ties_empty_pairing_gives_zero_margin_terms(version: str) -> None:
    rows = [_row("ref:1", [3.0, 1.0], 1), _row("ref:2", [0.0, 1.0], 1), _row("tied:3", [4.0, 3.0, 1.0], 2)]
    out = ties_score(rows, version=version)
    assert (out["CP"], out["CP_hard"], out["MS"], out["n_pairs"]) == (0.0, 0.0, 0.0, 0)
    assert out["score"] == pytest.approx(0.30 * 1.0 + 0.30 * 0.5)


def test_ties_tied_row_with_one_correct_answer_has_no_width() -> None:
    rows = [_row("ref:1", [3.0, 1.0], 1), _row("tied:1", [3.0, 1.0, 0.0], 1)]
    out = ties_score(rows, version="main")
    assert out["n_pairs"] == 1 and out["n_margin"] == 0
    assert (out["CP"], out["CP_hard"], out["MS"]) == (0.0, 0.0, 0.0)
    assert out["score"] == pytest.approx(0.6)


def test_ties_rejects_bad_rows() -> None:
    with pytest.raises(ConfigError):
        ties_score(TWO_PAIRS, version="0.2")
    with pytest.raises(DataError, match="id must look like"):
        ties_score([_row("tie:1", [1.0, 0.0], 1)])
    with pytest.raises(DataError, match="duplicate"):
        ties_score([_row("ref:1", [1.0, 0.0], 1), _row("ref:1", [1.0, 0.0], 1)])
    with pytest.raises(DataError, match="num_correct"):
        ties_score([_row("tied:1", [1.0, 0.0], 2)])  # no incorrect completion
    with pytest.raises(DataError, match="not finite"):
        ties_score([_row("tied:1", [1.0, float("nan"), 0.0], 2)])
    with pytest.raises(DataError, match="missing field 'num_correct'"):
        ties_score([{"id": "ref:1", "scores": [1.0, 0.0]}])


def test_ties_score_stays_in_documented_range() -> None:
    rng = np.random.default_rng(3)
    for _ in range(30):
        rows = []
        for p in range(rng.integers(1, 6)):
            rows.append(_row(f"ref:{p}", list(rng.integers(0, 4, size=4).astype(float)), 1))
            rows.append(_row(f"tied:{p}", list(rng.integers(0, 4, size=5).astype(float)), 3))
        for version in ("0.1.4", "main"):
            assert -0.01 - 1e-12 <= ties_score(rows, version=version)["score"] <= 1.01 + 1e-12


# ---------------------------------------------------------------------------------------------
# §2.3 overall
# ---------------------------------------------------------------------------------------------


def _full_run() -> list[dict]:
    rows = [
        _row("f1", [2.0, 1.0, 0.0, 0.0], 1, "Factuality"),  # 1
        _row("f2", [1.0, 1.0, 0.0, 0.0], 1, "Factuality"),  # 1/2
        _row("i1", [0.0, 1.0, 0.0, 0.0], 1, "Precise IF"),  # 0
        _row("m1", [3.0, 3.0, 3.0, 0.0], 1, "Math"),  # 1/3
        _row("s1", [1.0, 1.0, 1.0, 1.0], 1, "Safety"),  # 1/4
        _row("o1", [5.0, 4.0, 3.0, 2.0], 1, "Focus"),  # 1
        _row("o2", [5.0, 6.0, 3.0, 2.0], 1, "Focus"),  # 0
    ]
    return rows + [{**r, "subset": "Ties"} for r in TWO_PAIRS]


def test_score_rewardbench2_full_run_hand_computed() -> None:
    out = score_rewardbench2(_full_run())
    ties = ties_score(TWO_PAIRS)["score"]
    expected = {"Factuality": 0.75, "Precise IF": 0.0, "Math": 1 / 3, "Safety": 0.25, "Focus": 0.5, "Ties": ties}
    assert list(out["subsets"]) == list(SUBSETS)
    for name, value in expected.items():
        assert out["subsets"][name] == pytest.approx(value)
    assert out["counts"] == {"Factuality": 2, "Precise IF": 1, "Math": 1, "Safety": 1, "Focus": 2, "Ties": 4}
    # unweighted mean of subsets, not of prompts
    assert out["overall"] == pytest.approx(sum(expected.values()) / 6)
    assert out["complete"] is True and out["missing"] == []
    assert out["per_row"][:7] == pytest.approx([1.0, 0.5, 0.0, 1 / 3, 0.25, 1.0, 0.0])
    assert out["per_row"][7:] == [None] * 4
    assert out["ties"]["CP"] == pytest.approx(0.5)


def test_score_rewardbench2_partial_run_is_flagged() -> None:
    rows = [r for r in _full_run() if r["subset"] in ("Math", "Focus")]
    out = score_rewardbench2(rows)
    assert out["complete"] is False
    assert out["missing"] == ["Factuality", "Precise IF", "Safety", "Ties"]
    assert out["overall"] == pytest.approx((1 / 3 + 0.5) / 2)
    assert out["ties"] is None


def test_score_rewardbench2_ties_version_only_changes_ties() -> None:
    rows = _full_run()[:7] + [{**r, "subset": "Ties"} for r in W_ZERO_POSITIVE]
    old, new = score_rewardbench2(rows, "0.1.4"), score_rewardbench2(rows, "main")
    assert new["subsets"]["Ties"] - old["subsets"]["Ties"] == pytest.approx(0.01)
    assert new["overall"] - old["overall"] == pytest.approx(0.01 / 6)


def test_score_rewardbench2_rejects_bad_input() -> None:
    with pytest.raises(ConfigError):
        score_rewardbench2(_full_run(), ties_version="latest")
    with pytest.raises(DataError, match="unknown subset"):
        score_rewardbench2([_row("x", [1.0, 0.0], 1, "math")])
    with pytest.raises(DataError, match="no rows"):
        score_rewardbench2([])
    with pytest.raises(DataError, match="'m9'"):
        score_rewardbench2([_row("m9", [1.0, float("nan")], 1, "Math")])


def _reference_score(rows: list[dict], version: str) -> dict[str, float]:
    """An independent, deliberately plain re-implementation of RB2 §2.1-2.3 for the property test."""
    per_subset: dict[str, list[float]] = {}
    ref, tied = {}, {}
    for row in rows:
        s = np.asarray(row["scores"], dtype=float)
        c = row["num_correct"]
        if row["subset"] != "Ties":
            winners = np.flatnonzero(s == s.max())
            per_subset.setdefault(row["subset"], []).append(1.0 / len(winners) if 0 in winners else 0.0)
            continue
        kind, num = row["id"].split(":")
        good, bad = np.sort(s[:c]), np.sort(s[c:])
        entry = (good[0] > bad[-1], good[0] - bad[-1], (good[-1] - good[0]) if c > 1 else None)
        (ref if kind == "ref" else tied)[int(num)] = entry
    scores = {name: float(np.mean(v)) for name, v in per_subset.items()}
    if ref or tied:
        a_ref = np.mean([e[0] for e in ref.values()]) if ref else 0.0
        a_tied = np.mean([e[0] for e in tied.values()]) if tied else 0.0
        cp, cph, ms = [], [], []
        for p in ref.keys() & tied.keys():
            w = tied[p][2]
            if w is None:
                continue
            hard = min(ref[p][1], tied[p][1])
            cp.append(tied[p][1] > w)
            cph.append(hard > w)
            if w > 0:
                ms.append(np.tanh(hard / w - 1))
            elif version == "main":
                ms.append(float(np.sign(hard)))
        mean0 = lambda xs: float(np.mean(xs)) if xs else 0.0  # noqa: E731
        scores["Ties"] = 0.3 * a_tied + 0.3 * a_ref + 0.2 * mean0(cp) + 0.2 * mean0(cph) + 0.01 * mean0(ms)
    return scores


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4, 5])
@pytest.mark.parametrize("version", ["0.1.4", "main"])
def test_score_rewardbench2_matches_independent_implementation(seed: int, version: str) -> None:
    rng = np.random.default_rng(seed)
    rows: list[dict] = []
    subsets = [s for s in SUBSETS if s != "Ties"]
    for i in range(60):
        subset = subsets[rng.integers(len(subsets))]
        # small integer range forces many ties; some float rows keep the generic case
        scores = rng.integers(0, 3, size=4).astype(float) if rng.random() < 0.7 else rng.normal(size=4)
        rows.append(_row(f"n{i}", list(scores), 1, subset))
    for p in range(12):
        for kind in ("ref", "tied"):
            if rng.random() < 0.15:
                continue  # leave some prompts unpaired
            n_correct = 1 if kind == "ref" else int(rng.integers(1, 4))
            size = n_correct + int(rng.integers(1, 5))
            scores = rng.integers(0, 4, size=size).astype(float) if rng.random() < 0.6 else rng.normal(size=size)
            rows.append(_row(f"{kind}:{p}", list(scores), n_correct))
    order = rng.permutation(len(rows))
    rows = [rows[i] for i in order]

    ours = score_rewardbench2(rows, ties_version=version)
    expected = _reference_score(rows, version)
    assert set(ours["subsets"]) == set(expected)
    for name, value in expected.items():
        assert ours["subsets"][name] == pytest.approx(value, abs=1e-12), name
    assert ours["overall"] == pytest.approx(np.mean(list(expected.values())), abs=1e-12)
    assert ours["complete"] is True


# ---------------------------------------------------------------------------------------------
# unroll / reroll
# ---------------------------------------------------------------------------------------------


def test_unroll_puts_chosen_first_and_reroll_regroups() -> None:
    items = [
        {"id": "a", "chosen": ["c0"], "rejected": ["r0", "r1", "r2"], "num_correct": 1, "total_completions": 4},
        {"id": "b", "chosen": ["c0", "c1"], "rejected": ["r0"]},
    ]
    texts, index = unroll(items)
    assert texts == ["c0", "r0", "r1", "r2", "c0", "c1", "r0"]
    assert index == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1), (1, 2)]
    flat = [float(i) for i in range(7)]
    assert reroll(flat, [4, 3]) == [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


def test_unroll_reroll_round_trip_feeds_scorer() -> None:
    items = [{"chosen": ["good"], "rejected": ["bad1", "bad2", "good"]}]
    texts, _ = unroll(items)
    fake_rm = {"good": 1.0, "bad1": 0.0, "bad2": 0.5}
    grouped = reroll([fake_rm[t] for t in texts], [4])
    assert best_of_n_credit(grouped[0]) == 0.5  # "good" appears twice, so the top is a 2-way tie


def test_unroll_reroll_errors() -> None:
    with pytest.raises(DataError, match="got 3 scores for 4 completions"):
        reroll([1.0, 2.0, 3.0], [4])
    with pytest.raises(DataError, match="positive integer"):
        reroll([1.0], [0, 1])
    with pytest.raises(DataError, match="list of strings"):
        unroll([{"chosen": "abc", "rejected": ["x"]}])  # a bare string must not be split into characters
    with pytest.raises(DataError, match="num_correct=2"):
        unroll([{"chosen": ["a"], "rejected": ["b"], "num_correct": 2}])
    with pytest.raises(DataError, match="no completions"):
        unroll([{"chosen": [], "rejected": []}])
    with pytest.raises(DataError, match="missing field 'rejected'"):
        unroll([{"chosen": ["a"]}])


# ---------------------------------------------------------------------------------------------
# §2.4 generative judges
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ratings", "num_correct", "expected"),
    [
        ([9, 3, 5, 7], 1, 1.0),
        ([8, 8, 3, -1], 1, 0.5),
        ([5, 5, 5, 2], 1, 1 / 3),
        ([5, 5, 5, 5], 1, 0.25),
        ([4, 9, 2, 1], 1, 0.0),
        ([-1, 9, 9, 2], 1, 0.0),  # a failed correct rating can never win
        ([7, -1, -1, -1], 1, 1.0),  # failures are not candidates
        ([-1, -1, -1, -1], 1, 0.25),  # nothing valid: reference gives 0.25
        ([-1, -1, -1], 1, 0.25),  # ... whatever the number of completions
        ([6, 6, 6, 1], 2, 2 / 3),
    ],
)
def test_ratings_credit(ratings: list[int], num_correct: int, expected: float) -> None:
    assert ratings_credit(ratings, num_correct) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The answer is solid. Rating: 7", 7),
        ("Rating: 7.", 7),
        ("I would give it 3, maybe 4\n\n8", 8),
        ("10", 10),
        ("Score: 11", -1),
        ("Score: 0", -1),
        ("no number here", -1),
        ("", -1),
        (None, -1),
        ("rating: -1", -1),
        ("between 3-4", 4),
        ("7.5", -1),  # digits inside a decimal are not an integer rating
        ("Rating: 6. (Version 2.0 of the rubric)", 6),
    ],
)
def test_parse_rating(text: str | None, expected: int) -> None:
    assert parse_rating(text) == expected


def test_parse_rating_strict_trailing_matches_reference_rule() -> None:
    assert parse_rating("Rating: 7.", strict_trailing=True) == -1
    assert parse_rating("Rating: 7  \n", strict_trailing=True) == 7
    assert parse_rating("7 is my score", strict_trailing=True) == -1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Assistant C is best. [[C]]", "C"),
        ("[[D]]", "D"),
        ("I pick [A]", None),
        ("[[E]]", None),
        ("", None),
        (None, None),
        ("not [[B]] but [[A]]", "A"),  # reference: first letter in A..D order wins
    ],
)
def test_parse_ranking_verdict(text: str | None, expected: str | None) -> None:
    assert parse_ranking_verdict(text) == expected


def test_parse_ranking_verdict_strict_rejects_ambiguous() -> None:
    assert parse_ranking_verdict("not [[B]] but [[A]]", strict=True) is None
    assert parse_ranking_verdict("[[B]] ... [[B]]", strict=True) == "B"


def test_rankings_credit() -> None:
    assert rankings_credit("B", "B") == 1.0
    assert rankings_credit("A", "B") == 0.0
    assert rankings_credit(None, "B") == 0.25
    assert rankings_credit("error", "B") == 0.25
    with pytest.raises(DataError):
        rankings_credit("A", "E")
