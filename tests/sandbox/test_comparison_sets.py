"""Sandbox Chatbot Arena-Personalized / PRISM-Personalized: files, splits, disjointness, the recipe.

One world is built per module and the comparison sets are built on it in memory; one
materialisation (which builds its own world) is compared with them byte for byte.
"""

from __future__ import annotations

import copy
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow.json as pj
import pyarrow.parquet as pq
import pytest

from rlexp.data.schemas import PRISM_STATED_PREFS, PRISM_SURVEY_ARROW_SCHEMA, USER_PAIRS_ARROW_SCHEMA
from rlexp.sandbox.aspects import POLES
from rlexp.sandbox.comparison import (
    COMPARISON_FILES,
    COMPARISON_VERSION,
    ComparisonSets,
    build_comparison,
    materialise_comparison,
    write_comparison,
)
from rlexp.sandbox.materialise import _sha256
from rlexp.sandbox.splits import PromptRegistry, draw_task
from rlexp.sandbox.text import normalise_prompt
from rlexp.sandbox.user_votes import general_pair, reserve_questions
from rlexp.sandbox.users import _NEEDS
from rlexp.sandbox.world import World, build_world

DATASETS = ("arena", "prism")
HF = ("train", "validation", "test")


@pytest.fixture(scope="module")
def built() -> tuple[World, PromptRegistry, ComparisonSets]:
    world = build_world(0, 0.5)
    before = copy.deepcopy(world.registry)  # who owned what before the comparison sets claimed
    return world, before, build_comparison(world)


@pytest.fixture(scope="module")
def sets(built: tuple[World, PromptRegistry, ComparisonSets]) -> ComparisonSets:
    return built[2]


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("comparison") / "comparison"
    return root, materialise_comparison(root, seed=0, difficulty=0.5, progress=False)


def _rows(sets: ComparisonSets, name: str) -> list[dict[str, Any]]:
    return [r for split in HF for r in sets.rows[name][split]]


def _user_messages(sets: ComparisonSets, name: str) -> set[str]:
    return {m["content"] for r in _rows(sets, name) for m in r["context"] if m["role"] == "user"}


def test_materialised_files_are_deterministic_and_as_listed(
    out: tuple[Path, dict[str, Any]], sets: ComparisonSets, tmp_path: Path
) -> None:
    root, manifest = out
    expected = {f"{COMPARISON_FILES[n]}/{s}-00000-of-00001.parquet" for n in DATASETS for s in HF}
    assert set(manifest["files"]) == expected | {COMPARISON_FILES["prism_survey"]}
    assert manifest["comparison_version"] == COMPARISON_VERSION and manifest["seed"] == 0
    # An independent build (another world object, the same seed) writes the same bytes.
    written = write_comparison(sets, tmp_path)
    for rel, meta in manifest["files"].items():
        assert _sha256(root / rel) == meta["sha256"] == _sha256(tmp_path / rel), rel
        assert meta["rows"] == written[rel]
    assert not list(root.parent.glob(".comparison.*"))  # no temporary directory left behind


def test_files_have_the_published_schemas(out: tuple[Path, dict[str, Any]]) -> None:
    root, manifest = out
    for rel in manifest["files"]:
        if rel.endswith(".parquet"):
            assert pq.read_schema(root / rel).remove_metadata().equals(USER_PAIRS_ARROW_SCHEMA), rel
    survey = pj.read_json(root / COMPARISON_FILES["prism_survey"])
    assert survey.schema.equals(PRISM_SURVEY_ARROW_SCHEMA)
    assert survey.num_rows == manifest["counts"]["prism_survey"] > 0


def test_messages_have_user_and_model_roles_and_end_with_the_user(sets: ComparisonSets) -> None:
    for name in DATASETS:
        rows = _rows(sets, name)
        chosen = {}
        for r in rows:
            roles = [m["role"] for m in r["context"]]
            assert roles == ["user", "model"] * (len(roles) // 2) + ["user"]
            assert r["chosen"]["role"] == r["rejected"]["role"] == "model"
            assert r["chosen"]["content"] != r["rejected"]["content"]
            assert r["turns"] == roles.count("user")
            assert r["dataset"] == {"arena": "chatbot_arena", "prism": "prism"}[name]
            if r["turns"] == 2:  # a second turn continues with the answer the user chose before
                assert r["context"][1]["content"] == chosen[r["conversation_id"]]
            chosen[r["conversation_id"]] = r["chosen"]["content"]
        turns = {r["turns"] for r in rows}
        assert turns == ({1} if name == "arena" else {1, 2})
        types = {r["type"] for r in rows}
        assert types == ({"arena"} if name == "arena" else {"unguided", "values guided", "controversy guided"})


def test_each_users_pairs_split_chronologically(sets: ComparisonSets) -> None:
    for name in DATASETS:
        per_user: dict[str, list[str]] = defaultdict(list)
        for r in _rows(sets, name):
            per_user[r["user_id"]].append(r["split"])
        for user, splits in per_user.items():
            n = len(splits)
            n_test = max(1, -(-n // 3))
            assert splits[n - n_test :] == ["test"] * n_test, user
            assert splits[: n - n_test] == ["train"] * (n - n_test - (n >= 3)) + ["val"] * (n >= 3), user
        # Some users have nothing earlier to learn from (their only pair is a test pair).
        assert any(s == ["test"] for s in per_user.values())
        assert max(len(s) for s in per_user.values()) >= 8


def test_hf_splits_partition_users(sets: ComparisonSets) -> None:
    for name in DATASETS:
        users = {s: {r["user_id"] for r in sets.rows[name][s]} for s in HF}
        assert not (users["train"] & users["validation"] or users["train"] & users["test"])
        assert not users["validation"] & users["test"]
        n = sum(len(u) for u in users.values())
        assert n == len(sets.voters[name])
        for split, share in zip(HF, (0.25, 0.20, 0.55), strict=True):
            assert abs(len(users[split]) / n - share) < 0.02
        assert sets.stats[name]["evaluated"]["users_without_history"] > 0


def test_prompts_are_disjoint_from_the_rest_of_the_world(
    built: tuple[World, PromptRegistry, ComparisonSets],
) -> None:
    world, before, sets = built
    n = normalise_prompt
    others = {n(r.prompt) for r in world.rb2} | {n(i.question) for i in world.prb}
    others |= {n(p.prompt) for ps in world.pairs.values() for p in ps}
    others |= {n(i.prompt) for items in world.prompts.values() for i in items} | {n(row[0]) for row in world.sft}
    mine = {name: _user_messages(sets, name) for name in DATASETS}
    for name, prompts in mine.items():
        assert len(prompts) > 100
        for p in prompts:
            assert before.owner(p) is None, p  # nobody in the world held it
            assert world.registry.owner(p) == name, p  # and the set claimed it
        assert not {n(p) for p in prompts} & others
    assert not {n(p) for p in mine["arena"]} & {n(p) for p in mine["prism"]}


def test_comparison_users_are_new_users(built: tuple[World, PromptRegistry, ComparisonSets]) -> None:
    world, _, sets = built
    old = {u.user_id for u in (*world.train_users, *world.prb_users)}
    old |= {u.user_id for us in world.prompt_users.values() for u in us}
    ids = {name: {r["user_id"] for r in _rows(sets, name)} for name in DATASETS}
    assert ids["arena"] and ids["prism"] and not ids["arena"] & ids["prism"]
    assert not (ids["arena"] | ids["prism"]) & old
    assert {r["user_id"] for r in sets.survey} == ids["prism"]


@pytest.mark.parametrize(
    ("name", "general", "kinds"),
    [
        ("arena", 0.6, {"fit": 0.3, "quality": 0.3, "both": 0.4}),
        ("prism", 0.3, {"fit": 0.5, "quality": 0.1, "both": 0.4}),
    ],
)
def test_question_and_pair_kinds_follow_the_recipe(
    sets: ComparisonSets, name: str, general: float, kinds: dict[str, float]
) -> None:
    votes = [v for vs in sets.votes[name].values() for v in vs]
    assert abs(sum(v.task != "personal" for v in votes) / len(votes) - general) < 0.04
    personal = [v for v in votes if v.task == "personal"]
    for kind, share in kinds.items():
        assert abs(sum(v.kind == kind for v in personal) / len(personal) - share) < 0.05, kind
    assert all(v.kind == "quality" for v in votes if v.task != "personal")
    singles = sum(v.n_pairs == 1 for v in sets.voters[name]) / len(sets.voters[name])
    assert 0.05 < singles < 0.15


def test_answers_carry_the_quality_and_fit_they_claim(sets: ComparisonSets) -> None:
    for name in DATASETS:
        voters = {v.user_id: v for v in sets.voters[name]}
        for v in (v for vs in sets.votes[name].values() for v in vs):
            aspects = voters[v.user_id].user.aspects
            for a in (v.a, v.b):  # fit recomputed from the text with the checkers
                assert a.fit == sum(p.check(a.text) for p in aspects) / len(aspects)
            if v.kind == "fit":
                assert {v.a.fit, v.b.fit} == {0.0, 1.0} and v.a.quality == v.b.quality == 1
            elif v.kind == "both":
                assert {v.a.fit, v.b.fit} == {0.0, 1.0} and {v.a.quality, v.b.quality} == {0, 1}
            else:
                assert {v.a.quality, v.b.quality} == {0, 1}
                if v.task == "personal":
                    assert v.a.fit == v.b.fit


def test_general_pairs_are_verified(built: tuple[World, PromptRegistry, ComparisonSets]) -> None:
    from rlexp.sandbox.judges import is_correct, verifier_score

    world = built[0]
    rng, registry = random.Random(5), PromptRegistry()
    aspects = world.train_users[0].aspects
    for kind in ("fact", "math", "constraints", "safety"):
        tasks = [draw_task(kind, "bench", world.kb, world.knobs, rng, registry, "t") for _ in range(10)]
        pairs = [(task, general_pair(task, aspects, rng)) for task in tasks]
        assert sum(p is not None for _, p in pairs) >= 8  # the rare unverifiable task gives None
        for task, pair in pairs:
            if pair is not None:
                right, wrong = pair
                assert is_correct(verifier_score(right.text, task.hidden)) and right.quality == 1
                assert not is_correct(verifier_score(wrong.text, task.hidden)) and wrong.quality == 0


def test_votes_follow_the_users_utility_but_not_always(sets: ComparisonSets) -> None:
    for name in DATASETS:
        voters = {v.user_id: v for v in sets.voters[name]}
        votes = [v for vs in sets.votes[name].values() for v in vs]
        gaps = [voters[v.user_id].utility(v.chosen) - voters[v.user_id].utility(v.rejected) for v in votes]
        agree = sum(g > 0 for g in gaps) / sum(g != 0 for g in gaps)
        assert 0.8 < agree < 0.98, agree
        # Some votes go against both signals (lower quality and no better fit).
        against = [v for v in votes if v.chosen.quality < v.rejected.quality and v.chosen.fit <= v.rejected.fit]
        assert against
        ev = sets.stats[name]["evaluated"]
        assert 0.7 < ev["chosen_higher_quality"] < 1 and 0.7 < ev["chosen_better_fit"] < 1
        assert ev["oracle_utility"] > max(ev["oracle_quality"], ev["oracle_fit"])
    for r in _rows(sets, "prism"):
        assert 1 <= r["rejected_score"] <= r["chosen_score"] <= 100
    assert all(r["chosen_score"] is None is r["rejected_score"] for r in _rows(sets, "arena"))


def test_the_survey_states_some_aspects_mostly_truthfully(sets: ComparisonSets) -> None:
    by_sentence = {s: key for key, needs in _NEEDS.items() for s, _ in needs}
    voters = {v.user_id: v for v in sets.voters["prism"]}
    truthful, empty = [], 0
    for row in sets.survey:
        assert row["survey_only"] is False and row["stated_prefs"]["other"] == 0
        assert set(row["stated_prefs"]) == {*PRISM_STATED_PREFS, "other", "other_text"}
        assert all(0 <= row["stated_prefs"][k] <= 100 for k in PRISM_STATED_PREFS)
        stated = [key for s, key in by_sentence.items() if s in row["self_description"]]
        if not row["self_description"]:
            empty += 1
            continue
        assert 1 <= len(stated) <= 2
        own = {p.key for p in voters[row["user_id"]].user.aspects}
        dims = {p.dim for p in voters[row["user_id"]].user.aspects}
        assert all(k.split(".")[0] in dims for k in stated)  # only the user's own dimensions
        truthful += [k in own for k in stated]
    assert 0.72 < sum(truthful) / len(truthful) < 0.88
    assert 0.03 < empty / len(sets.survey) < 0.18
    assert sets.stats["survey"]["stated_truthful"] == round(sum(truthful) / len(truthful), 4)
    assert sets.stats["survey"]["corr_personalisation_w_fit"] > 0.5
    assert len(POLES) == len(_NEEDS)


def test_reserving_questions_splits_free_questions_between_owners() -> None:
    registry = PromptRegistry()
    held = reserve_questions(registry, ["arena", "prism"], random.Random(0))
    for site, n in held["arena"].items():
        assert abs(n - held["prism"][site]) <= 1
    assert len(registry) == sum(sum(h.values()) for h in held.values())
