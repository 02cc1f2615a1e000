"""Build a whole sandbox world in memory from (seed, difficulty).

The build order is fixed and every part draws from its own named random stream, so the same seed
always gives the same world and another seed gives other items. Benchmarks claim their prompts
first, then the downstream sets, then the training material; the shared
:class:`~rlexp.sandbox.splits.PromptRegistry` guarantees that no prompt is owned twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rlexp.data.schemas import PRBItem, PreferencePair, PromptItem, RB2Item
from rlexp.sandbox import corpus, pairs, prompts
from rlexp.sandbox.kb import KnowledgeBase, build_kb
from rlexp.sandbox.knobs import Knobs, knobs_for
from rlexp.sandbox.prb import build_prb
from rlexp.sandbox.rb2 import build_rb2
from rlexp.sandbox.rng import make_rng
from rlexp.sandbox.sites import SITES_BY_DOMAIN
from rlexp.sandbox.splits import PromptRegistry
from rlexp.sandbox.users import PoleBalancer, SandboxUser, make_user

N_TRAIN_USERS = 600


@dataclass
class World:
    """Everything the sandbox generates for one (seed, difficulty)."""

    seed: int
    knobs: Knobs
    kb: KnowledgeBase
    rb2: list[RB2Item]
    prb: list[PRBItem]
    prb_users: list[SandboxUser]
    train_users: list[SandboxUser]
    pairs: dict[str, list[PreferencePair]]
    prompts: dict[tuple[str, str], list[PromptItem]]  # (kind, split) -> items
    prompt_users: dict[str, list[SandboxUser]]  # personalized split -> users
    pretrain: dict[str, list[str]]
    sft: list[tuple[str, str, str]]  # (prompt, response, system message or "")
    registry: PromptRegistry = field(repr=False, default_factory=PromptRegistry)

    @property
    def difficulty(self) -> float:
        return self.knobs.difficulty


def _train_users(knobs: Knobs, seed: int, n: int) -> list[SandboxUser]:
    rng = make_rng(seed, "train-users")
    balancer = PoleBalancer()
    domains = list(SITES_BY_DOMAIN)
    return [make_user(f"tr{i:05d}", domains[i % len(domains)], knobs, balancer, rng) for i in range(n)]


def build_world(seed: int = 0, difficulty: float = 0.5, step: Callable[[str], Any] | None = None) -> World:
    """Generate the world; ``step(name)`` is called before each stage (progress reporting)."""
    tick = step or (lambda name: None)
    knobs = knobs_for(difficulty)
    registry = PromptRegistry()
    tick("knowledge base")
    kb = build_kb(seed)
    tick("rewardbench 2")
    rb2 = build_rb2(kb, knobs, make_rng(seed, "rb2"), registry)
    tick("personalized rewardbench")
    prb, prb_users = build_prb(knobs, make_rng(seed, "prb"), registry)
    tick("downstream prompts")
    prompt_sets: dict[tuple[str, str], list[PromptItem]] = {}
    prompt_users: dict[str, list[SandboxUser]] = {}
    for split in ("eval", "train"):
        items, users = prompts.build_personalized(
            split, knobs, make_rng(seed, "prompts", "personalized", split), registry
        )
        prompt_sets[("personalized", split)] = items
        prompt_users[split] = users
        prompt_sets[("general", split)] = prompts.build_general(
            split, kb, knobs, make_rng(seed, "prompts", "general", split), registry
        )
    tick("training pairs")
    train_users = _train_users(knobs, seed, N_TRAIN_USERS)
    general = pairs.build_general(kb, knobs, make_rng(seed, "pairs", "general"), registry)
    personal = pairs.build_personal(train_users, knobs, make_rng(seed, "pairs", "personal"), registry)
    pair_sets = {
        "general": general,
        "personal": personal,
        "length_bias": pairs.build_length_bias(
            kb, train_users, knobs, make_rng(seed, "pairs", "length_bias"), registry
        ),
        "flipped": pairs.build_flipped(general, personal),
    }
    tick("corpora")
    pretrain = {v: corpus.pretrain_docs(kb, knobs, v, make_rng(seed, "corpus", v), registry) for v in corpus.VARIANTS}
    sft = corpus.sft_pairs(kb, knobs, make_rng(seed, "corpus", "sft"), registry)
    sft += corpus.planned_sft(train_users, knobs, make_rng(seed, "corpus", "sft", "planned"), registry)
    make_rng(seed, "corpus", "sft", "order").shuffle(sft)
    return World(
        seed, knobs, kb, rb2, prb, prb_users, train_users, pair_sets, prompt_sets, prompt_users, pretrain, sft, registry
    )
