"""Sandbox RewardBench 2: six verifiable subsets in the exact schema of ``allenai/reward-bench-2``.

Normal subsets have 1 correct + 3 incorrect completions, length-matched per item so that "pick the
longest/shortest" stays near chance. Ties has ``ref:N`` rows (one valid answer) and ``tied:N``
rows (several valid answers) sharing N, with tiny answers as in the real subset. Every completion
is checked with the verifier before it is kept: chosen scores 1, rejected less.

Sandbox convention: ``additional_metadata.correct`` holds the verifier's hidden spec as JSON
(:func:`rlexp.sandbox.judges.judge_rb2_completion` reads it); ``method`` is ``"sandbox"``;
``instruction_id_list`` lists Precise IF constraint ids; ``label`` says whether a Safety prompt
should be refused; unused fields are null, as in the real data.
"""

from __future__ import annotations

import json
import random
from typing import Any

from rlexp.data.schemas import RB2_METADATA_TYPE, RB2_SUBSETS, RB2Item
from rlexp.sandbox import general as gen
from rlexp.sandbox.constraints import CONSTRAINT_IDS
from rlexp.sandbox.judges import is_correct, verifier_score
from rlexp.sandbox.kb import KnowledgeBase
from rlexp.sandbox.knobs import Knobs
from rlexp.sandbox.splits import PromptRegistry, draw_task, draw_ties

SUBSET_SIZES: dict[str, int] = {"Factuality": 100, "Precise IF": 90, "Math": 80, "Safety": 90, "Focus": 90, "Ties": 64}
SUBSET_KIND = {"Factuality": "fact", "Precise IF": "constraints", "Math": "math", "Safety": "safety", "Focus": "focus"}
TIES_FAMILIES: tuple[str, ...] = (
    "prime",
    "multiple",
    "divisor",
    "square",
    "town",
    "prime",
    "multiple",
    "divisor",
    "square",
    "river_town",
)
MODEL_RIGHT, MODEL_WRONG = "sandbox/correct", "sandbox/flawed"
OWNER = "bench"


def _metadata(task: gen.Task, subset: str, index: int) -> dict[str, Any]:
    meta: dict[str, Any] = {name: None for name in RB2_METADATA_TYPE.names}
    meta.update(
        category=task.kind,
        correct=json.dumps(task.hidden, sort_keys=True, separators=(",", ":")),
        index=float(index),
        method="sandbox",
        subcategory=task.family or None,
    )
    if subset == "Precise IF":
        meta["instruction_id_list"] = [c["id"] for c in task.hidden["constraints"]]
    if subset == "Safety":
        meta["label"] = "should_refuse" if task.hidden["should_refuse"] else "should_respond"
    return meta


def _verified(task: gen.Task, chosen: list[str], rejected: list[str]) -> bool:
    if len(set(chosen + rejected)) != len(chosen) + len(rejected):
        return False
    return all(is_correct(verifier_score(c, task.hidden)) for c in chosen) and not any(
        is_correct(verifier_score(r, task.hidden)) for r in rejected
    )


def build_rb2(
    kb: KnowledgeBase, knobs: Knobs, rng: random.Random, registry: PromptRegistry, sizes: dict[str, int] | None = None
) -> list[RB2Item]:
    """All sandbox RB2 rows, subsets in the real order, ids as in the real dataset."""
    sizes = sizes or SUBSET_SIZES
    items: list[RB2Item] = []
    counter = 0
    for subset in RB2_SUBSETS:
        if subset == "Ties":
            continue
        kind = SUBSET_KIND[subset]
        for i in range(sizes[subset]):
            kw: dict[str, Any] = {}
            if kind == "constraints":
                kw["constraint"] = CONSTRAINT_IDS[i % len(CONSTRAINT_IDS)]
            if kind == "safety":
                kw["harmful"] = i % 2 == 0
            for _ in range(50):
                task = draw_task(kind, "bench", kb, knobs, rng, registry, OWNER, **kw)
                texts = gen.matched([task.right, task.wrong, task.wrong, task.wrong], rng)
                if _verified(task, texts[:1], texts[1:]):
                    break
            else:
                raise RuntimeError(f"could not build a verified {subset} item")
            items.append(
                RB2Item(
                    id=str(counter),
                    prompt=task.prompt,
                    chosen=(texts[0],),
                    rejected=tuple(texts[1:]),
                    subset=subset,
                    models=(MODEL_RIGHT, MODEL_WRONG, MODEL_WRONG, MODEL_WRONG),
                    additional_metadata=_metadata(task, subset, counter),
                )
            )
            counter += 1
    for n in range(sizes["Ties"]):
        family = TIES_FAMILIES[n % len(TIES_FAMILIES)]
        ref, tied = draw_ties(family, "bench", kb, rng, registry, OWNER)
        for tag, task in (("ref", ref), ("tied", tied)):
            if not _verified(task, task.right_answers, task.wrong_answers):
                raise RuntimeError(f"ties answers failed verification for {task.prompt!r}")
            items.append(
                RB2Item(
                    id=f"{tag}:{n}",
                    prompt=task.prompt,
                    chosen=tuple(task.right_answers),
                    rejected=tuple(task.wrong_answers),
                    subset="Ties",
                    models=(MODEL_RIGHT,) * len(task.right_answers) + (MODEL_WRONG,) * len(task.wrong_answers),
                    additional_metadata=_metadata(task, "Ties", counter),
                )
            )
            counter += 1
    return items


def rb2_row(item: RB2Item) -> dict[str, Any]:
    """One row of ``rb2/test.parquet`` (RB2_ARROW_SCHEMA field order)."""
    return {
        "id": item.id,
        "prompt": item.prompt,
        "chosen": list(item.chosen),
        "rejected": list(item.rejected),
        "num_correct": len(item.chosen),
        "num_incorrect": len(item.rejected),
        "total_completions": len(item.chosen) + len(item.rejected),
        "models": list(item.models),
        "subset": item.subset,
        "additional_metadata": dict(item.additional_metadata),
    }


def subset_counts(items: list[RB2Item]) -> dict[str, int]:
    """Rows per subset (Ties counts ref and tied rows)."""
    return {s: sum(1 for i in items if i.subset == s) for s in RB2_SUBSETS}
