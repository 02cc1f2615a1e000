"""Render personal content (an answer or a profile post) in a given style.

A *style* maps dimension names to a pole side (0/1) or ``None`` (neutral). Rendering builds a list
of sentences (content facts, then one add-on sentence per marked dimension), applies the tone,
appends the ending sentence and lays the result out as a list or as prose. Every phrase bank below
is free of other dimensions' markers (tested), so the rendered text lands in the intended state on
every dimension; callers still verify with the checkers and resample when a length band is missed.

``k`` (1-3) is the marking intensity: how many marker phrases a marked pole gets. The difficulty
knob lowers it, so high difficulty gives subtler styles.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass

from rlexp.sandbox.aspects import DETAILED_MIN_WORDS, Pole
from rlexp.sandbox.sites import Site
from rlexp.sandbox.text import capitalise, decapitalise, word_count

# ---------------------------------------------------------------------------------------------
# Phrase banks. Clauses are filled with {topic}; none contains a marker of any dimension.
# ---------------------------------------------------------------------------------------------

ANSWER_FACTS: tuple[tuple[str, str], ...] = (
    ("Set aside about {n} minutes a day for {topic}.", "Practise {n} minutes daily."),
    ("Work on one small part of {topic} at a time.", "Focus on one part."),
    ("Keep a short log of what you try and what happens.", "Keep a log."),
    ("Review your progress with {topic} once a week.", "Review weekly."),
    ("Ask a more experienced person to look at your work.", "Get feedback early."),
    ("Repeat the basics of {topic} until they feel natural.", "Repeat the basics."),
    ("Build up slowly instead of doing everything in one weekend.", "Build up slowly."),
    ("Write down one clear goal for {topic} this month.", "Set one goal."),
    ("Take a short break whenever your focus drops.", "Rest when tired."),
    ("Compare your results with your notes from the previous week.", "Compare with last week."),
    ("Save the harder parts of {topic} for when you feel fresh.", "Do hard parts fresh."),
    ("Prepare your space before each session so you can start quickly.", "Prepare your space."),
)
POST_FACTS: tuple[tuple[str, str], ...] = (
    ("I have been working on {topic} for about {n} months.", "{n} months in."),
    ("Most weeks I only have a few free evenings.", "Little free time."),
    ("So far progress has been slower than I hoped.", "Progress is slow."),
    ("My current approach is mostly trial and error.", "Mostly trial and error."),
    ("I would like to see clear progress by the end of the year.", "I want progress."),
    ("Nobody around me is into {topic}, so I learn alone.", "Learning alone."),
    ("Money is a bit tight at the moment.", "Tight budget."),
    ("Last month I tried a new plan, but it did not stick.", "My last plan failed."),
)
POST_TITLES: tuple[str, ...] = (
    "Struggling with {topic}",
    "Stuck with {topic} after a few months",
    "Help with {topic} on a budget",
    "Questions about {topic}",
    "Getting back into {topic}",
    "Slow progress with {topic}",
)

_ANSWER_BANK: dict[str, tuple[str, ...]] = {
    "example": (
        "try ten minutes of {topic} after breakfast",
        "spend one evening a week on {topic}",
        "keep a one-page plan for {topic} on the fridge",
    ),
    "example_short": ("ten minutes after breakfast", "one evening a week", "a plan on the fridge"),
    "rule": (
        "steady practice beats rare long sessions",
        "small changes are easier to keep",
        "master the basics before adding more",
    ),
    "rule_short": ("steady beats intense", "small steps last", "basics first"),
    "experience": (
        "a short log made the biggest difference",
        "going slower at first saved me frustration",
        "early feedback changed everything",
    ),
    "experience_short": ("a log helps", "going slow helps", "feedback helps"),
    "objective": (
        "a short log makes the biggest difference",
        "going slower at first saves frustration",
        "early feedback speeds things up",
    ),
    "objective_short": ("improve with a log", "do better going slow", "gain from feedback"),
    "claim": (
        "daily sessions beat rare long ones",
        "a written plan speeds up beginners",
        "regular review matters most",
    ),
    "claim_short": ("daily beats rare", "plans speed things up", "review matters"),
    "reason": (
        "small steps keep the effort manageable",
        "feedback shows what to fix first",
        "repetition turns skills into habits",
    ),
    "reason_short": ("habits stick", "small steps last", "feedback guides you"),
    "risk": (
        "doing too much at once leads to burnout",
        "skipping the basics causes trouble later",
        "cheap shortcuts cost more later",
    ),
    "risk_short": ("do not rush", "skip no basics", "avoid shortcuts"),
    "confident": (
        "{topic} is very learnable",
        "steady effort reliably pays off",
        "almost everyone gets the hang of it",
    ),
    "alt": (
        "an evening course helps if self-study stalls",
        "a local group adds structure",
        "a good book can replace a course",
    ),
    "alt2": ("self-study costs less", "a mentor speeds things up", "online forums are free"),
    "alt_short": ("try a course", "join a group", "use a book"),
    "single": (
        "pick one routine and repeat it weekly",
        "choose one resource and finish it",
        "commit to one small goal this month",
    ),
    "single_short": ("one routine", "one resource", "one goal"),
    "question": (
        "What part feels hardest right now?",
        "How much time can you give it weekly?",
        "Which of these will you try first?",
    ),
    "question_short": ("Which will you try first?", "Where will you start?", "Ready to begin?"),
    "closing": (
        "That should give you a solid start.",
        "Small steps like these add up.",
        "Progress will follow from there.",
    ),
    "closing_short": ("Good luck.", "Enjoy the process.", "Progress will come."),
    "intro": ("A few pointers:", "Here is a plan:", "Some suggestions:"),
}
_POST_BANK: dict[str, tuple[str, ...]] = {
    **_ANSWER_BANK,
    "example": (
        "last week I skipped two sessions of {topic} in a row",
        "yesterday I spent an hour on {topic} and felt lost",
        "on Sunday I tried a new routine for {topic} and gave up halfway",
    ),
    "example_short": ("last week I skipped twice", "yesterday I felt lost"),
    "rule": (
        "I try to practise at the same time each day",
        "I avoid buying new gear before I need it",
        "I only change one thing at a time",
    ),
    "rule_short": ("same time daily", "one change at a time"),
    "experience": (
        "{topic} went badly for me the first time",
        "I gave up on {topic} after a few weeks",
        "the free videos on {topic} did not help much",
    ),
    "experience_short": ("it went badly", "I gave up early"),
    "objective": (
        "seem to manage {topic} without much trouble",
        "pick up {topic} faster than I have",
        "get stuck at the same stage of {topic}",
    ),
    "objective_short": ("seem to manage fine", "get stuck here"),
    "claim": (
        "daily practice is the key, but that has not worked for me",
        "beginners need a written plan, which I do not have yet",
    ),
    "reason": ("I want to enjoy {topic} more", "I keep wasting my limited time", "I want to stop guessing"),
    "reason_short": ("I want to enjoy it", "time is short"),
    "risk": ("I might hurt my progress by rushing {topic}", "cheap gear for {topic} could let me down"),
    "risk_short": ("I may rush it", "cheap gear may fail"),
    "confident": ("the basics of {topic} look manageable", "I can handle the hard parts with some help"),
    "alt": ("I could join a class instead of learning alone", "a book might work better than videos"),
    "alt_short": ("I could join a class", "a book might work"),
    "single": ("stay with one plan for {topic}", "focus on one skill"),
    "single_short": ("one plan", "one skill"),
    "question": (
        "What would you change first?",
        "Where should I start with {topic}?",
        "Has anyone found a way around this?",
    ),
    "question_short": ("Any ideas?", "Where do I start?"),
    "closing": ("Thanks in advance.", "Any pointers are appreciated.", "Grateful for any advice."),
    "closing_short": ("Thanks.", "Thanks in advance."),
    "intro": ("My situation:", "Some details:", "Background:"),
}

RESOURCE_NAMES = (
    "Harlow",
    "Ellery",
    "Penwick",
    "Marston",
    "Caddell",
    "Oakridge",
    "Whitlow",
    "Fenner",
    "Brandt",
    "Lyle",
)
RESOURCE_FORMS = ("Handbook of", "Guide to", "Field Notes on", "Companion to", "Primer on")
_FORMAL_PREFIXES = ("Furthermore, ", "Accordingly, ", "Consequently, ")
_CASUAL_PREFIXES = ("Honestly, ", "Yeah, ", "Folks, ")

# Dimensions rendered as one add-on sentence, in a fixed order (the order is then shuffled).
ADDON_DIMS: tuple[str, ...] = ("example", "jargon", "voice", "justification", "caution", "options")


class Bank:
    """The clause bank of one text, filled with its topic/number lazily.

    Each key's options are rotated by a per-text offset, so ``bank[key][0]`` differs between
    texts; only the keys a rendering actually uses are ever filled (rendering tens of thousands
    of posts stays fast).
    """

    __slots__ = ("_src", "_topic", "_n", "_seed", "_cache")

    def __init__(self, src: Mapping[str, tuple[str, ...]], topic: str, n: int, seed: int) -> None:
        self._src, self._topic, self._n, self._seed = src, topic, n, seed
        self._cache: dict[str, tuple[str, ...]] = {}

    def __getitem__(self, key: str) -> tuple[str, ...]:
        got = self._cache.get(key)
        if got is None:
            opts = self._src[key]
            off = (self._seed + _KEY_SALT[key]) % len(opts)
            got = tuple(_fill(o, self._topic, self._n) for o in (*opts[off:], *opts[:off]))
            self._cache[key] = got
        return got


@dataclass(frozen=True)
class Content:
    """What a personal text is about: a topic on a site, fact sentences and a clause bank."""

    kind: str  # "answer" | "post"
    topic: str
    site: Site
    facts: tuple[tuple[str, str], ...]  # (full, short) sentences in presentation order
    bank: Bank
    resource: str
    resource2: str
    title: str = ""  # post title (posts only)


def _fill(template: str, topic: str, n: int) -> str:
    return template.replace("{topic}", topic).replace("{n}", str(n))


_KEY_SALT = {k: 7919 * i for i, k in enumerate(sorted(set(_ANSWER_BANK) | set(_POST_BANK)))}


def make_resource(rng: random.Random, site: Site) -> str:
    """A fictional reference work for the site's subject ("the Harlow Guide to Home Cooking")."""
    return f"the {rng.choice(RESOURCE_NAMES)} {rng.choice(RESOURCE_FORMS)} {site.subject}"


def make_content(kind: str, topic: str, site: Site, rng: random.Random) -> Content:
    """Draw the facts, clauses and references of one answer or post about ``topic``."""
    n = rng.choice((10, 15, 20, 25, 30, 40)) if kind == "answer" else rng.choice((2, 3, 4, 6, 8))
    pool = ANSWER_FACTS if kind == "answer" else POST_FACTS
    # Renderings use at most six facts; sampling them is cheaper than shuffling the pool.
    facts = tuple((_fill(pool[i][0], topic, n), _fill(pool[i][1], topic, n)) for i in rng.sample(range(len(pool)), 6))
    bank = Bank(_ANSWER_BANK if kind == "answer" else _POST_BANK, topic, n, rng.getrandbits(30))
    r1 = make_resource(rng, site)
    # The second reference is cited in passing, so it gets a short form ("the Ellery notes").
    r2 = f"the {rng.choice([x for x in RESOURCE_NAMES if x not in r1])} notes"
    title = _fill(rng.choice(POST_TITLES), topic, n) if kind == "post" else ""
    return Content(kind, topic, site, facts, bank, r1, r2, title)


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
