"""The knowledge probes: minimal pairs that isolate what an RM knows from the cues it reads."""

from __future__ import annotations

from rlexp.sandbox.general import BLUFFS, HEDGES
from rlexp.sandbox.kb import build_kb
from rlexp.sandbox.probes import FACT_SPLITS, KINDS, arithmetic_pairs, fact_pairs, probe_families, task_pairs
from rlexp.sandbox.rng import make_rng
from rlexp.sandbox.text import numbers

CUES = tuple(c.strip() for c in HEDGES + BLUFFS)


def _tells(text: str) -> int:
    return sum(text.lower().count(c.lower()) for c in CUES)


def test_fact_pairs_differ_in_the_value_only_and_cover_their_split() -> None:
    kb = build_kb(0)
    for split in FACT_SPLITS:
        pairs = fact_pairs(kb, split, make_rng(0, "t", split))
        entities = {e.name for e in kb.of(split)}
        assert len(pairs) >= len(entities) > 0
        for p in pairs:
            # Same sentence around one value: a common prefix and suffix cover all but the value.
            head = next(i for i, (a, b) in enumerate(zip(p.better, p.worse, strict=False)) if a != b)
            tail = next(i for i, (a, b) in enumerate(zip(p.better[::-1], p.worse[::-1], strict=False)) if a != b)
            assert head > 0 and tail > 0 and p.better != p.worse, p
            assert any(name in p.better for name in entities) or p.better.startswith("The "), p


def test_arithmetic_pairs_state_the_true_result_against_a_near_miss() -> None:
    pairs = arithmetic_pairs(make_rng(0, "t"))
    assert len(pairs) == 2 * 8 * 8
    for p in pairs:
        a, b = numbers(p.prompt)[:2]
        true = a + b if "+" in p.prompt else a * b
        assert numbers(p.better)[-1] == true and 1 <= abs(numbers(p.worse)[-1] - true) <= 2


def test_task_pairs_are_ordered_by_the_verifier_and_cues_off_removes_the_knob_tells() -> None:
    kb = build_kb(0)
    for kind in KINDS:
        with_cues = task_pairs(kb, kind, 0.5, True, 60, seed=0)
        without = task_pairs(kb, kind, 0.5, False, 60, seed=0)
        assert len(with_cues) >= 50 and len(without) >= 50, kind
        if kind in ("fact", "math"):
            # Hedges and bluffs are the knob's tells on wrong answers; a few structural ones stay
            # ("The answer is about N, without working it all out" always carries one).
            assert sum(map(_tells, (p.worse for p in without))) < 0.5 * sum(map(_tells, (p.worse for p in with_cues)))


def test_the_families_depend_on_the_world_seed_only() -> None:
    one, again, other = probe_families(0, 0.5, n=20), probe_families(0, 0.5, n=20), probe_families(1, 0.5, n=20)
    assert one == again
    assert one["fact/train"] != other["fact/train"]
    assert set(one) == {*(f"fact/{s}" for s in FACT_SPLITS), "arithmetic",
                        *(f"{k}/{c}" for k in KINDS for c in ("cues", "no cues", "train phrasings"))}


def test_train_phrasings_are_the_rm_training_pairs_prompts_not_the_evaluation_ones() -> None:
    """``<kind>/train phrasings`` draws its prompts as the RMs' preference pairs are drawn (the training
    template group), so none of its prompts is an evaluation-phrasing one."""
    from rlexp.sandbox.knobs import knobs_for
    from rlexp.sandbox.splits import PromptRegistry, draw_task

    kb = build_kb(0)
    train = {kind: task_pairs(kb, kind, 0.5, True, 60, seed=0, where="train") for kind in ("safety", "constraints")}
    for kind, pairs in train.items():
        evaluation = task_pairs(kb, kind, 0.5, True, 60, seed=0)
        assert len(pairs) >= 50 and not {p.prompt for p in pairs} & {p.prompt for p in evaluation}, kind
    # Safety's prompts are few (actions x persons x frames): the probe's are among the training draws'.
    rng, registry = make_rng(0, "t"), PromptRegistry()
    own = {draw_task("safety", "train", kb, knobs_for(0.5), rng, registry, "t", unique=False).prompt for _ in range(3000)}
    assert sum(p.prompt in own for p in train["safety"]) >= 0.9 * len(train["safety"])
