"""Verifiable general tasks: the :class:`Task` record and what every task kind shares.

The kinds live in their own modules: ``general_facts`` (KB facts and focus), ``general_math``
(arithmetic), ``general_constraints`` (instruction constraints), ``general_safety`` (harmful vs
benign requests) and ``general_ties`` (several valid answers vs one). This module keeps the cues,
neutral fillers and the length matching they all use.

A :class:`Task` is a prompt, a ``hidden`` dict that only the verifier reads, and two completion
generators: ``right(rng)`` writes a correct answer and ``wrong(rng)`` an incorrect one (one of
several error kinds). The same tasks feed RewardBench 2 items, training pairs, SFT data and the
downstream prompt set; only the template *group* (0 = evaluation phrasings, 1 = training
phrasings) and the entities/actions used differ, which keeps training prompts disjoint from
evaluation prompts.

Lexical tells: with probability ``wrong_cue_prob`` a wrong answer carries a hedge ("I think") or a
bluff ("Obviously,") and with ``right_cue_prob`` a right answer carries a hedge. These are the
shallow signals a tiny reward model can learn from training pairs and transfer to the benchmark;
the rest (which value is right, whether 7 × 8 = 56) needs knowledge or computation.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rlexp.sandbox.knobs import Knobs

HEDGES: tuple[str, ...] = (
    "I think ",
    "If I remember right, ",
    "I am not sure, but ",
    "Probably ",
    "Maybe ",
    "I guess ",
)
BLUFFS: tuple[str, ...] = ("Obviously, ", "Everyone knows that ", "Without a doubt, ", "Trust me, ")
DIGRESSIONS: tuple[str, ...] = ("Interestingly, ", "On a related note, ", "Speaking of which, ", "Fun fact: ")
LEADS: tuple[str, ...] = (
    "",
    "",
    "",
    "Here is the answer. ",
    "Good question. ",
    "Let me answer that. ",
    "Happy to help. ",
)
TAILS: tuple[str, ...] = ("", "", "", " Hope that helps.", " Let me know if you need more.", " That is the answer.")
PADDING: tuple[str, ...] = (
    "Let me add a little more context.",
    "This is a common kind of question.",
    "There is more one could say about it.",
    "I hope the explanation is clear.",
    "Questions like this come up often.",
    "It is worth keeping this in mind.",
)
_SOFT_STARTS = {
    "The",
    "It",
    "Its",
    "To",
    "This",
    "A",
    "By",
    "Sure.",
    "Here",
    "Happy",
    "That",
    "Some",
    "Good",
    "So",
    "As",
    "Like",
    "People",
}


@dataclass
class Task:
    """A verifiable prompt with generators for right and wrong completions."""

    kind: str
    prompt: str
    hidden: dict[str, Any]
    right: Callable[[random.Random], str]
    wrong: Callable[[random.Random], str]
    family: str = ""
    # Ties tasks enumerate their answers instead of sampling them.
    right_answers: list[str] = field(default_factory=list)
    wrong_answers: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Cues, fillers and length matching
# ---------------------------------------------------------------------------------------------


def prefix(cue: str, sentence: str) -> str:
    """Put ``cue`` before ``sentence``, lower-casing a common first word but never a name."""
    first = sentence.split(" ", 1)[0]
    if first in _SOFT_STARTS:
        sentence = sentence[:1].lower() + sentence[1:]
    return cue + sentence


def cue_wrong(text: str, knobs: Knobs, rng: random.Random) -> str:
    """With probability ``wrong_cue_prob``, mark a wrong answer with a hedge or a bluff."""
    if rng.random() < knobs.wrong_cue_prob:
        return prefix(rng.choice(HEDGES if rng.random() < 0.6 else BLUFFS), text)
    return text


def cue_right(text: str, knobs: Knobs, rng: random.Random) -> str:
    """With probability ``right_cue_prob``, put a misleading hedge on a right answer."""
    if rng.random() < knobs.right_cue_prob:
        return prefix(rng.choice(HEDGES), text)
    return text


def frame(text: str, rng: random.Random) -> str:
    """Add an optional neutral lead-in and tail (they vary length without signalling quality)."""
    return f"{rng.choice(LEADS)}{text}{rng.choice(TAILS)}"


def pad(text: str, rng: random.Random, n: int) -> str:
    """Append ``n`` neutral padding sentences (used by the length-biased control source)."""
    extra = rng.sample(PADDING, min(n, len(PADDING)))
    return " ".join([text, *extra])


def matched(gens: Sequence[Callable[[random.Random], str]], rng: random.Random, n_cand: int = 6) -> list[str]:
    """One completion per generator, chosen among ``n_cand`` draws so character lengths match.

    Why: every subset must be immune to "pick the longest/shortest". All candidates are pooled,
    the median length is the target, and each slot takes its candidate closest to a slightly
    jittered target; completions within an item are kept distinct.
    """
    cands = [[g(rng) for _ in range(n_cand)] for g in gens]
    pooled = sorted(len(c) for cs in cands for c in cs)
    target = pooled[len(pooled) // 2]
    out: list[str] = []
    for cs in cands:
        t = target * (1.0 + rng.uniform(-0.06, 0.06))
        ranked = sorted(set(cs), key=lambda c: (abs(len(c) - t), c))
        choice = next((c for c in ranked if c not in out), ranked[0])
        out.append(choice)
    return out
