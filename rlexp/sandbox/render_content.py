"""What a personal text (an answer or a profile post) says, before it is rendered in a style.

:func:`make_content` draws a text's fact sentences, its clause bank and the references it may
cite; :mod:`rlexp.sandbox.render` turns that content into text of a given style. The phrase banks
below are filled with {topic}/{n} and, like the renderer's lead-ins, contain no marker of any
dimension (tested), so the style alone decides which dimension states a text shows.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass

from rlexp.sandbox.sites import Site

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
