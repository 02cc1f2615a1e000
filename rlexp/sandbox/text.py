"""Small text utilities shared by the sandbox generators, checkers and judges."""

from __future__ import annotations

import re
from collections.abc import Iterable

_WS = re.compile(r"\s+")
_WORD = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w])")
_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)")
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})


def clean(text: str) -> str:
    """Fold typographic quotes to ASCII so every checker sees one spelling."""
    return text.translate(_QUOTES)


def normalise_prompt(text: str) -> str:
    """The key used for prompt-overlap checks: lower case, whitespace collapsed, trimmed."""
    return _WS.sub(" ", clean(text).strip().lower())


def words(text: str) -> list[str]:
    """Lower-cased word tokens (letters/digits with an optional apostrophe suffix)."""
    return [w.lower() for w in _WORD.findall(clean(text))]


def word_count(text: str) -> int:
    """Number of word tokens; bullet dashes and punctuation do not count."""
    return len(_WORD.findall(text))


def numbers(text: str) -> list[int | float]:
    """Numbers written with digits, in order of appearance (``12``, ``-3``, ``4.5``)."""
    out: list[int | float] = []
    for tok in _NUMBER.findall(clean(text)):
        out.append(float(tok) if "." in tok else int(tok))
    return out


def sentence_count(text: str) -> int:
    """Sentences, counted by terminal punctuation; a trailing fragment counts as one."""
    body = text.strip()
    if not body:
        return 0
    n = len(_SENTENCE_END.findall(body))
    tail = _SENTENCE_END.split(body)[-1].strip()
    return n + (1 if tail else 0)


def _trie_body(phrases: Iterable[str]) -> str:
    """A regex body equivalent to ``a|b|c`` but factored as a prefix trie.

    Python's ``re`` tries alternatives one by one at every position; factoring shared prefixes
    makes the marker scan (run on every post and answer) about three times faster.
    """
    trie: dict[str, dict] = {}
    for p in phrases:
        node = trie
        for ch in p:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict[str, dict]) -> str:
        alts = [re.escape(ch) + build(child) for ch, child in sorted(node.items()) if ch]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return f"(?:{body})?" if "" in node else body

    return build(trie)


def phrase_pattern(phrases: Iterable[str]) -> re.Pattern[str]:
    """One regex matching any phrase as a whole token sequence (longest match first).

    Boundaries are lookarounds on ``[a-z0-9]`` rather than ``\\b`` so phrases that start or end
    with punctuation (``e.g.``, ``source:``) still match.
    """
    body = _trie_body({p.lower() for p in phrases})
    return re.compile(rf"(?<![a-z0-9])(?:{body})(?![a-z0-9])")


def capitalise(text: str) -> str:
    """Upper-case the first character only (``str.capitalize`` would lower the rest)."""
    return text[:1].upper() + text[1:] if text else text


def decapitalise(text: str) -> str:
    """Lower-case the first character unless the first word looks like a name/acronym."""
    if not text:
        return text
    first = text.split(" ", 1)[0]
    if first in {"I", "I'm", "I've"}:
        return text
    if len(first) > 1 and (first.isupper() or first[1:] != first[1:].lower()):
        return text
    return text[:1].lower() + text[1:]
