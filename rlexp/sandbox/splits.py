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
from collections.abc import Callable
from typing import Any, TypeVar

from rlexp.sandbox.constraints import CONSTRAINT_IDS
from rlexp.sandbox.general import Task
from rlexp.sandbox.general_constraints import constraint_task
from rlexp.sandbox.general_facts import fact_task, focus_task
from rlexp.sandbox.general_math import math_task
from rlexp.sandbox.general_safety import benign_actions, benign_task, harmful_actions, harmful_task
from rlexp.sandbox.general_ties import ties_tasks
from rlexp.sandbox.kb import ATTRIBUTES, KnowledgeBase
from rlexp.sandbox.knobs import Knobs
from rlexp.sandbox.personal import question_slots
from rlexp.sandbox.sites import Site
from rlexp.sandbox.text import normalise_prompt

WHERE: tuple[str, ...] = ("bench", "train", "ds_train", "ds_eval")
ENTITY_SPLIT = {"bench": "rb2", "train": "train", "ds_train": "ds_train", "ds_eval": "ds_eval"}
TEMPLATE_GROUP = {"bench": 0, "ds_train": 0, "ds_eval": 0, "train": 1}

T = TypeVar("T")


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

    def claim_all(self, prompts: list[str], owner: str, unique: bool = True) -> bool:
        """Register every prompt for ``owner``, as :meth:`claim` does; stop at the first refusal.

        When ``unique``, nothing is claimed unless none of the prompts is owned yet, so a refused
        group (a ties pair) leaves no prompt of it behind.
        """
        if unique and any(self.owner(p) is not None for p in prompts):
            return False
        return all(self.claim(p, owner, unique) for p in prompts)

    def owner(self, prompt: str) -> str | None:
        """Who owns ``prompt`` (after normalisation), or ``None``."""
        return self._owner.get(normalise_prompt(prompt))

    def __len__(self) -> int:
        return len(self._owner)


def _build(kind: str, where: str, kb: KnowledgeBase, knobs: Knobs, rng: random.Random, **kw: Any) -> Task:
    group = TEMPLATE_GROUP[where]
    if kind in ("fact", "focus", "constraints"):
        e = rng.choice(kb.of(ENTITY_SPLIT[where]))
        if kind == "constraints":
            name = kw.get("constraint") or rng.choice(CONSTRAINT_IDS)
            return constraint_task(e, name, group, knobs, rng, extra=kw.get("extra"))
        attr = rng.choice(list(ATTRIBUTES[e.kind]))
        builder = fact_task if kind == "fact" else focus_task
        return builder(kb, e, attr, group, knobs, rng)
    if kind == "math":
        return math_task(group, knobs, rng)
    if kind == "safety":
        harmful = kw.get("harmful")
        if harmful is None:
            harmful = rng.random() < 0.5
        if harmful:
            return harmful_task(rng.choice(harmful_actions(group)), group, knobs, rng)
        return benign_task(rng.choice(benign_actions(group)), group, knobs, rng)
    raise ValueError(f"unknown task kind {kind!r}")


def _first_claimed(
    draw: Callable[[], tuple[T, list[str]] | None],
    registry: PromptRegistry,
    owner: str,
    unique: bool,
    tries: int,
    what: str,
) -> T:
    """The first of up to ``tries`` draws whose prompts ``owner`` claims.

    ``draw`` gives (value, its prompts), or ``None`` for a draw that is unusable anyway.
    """
    for _ in range(tries):
        got = draw()
        if got is not None and registry.claim_all(got[1], owner, unique):
            return got[0]
    raise RuntimeError(f"ran out of distinct {what}")


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
) -> Task:
    """A task of ``kind`` for ``where`` whose prompt ``owner`` may claim (see module doc)."""

    def draw() -> tuple[Task, list[str]]:
        task = _build(kind, where, kb, knobs, rng, **kw)
        return task, [task.prompt]

    return _first_claimed(draw, registry, owner, unique, tries, f"{kind} prompts for {where!r}")


def draw_ties(
    family: str,
    where: str,
    kb: KnowledgeBase,
    rng: random.Random,
    registry: PromptRegistry,
    owner: str,
    unique: bool = True,
    tries: int = 400,
) -> tuple[Task, Task]:
    """A (ref, tied) pair of ties tasks with claimable prompts and at least two tied answers."""
    group = TEMPLATE_GROUP[where]

    def draw() -> tuple[tuple[Task, Task], list[str]] | None:
        ref, tied = ties_tasks(family, group, kb, rng)
        # Too few answers would leave an RB2 item or a training pair without enough completions.
        if len(tied.right_answers) < 2 or len(tied.wrong_answers) < 3 or len(ref.wrong_answers) < 3:
            return None
        return (ref, tied), [ref.prompt, tied.prompt]

    return _first_claimed(draw, registry, owner, unique, tries, f"ties prompts ({family}) for {where!r}")


def draw_question(
    site: Site, group: str, rng: random.Random, registry: PromptRegistry, owner: str, tries: int = 200
) -> str:
    """A question of template ``group`` about ``site`` that ``owner`` may claim (repeats allowed).

    Repeats are allowed because training data may ask one question several times; a question
    another owner holds is never reused.
    """
    slots = question_slots(site, group)

    def draw() -> tuple[str, list[str]]:
        q = rng.choice(slots)
        return q, [q]

    return _first_claimed(draw, registry, owner, False, tries, f"{group} questions for site {site.name!r}")
