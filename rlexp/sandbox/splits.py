"""Which seeds and templates each part of the world may use, and a registry of prompts.

Disjointness is by construction and checked again by the registry:

- *where* a task is drawn decides its entities (KB split) and its template group: the benchmark
  (``bench``) and the downstream sets (``ds_train``, ``ds_eval``) use evaluation phrasings and
  their own entities; training pairs, SFT and pretraining (``train``) use training phrasings and
  the ``train`` entities; safety actions are split in halves the same way;
- every prompt is claimed in a :class:`PromptRegistry` under an owner (benchmark, each downstream
  split, training); a prompt already owned by another owner is never reused, so overlap is zero
  after whitespace/case normalisation even where two generators could meet by chance.
"""

from __future__ import annotations

import random
from typing import Any

from rlexp.sandbox import general as gen
from rlexp.sandbox.constraints import CONSTRAINT_IDS
from rlexp.sandbox.kb import ATTRIBUTES, KnowledgeBase
from rlexp.sandbox.knobs import Knobs
from rlexp.sandbox.text import normalise_prompt

WHERE: tuple[str, ...] = ("bench", "train", "ds_train", "ds_eval")
ENTITY_SPLIT = {"bench": "rb2", "train": "train", "ds_train": "ds_train", "ds_eval": "ds_eval"}
TEMPLATE_GROUP = {"bench": 0, "ds_train": 0, "ds_eval": 0, "train": 1}


class PromptRegistry:
    """Owner of every normalised prompt in the world (see module doc)."""

    def __init__(self) -> None:
        self._owner: dict[str, str] = {}

    def claim(self, prompt: str, owner: str, unique: bool = True) -> bool:
        """Register ``prompt`` for ``owner``; False if another owner has it (or a repeat when ``unique``)."""
        key = normalise_prompt(prompt)
        have = self._owner.get(key)
        if have is None:
            self._owner[key] = owner
            return True
        return have == owner and not unique

    def owner(self, prompt: str) -> str | None:
        return self._owner.get(normalise_prompt(prompt))

    def __len__(self) -> int:
        return len(self._owner)


def _build(kind: str, where: str, kb: KnowledgeBase, knobs: Knobs, rng: random.Random, **kw: Any) -> gen.Task:
    group = TEMPLATE_GROUP[where]
    if kind in ("fact", "focus", "constraints"):
        e = rng.choice(kb.of(ENTITY_SPLIT[where]))
        if kind == "constraints":
            name = kw.get("constraint") or rng.choice(CONSTRAINT_IDS)
            return gen.constraint_task(e, name, group, knobs, rng, extra=kw.get("extra"))
        attr = rng.choice(list(ATTRIBUTES[e.kind]))
        builder = gen.fact_task if kind == "fact" else gen.focus_task
        return builder(kb, e, attr, group, knobs, rng)
    if kind == "math":
        return gen.math_task(group, knobs, rng)
    if kind == "safety":
        harmful = kw.get("harmful")
        if harmful is None:
            harmful = rng.random() < 0.5
        if harmful:
            return gen.harmful_task(rng.choice(gen.harmful_actions(group)), group, knobs, rng)
        return gen.benign_task(rng.choice(gen.benign_actions(group)), group, knobs, rng)
    raise ValueError(f"unknown task kind {kind!r}")


def draw_task(
    kind: str,
    where: str,
    kb: KnowledgeBase,
    knobs: Knobs,
    rng: random.Random,
    registry: PromptRegistry,
    owner: str,
    unique: bool = True,
    tries: int = 400,
    **kw: Any,
) -> gen.Task:
    """A task of ``kind`` for ``where`` whose prompt ``owner`` may claim (see module doc)."""
    for _ in range(tries):
        task = _build(kind, where, kb, knobs, rng, **kw)
        if registry.claim(task.prompt, owner, unique=unique):
            return task
    raise RuntimeError(f"ran out of distinct {kind} prompts for {where!r}")


def draw_ties(
    family: str,
    where: str,
    kb: KnowledgeBase,
    rng: random.Random,
    registry: PromptRegistry,
    owner: str,
    unique: bool = True,
    tries: int = 400,
) -> tuple[gen.Task, gen.Task]:
    """A (ref, tied) pair of ties tasks with claimable prompts and at least two tied answers."""
    group = TEMPLATE_GROUP[where]
    for _ in range(tries):
        ref, tied = gen.ties_tasks(family, group, kb, rng)
        if len(tied.right_answers) < 2 or len(tied.wrong_answers) < 3 or len(ref.wrong_answers) < 3:
            continue
        if registry.owner(ref.prompt) is None and registry.owner(tied.prompt) is None or not unique:
            if registry.claim(ref.prompt, owner, unique) and registry.claim(tied.prompt, owner, unique):
                return ref, tied
    raise RuntimeError(f"ran out of distinct ties prompts ({family}) for {where!r}")
