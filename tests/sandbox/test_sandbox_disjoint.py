"""Zero prompt overlap between training material, benchmarks and downstream prompt sets."""

from __future__ import annotations

import itertools
from pathlib import Path

from rlexp.sandbox.text import normalise_prompt

from .conftest import Loaded


def _sets(world: Loaded) -> dict[str, set[str]]:
    n = normalise_prompt
    sets = {
        "rb2": {n(r["prompt"]) for r in world.rb2_rows},
        "prb": {n(r["question"]) for rows in world.prb_rows.values() for r in rows},
        "sft": {n(r["prompt"]) for r in world.sft},
    }
    for source, rows in world.pairs.items():
        sets[f"pairs/{source}"] = {n(r["prompt"]) for r in rows}
    for key, rows in world.prompts.items():
        sets[f"prompts/{key}"] = {n(r["prompt"]) for r in rows}
    return sets


def test_training_material_never_shares_a_prompt_with_evaluation(world: Loaded) -> None:
    sets = _sets(world)
    training = [k for k in sets if k.startswith("pairs/") or k == "sft"]
    evaluation = [k for k in sets if k not in training]
    for a in training:
        for b in evaluation:
            assert not sets[a] & sets[b], f"{a} shares prompts with {b}: {sorted(sets[a] & sets[b])[:3]}"


def test_benchmarks_and_downstream_sets_are_pairwise_disjoint(world: Loaded) -> None:
    sets = _sets(world)
    evaluation = ["rb2", "prb", *(k for k in sets if k.startswith("prompts/"))]
    for a, b in itertools.combinations(evaluation, 2):
        assert not sets[a] & sets[b], f"{a} shares prompts with {b}"


def test_downstream_train_and_eval_splits_are_disjoint(world: Loaded) -> None:
    for kind in ("personalized", "general"):
        train = {normalise_prompt(r["prompt"]) for r in world.prompts[f"{kind}/train"]}
        ev = {normalise_prompt(r["prompt"]) for r in world.prompts[f"{kind}/eval"]}
        assert train and ev and not train & ev
    users = {
        kind: {r["profile"][0]["id"].rsplit("-", 1)[0] for r in world.prompts[f"personalized/{kind}"]}
        for kind in ("train", "eval")
    }
    assert not users["train"] & users["eval"]  # held-out users, not just held-out questions


def test_no_benchmark_prompt_appears_in_the_pretraining_text(world: Loaded, world_dir: Path) -> None:
    bench = {normalise_prompt(r["prompt"]) for r in world.rb2_rows}
    bench |= {normalise_prompt(r["question"]) for rows in world.prb_rows.values() for r in rows}
    for key in ("personalized/eval", "general/eval"):
        bench |= {normalise_prompt(r["prompt"]) for r in world.prompts[key]}
    for v in ("a", "b"):
        lines = (world_dir / f"corpus/pretrain_{v}.txt").read_text(encoding="utf-8").splitlines()
        found = {normalise_prompt(line.removeprefix("Q: ")) for line in lines} & bench
        assert not found, sorted(found)[:3]


def test_normalisation_ignores_case_and_whitespace() -> None:
    assert normalise_prompt("  What IS 3 +  4?\n") == normalise_prompt("what is 3 + 4?")
