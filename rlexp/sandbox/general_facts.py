"""Knowledge-base tasks: factuality (which value is right) and focus (answering what was asked).

Both ask about one attribute of a KB entity; the answers are statements built from
:data:`STATEMENTS`, so right and wrong answers share their wording and differ in the value (fact) or
in the attribute they talk about (focus).
"""

from __future__ import annotations

import random
from typing import Any

from rlexp.sandbox.general import DIGRESSIONS, Task, cue_right, cue_wrong, frame, prefix
from rlexp.sandbox.kb import ATTRIBUTE_NOUNS, ATTRIBUTES, Entity, KnowledgeBase
from rlexp.sandbox.knobs import Knobs
from rlexp.sandbox.text import capitalise

FACT_TEMPLATES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "region": (
        ("Which region is {label} in?", "In which region does {label} lie?"),
        ("{Label} belongs to which region?", "Name the region that contains {label}."),
    ),
    "founded": (
        ("When was {label} founded?", "In what year was {label} founded?"),
        ("What year did {label} come into being?", "Give the founding year of {label}."),
    ),
    "export": (
        ("What is the main export of {label}?", "What does {label} mainly export?"),
        ("Which good is {label} best known for selling abroad?", "Name the chief export of {label}."),
    ),
    "river": (
        ("Which river runs through {label}?", "On which river does {label} stand?"),
        ("Name the river that flows past {label}.", "{Label} sits on what river?"),
    ),
    "invention": (
        ("What did {label} invent?", "Which device is {label} known for inventing?"),
        ("Name the invention credited to {label}.", "{Label} is remembered for building what?"),
    ),
    "trade": (
        ("What was the trade of {label}?", "What did {label} do for a living?"),
        ("Name the profession of {label}.", "Which craft did {label} practise?"),
    ),
    "born": (
        ("When was {label} born?", "In what year was {label} born?"),
        ("Give the birth year of {label}.", "What year did {label} enter the world?"),
    ),
    "hometown": (
        ("Where was {label} from?", "What was the hometown of {label}?"),
        ("Name the town {label} grew up in.", "{Label} came from which town?"),
    ),
    "colour": (
        ("What colour is {label}?", "What is the colour of {label}?"),
        ("Describe the colouring of {label} in one word.", "Name the colour of {label}."),
    ),
    "habitat": (
        ("Where does {label} live?", "What is the habitat of {label}?"),
        ("Name the habitat of {label}.", "In what kind of place is {label} found?"),
    ),
    "diet": (
        ("What does {label} eat?", "What is the diet of {label}?"),
        ("Name the main food of {label}.", "What does {label} feed on?"),
    ),
}
FOCUS_TEMPLATES: tuple[tuple[str, ...], tuple[str, ...]] = (
    (
        "Tell me only the {noun} of {label}.",
        "Quick question about {label}: what is the {noun}?",
        "I only need one detail about {label}, the {noun}.",
    ),
    (
        "Just the {noun} of {label}, please.",
        "One thing about {label}: the {noun}?",
        "Regarding {label}, what is the {noun}?",
    ),
)
STATEMENTS: dict[str, tuple[str, ...]] = {
    "region": ("{S} lies in the {v} region.", "{S} is in the {v} region.", "{S} is part of the {v} region."),
    "founded": ("{S} was founded in {v}.", "{S} dates from {v}."),
    "export": ("{S} mainly exports {v}.", "The main export of {s} is {v}."),
    "river": ("{S} stands on the {v} river.", "The {v} river runs through {s}."),
    "invention": ("{S} invented the {v}.", "{S} is known for the {v}."),
    "trade": ("{S} worked as a {v}.", "By trade, {s} was a {v}."),
    "born": ("{S} was born in {v}.", "The birth year of {s} is {v}."),
    "hometown": ("{S} came from {v}.", "{S} grew up in the town of {v}."),
    "colour": ("{S} is {v}.", "{S} has {v} colouring."),
    "habitat": ("{S} lives in the {v}.", "{S} is found in the {v}."),
    "diet": ("{S} eats {v}.", "{S} feeds mainly on {v}."),
}


def subject(e: Entity) -> tuple[str, str]:
    """(sentence-initial, mid-sentence) forms of how answers name the entity."""
    if e.kind == "creature":
        return f"The {e.name}", f"the {e.name}"
    return e.name, e.name


def statement(e: Entity, attr: str, value: str, rng: random.Random) -> str:
    """A sentence stating ``attr`` of ``e`` is ``value``."""
    big, small = subject(e)
    return rng.choice(STATEMENTS[attr]).format(S=big, s=small, v=value)


def _label(e: Entity, capital: bool = False) -> str:
    return capitalise(e.label) if capital else e.label


def fact_hidden(kb: KnowledgeBase, e: Entity, attr: str, task: str) -> dict[str, Any]:
    """Judge-only data for a fact/focus question about ``attr`` of ``e``."""
    gold = e.get(attr)
    dom = ATTRIBUTES[e.kind][attr]
    alternatives: Any = "year" if dom == "year" else [v for v in kb.domain(e.kind, attr) if v != gold]
    return {"task": task, "entity": e.name, "attribute": attr, "gold": gold, "alternatives": alternatives}


def wrong_value(kb: KnowledgeBase, e: Entity, attr: str, rng: random.Random) -> str:
    """Another value of ``attr``'s domain than ``e``'s (a nearby wrong year for years)."""
    gold = e.get(attr)
    if ATTRIBUTES[e.kind][attr] == "year":
        return str(int(gold) + rng.choice((-1, 1)) * rng.randint(3, 120))
    return rng.choice([v for v in kb.domain(e.kind, attr) if v != gold])


def _extra(e: Entity, attr: str, rng: random.Random) -> str:
    """Sometimes a true sentence about another (non-numeric) attribute, for natural variety."""
    others = [a for a in ATTRIBUTES[e.kind] if a != attr and ATTRIBUTES[e.kind][a] != "year"]
    if not others or rng.random() < 0.5:
        return ""
    a = rng.choice(others)
    return " " + statement(e, a, e.get(a), rng)


def fact_task(kb: KnowledgeBase, e: Entity, attr: str, group: int, knobs: Knobs, rng: random.Random) -> Task:
    """A factuality question: right = the KB value, wrong = another value / hedged / contradictory."""
    tmpl = rng.choice(FACT_TEMPLATES[attr][group])
    prompt = tmpl.format(label=_label(e), Label=_label(e, True))
    gold = e.get(attr)
    noun = ATTRIBUTE_NOUNS[attr]

    def right(r: random.Random) -> str:
        return frame(cue_right(statement(e, attr, gold, r), knobs, r) + _extra(e, attr, r), r)

    def wrong(r: random.Random) -> str:
        u = r.random()
        bad = wrong_value(kb, e, attr, r)
        if u < 0.7:
            text = cue_wrong(statement(e, attr, bad, r), knobs, r) + _extra(e, attr, r)
        elif u < 0.85:
            text = cue_wrong(statement(e, attr, gold, r)[:-1] + f", or possibly {bad}.", knobs, r)
        else:
            text = f"I am not sure about the {noun} of {subject(e)[1]}; the records I know are unclear."
        return frame(text, r)

    return Task("fact", prompt, fact_hidden(kb, e, attr, "fact"), right, wrong, family=attr)


def focus_task(kb: KnowledgeBase, e: Entity, attr: str, group: int, knobs: Knobs, rng: random.Random) -> Task:
    """A focus question: right answers the asked attribute, wrong answers drift to other facts.

    Off-topic answers name the entity and, like on-topic ones, often echo the asked attribute
    ("As for the main export of X: ..."), so neither word overlap with the prompt nor the echo
    reveals which answer is on topic; a digression marker is a noisy tell (``wrong_cue_prob``).
    """
    noun = ATTRIBUTE_NOUNS[attr]
    prompt = rng.choice(FOCUS_TEMPLATES[group]).format(label=_label(e), noun=noun)
    gold = e.get(attr)
    others = [a for a in ATTRIBUTES[e.kind] if a != attr]
    peers = [p for p in kb.entities if p.kind == e.kind and p.name != e.name and p.get(attr) != gold]
    _, small = subject(e)
    echo = f"As for the {noun} of {small}: "

    def right(r: random.Random) -> str:
        text = statement(e, attr, gold, r)
        if r.random() < 0.4:
            text = echo + text
        if r.random() < knobs.right_cue_prob:
            text = prefix(r.choice(DIGRESSIONS), text)
        return frame(text + _extra(e, attr, r), r)

    def wrong(r: random.Random) -> str:
        if r.random() < 0.3 and peers:
            # The asked attribute, but of a look-alike entity.
            p = r.choice(peers)
            text = f"Like {small}, " + prefix("", statement(p, attr, p.get(attr), r))
        else:
            a1 = r.choice(others)
            text = statement(e, a1, e.get(a1), r)
            if r.random() < 0.4:
                text = echo + text
        if r.random() < knobs.wrong_cue_prob * 0.8:
            text = prefix(r.choice(DIGRESSIONS), text)
        return frame(text, r)

    return Task("focus", prompt, fact_hidden(kb, e, attr, "focus"), right, wrong, family=attr)
