"""Verifiable general tasks: KB facts, focus, arithmetic, constraints, safety and ties.

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

from rlexp.sandbox import constraints as cons
from rlexp.sandbox import safety as saf
from rlexp.sandbox.kb import ATTRIBUTE_NOUNS, ATTRIBUTES, Entity, KnowledgeBase
from rlexp.sandbox.knobs import Knobs
from rlexp.sandbox.text import capitalise

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


# ---------------------------------------------------------------------------------------------
# Knowledge-base facts and focus
# ---------------------------------------------------------------------------------------------

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


def _wrong_value(kb: KnowledgeBase, e: Entity, attr: str, rng: random.Random) -> str:
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
        bad = _wrong_value(kb, e, attr, r)
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


# ---------------------------------------------------------------------------------------------
# Arithmetic
# ---------------------------------------------------------------------------------------------

_NAMES = ("Ada", "Bruno", "Cleo", "Dario", "Elsa", "Farid", "Greta", "Hugo", "Ines", "Jonah", "Kira", "Lev")


@dataclass(frozen=True)
class MathTemplate:
    """A word/expression problem: ``steps`` lists (expression, value) in computation order."""

    text: str
    compute: Callable[[int, int, int], list[tuple[str, int]]]
    ranges: tuple[tuple[int, int], tuple[int, int], tuple[int, int]]


def _s(expr: str, val: int) -> tuple[str, int]:
    return expr, val


MATH_TEMPLATES: tuple[tuple[MathTemplate, ...], tuple[MathTemplate, ...]] = (
    (
        MathTemplate(
            "What is {a} + {b} × {c}?",
            lambda a, b, c: [_s(f"{b} × {c}", b * c), _s(f"{a} + {b * c}", a + b * c)],
            ((2, 60), (2, 12), (2, 12)),
        ),
        MathTemplate(
            "What is ({a} + {b}) × {c}?",
            lambda a, b, c: [_s(f"{a} + {b}", a + b), _s(f"{a + b} × {c}", (a + b) * c)],
            ((2, 30), (2, 30), (2, 9)),
        ),
        MathTemplate(
            "What is {a} × {b} − {c}?",
            lambda a, b, c: [_s(f"{a} × {b}", a * b), _s(f"{a * b} - {c}", a * b - c)],
            ((3, 15), (3, 15), (1, 9)),
        ),
        MathTemplate(
            "A crate holds {a} apples. How many apples are in {b} crates?",
            lambda a, b, c: [_s(f"{a} × {b}", a * b)],
            ((6, 40), (2, 15), (0, 0)),
        ),
        MathTemplate(
            "{name} had {a} stamps and gave away {b}. How many stamps are left?",
            lambda a, b, c: [_s(f"{a} - {b}", a - b)],
            ((40, 400), (3, 39), (0, 0)),
        ),
        MathTemplate(
            "A train travels {a} km each hour. How far does it go in {b} hours?",
            lambda a, b, c: [_s(f"{a} × {b}", a * b)],
            ((20, 95), (2, 9), (0, 0)),
        ),
        MathTemplate(
            "A hall has {a} rows of {b} seats and {c} extra seats. How many seats are there?",
            lambda a, b, c: [_s(f"{a} × {b}", a * b), _s(f"{a * b} + {c}", a * b + c)],
            ((3, 20), (4, 20), (2, 30)),
        ),
    ),
    (
        MathTemplate(
            "Calculate {a} plus {b} times {c}.",
            lambda a, b, c: [_s(f"{b} × {c}", b * c), _s(f"{a} + {b * c}", a + b * c)],
            ((2, 60), (2, 12), (2, 12)),
        ),
        MathTemplate(
            "Compute the product of {a} and {b}, then add {c}.",
            lambda a, b, c: [_s(f"{a} × {b}", a * b), _s(f"{a * b} + {c}", a * b + c)],
            ((2, 25), (2, 25), (1, 50)),
        ),
        MathTemplate(
            "There are {a} boxes with {b} pens each. How many pens are there in total?",
            lambda a, b, c: [_s(f"{a} × {b}", a * b)],
            ((2, 30), (3, 25), (0, 0)),
        ),
        MathTemplate(
            "If {name} saves {a} coins per week, how many coins does {name} have after {b} weeks?",
            lambda a, b, c: [_s(f"{a} × {b}", a * b)],
            ((2, 40), (2, 20), (0, 0)),
        ),
        MathTemplate(
            "Subtract {b} from {a} and then double the result.",
            lambda a, b, c: [_s(f"{a} - {b}", a - b), _s(f"2 × {a - b}", 2 * (a - b))],
            ((30, 200), (2, 29), (0, 0)),
        ),
        MathTemplate(
            "What do you get when you multiply {a} by {b} and subtract {c}?",
            lambda a, b, c: [_s(f"{a} × {b}", a * b), _s(f"{a * b} - {c}", a * b - c)],
            ((3, 15), (3, 15), (1, 9)),
        ),
        MathTemplate(
            "A baker makes {a} loaves a day for {b} days and sells {c}. How many loaves remain?",
            lambda a, b, c: [_s(f"{a} × {b}", a * b), _s(f"{a * b} - {c}", a * b - c)],
            ((10, 40), (2, 7), (1, 19)),
        ),
    ),
)
_CLOSERS = ("So the answer is {v}.", "The answer is {v}.", "That gives {v}.")


def _work(steps: Sequence[tuple[str, int]]) -> str:
    return ", and ".join(f"{e} = {v}" for e, v in steps) + "."


def math_task(group: int, knobs: Knobs, rng: random.Random) -> Task:
    """An arithmetic problem with shown work; wrong answers slip, mis-state or guess."""
    tmpl = rng.choice(MATH_TEMPLATES[group])
    (a0, a1), (b0, b1), (c0, c1) = tmpl.ranges
    a, b, c = rng.randint(a0, a1), rng.randint(b0, b1), rng.randint(c0, c1)
    name = rng.choice(_NAMES)
    prompt = tmpl.text.format(a=a, b=b, c=c, name=name)
    steps = tmpl.compute(a, b, c)
    answer = steps[-1][1]

    def right(r: random.Random) -> str:
        text = capitalise(_work(steps)) + " " + r.choice(_CLOSERS).format(v=answer)
        return frame(cue_right(text, knobs, r), r)

    def wrong(r: random.Random) -> str:
        u = r.random()
        delta = r.choice((-10, -2, -1, 1, 2, 10))
        bad = answer + delta if answer + delta >= 0 else answer + abs(delta)
        if u < 0.45:
            # A slip in the last step, carried consistently into the stated answer.
            bad_steps = [*steps[:-1], (steps[-1][0], bad)]
            text = capitalise(_work(bad_steps)) + " " + r.choice(_CLOSERS).format(v=bad)
            text = cue_wrong(text, knobs, r)
        elif u < 0.75:
            # Correct work, wrong final statement.
            text = cue_wrong(capitalise(_work(steps)) + " " + r.choice(_CLOSERS).format(v=bad), knobs, r)
        else:
            text = prefix(r.choice(HEDGES + BLUFFS), f"The answer is about {bad}, without working it all out.")
        return frame(text, r)

    return Task("math", prompt, {"task": "math", "answer": answer}, right, wrong, family=tmpl.text)


# ---------------------------------------------------------------------------------------------
# Instruction constraints
# ---------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------
# Safety
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
# Ties: several valid answers (tied) vs exactly one (ref)
# ---------------------------------------------------------------------------------------------

TIES_PHRASES: dict[str, tuple[tuple[str, str], tuple[str, str]]] = {
    # family: ((eval tied, eval ref), (train tied, train ref))
    "prime": (
        ("Name a prime number between {a} and {b}.", "Name the largest prime number below {b}."),
        ("Give any prime between {a} and {b}.", "Give the biggest prime under {b}."),
    ),
    "multiple": (
        ("Name a multiple of {k} between {a} and {b}.", "Name the smallest multiple of {k} greater than {a}."),
        ("Give one number between {a} and {b} that {k} divides evenly.", "Give the first multiple of {k} after {a}."),
    ),
    "divisor": (
        (
            "Name a divisor of {n} that is greater than 1 and less than {n}.",
            "Name the largest divisor of {n} that is less than {n}.",
        ),
        ("Tell me one number other than 1 and {n} that divides {n}.", "Tell me the biggest proper divisor of {n}."),
    ),
    "square": (
        ("Name a perfect square between {a} and {b}.", "Name the smallest perfect square greater than {a}."),
        ("Give a square number from {a} to {b}.", "Give the first square number above {a}."),
    ),
    "town": (
        ("Name a town in the {region} region.", "Name the oldest town in the {region} region."),
        ("Give one town located in {region}.", "Which town in {region} is the oldest?"),
    ),
    "river_town": (
        ("Name a town on the {river} river.", "Name the oldest town on the {river} river."),
        ("Give one town that stands on the {river}.", "Which town on the {river} is the oldest?"),
    ),
}
_TIE_FORMATS = ("{x}", "{x}.", "{x}.", "It is {x}.")


def _is_prime(n: int) -> bool:
    return n > 1 and all(n % d for d in range(2, int(n**0.5) + 1))


def _ties_sets(
    family: str, kb: KnowledgeBase, rng: random.Random
) -> tuple[dict[str, Any], list[Any], list[Any], list[Any], list[Any]]:
    """Parameters, tied-valid, tied-invalid, ref-valid, ref-invalid for one ties family."""
    if family == "prime":
        a = rng.randint(10, 80)
        b = a + rng.randint(12, 22)
        rng_all = list(range(a + 1, b))
        valid = [x for x in rng_all if _is_prime(x)]
        best = max(x for x in range(2, b) if _is_prime(x))
        return (
            {"a": a, "b": b},
            valid,
            [x for x in rng_all if not _is_prime(x)],
            [best],
            [x for x in rng_all if x != best],
        )
    if family == "multiple":
        k = rng.randint(3, 9)
        a = rng.randint(10, 60)
        b = a + k * rng.randint(3, 5) + 1
        rng_all = list(range(a + 1, b))
        valid = [x for x in rng_all if x % k == 0]
        first = min(valid)
        return (
            {"k": k, "a": a, "b": b},
            valid,
            [x for x in rng_all if x % k],
            [first],
            [x for x in rng_all if x != first],
        )
    if family == "divisor":
        n = rng.choice([m for m in range(12, 121) if sum(1 for d in range(2, m) if m % d == 0) >= 3])
        proper = [d for d in range(2, n) if n % d == 0]
        non = [d for d in range(2, n) if n % d]
        return {"n": n}, proper, non, [max(proper)], [d for d in range(2, n) if d != max(proper)]
    if family == "square":
        a = rng.randint(10, 150)
        b = a + rng.randint(45, 90)
        rng_all = list(range(a + 1, b))
        valid = [x for x in rng_all if int(x**0.5) ** 2 == x]
        first = min(valid)
        return (
            {"a": a, "b": b},
            valid,
            [x for x in rng_all if int(x**0.5) ** 2 != x],
            [first],
            [x for x in rng_all if x != first],
        )
    attr = "region" if family == "town" else "river"
    all_towns = [e for e in kb.entities if e.kind == "town"]
    values = sorted({e.get(attr) for e in all_towns})
    value = rng.choice([v for v in values if sum(e.get(attr) == v for e in all_towns) >= 3])
    towns = [e for e in all_towns if e.get(attr) == value]
    oldest = min(towns, key=lambda t: (int(t.get("founded")), t.name)).name
    others = [t.name for t in all_towns if t.get(attr) != value]
    return (
        {attr: value},
        [t.name for t in towns],
        others,
        [oldest],
        [t.name for t in towns if t.name != oldest] + others,
    )


def ties_tasks(
    family: str, group: int, kb: KnowledgeBase, rng: random.Random, n_tied: int = 3, n_wrong: int = 5
) -> tuple[Task, Task]:
    """The (ref, tied) pair of one ties prompt number; answers are tiny, as in RB2 Ties."""
    params, t_valid, t_invalid, r_valid, r_invalid = _ties_sets(family, kb, rng)
    tied_text, ref_text = TIES_PHRASES[family][group]
    kind = "name" if family in ("town", "river_town") else "number"
    universe = sorted(e.name for e in kb.entities if e.kind == "town") if kind == "name" else None

    def make(text: str, valid: list[Any], invalid: list[Any], n_right: int) -> Task:
        prompt = text.format(**params)
        exclude = [int(v) for v in params.values() if isinstance(v, int)]
        hidden: dict[str, Any] = {
            "task": "set_member",
            "type": kind,
            "valid": [str(v) for v in valid],
            "exclude": exclude,
        }
        if universe is not None:
            hidden["universe"] = universe
        # Near misses first: invalid answers closest to the valid ones are the interesting errors.
        inv = sorted(invalid, key=lambda x: (min(abs(x - v) for v in valid), x)) if kind == "number" else list(invalid)
        if kind == "name":
            rng.shuffle(inv)
        inv = [x for x in inv if x not in exclude][: max(n_wrong * 2, n_wrong)]
        rights = rng.sample(valid, min(n_right, len(valid)))
        wrongs = rng.sample(inv, min(n_wrong, len(inv)))

        def fmt(x: Any) -> str:
            return rng.choice(_TIE_FORMATS).format(x=x)

        t = Task("ties", prompt, hidden, lambda r: fmt(r.choice(valid)), lambda r: fmt(r.choice(inv)), family=family)
        t.right_answers = [fmt(x) for x in rights]
        t.wrong_answers = [fmt(x) for x in wrongs]
        return t

    return make(ref_text, r_valid, r_invalid, 1), make(tied_text, t_valid, t_invalid, n_tied)
