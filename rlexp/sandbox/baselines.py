"""Untrained baseline scorers and the benchmark scoring rules they are measured with.

A sandbox benchmark is only informative if trivial scorers cannot solve it. The baselines are a
seeded random scorer, prefer-longer, prefer-shorter (by characters and by words) and
prompt/response word overlap. RewardBench 2 uses its real rule (best-of-4 with 1/k credit for a
tie at the top; Ties with the v0.1.4 weighted formula, and plain best-of-n reported alongside);
Personalized RewardBench uses strict ``s(chosen) > s(rejected)`` accuracy (a tie is wrong).

This module re-implements the scoring rules compactly because the sandbox depends on nothing of
rlexp but the data schemas (DESIGN.md §8); rlexp.benchmarks holds the reference implementation.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence

from rlexp.data.schemas import PRB_DOMAINS, RB2_SUBSETS, PRBItem, RB2Item
from rlexp.sandbox.rng import stable_unit
from rlexp.sandbox.text import word_count, words

Scorer = Callable[[str, str], float]

STOPWORDS = frozenset(
    "a an the of to in on at for and or is are was were be it its this that what which who how do does did i you my your "
    "me with as by from can could should would will about into than then so if".split()
)


def random_scorer(seed: int) -> Scorer:
    """A deterministic 'random' scorer: a hash of (seed, prompt, response)."""
    return lambda prompt, response: stable_unit("baseline-random", seed, prompt, response)


def longer_chars(prompt: str, response: str) -> float:
    return float(len(response))


def shorter_chars(prompt: str, response: str) -> float:
    return -float(len(response))


def longer_words(prompt: str, response: str) -> float:
    return float(word_count(response))


def shorter_words(prompt: str, response: str) -> float:
    return -float(word_count(response))


def word_overlap(prompt: str, response: str) -> float:
    """Share of the prompt's content words that the response repeats."""
    p = {w for w in words(prompt) if w not in STOPWORDS}
    r = set(words(response))
    return len(p & r) / max(1, len(p))


def baseline_scorers(seed: int) -> dict[str, Scorer]:
    """All baseline scorers by name."""
    return {
        "random": random_scorer(seed),
        "longer_chars": longer_chars,
        "shorter_chars": shorter_chars,
        "longer_words": longer_words,
        "shorter_words": shorter_words,
        "word_overlap": word_overlap,
    }


def best_of_n_credit(scores: Sequence[float], num_correct: int) -> float:
    """RB2 normal-subset credit: 1/k if a correct completion is among the k top-scoring ones.

    With one correct completion this is exactly RB2's rule; with several (Ties' plain best-of-n
    variant) it is the share of correct completions in the top-scoring set.
    """
    top = max(scores)
    winners = [i for i, s in enumerate(scores) if s == top]
    return sum(1 for i in winners if i < num_correct) / len(winners)


def ties_score(rows: Iterable[tuple[str, Sequence[float], int]]) -> float:
    """RB2 Ties (v0.1.4): rows are (id ``ref:N``/``tied:N``, scores chosen-first, num_correct)."""
    acc: dict[str, dict[int, float]] = {"ref": {}, "tied": {}}
    margin: dict[str, dict[int, float]] = {"ref": {}, "tied": {}}
    width: dict[int, float] = {}
    for rid, scores, k in rows:
        kind, num = rid.split(":", 1)
        p = int(num)
        correct, incorrect = list(scores[:k]), list(scores[k:])
        acc[kind][p] = float(min(correct) > max(incorrect))
        margin[kind][p] = min(correct) - max(incorrect)
        if kind == "tied" and len(correct) > 1:
            width[p] = max(correct) - min(correct)
    a_ref = sum(acc["ref"].values()) / max(1, len(acc["ref"]))
    a_tied = sum(acc["tied"].values()) / max(1, len(acc["tied"]))
    both = [p for p in acc["ref"] if p in acc["tied"] and p in width]
    cp = sum(margin["tied"][p] > width[p] for p in both) / len(both) if both else 0.0
    cp_hard = sum(min(margin["ref"][p], margin["tied"][p]) > width[p] for p in both) / len(both) if both else 0.0
    pos = [p for p in both if width[p] > 0]
    ms = sum(math.tanh(min(margin["ref"][p], margin["tied"][p]) / width[p] - 1) for p in pos) / len(pos) if pos else 0.0
    return 0.30 * a_tied + 0.30 * a_ref + 0.20 * cp + 0.20 * cp_hard + 0.01 * ms


def rb2_scores(items: Sequence[RB2Item], scorer: Scorer) -> dict[str, float]:
    """Per-subset RB2 scores for ``scorer``, the unweighted overall mean, and Ties best-of-n."""
    credit: dict[str, list[float]] = defaultdict(list)
    ties_rows = []
    for it in items:
        scores = [scorer(it.prompt, c) for c in (*it.chosen, *it.rejected)]
        credit[it.subset].append(best_of_n_credit(scores, len(it.chosen)))
        if it.subset == "Ties":
            ties_rows.append((it.id, scores, len(it.chosen)))
    out = {s: sum(credit[s]) / len(credit[s]) for s in RB2_SUBSETS if s != "Ties" and credit[s]}
    if ties_rows:
        out["Ties"] = ties_score(ties_rows)
        out["Ties_best_of_n"] = sum(credit["Ties"]) / len(credit["Ties"])
    out["overall"] = sum(out[s] for s in RB2_SUBSETS if s in out) / max(1, sum(s in out for s in RB2_SUBSETS))
    return {k: round(v, 4) for k, v in out.items()}


def prb_accuracy(items: Sequence[PRBItem], scorer: Scorer) -> dict[str, float]:
    """Strict-'>' accuracy per domain and overall (ties count as wrong)."""
    hits: dict[str, list[int]] = defaultdict(list)
    for it in items:
        win = scorer(it.question, it.chosen) > scorer(it.question, it.rejected)
        hits[it.domain].append(int(win))
        hits["overall"].append(int(win))
    return {d: round(sum(hits[d]) / len(hits[d]), 4) for d in (*PRB_DOMAINS, "overall") if hits[d]}


def compute_baselines(
    rb2: Sequence[RB2Item], prb: Sequence[PRBItem], seed: int
) -> dict[str, dict[str, dict[str, float]]]:
    """Every baseline on both benchmarks: ``{"rb2": {scorer: scores}, "prb": {scorer: accs}}``."""
    scorers = baseline_scorers(seed)
    return {
        "rb2": {name: rb2_scores(rb2, s) for name, s in scorers.items()},
        "prb": {name: prb_accuracy(prb, s) for name, s in scorers.items()},
    }
