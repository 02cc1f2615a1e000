"""Personal rubric aspects: dimensions with two opposite poles, each checkable on a text.

A *dimension* (format, length, tone, ...) has two *poles* ("Uses a bulleted list" vs "Writes in
flowing prose"). A text is in state 0 (first pole), 1 (second pole) or ``None`` (neither) on each
dimension; the state is computed by cheap lexical/format rules so that it is robust to free-form
text from a tiny policy. Most dimensions have a neutral state (no marker of either pole), so a
violation can be subtle (neutral) or blatant (the opposite pole); format and ending are binary.

Why opposite poles: across users both poles of most dimensions are preferred equally often, so a
scorer that does not know the user cannot beat chance on them; a few dimensions have a majority
pole (``users.MAJORITY_POLES``), the part of a user's taste that is common to most users.

Marker lexicons of different dimensions are disjoint (tested), so rendering one pole never moves
another dimension.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from rlexp.sandbox.sites import JARGON_TERMS
from rlexp.sandbox.text import clean, phrase_pattern, word_count

BRIEF_MAX_WORDS = 30
DETAILED_MIN_WORDS = 60

# Marker lexicons (lower case). Each phrase belongs to exactly one lexicon.
LEXICONS: dict[str, tuple[str, ...]] = {
    "formal": ("it is advisable", "one should", "furthermore", "accordingly", "consequently", "kindly note"),
    "casual": (
        "honestly",
        "pretty much",
        "super",
        "kinda",
        "gonna",
        "awesome",
        "no biggie",
        "yeah",
        "folks",
        "don't",
        "it's",
        "you'll",
        "that's",
        "you're",
        "can't",
        "won't",
        "i'm",
        "i've",
        "let's",
    ),
    "example": ("for example", "for instance", "e.g.", "say you", "picture this"),
    "rule": ("as a rule", "in general", "rule of thumb", "generally speaking"),
    "jargon": JARGON_TERMS,
    "plain": ("in plain words", "in everyday terms", "plainly put", "put simply", "in simple terms"),
    "experience": (
        "when i tried",
        "in my experience",
        "i once",
        "what worked for me",
        "i learned the hard way",
        "i found that",
        "when i started",
    ),
    "objective": ("most people", "in most cases", "on average", "many people find", "typically"),
    "source": ("according to", "as noted in", "as described in", "source:", "as explained in"),
    "reason": ("the reason is", "this works because", "that is why", "which explains why"),
    "risk": ("be careful", "watch out", "one risk", "the main risk", "caveat", "careful not to", "a word of caution"),
    "confident": ("no need to worry", "nothing to worry about", "it is easy", "you will be fine", "with confidence"),
    "compare": ("on the other hand", "alternatively", "another option", "pros and cons", "the trade-off"),
    "single": (
        "the best option is",
        "the clear choice is",
        "just go with",
        "the one thing to do is",
        "my single recommendation",
    ),
}

_ALL_PHRASES: dict[str, str] = {p: name for name, ps in LEXICONS.items() for p in ps}
_MARKER_RE = phrase_pattern(_ALL_PHRASES)
_LIST_ITEM_RE = re.compile(r"^\s*(?:[-*\u2022]|\d{1,2}[.)])\s+\S", re.MULTILINE)
_TRAILING = " \t\r\n\"')]}*_"


@dataclass(frozen=True)
class Pole:
    """One pole of a dimension: ``title`` is the canonical rubric aspect text."""

    dim: str
    side: int
    title: str

    @property
    def key(self) -> str:
        return f"{self.dim}.{self.side}"

    def check(self, text: str) -> bool:
        """True when ``text`` satisfies this pole."""
        return dimension_state(self.dim, text) == self.side

    def score(self, text: str) -> float:
        """1 if satisfied, 0.5 if the text is neutral on this dimension, 0 if it shows the opposite pole."""
        state = dimension_state(self.dim, text)
        return 1.0 if state == self.side else 0.5 if state is None else 0.0


@dataclass(frozen=True)
class Dimension:
    """A rubric dimension with two opposite poles; ``binary`` means no neutral state exists."""

    name: str
    poles: tuple[Pole, Pole]
    binary: bool = False

    def opposite(self, side: int) -> Pole:
        return self.poles[1 - side]


def _dim(name: str, first: str, second: str, binary: bool = False) -> Dimension:
    return Dimension(name, (Pole(name, 0, first), Pole(name, 1, second)), binary)


DIMENSIONS: tuple[Dimension, ...] = (
    _dim("format", "Uses a bulleted list", "Writes in flowing prose", binary=True),
    _dim("length", "Keeps the answer brief", "Gives a detailed, thorough answer"),
    _dim("tone", "Uses a formal, professional tone", "Uses a casual, friendly tone"),
    _dim("example", "Gives a concrete example", "States general rules of thumb"),
    _dim("jargon", "Avoids jargon and uses plain language", "Uses precise technical terminology"),
    _dim("voice", "Shares a personal experience", "Keeps an objective, impersonal voice"),
    _dim("ending", "Ends with a question to the reader", "Ends with a clear concluding statement", binary=True),
    _dim("justification", "Cites a source or reference", "Explains the reasoning behind the advice"),
    _dim("caution", "Points out risks and caveats", "Keeps a confident, reassuring framing"),
    _dim("options", "Compares several alternatives", "Commits to a single clear recommendation"),
)
DIMS_BY_NAME: dict[str, Dimension] = {d.name: d for d in DIMENSIONS}
POLES: tuple[Pole, ...] = tuple(p for d in DIMENSIONS for p in d.poles)
POLES_BY_TITLE: dict[str, Pole] = {p.title: p for p in POLES}
_TITLE_LOOKUP: dict[str, Pole] = {p.title.lower(): p for p in POLES}

# Which lexicon pair decides each marker-based dimension: (first pole, second pole).
_MARKER_DIMS: dict[str, tuple[str, str]] = {
    "tone": ("formal", "casual"),
    "example": ("example", "rule"),
    "jargon": ("plain", "jargon"),
    "voice": ("experience", "objective"),
    "justification": ("source", "reason"),
    "caution": ("risk", "confident"),
    "options": ("compare", "single"),
}


def pole_for_title(title: str) -> Pole:
    """The pole whose canonical title is ``title`` (case-insensitive); KeyError if unknown."""
    return _TITLE_LOOKUP[title.strip().lower()]


@lru_cache(maxsize=65536)
def marker_counts(text: str) -> Mapping[str, int]:
    """How many markers of each lexicon ``text`` contains (plus ``"!"`` counted as casual)."""
    low = clean(text).lower()
    counts = dict.fromkeys(LEXICONS, 0)
    for m in _MARKER_RE.findall(low):
        counts[_ALL_PHRASES[m]] += 1
    counts["casual"] += low.count("!")
    return counts


def _marker_state(first: int, second: int) -> int | None:
    if first > 0 and second == 0:
        return 0
    if second > 0 and first == 0:
        return 1
    return None


def list_items(text: str) -> int:
    """Lines that start like a list item (``-``, ``*``, ``•``, ``1.``, ``2)``)."""
    return len(_LIST_ITEM_RE.findall(text))


def dimension_state(dim: str, text: str) -> int | None:
    """State of ``text`` on dimension ``dim``: 0 (first pole), 1 (second pole) or None (neutral)."""
    if dim == "format":
        n = list_items(text)
        return 0 if n >= 2 else 1 if n == 0 else None
    if dim == "length":
        n = word_count(text)
        return 0 if n <= BRIEF_MAX_WORDS else 1 if n >= DETAILED_MIN_WORDS else None
    if dim == "ending":
        body = clean(text).rstrip(_TRAILING)
        if not body:
            return None
        return 0 if body.endswith("?") else 1
    first, second = _MARKER_DIMS[dim]
    counts = marker_counts(text)
    return _marker_state(counts[first], counts[second])


def style_vector(text: str) -> dict[str, int | None]:
    """State of ``text`` on every dimension (the "raw checkers" view of a text)."""
    return {d.name: dimension_state(d.name, text) for d in DIMENSIONS}


def check(title: str, text: str) -> bool:
    """True when ``text`` satisfies the aspect with canonical title ``title``."""
    return pole_for_title(title).check(text)


def known_titles(titles: Sequence[str]) -> list[Pole]:
    """The poles of the titles that are canonical sandbox aspects (others are ignored)."""
    out = []
    for t in titles:
        pole = _TITLE_LOOKUP.get(str(t).strip().lower())
        if pole is not None:
            out.append(pole)
    return out
