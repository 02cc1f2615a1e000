"""Render personal content (an answer or a profile post) in a given style.

A *style* maps dimension names to a pole side (0/1) or ``None`` (neutral). Rendering builds a list
of sentences (content facts, then one add-on sentence per marked dimension), applies the tone,
appends the ending sentence and lays the result out as a list or as prose. The content (facts and
clause bank) comes from :mod:`rlexp.sandbox.render_content`. Every phrase bank there and every
lead-in here is free of other dimensions' markers (tested), so the rendered text lands in the
intended state on every dimension; callers still verify with the checkers and resample when a
length band is missed.

``k`` (1-3) is the marking intensity: how many marker phrases a marked pole gets. The difficulty
knob lowers it, so high difficulty gives subtler styles.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from rlexp.sandbox.aspects import DETAILED_MIN_WORDS, Pole
from rlexp.sandbox.render_content import Content
from rlexp.sandbox.text import capitalise, decapitalise, word_count

# Tone markers: connectors make a sentence formal, interjections make it casual.
_FORMAL_PREFIXES = ("Furthermore, ", "Accordingly, ", "Consequently, ")
_CASUAL_PREFIXES = ("Honestly, ", "Yeah, ", "Folks, ")

# Dimensions rendered as one add-on sentence, in a fixed order (the order is then shuffled).
ADDON_DIMS: tuple[str, ...] = ("example", "jargon", "voice", "justification", "caution", "options")

# Lead-ins per pole (answer, post). Each carries one marker of its pole; drawing them at random
# gives every pole several surface forms, so a model has to learn the pole, not one phrase.
_LEADS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "example.0": (("For example, ", "For instance, ", "Picture this: ", "E.g., "),) * 2,
    "example.1": (("As a rule, ", "In general, ", "Generally speaking, ", "As a rule of thumb, "),) * 2,
    "jargon.0": (("In plain words", "In everyday terms", "Put simply", "In simple terms", "Plainly put"),) * 2,
    "jargon.1": (
        ("Technically, it comes down to {t}.", "The key concept here is {t}.", "It all hinges on {t}."),
        ("I keep reading about {t} but I am unsure how to use it.", "Everyone mentions {t} and I do not get it."),
    ),
    "voice.0": (
        (
            "When I tried this myself, ",
            "In my experience, ",
            "What worked for me: ",
            "I found that ",
            "When I started, ",
        ),
        ("When I tried this before, ", "In my experience, ", "I found that ", "When I started, "),
    ),
    "voice.1": (
        ("Most people find that ", "In most cases, ", "On average, ", "Typically, ", "Many people find that "),
        ("Most people ", "Typically, beginners ", "On average, learners ", "In most cases, people "),
    ),
    "justification.0": (("According to {r}, ", "As noted in {r}, ", "As explained in {r}, ", "As described in {r}, "),)
    * 2,
    "justification.1": (
        ("The reason is that ", "This works because ", "It helps, and the reason is that "),
        ("The reason is that ", "That is why I ask: "),
    ),
    "caution.0": (("Be careful: ", "Watch out: ", "A word of caution: ", "One risk is that "),) * 2,
    "caution.1": (("No need to worry: ", "Nothing to worry about: ", "Go in with confidence: "),) * 2,
    "options.0": (("Alternatively, ", "Another option: ", "On the other hand, "),) * 2,
    "options.1": (
        ("The best option is to ", "The clear choice is to ", "The one thing to do is to ", "Just go with one plan: "),
        ("The best option is to ", "The clear choice is to ", "The one thing to do is to "),
    ),
}


def _addon(dim: str, side: int, k: int, brief: bool, c: Content, rng: random.Random) -> str:
    """The add-on sentence that marks pole ``side`` of ``dim`` with intensity ``k``.

    ``k >= 2`` adds a second marker phrase of the same pole (a short tail, not a new clause).
    Brief answers use short fixed forms so that they stay within the brief word budget.
    """
    b = c.bank
    pick = rng.choice
    post = c.kind == "post"
    j = c.site.jargon
    two = k >= 2 and not brief
    lead = pick(_LEADS[f"{dim}.{side}"][1 if post else 0])
    if dim == "example":
        if side == 0:
            if brief:
                return f"For example, {pick(b['example_short'])}."
            return f"{lead}{b['example'][0]}" + ("; for instance, on a quiet Sunday." if two else ".")
        if brief:
            return f"As a rule, {pick(b['rule_short'])}."
        return f"{lead}{b['rule'][0]}" + (", and in general that holds." if two else ".")
    if dim == "jargon":
        if side == 0:
            if brief:
                return f"Put simply: {j[0][1]}."
            lead = f"{lead} and in everyday terms" if two and lead != "In everyday terms" else lead
            if two and lead == "In everyday terms":
                lead = "In plain words and in everyday terms"
            return f"{lead}, I just want help with {j[0][1]}." if post else f"{lead}, it is about {j[0][1]}."
        terms = f"{j[0][0]} and {j[1][0]}" if two else j[0][0]
        if brief:
            return f"Mind the {terms}."
        return lead.format(t=terms)
    if dim == "voice":
        if side == 0:
            if brief:
                return f"I found that {pick(b['experience_short'])}."
            return f"{lead}{b['experience'][0]}." + (" In my experience, patience pays." if two else "")
        if brief:
            return f"Most people {pick(b['objective_short'])}."
        return f"{lead}{b['objective'][0]}" + (", in most cases." if two and "most cases" not in lead else ".")
    if dim == "justification":
        if side == 0:
            if brief:
                return f"According to {c.resource.split(' ')[1]}, {pick(b['claim_short'])}."
            return lead.format(r=c.resource) + b["claim"][0] + (f", as noted in {c.resource2}." if two else ".")
        if brief:
            return f"The reason is: {pick(b['reason_short'])}."
        return f"{lead}{b['reason'][0]}" + ("; that is why it works." if two and not post else ".")
    if dim == "caution":
        if side == 0:
            if brief:
                return f"Be careful: {pick(b['risk_short'])}."
            return f"{lead}{b['risk'][0]}" + (", so watch out for rushing." if two else ".")
        if brief:
            return "No need to worry."
        return f"{lead}{b['confident'][0]}." + (" It is easy once you start." if two else "")
    if dim == "options":
        if side == 0:
            if brief:
                return f"Alternatively, {pick(b['alt_short'])}."
            return f"{lead}{b['alt'][0]}" + (f"; on the other hand, {b['alt2'][0]}." if two else ".")
        if brief:
            return f"The best option is {pick(b['single_short'])}."
        return f"{lead}{b['single'][0]}" + (", so just go with that." if two else ".")
    raise ValueError(f"no add-on for dimension {dim!r}")


def _apply_tone(sentences: list[str], side: int | None, k: int, rng: random.Random) -> list[str]:
    """Mark ``k`` sentences as formal (connectors) or casual (interjections, '!')."""
    if side is None or not sentences:
        return sentences
    out = list(sentences)
    idx = list(range(1, len(out))) or [0]
    rng.shuffle(idx)
    if side == 0:
        for i, prefix in zip(idx[:k], _FORMAL_PREFIXES, strict=False):
            out[i] = prefix + decapitalise(out[i])
        return out
    # Casual: an interjection on the first sentence, then '!' and another interjection.
    out[0] = rng.choice((_CASUAL_PREFIXES[0], _CASUAL_PREFIXES[2])) + decapitalise(out[0])
    if k >= 2 and idx:
        i = idx[0]
        if out[i].endswith("."):
            out[i] = out[i][:-1] + "!"
    if k >= 3 and len(idx) > 1:
        i = idx[1]
        out[i] = _CASUAL_PREFIXES[1] + decapitalise(out[i])
    return out


def render(content: Content, style: Mapping[str, int | None], k: int, rng: random.Random) -> str:
    """Render ``content`` so that each dimension lands in ``style``'s state (see module doc).

    Dimensions missing from ``style`` are neutral; the binary ones (format, ending) default to
    prose and a closing statement.
    """
    length = style.get("length")
    brief = length == 0
    facts = content.facts
    addons = [_addon(d, s, k, brief, content, rng) for d in ADDON_DIMS if (s := style.get(d)) is not None]
    if brief:
        # One short fact (the shortest of three) when several add-ons already carry the answer, so
        # brevity stays possible.
        shortest = min(facts[:3], key=lambda f: (len(f[1]), f[1]))[1]
        body = [facts[0][1], facts[1][1]] if len(addons) <= 1 else [shortest]
    elif length == 1:
        body = [f[0] for f in facts[:3]]
    else:
        body = [f[0] for f in facts[: 2 if len(addons) <= 2 else 1]]
    rng.shuffle(addons)
    b = content.bank
    if style.get("ending", 1) == 0:
        ending = b["question_short"][0] if brief else b["question"][0]
    else:
        ending = b["closing_short"][0] if brief else b["closing"][0]
    as_list = style.get("format", 1) == 0
    target = DETAILED_MIN_WORDS + rng.randint(0, 12) if length == 1 else 0
    n_facts = len(body)
    while True:
        sentences = _apply_tone(body + addons, style.get("tone"), 1 if brief else k, random.Random(rng.getrandbits(64)))
        text = _layout(content, sentences, ending, as_list, brief, rng.random())
        if length != 1 or word_count(text) >= target or n_facts >= len(facts):
            return text
        body.append(facts[n_facts][0])
        n_facts += 1


def _layout(content: Content, sentences: list[str], ending: str, as_list: bool, brief: bool, u: float) -> str:
    head = f"{content.title}\n" if content.title else ""
    if as_list:
        intro = "" if brief else content.bank["intro"][int(u * len(content.bank["intro"]))] + "\n"
        items = "\n".join(f"- {capitalise(s)}" for s in sentences)
        return f"{head}{intro}{items}\n{ending}"
    return head + " ".join([*sentences, ending])


def render_for_pole(content: Content, pole: Pole, satisfy: bool, rng: random.Random, k: int = 1) -> str:
    """Render ``content`` so that it satisfies ``pole`` (or violates it with the opposite pole).

    Every other dimension stays neutral (prose and a closing statement for the binary ones).
    """
    return render(content, {pole.dim: pole.side if satisfy else 1 - pole.side}, k, rng)
