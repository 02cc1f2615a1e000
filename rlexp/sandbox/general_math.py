"""Arithmetic tasks: word and expression problems with shown work.

Each template lists its computation steps, so a right answer shows the true work and a wrong one
slips in the last step, mis-states the result or guesses without working.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rlexp.sandbox.general import BLUFFS, HEDGES, Task, cue_right, cue_wrong, frame, prefix
from rlexp.sandbox.knobs import Knobs
from rlexp.sandbox.text import capitalise

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
