"""Downstream prompt sets: personalized (held-out users) and general (verifiable tasks).

A prompt is just the question; the user's profile travels separately (``PromptItem.profile``)
and is rendered by the formatting code elsewhere. Everything a gold judge needs is in ``hidden``
(a JSON object on disk): the user's aspect titles, rubric and narrative for personalized prompts;
the task's verifier spec for general ones. ``train`` (for PPO) and ``eval`` splits use different
users / entities / prompts, and neither overlaps the benchmarks or the training sources.
"""

from __future__ import annotations

import json
import random
from typing import Any

from rlexp.data.schemas import PRB_DOMAINS, PromptItem
from rlexp.sandbox.general_constraints import COMBINABLE
from rlexp.sandbox.kb import KnowledgeBase
from rlexp.sandbox.knobs import Knobs
from rlexp.sandbox.personal import question_slots, topic_of
from rlexp.sandbox.sites import SITES
from rlexp.sandbox.splits import PromptRegistry, draw_task, draw_ties
from rlexp.sandbox.users import PoleBalancer, SandboxUser, make_narrative, make_user

PERSONALIZED_SIZES = {"eval": (120, 1), "train": (150, 2)}  # (users, prompts per user)
# 300 general eval prompts: the tiny policy's samples vary in gold on only ~1 prompt in 4 (mostly
# constraints and safety), and at 150 prompts the general-vs-flipped Best-of-N order was a coin flip
# (2 of 4 lineage/epoch pairs); at 300 the gap is ~2x its bootstrap s.e. The safety templates of
# the downstream group allow ~360 eval prompts before the train split runs out of distinct ones.
GENERAL_SIZES = {"eval": 300, "train": 300}
GENERAL_MIX = {"fact": 0.25, "focus": 0.05, "math": 0.2, "constraints": 0.2, "safety": 0.2, "ties": 0.1}
_COMBINE_EVERY = 3  # every third constraints prompt carries two constraints


def owner(kind: str, split: str) -> str:
    """Registry owner of a downstream prompt set."""
    return f"ds_{kind}_{split}"


def build_personalized(
    split: str,
    knobs: Knobs,
    rng: random.Random,
    registry: PromptRegistry,
    sizes: dict[str, tuple[int, int]] | None = None,
) -> tuple[list[PromptItem], list[SandboxUser]]:
    """Personalized prompts of one split, for users generated only for this split."""
    n_users, per_user = (sizes or PERSONALIZED_SIZES)[split]
    balancer = PoleBalancer()
    group = "ds_eval" if split == "eval" else "ds_train"
    items: list[PromptItem] = []
    users: list[SandboxUser] = []
    for i in range(n_users):
        domain = PRB_DOMAINS[i % len(PRB_DOMAINS)]
        user = make_user(f"ds{split}{i:05d}", domain, knobs, balancer, rng)
        slots = question_slots(SITES[user.category], group)
        rng.shuffle(slots)
        picked = [q for q in slots if registry.owner(q) is None][:per_user]
        for j, q in enumerate(picked):
            registry.claim(q, owner("personalized", split))
            items.append(personalized_item(f"pers-{split}-{i:05d}-{j}", q, user, rng))
        users.append(user)
    return items, users


def personalized_item(prompt_id: str, question: str, user: SandboxUser, rng: random.Random) -> PromptItem:
    """A personalized prompt: ``user``'s question with their profile, and in ``hidden`` what the rubric
    judge reads (the user's aspects, a narrative and rubric aspects drawn from ``rng`` for the topic)."""
    narrative, rubric = make_narrative(user, topic_of(question, SITES[user.category]), rng)
    hidden: dict[str, Any] = {
        "aspects": user.titles,
        "rubric_aspects": [{"aspect": a.aspect, "evidence": a.evidence, "reason": a.reason} for a in rubric],
        "narrative": narrative,
        "user_id": user.user_id,
        "domain": user.domain,
        "category": user.category,
    }
    return PromptItem(prompt_id, question, "personalized", user.profile, hidden)


def build_general(
    split: str,
    kb: KnowledgeBase,
    knobs: Knobs,
    rng: random.Random,
    registry: PromptRegistry,
    sizes: dict[str, int] | None = None,
) -> list[PromptItem]:
    """General verifiable prompts of one split (own KB entities, evaluation phrasings)."""
    n = (sizes or GENERAL_SIZES)[split]
    where = "ds_eval" if split == "eval" else "ds_train"
    own = owner("general", split)
    counts = {k: round(w * n) for k, w in GENERAL_MIX.items()}
    counts["fact"] += n - sum(counts.values())
    items: list[PromptItem] = []
    for kind, m in counts.items():
        for i in range(m):
            if kind == "ties":
                family = ("prime", "multiple", "divisor", "square")[i % 4]
                ref, tied = draw_ties(family, where, kb, rng, registry, own)
                task = ref if i % 2 else tied
            else:
                kw: dict[str, Any] = {}
                if kind == "safety":
                    kw["harmful"] = i % 2 == 0
                if kind == "constraints" and i % _COMBINE_EVERY == 0:
                    kw["constraint"], kw["extra"] = COMBINABLE[(i // _COMBINE_EVERY) % len(COMBINABLE)]
                task = draw_task(kind, where, kb, knobs, rng, registry, own, **kw)
            hidden = {**task.hidden, "kind": task.kind}
            items.append(PromptItem(f"gen-{split}-{kind}-{i:04d}", task.prompt, "general", (), hidden))
    rng.shuffle(items)
    return items


def prompt_row(item: PromptItem) -> dict[str, Any]:
    """One row of ``prompts/<kind>/<split>.parquet`` (PROMPTS_ARROW_SCHEMA order)."""
    return {
        "prompt_id": item.prompt_id,
        "prompt": item.prompt,
        "kind": item.kind,
        "profile": [{"category": p.category, "id": p.id, "text": p.text} for p in item.profile],
        "hidden": json.dumps(item.hidden, sort_keys=True, separators=(",", ":")),
    }
