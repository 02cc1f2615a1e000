"""Safety tasks: refuse harmful requests, help with benign requests that sound alarming.

The actions, frames, refusals and compliant replies live in :mod:`rlexp.sandbox.safety`; this
module splits them into template groups and builds the tasks.
"""

from __future__ import annotations

import random

from rlexp.sandbox import safety as saf
from rlexp.sandbox.general import Task
from rlexp.sandbox.knobs import Knobs


def harmful_actions(group: int) -> list[tuple[str, str]]:
    """(action, compliant clause) pairs of one template group (halves of the action list by index)."""
    return [(a.format(p=p), how) for i, (a, how) in enumerate(saf.HARM_ACTIONS) if i % 2 == group for p in saf.PERSONS]


def benign_actions(group: int) -> list[tuple[str, str, tuple[str, ...], str]]:
    """Benign-but-alarming actions of one template group."""
    return [b for i, b in enumerate(saf.BENIGN) if i % 2 == group]


def _person_of(act: str) -> str:
    for p in saf.PERSONS:
        if p in act:
            return p
    return "someone"


def _refusal(act: str, reason: str, r: random.Random) -> str:
    return r.choice(saf.REFUSALS).format(act=act, reason=reason, alt=r.choice(saf.REFUSAL_ALTS))


def _compliance(act: str, steps: str, r: random.Random) -> str:
    return r.choice(saf.COMPLIANCES).format(act=act, steps=steps, tip=r.choice(saf.HELPFUL_TIPS))


def harmful_task(action: tuple[str, str], group: int, knobs: Knobs, rng: random.Random) -> Task:
    """A harmful request: right = refusal, wrong = compliance.

    Refusals and compliant replies use the same templates as for benign requests, so the words
    of a reply do not tell whether it is right; at low difficulty, person-specific refusal reasons
    and sinister compliance steps add lexical tells (probability ``1 - difficulty``).
    """
    act, how = action
    prompt = rng.choice(saf.HARM_FRAMES[group]).format(act=act)
    you_act = saf.second_person(act)
    obj = saf.second_person(_person_of(act))
    tell = 1.0 - knobs.difficulty

    def right(r: random.Random) -> str:
        pool = saf.PERSONAL_REASONS if r.random() < tell * 0.5 else saf.REFUSAL_REASONS
        return _refusal(you_act, r.choice(pool).format(obj=obj), r)

    def wrong(r: random.Random) -> str:
        steps = how if r.random() < 0.6 else f"first {r.choice(saf.NEUTRAL_STEPS)}, then {how}"
        if r.random() < tell * 0.5:
            steps += f", and {r.choice(saf.SINISTER_STEPS)}"
        return _compliance(you_act, steps, r)

    return Task("safety", prompt, {"task": "safety", "should_refuse": True}, right, wrong, family="harmful")


def benign_task(item: tuple[str, str, tuple[str, ...], str], group: int, knobs: Knobs, rng: random.Random) -> Task:
    """A benign request with alarming words: right = helpful answer, wrong = over-refusal."""
    act, answer, keywords, _ = item
    prompt = rng.choice(saf.BENIGN_FRAMES[group]).format(act=act)
    you_act = saf.second_person(act)

    def right(r: random.Random) -> str:
        steps = answer if r.random() < 0.6 else f"first {r.choice(saf.NEUTRAL_STEPS)}, then {answer}"
        return _compliance(you_act, steps, r)

    def wrong(r: random.Random) -> str:
        return _refusal(you_act, r.choice(saf.REFUSAL_REASONS), r)

    hidden = {"task": "safety", "should_refuse": False, "keywords": list(keywords)}
    return Task("safety", prompt, hidden, right, wrong, family="benign")
