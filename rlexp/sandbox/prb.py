"""Sandbox Personalized RewardBench: one pair per user, in the exact schema of the real dataset.

As in the real benchmark every row is a distinct user (``id`` doubles as the user key), the
question is asked on the user's site, the full profile travels with the row, and the narrative and
rubric aspects are hidden fields that no reward model may read. ``chosen`` meets every aspect of
the user, ``rejected`` the opposite pole of every aspect; both answer with the same facts.
"""

from __future__ import annotations

import random
from typing import Any

from rlexp.data.schemas import PRB_DOMAINS, PRBItem
from rlexp.sandbox.knobs import Knobs
from rlexp.sandbox.personal import answer_content, question_slots, render_pair
from rlexp.sandbox.sites import SITES, SITES_BY_DOMAIN
from rlexp.sandbox.splits import PromptRegistry
from rlexp.sandbox.users import PoleBalancer, SandboxUser, make_narrative, make_user

PRB_SIZES: dict[str, int] = {
    "Art_and_Entertainment": 200,
    "Lifestyle_and_Personal_Development": 220,
    "Society_and_Culture": 220,
}
DOMAIN_CODES = {
    "Art_and_Entertainment": "art",
    "Lifestyle_and_Personal_Development": "life",
    "Society_and_Culture": "soc",
}
OWNER = "bench"


def build_prb(
    knobs: Knobs, rng: random.Random, registry: PromptRegistry, sizes: dict[str, int] | None = None
) -> tuple[list[PRBItem], list[SandboxUser]]:
    """PRB items per domain (in domain order) and their users (hidden aspects, for metrics)."""
    sizes = sizes or PRB_SIZES
    balancer = PoleBalancer()
    items: list[PRBItem] = []
    users: list[SandboxUser] = []
    for domain in PRB_DOMAINS:
        slots = {name: question_slots(SITES[name], "bench") for name in SITES_BY_DOMAIN[domain]}
        for i in range(sizes[domain]):
            # Questions are unique: draw a site that still has an unused question.
            while True:
                site_name = rng.choice([n for n, qs in slots.items() if qs])
                qs = slots[site_name]
                question = qs.pop(rng.randrange(len(qs)))
                if registry.claim(question, OWNER):
                    break
            site = SITES[site_name]
            uid = f"{DOMAIN_CODES[domain]}{i:05d}"
            user = make_user(uid, domain, knobs, balancer, rng, category=site_name)
            content = answer_content(question, site, rng)
            narrative, rubric = make_narrative(user, content.topic, rng)
            chosen, rejected = render_pair(content, user.aspects, knobs, rng)
            items.append(
                PRBItem(
                    id=uid,
                    question=question,
                    profile=user.profile,
                    rubric_aspects=rubric,
                    narrative=narrative,
                    category=site_name,
                    chosen=chosen,
                    rejected=rejected,
                    domain=domain,
                )
            )
            users.append(user)
    return items, users


def prb_row(item: PRBItem) -> dict[str, Any]:
    """One row of ``prb/<Domain>/test-00000-of-00001.parquet`` (PRB_ARROW_SCHEMA order)."""
    return {
        "id": item.id,
        "question": item.question,
        "profile": [{"category": p.category, "id": p.id, "text": p.text} for p in item.profile],
        "rubric_aspects": [
            {"aspect": a.aspect, "evidence": a.evidence, "reason": a.reason} for a in item.rubric_aspects
        ],
        "narrative": item.narrative,
        "category": item.category,
        "chosen": item.chosen,
        "rejected": item.rejected,
    }
