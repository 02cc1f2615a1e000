"""Ties tasks: several valid answers (tied) vs exactly one (ref), as in RewardBench 2 Ties.

A ties prompt number gives a pair of prompts over the same parameters: the tied one accepts any
member of a set (a prime in a range, a town on a river), the ref one only its single best member.
"""

from __future__ import annotations

import random
from typing import Any

from rlexp.sandbox.general import Task
from rlexp.sandbox.kb import KnowledgeBase

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
