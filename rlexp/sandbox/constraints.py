"""Verifiable instruction constraints (the sandbox's Precise IF / IFEval-style checks).

Each constraint has an id (``sandbox:<name>``), prompt phrasings for the evaluation and the
training template groups (disjoint, so a training prompt never repeats a benchmark phrasing), a
checker ``check(text, args) -> bool`` that works on any free-form text, a transform that makes a
content text satisfy it, and near-miss transforms that violate it while keeping the content.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rlexp.sandbox.text import clean, decapitalise, sentence_count, word_count

Args = Mapping[str, Any]

# Argument vocabularies come in halves (evaluation group 0, training group 1), so a word that is
# right in a training answer is never the word a benchmark constraint asks for.
_INCLUDE_WORDS = (
    ("lantern", "lamp"),
    ("harbour", "port"),
    ("meadow", "field"),
    ("ribbon", "string"),
    ("anchor", "rope"),
    ("candle", "torch"),
    ("orchard", "garden"),
    ("feather", "quill"),
)
_END_PHRASES = (
    "That is all.",
    "Hope this helps.",
    "End of answer.",
    "Nothing more to add.",
    "Over and out.",
    "Case closed.",
)
_START_WORDS = ("Indeed", "Well", "Briefly", "Notably", "Certainly", "Honestly")


def _half(values: tuple, group: int) -> tuple:
    return tuple(v for i, v in enumerate(values) if i % 2 == group)


_PS_NOTES = ("Ask me if you want more details.", "The archives hold more records.", "Facts may vary between sources.")
_SYNONYMS = {"town": "settlement", "inventor": "maker", "creature": "animal", "region": "area", "river": "stream"}


def _lower_ok(text: str, args: Args) -> bool:
    letters = [c for c in text if c.isalpha()]
    return bool(letters) and all(not c.isupper() for c in letters)


def _upper_ok(text: str, args: Args) -> bool:
    letters = [c for c in text if c.isalpha()]
    return bool(letters) and all(not c.islower() for c in letters)


def _has_word(text: str, word: str) -> bool:
    return re.search(rf"(?<![A-Za-z]){re.escape(word)}(?![A-Za-z])", clean(text), re.IGNORECASE) is not None


def _bullets(text: str) -> int:
    return len(re.findall(r"^\s*[-*\u2022]\s+\S", text, re.MULTILINE))


def _paragraphs(text: str) -> int:
    return len([p for p in re.split(r"\n\s*\n", text.strip()) if p.strip()])


def _strip_end(text: str) -> str:
    return clean(text).strip().rstrip()


CHECKERS: dict[str, Callable[[str, Args], bool]] = {
    "lowercase": _lower_ok,
    "uppercase": _upper_ok,
    "max_words": lambda t, a: 0 < word_count(t) < int(a["n"]),
    "min_words": lambda t, a: word_count(t) >= int(a["n"]),
    "include_word": lambda t, a: _has_word(t, a["word"]),
    "exclude_word": lambda t, a: bool(t.strip()) and not _has_word(t, a["word"]),
    "end_phrase": lambda t, a: _strip_end(t).endswith(a["phrase"]),
    "start_word": lambda t, a: re.match(rf"\s*[\"'*]*{re.escape(a['word'])}(?![A-Za-z])", clean(t)) is not None,
    "bullets": lambda t, a: _bullets(t) == int(a["n"]),
    "no_commas": lambda t, a: bool(t.strip()) and "," not in t,
    "quotes": lambda t, a: len(s := _strip_end(t)) > 2 and s.startswith('"') and s.endswith('"'),
    "sentences": lambda t, a: sentence_count(t.replace("\n", " ")) == int(a["n"]),
    "postscript": lambda t, a: re.search(r"(?:^|\s)P\.S\.\s+\S", t) is not None,
    "title": lambda t, a: re.search(r"<<[^<>\n]+>>", t) is not None,
    "paragraphs": lambda t, a: _paragraphs(t) == int(a["n"]),
}

# Phrasings: (evaluation group, training group). Placeholders are filled from the args.
PHRASINGS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "lowercase": (
        ("Write your entire answer in lowercase letters.", "Use no capital letters anywhere in your answer."),
        ("Reply using only lowercase characters.", "Do not capitalise any word in your reply."),
    ),
    "uppercase": (
        ("Write your entire answer in capital letters.", "Answer using only uppercase letters."),
        ("Reply in all caps.", "Every letter of your reply must be uppercase."),
    ),
    "max_words": (
        ("Answer in fewer than {n} words.", "Keep your answer under {n} words."),
        ("Your reply must stay below {n} words.", "Use less than {n} words in total."),
    ),
    "min_words": (
        ("Answer in at least {n} words.", "Write no fewer than {n} words."),
        ("Your reply needs {n} words or more.", "Use a minimum of {n} words."),
    ),
    "include_word": (
        ("Include the word '{word}' in your answer.", "Make sure your answer contains the word '{word}'."),
        ("Your reply must use the word '{word}'.", "Work the word '{word}' into your reply."),
    ),
    "exclude_word": (
        ("Do not use the word '{word}'.", "Avoid the word '{word}' entirely."),
        ("The word '{word}' must not appear in your reply.", "Never write the word '{word}'."),
    ),
    "end_phrase": (
        ("End your answer with the exact phrase '{phrase}'", "Finish your answer with '{phrase}'"),
        ("Your reply must close with '{phrase}'", "Make '{phrase}' the last words of your reply"),
    ),
    "start_word": (
        ("Begin your answer with the word '{word}'.", "Start your answer with '{word}'."),
        ("The first word of your reply must be '{word}'.", "Open your reply with the word '{word}'."),
    ),
    "bullets": (
        ("Use exactly {n} bullet points.", "Format your answer as exactly {n} bullet points."),
        ("Your reply must contain precisely {n} bullets.", "Give {n} bullet points, no more and no fewer."),
    ),
    "no_commas": (
        ("Do not use any commas.", "Write your answer without a single comma."),
        ("Commas are not allowed in your reply.", "Avoid commas completely."),
    ),
    "quotes": (
        ("Wrap your entire answer in double quotation marks.", "Put your whole answer inside double quotes."),
        ("Enclose the full reply in double quotes.", "Your reply must start and end with a double quote."),
    ),
    "sentences": (
        ("Answer in exactly {n} sentences.", "Use exactly {n} sentences."),
        ("Your reply must have precisely {n} sentences.", "Write {n} sentences, no more and no fewer."),
    ),
    "postscript": (
        ("End your answer with a postscript starting with P.S.", "Add a postscript at the end that starts with P.S."),
        ("Close your reply with a P.S. note.", "Finish with a note that begins with P.S."),
    ),
    "title": (
        (
            "Give your answer a title wrapped in double angular brackets, such as <<title>>.",
            "Start with a title in double angular brackets, like <<my title>>.",
        ),
        ("Put a title inside << and >> at the top of your reply.", "Your reply needs a title written as <<title>>."),
    ),
    "paragraphs": (
        (
            "Write exactly {n} paragraphs separated by a blank line.",
            "Split your answer into exactly {n} paragraphs with a blank line between them.",
        ),
        (
            "Your reply must have {n} paragraphs divided by an empty line.",
            "Use {n} paragraphs separated by blank lines.",
        ),
    ),
}
CONSTRAINT_IDS: tuple[str, ...] = tuple(CHECKERS)


@dataclass(frozen=True)
class Constraint:
    """One instantiated constraint: its name and arguments."""

    name: str
    args: tuple[tuple[str, Any], ...] = ()

    @property
    def id(self) -> str:
        return f"sandbox:{self.name}"

    def check(self, text: str) -> bool:
        return CHECKERS[self.name](text, dict(self.args))

    def phrase(self, group: int, rng: random.Random) -> str:
        """The instruction sentence; ``group`` 0 = evaluation phrasings, 1 = training phrasings."""
        text = rng.choice(PHRASINGS[self.name][group])
        for k, v in self.args:
            text = text.replace("{" + k + "}", str(v))
        return text

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "args": dict(self.args)}


def check_constraint(spec: Mapping[str, Any], text: str) -> bool:
    """Check one constraint given as ``{"id": "sandbox:<name>", "args": {...}}``."""
    name = str(spec["id"]).split(":", 1)[-1]
    return CHECKERS[name](text, dict(spec.get("args") or {}))


@dataclass(frozen=True)
class ConstraintContent:
    """Material a constraint transform can use: sentences about a subject, with comma variants."""

    sentences: tuple[str, ...]  # plain sentences (no commas)
    comma_sentences: tuple[str, ...]  # the same facts phrased with commas
    subject: str  # short title for <<title>>
    nouns: tuple[str, ...]  # words present in the text that an exclude_word constraint may ban


def choose_constraint(name: str, content: ConstraintContent, rng: random.Random, group: int = 0) -> Constraint:
    """Instantiate arguments for ``name`` that fit ``content`` (so it can be satisfied and violated).

    ``group`` selects the argument vocabulary half (0 evaluation, 1 training).
    """
    base = " ".join(content.sentences[:2])
    if name in ("max_words",):
        return Constraint(name, (("n", word_count(base) + rng.randint(2, 5)),))
    if name == "min_words":
        return Constraint(name, (("n", word_count(" ".join(content.sentences[:3])) - rng.randint(1, 3)),))
    if name == "include_word":
        return Constraint(name, (("word", rng.choice(_half(_INCLUDE_WORDS, group))[0]),))
    if name == "exclude_word":
        return Constraint(name, (("word", rng.choice(content.nouns)),))
    if name == "end_phrase":
        return Constraint(name, (("phrase", rng.choice(_half(_END_PHRASES, group))),))
    if name == "start_word":
        return Constraint(name, (("word", rng.choice(_half(_START_WORDS, group))),))
    if name in ("bullets", "sentences"):
        return Constraint(name, (("n", rng.choice((2, 3))),))
    if name == "paragraphs":
        return Constraint(name, (("n", 2),))
    return Constraint(name)


def _join(sents: Sequence[str]) -> str:
    return " ".join(sents)


def _bulleted(sents: Sequence[str]) -> str:
    return "\n".join(f"- {s}" for s in sents)


def _near_word(word: str) -> str:
    for w, near in _INCLUDE_WORDS:
        if w == word:
            return near
    return word + "s"


def satisfy(c: Constraint, content: ConstraintContent, rng: random.Random) -> str:
    """A text with ``content``'s facts that meets constraint ``c``."""
    a = dict(c.args)
    s2 = list(content.sentences[:2])
    name = c.name
    if name == "lowercase":
        return _join(s2).lower()
    if name == "uppercase":
        return _join(s2).upper()
    if name == "max_words":
        return _join(s2)
    if name == "min_words":
        return _join(content.sentences[:3])
    if name == "include_word":
        return _join([*s2, f"Locals compare it to a {a['word']}."])
    if name == "exclude_word":
        w = a["word"]
        return re.sub(rf"\b{re.escape(w)}\b", _SYNONYMS.get(w, "place"), _join(s2))
    if name == "end_phrase":
        return _join([*s2, a["phrase"]])
    if name == "start_word":
        return f"{a['word']}, {decapitalise(_join(s2))}"
    if name == "bullets":
        return _bulleted(content.sentences[: a["n"]])
    if name == "no_commas":
        return _join(s2)
    if name == "quotes":
        return f'"{_join(s2)}"'
    if name == "sentences":
        return _join(content.sentences[: a["n"]])
    if name == "postscript":
        return f"{_join(s2)} P.S. {rng.choice(_PS_NOTES)}"
    if name == "title":
        return f"<<{content.subject}>>\n{_join(s2)}"
    if name == "paragraphs":
        return f"{s2[0]}\n\n{s2[1]}"
    raise ValueError(name)


def violate(c: Constraint, content: ConstraintContent, rng: random.Random) -> str:
    """A text with the same facts that narrowly misses constraint ``c`` (one of several ways)."""
    a = dict(c.args)
    s2 = list(content.sentences[:2])
    s3 = list(content.sentences[:3])
    name = c.name
    options: list[Callable[[], str]]
    if name == "lowercase":
        options = [
            lambda: _join(s2),
            lambda: _join(s2).lower().replace(content.subject.lower(), content.subject.title()),
            lambda: s2[0] + " " + s2[1].lower(),
        ]
    elif name == "uppercase":
        options = [
            lambda: _join(s2),
            lambda: s2[0].upper() + " " + s2[1],
            lambda: _join(s2).upper().replace(content.subject.upper(), content.subject),
        ]
    elif name == "max_words":
        options = [lambda: _join(s3), lambda: _join([*s2, content.sentences[3]]), lambda: _join(content.sentences[1:4])]
    elif name == "min_words":
        options = [lambda: _join(s2), lambda: s2[0], lambda: _join([s2[1]])]
    elif name == "include_word":
        options = [
            lambda: _join([*s2, f"Locals compare it to a {_near_word(a['word'])}."]),
            lambda: _join(s3),
            lambda: _join([*s2, f"Locals compare it to two {a['word']}s."]),
        ]
    elif name == "exclude_word":
        options = [lambda: _join(s2), lambda: _join([*s2, f"It is a well-known {a['word']}."]), lambda: _join(s3)]
    elif name == "end_phrase":
        p = a["phrase"]
        options = [
            lambda: _join([p, *s2]),
            lambda: _join([*s2, p.rstrip(".") + "!"]),
            lambda: _join([*s2, "That is it."]),
        ]
    elif name == "start_word":
        w = a["word"]
        options = [
            lambda: _join(s2),
            lambda: f"{s2[0]} {w}, {decapitalise(s2[1])}",
            lambda: f"So, {w.lower()}, {decapitalise(_join(s2))}",
        ]
    elif name == "bullets":
        n = a["n"]
        options = [
            lambda: _bulleted(content.sentences[: n + 1]),
            lambda: _bulleted(content.sentences[: max(1, n - 1)]),
            lambda: _join(content.sentences[:n]),
        ]
    elif name == "no_commas":
        options = [
            lambda: _join(content.comma_sentences[:2]),
            lambda: _join([content.comma_sentences[0], s2[1]]),
            lambda: _join([s2[0], content.comma_sentences[1]]),
        ]
    elif name == "quotes":
        options = [lambda: _join(s2), lambda: f"'{_join(s2)}'", lambda: f'"{s2[0]}" {s2[1]}']
    elif name == "sentences":
        n = a["n"]
        options = [
            lambda: _join(content.sentences[: n + 1]),
            lambda: _join(content.sentences[: n - 1]),
            lambda: _join(content.comma_sentences[: n + 1]),
        ]
    elif name == "postscript":
        options = [
            lambda: f"{_join(s2)} PS: {rng.choice(_PS_NOTES)}",
            lambda: f"{_join(s2)} Note: {rng.choice(_PS_NOTES)}",
            lambda: _join([*s2, rng.choice(_PS_NOTES)]),
        ]
    elif name == "title":
        options = [
            lambda: f"**{content.subject}**\n{_join(s2)}",
            lambda: f"<{content.subject}>\n{_join(s2)}",
            lambda: f"Title: {content.subject}\n{_join(s2)}",
        ]
    elif name == "paragraphs":
        options = [lambda: _join(s2), lambda: f"{s2[0]}\n{s2[1]}", lambda: "\n\n".join(s3)]
    else:
        raise ValueError(name)
    # A confusion: following a different, unrequested format instead (keeps unusual forms such
    # as all-caps or bullet lists from being a tell of the right answer on their own).
    confusion = _CONFUSIONS.get(name)
    if confusion is not None:
        other = Constraint(
            confusion, tuple(sorted({"n": 2, "word": _INCLUDE_WORDS[0][0], "phrase": _END_PHRASES[0]}.items()))
        )
        options.append(lambda: satisfy(other, content, rng))
    return rng.choice(options)()


# Which other format a confused answer follows (chosen so it never satisfies the asked one).
_CONFUSIONS: dict[str, str] = {
    "lowercase": "uppercase",
    "uppercase": "lowercase",
    "quotes": "title",
    "title": "quotes",
    "bullets": "paragraphs",
    "paragraphs": "bullets",
    "postscript": "quotes",
    "start_word": "title",
    "sentences": "bullets",
    "end_phrase": "postscript",
}
