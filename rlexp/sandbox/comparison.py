"""Sandbox Chatbot Arena-Personalized and PRISM-Personalized, in the files' exact schemas.

Layout under ``out_dir`` (a directory of its own, next to the sandbox world)::

    arena_personalized/{train,validation,test}-00000-of-00001.parquet   USER_PAIRS_ARROW_SCHEMA
    prism_personalized/{train,validation,test}-00000-of-00001.parquet   USER_PAIRS_ARROW_SCHEMA
    prism_survey/survey.jsonl      one JSON object per PRISM user (PRISM_SURVEY_ARROW_SCHEMA fields)
    manifest.json                  counts, sha256 per file, recipe proportions, measured stats

As in the published sets, the HF splits partition the *users* (about 25/20/55% train/validation/
test) and each row's `split` column splits that user's own pairs (train/val history, test pairs
to score). The recipe lives in :mod:`rlexp.sandbox.user_votes`.

PRISM users also fill in a survey (:func:`make_survey`) that states 1-2 of their hidden aspects in
their self-description, one in five of them as the opposite pole, and sliders that track their
hidden weights with noise.

The sets are built on top of a world from :func:`~rlexp.sandbox.world.build_world` and draw only
from their own named streams (``make_rng(seed, "comparison", ...)``), and their prompts are
claimed in the world's registry under the owners ``arena`` / ``prism`` after the world is built,
so the world itself stays byte-identical and no comparison prompt is any other part's prompt.
"""

from __future__ import annotations

import itertools
import json
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from rlexp.data.schemas import PRISM_STATED_PREFS, USER_PAIRS_ARROW_SCHEMA
from rlexp.sandbox.materialise import WORLD_VERSION, _sha256, _write_parquet, atomic_build, check_world_args
from rlexp.sandbox.rng import make_rng
from rlexp.sandbox.user_votes import (
    ARENA,
    MODEL,
    PAIR_KINDS,
    PRISM,
    WEIGHT_RANGE,
    Recipe,
    Vote,
    Voter,
    make_voters,
    reserve_questions,
    user_votes,
)
from rlexp.sandbox.users import _NEEDS
from rlexp.sandbox.world import World, build_world

# Bump whenever the output changes for the same (seed, difficulty) (see materialise.WORLD_VERSION).
COMPARISON_VERSION = 1
COMPARISON_FILES = {
    "arena": "arena_personalized",
    "prism": "prism_personalized",
    "prism_survey": "prism_survey/survey.jsonl",
}
RECIPES: dict[str, Recipe] = {"arena": ARENA, "prism": PRISM}
HF_SPLITS: tuple[str, ...] = ("train", "validation", "test")
HF_SHARES = {"train": 0.25, "validation": 0.20}  # of the users; the rest are test users
MANIFEST = "manifest.json"


@dataclass
class ComparisonSets:
    """Both comparison sets in memory: file rows plus the hidden quantities behind them."""

    seed: int
    difficulty: float
    rows: dict[str, dict[str, list[dict[str, Any]]]]  # dataset -> HF split -> rows (USER_PAIRS_ARROW_SCHEMA)
    votes: dict[str, dict[str, list[Vote]]]  # the same layout: hidden quality/fit/kind per row
    voters: dict[str, list[Voter]]  # hidden aspects and weights of every user
    survey: list[dict[str, Any]]  # one row per PRISM user
    survey_truth: dict[str, tuple[bool, ...]]  # user -> whether each stated aspect is truthful
    stats: dict[str, Any]


def conversation_type(recipe: Recipe, task: str) -> str:
    """The `type` column: PRISM's conversation type, "arena" for Arena rows."""
    if recipe.name == "arena":
        return "arena"
    if task == "personal":
        return "values guided"
    return "controversy guided" if task == "safety" else "unguided"


def vote_row(recipe: Recipe, vote: Vote) -> dict[str, Any]:
    """One row of a comparison file (USER_PAIRS_ARROW_SCHEMA)."""
    return {
        "conversation_id": vote.conversation_id,
        "user_id": vote.user_id,
        "context": [{"content": text, "role": role} for role, text in vote.context],
        "chosen": {"content": vote.chosen.text, "role": MODEL},
        "rejected": {"content": vote.rejected.text, "role": MODEL},
        "turns": vote.turns,
        "type": conversation_type(recipe, vote.task),
        "split": vote.split,
        "flip": vote.flip,
        "chosen_score": vote.scores[0] if vote.scores else None,
        "rejected_score": vote.scores[1] if vote.scores else None,
        "dataset": recipe.dataset,
    }


def hf_splits(user_ids: Sequence[str], seed: int, name: str) -> dict[str, str]:
    """User -> HF split: a seeded shuffle cut at 25% train, 20% validation, the rest test."""
    order = list(user_ids)
    make_rng(seed, "comparison", name, "hf-splits").shuffle(order)
    n_train = round(HF_SHARES["train"] * len(order))
    n_val = round(HF_SHARES["validation"] * len(order))
    return {u: "train" if i < n_train else "validation" if i < n_train + n_val else "test" for i, u in enumerate(order)}


def _share(hits: Sequence[float]) -> float | None:
    return round(sum(hits) / len(hits), 4) if hits else None


def _oracle(scores: Sequence[tuple[float, float]]) -> float | None:
    """Accuracy of a scorer from (chosen, rejected) scores; a tie counts 0.5."""
    return _share([1.0 if c > r else 0.5 if c == r else 0.0 for c, r in scores])


def vote_stats(votes: Sequence[Vote], voters: dict[str, Voter], n_pairs: dict[str, int]) -> dict[str, Any]:
    """What the votes look like: kinds, agreement with each signal, oracle scorers (see docs)."""
    users = {v.user_id for v in votes}
    q_diff = [v for v in votes if v.chosen.quality != v.rejected.quality]
    f_diff = [v for v in votes if v.chosen.fit != v.rejected.fit]
    util = [(voters[v.user_id].utility(v.chosen), voters[v.user_id].utility(v.rejected)) for v in votes]
    return {
        "rows": len(votes),
        "users": len(users),
        "users_without_history": sum(n_pairs[u] == 1 for u in users),
        "general_share": _share([v.task != "personal" for v in votes]),
        "kind_shares": {k: _share([v.kind == k for v in votes]) for k in PAIR_KINDS},
        "personal_kind_shares": {k: _share([v.kind == k for v in votes if v.task == "personal"]) for k in PAIR_KINDS},
        "multi_turn_share": _share([v.turns > 1 for v in votes]),
        "chosen_higher_quality": _share([v.chosen.quality > v.rejected.quality for v in q_diff]),
        "chosen_better_fit": _share([v.chosen.fit > v.rejected.fit for v in f_diff]),
        "chosen_higher_utility": _share([c > r for c, r in util if c != r]),
        "oracle_quality": _oracle([(v.chosen.quality, v.rejected.quality) for v in votes]),
        "oracle_fit": _oracle([(v.chosen.fit, v.rejected.fit) for v in votes]),
        "oracle_utility": _oracle(util),
        "quality_fit_conflict": _share(
            [(v.chosen.quality - v.rejected.quality) * (v.chosen.fit - v.rejected.fit) < 0 for v in votes]
        ),
    }


def survey_stats(
    survey: Sequence[dict[str, Any]], truth: dict[str, tuple[bool, ...]], voters: Sequence[Voter]
) -> dict[str, Any]:
    """Truthfulness of stated aspects, empty descriptions, and how the sliders track the weights."""
    stated = [t for ts in truth.values() for t in ts]
    by_id = {v.user_id: v for v in voters}

    def corr(slider: str, weight: str) -> float:
        xs = [float(r["stated_prefs"][slider]) for r in survey]
        return round(statistics.correlation(xs, [getattr(by_id[r["user_id"]], weight) for r in survey]), 4)

    return {
        "users": len(survey),
        "stated_aspects": len(stated),
        "stated_truthful": _share(stated),
        "empty_descriptions": _share([not r["self_description"] for r in survey]),
        "empty_system_strings": _share([not r["system_string"] for r in survey]),
        "corr_personalisation_w_fit": corr("personalisation", "w_fit"),
        "corr_factuality_w_quality": corr("factuality", "w_quality"),
    }


AGES = ("18-24 years old", "25-34 years old", "35-44 years old", "45-54 years old", "55-64 years old",
        "65+ years old", "Prefer not to say")  # fmt: skip
GENDERS = ("Male", "Female", "Non-binary / third gender", "Prefer not to say")
ENGLISH = ("Native speaker", "Fluent", "Advanced", "Intermediate", "Basic", "Prefer not to say")
# Values statements that say nothing about answer style (the stated aspects are the only signal).
_VALUES = (
    "I care a lot about honesty and fairness in how people treat each other.",
    "Family and community matter most to me, and I try to live by my principles.",
    "I believe in hard work and in giving everyone a fair chance.",
    "I try to stay open-minded and to respect views that differ from mine.",
    "Independence is important to me, and I like to make up my own mind.",
    "I value kindness and try to help the people around me.",
)
_SYSTEM = (
    "Be honest with me, even when the answer is not what I hoped for.",
    "Treat me as an adult who can make my own decisions.",
    "Respect that people hold different beliefs.",
    "Stay polite and never talk down to me.",
)
EMPTY_DESCRIPTION, LIE_PROB, SYSTEM_PROB, SLIDER_NOISE = 0.10, 0.20, 0.5, 15.0


def _slider(weight: float, rng: random.Random) -> int:
    """A 0-100 slider that tracks a hidden weight in [0.5, 1.5], with noise."""
    return min(100, max(0, round(100 * (weight - WEIGHT_RANGE[0]) + rng.gauss(0.0, SLIDER_NOISE))))


def make_survey(voter: Voter, rng: random.Random) -> tuple[dict[str, Any], tuple[bool, ...]]:
    """The voter's survey row (PRISM_SURVEY_ARROW_SCHEMA fields) and, per stated aspect, whether it
    was stated truthfully (hidden). 1-2 aspects are stated, each as the opposite pole with
    probability ``LIE_PROB``; ``EMPTY_DESCRIPTION`` of users write nothing."""
    truth: list[bool] = []
    description = ""
    if rng.random() >= EMPTY_DESCRIPTION:
        stated = rng.sample(list(voter.user.aspects), min(len(voter.user.aspects), rng.randint(1, 2)))
        needs = []
        for pole in stated:
            honest = rng.random() >= LIE_PROB
            needs.append(rng.choice(_NEEDS[pole.key if honest else f"{pole.dim}.{1 - pole.side}"])[0])
            truth.append(honest)
        description = " ".join([rng.choice(_VALUES), *needs])
    prefs: dict[str, Any] = {k: rng.randint(0, 100) for k in PRISM_STATED_PREFS}
    prefs["personalisation"] = _slider(voter.w_fit, rng)
    prefs["factuality"] = _slider(voter.w_quality, rng)
    prefs["helpfulness"] = _slider(voter.w_quality, rng)
    prefs |= {"other": 0, "other_text": ""}
    row = {
        "user_id": voter.user_id,
        "survey_only": False,
        "self_description": description,
        "system_string": rng.choice(_SYSTEM) if rng.random() < SYSTEM_PROB else "",
        "stated_prefs": prefs,
        "age": rng.choice(AGES),
        "gender": rng.choice(GENDERS),
        "english_proficiency": rng.choice(ENGLISH),
    }
    return row, tuple(truth)


def _build_set(recipe: Recipe, world: World, held: dict[str, int]) -> tuple[list[Voter], dict[str, list[Vote]]]:
    """One comparison set: its voters and their votes per HF split (users in id order)."""
    seed = world.seed
    voters = make_voters(recipe, world.knobs, make_rng(seed, "comparison", recipe.name, "users"), held)
    rng = make_rng(seed, "comparison", recipe.name, "votes")
    ids = (recipe.conversation_fmt.format(i) for i in itertools.count(1))
    split_of = hf_splits([v.user_id for v in voters], seed, recipe.name)
    by_split: dict[str, list[Vote]] = {s: [] for s in HF_SPLITS}
    for voter in voters:
        by_split[split_of[voter.user_id]].extend(user_votes(recipe, voter, world, ids, rng))
    return voters, by_split


def build_comparison(world: World) -> ComparisonSets:
    """Both comparison sets and the PRISM survey for ``world`` (claims their prompts in its registry)."""
    held = reserve_questions(world.registry, list(RECIPES), make_rng(world.seed, "comparison", "questions"))
    rows: dict[str, dict[str, list[dict[str, Any]]]] = {}
    votes: dict[str, dict[str, list[Vote]]] = {}
    voters: dict[str, list[Voter]] = {}
    stats: dict[str, Any] = {}
    for name, recipe in RECIPES.items():
        voters[name], votes[name] = _build_set(recipe, world, held[name])
        rows[name] = {s: [vote_row(recipe, v) for v in vs] for s, vs in votes[name].items()}
        by_id = {v.user_id: v for v in voters[name]}
        n_pairs = {v.user_id: v.n_pairs for v in voters[name]}
        evaluated = [v for v in votes[name]["test"] if v.split == "test"]
        stats[name] = {
            "evaluated": vote_stats(evaluated, by_id, n_pairs),
            "all": vote_stats([v for vs in votes[name].values() for v in vs], by_id, n_pairs),
        }
    survey_rng = make_rng(world.seed, "comparison", "prism", "survey")
    survey, truth = [], {}
    for voter in voters["prism"]:
        row, truth[voter.user_id] = make_survey(voter, survey_rng)
        survey.append(row)
    stats["survey"] = survey_stats(survey, truth, voters["prism"])
    return ComparisonSets(world.seed, world.difficulty, rows, votes, voters, survey, truth, stats)


def write_comparison(sets: ComparisonSets, root: Path) -> dict[str, int]:
    """Write the data files of ``sets`` under ``root``; return rows per relative path."""
    written: dict[str, int] = {}
    for name in RECIPES:
        for split, rows in sets.rows[name].items():
            rel = f"{COMPARISON_FILES[name]}/{split}-00000-of-00001.parquet"
            _write_parquet(root / rel, rows, USER_PAIRS_ARROW_SCHEMA)
            written[rel] = len(rows)
    rel = COMPARISON_FILES["prism_survey"]
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r, ensure_ascii=False) + "\n" for r in sets.survey]
    (root / rel).write_text("".join(lines), encoding="utf-8")
    written[rel] = len(sets.survey)
    return written


def _manifest(sets: ComparisonSets, root: Path, written: dict[str, int]) -> dict[str, Any]:
    return {
        "comparison_version": COMPARISON_VERSION,
        "world_version": WORLD_VERSION,
        "generator": "rlexp.sandbox.comparison",
        "seed": sets.seed,
        "difficulty": sets.difficulty,
        "counts": {
            **{
                name: {s: {"rows": len(r), "users": len({x["user_id"] for x in r})} for s, r in sets.rows[name].items()}
                for name in RECIPES
            },
            "prism_survey": len(sets.survey),
        },
        "files": {
            rel: {"sha256": _sha256(root / rel), "bytes": (root / rel).stat().st_size, "rows": n}
            for rel, n in sorted(written.items())
        },
        "recipe": {name: r.to_dict() for name, r in RECIPES.items()}
        | {"hf_user_shares": {**HF_SHARES, "test": round(1 - sum(HF_SHARES.values()), 4)}},
        "stats": sets.stats,
        "formats": {
            "roles": "user / model (map model -> assistant before a chat template)",
            "split column": "per user: last ceil(n/3) pairs test, the one before val when n >= 3, the rest train",
            "prism_survey": "JSON lines; stated_prefs is a nested object of 0-100 sliders",
        },
    }


def materialise_comparison(
    out_dir: Path, seed: int = 0, difficulty: float = 0.5, progress: bool = True
) -> dict[str, Any]:
    """Build the world of (seed, difficulty), then write both comparison sets and the survey to
    ``out_dir`` (replaced as a whole, atomically); return the manifest. Raises
    :class:`ConfigError` for a difficulty outside [0, 1] or a negative seed."""
    check_world_args(seed, difficulty)
    with tqdm(total=3, desc="comparison sets", disable=not progress, leave=False) as bar, atomic_build(out_dir) as tmp:
        bar.set_postfix_str("world")
        world = build_world(int(seed), float(difficulty))
        bar.update(1)
        bar.set_postfix_str("votes")
        sets = build_comparison(world)
        bar.update(1)
        bar.set_postfix_str("writing files")
        written = write_comparison(sets, tmp)
        manifest = _manifest(sets, tmp, written)
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        bar.update(1)
    return manifest
