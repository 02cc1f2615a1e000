"""Instruction-following tasks: describe a KB entity under checkable constraints (Precise IF).

The constraint kinds, their phrasings and the texts that satisfy or violate them live in
:mod:`rlexp.sandbox.constraints`; this module picks the entity's content and builds the task.
"""

from __future__ import annotations

import random

from rlexp.sandbox import constraints as cons
from rlexp.sandbox.general import HEDGES, Task, prefix
from rlexp.sandbox.kb import Entity
from rlexp.sandbox.knobs import Knobs

IF_BASES: tuple[tuple[str, ...], tuple[str, ...]] = (
    ("Describe {label}.", "Tell me about {label}.", "What should I know about {label}?"),
    ("Give a short overview of {label}.", "Write a few lines on {label}.", "Summarise what is known about {label}."),
)


def constraint_content(e: Entity) -> cons.ConstraintContent:
    """Four comma-free sentences (and comma variants) about ``e`` for constraint tasks."""
    g = e.get
    n = e.name
    if e.kind == "town":
        sents = (
            f"{n} is a small town in the {g('region')} region.",
            f"The town was founded in the year {g('founded')}.",
            f"Its main export today is {g('export')}.",
            f"The {g('river')} river runs right through the town.",
        )
        commas = (
            f"{n}, a small town, lies in the {g('region')} region.",
            f"Founded in {g('founded')}, the town is quite old.",
            f"Its main export, as always, is {g('export')}.",
            f"The {g('river')} river, wide and slow, runs through it.",
        )
        nouns: tuple[str, ...] = ("town", "region")
    elif e.kind == "inventor":
        sents = (
            f"{n} was an inventor and a {g('trade')} by trade.",
            f"{n} was born in the year {g('born')}.",
            f"The {g('invention')} is the best known invention.",
            f"{n} grew up in the town of {g('hometown')}.",
        )
        commas = (
            f"{n}, an inventor, was a {g('trade')} by trade.",
            f"Born in {g('born')}, {n} worked for decades.",
            f"The {g('invention')}, built by hand, is the best known invention.",
            f"{n} grew up in {g('hometown')}, a small town.",
        )
        nouns = ("inventor",)
    else:
        sents = (
            f"The {n} is a {g('colour')} creature of the {g('habitat')}.",
            f"It feeds mostly on {g('diet')} all year.",
            f"The {n} is rarely seen by visitors.",
            f"Local people know the {n} quite well.",
        )
        commas = (
            f"The {n}, a {g('colour')} creature, lives in the {g('habitat')}.",
            f"It feeds, mostly, on {g('diet')}.",
            f"The {n}, shy and quick, is rarely seen.",
            f"Local people, however, know the {n} well.",
        )
        nouns = ("creature",)
    return cons.ConstraintContent(sents, commas, e.name if e.kind != "creature" else e.name.capitalize(), nouns)


def constraint_task(
    e: Entity, name: str, group: int, knobs: Knobs, rng: random.Random, extra: str | None = None
) -> Task:
    """Describe ``e`` under constraint ``name`` (plus optionally ``extra``, downstream only)."""
    content = constraint_content(e)
    c = cons.choose_constraint(name, content, rng, group)
    chosen = [c]
    if extra is not None:
        chosen.append(cons.choose_constraint(extra, content, rng, group))
    base = rng.choice(IF_BASES[group]).format(label=e.label)
    prompt = " ".join([base, *(x.phrase(group, rng) for x in chosen)])
    hidden = {"task": "constraints", "entity": e.name, "constraints": [x.to_json() for x in chosen]}

    def right(r: random.Random) -> str:
        return cons.satisfy(c, content, r)

    def wrong(r: random.Random) -> str:
        text = cons.violate(c, content, r)
        # A hedge on a violating answer (only where it cannot accidentally satisfy or break form).
        if (
            c.name not in ("start_word", "quotes", "title", "uppercase", "lowercase", "bullets")
            and r.random() < knobs.wrong_cue_prob * 0.5
        ):
            text = prefix(r.choice(HEDGES), text)
        return text

    return Task("constraints", prompt, hidden, right, wrong, family=name)


COMBINABLE: tuple[tuple[str, str], ...] = (
    ("include_word", "no_commas"),
    ("include_word", "max_words"),
    ("exclude_word", "end_phrase"),
    ("exclude_word", "bullets"),
    ("include_word", "postscript"),
    ("no_commas", "sentences"),
    ("title", "include_word"),
    ("exclude_word", "min_words"),
)
