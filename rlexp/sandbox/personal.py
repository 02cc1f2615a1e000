"""Personal questions and personalized answer pairs.

Question templates come in disjoint groups (benchmark, training, SFT, downstream train/eval), so
a prompt of one group can never equal a prompt of another. :func:`render_pair` writes the two
answers of a personalized pair from the same content facts: ``chosen`` takes the user's pole on
every aspect, ``rejected`` the opposite pole, and on every other dimension both share one random
background state, so the pair differs *only* in personal fit.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from rlexp.sandbox.aspects import DIMENSIONS, Pole, dimension_state
from rlexp.sandbox.knobs import Knobs
from rlexp.sandbox.render import render
from rlexp.sandbox.render_content import Content, make_content
from rlexp.sandbox.sites import Site

QUESTION_TEMPLATES: dict[str, tuple[str, ...]] = {
    "bench": (
        "How can I get better at {topic}?",
        "What is the best way to start with {topic}?",
        "How do I stay consistent with {topic}?",
        "What should a beginner know about {topic}?",
        "How do I avoid common mistakes with {topic}?",
        "Is it worth spending more time on {topic}?",
    ),
    "train": (
        "Any advice for improving at {topic}?",
        "Where should I begin with {topic}?",
        "How do I keep {topic} from feeling overwhelming?",
        "What do experienced people wish they knew about {topic}?",
        "How much time should I put into {topic} each week?",
        "What is a sensible first step with {topic}?",
    ),
    "sft": (
        "Tips for {topic}, please?",
        "What matters most when it comes to {topic}?",
        "How do I approach {topic} sensibly?",
        "Can you give me guidance on {topic}?",
    ),
    "ds_train": (
        "I want to learn {topic}; what do you recommend?",
        "How can I make steady progress in {topic}?",
        "What is a good routine for {topic}?",
        "How do I measure progress with {topic}?",
    ),
    "ds_eval": (
        "Could you help me figure out {topic}?",
        "What would you suggest for someone stuck on {topic}?",
        "How should I plan my next month of {topic}?",
        "What tends to work for {topic} on a tight schedule?",
    ),
}


def question_slots(site: Site, group: str) -> list[str]:
    """Every question a group's templates can ask about a site's topics (sorted, deterministic)."""
    return sorted(t.replace("{topic}", topic) for t in QUESTION_TEMPLATES[group] for topic in site.topics)


def topic_of(question: str, site: Site) -> str:
    """The site topic a generated question is about."""
    for topic in site.topics:
        if topic in question:
            return topic
    raise ValueError(f"question {question!r} names no topic of site {site.name!r}")


def background_style(aspect_dims: set[str], rng: random.Random, quiet: bool = False) -> dict[str, int | None]:
    """Random shared state for the dimensions that are not the user's aspects.

    Mostly neutral, so answers stay short and the user's aspects are what stands out; ``quiet``
    (used when the user wants brevity) makes it even sparser.
    """
    style: dict[str, int | None] = {}
    p_marked = 0.05 if quiet else 0.15
    for d in DIMENSIONS:
        if d.name in aspect_dims:
            continue
        if d.binary:
            style[d.name] = rng.randrange(2)
        elif d.name == "length":
            style[d.name] = None
        else:
            style[d.name] = rng.randrange(2) if rng.random() < p_marked else None
    return style


def random_style(rng: random.Random, p_marked: float = 0.5) -> dict[str, int | None]:
    """A style with each dimension marked at random (SFT answers, pretraining text)."""
    style: dict[str, int | None] = {}
    for d in DIMENSIONS:
        if d.binary:
            style[d.name] = rng.randrange(2)
        else:
            style[d.name] = rng.randrange(2) if rng.random() < p_marked else None
    return style


def render_pair(
    content: Content, aspects: Sequence[Pole], knobs: Knobs, rng: random.Random, max_tries: int = 60
) -> tuple[str, str]:
    """(chosen, rejected) for a user with ``aspects`` — verified with the checkers.

    ``chosen`` satisfies every aspect, ``rejected`` shows the opposite pole of every aspect, and
    both are in the same state on every other dimension except a few random distractors
    (``knobs.distractor_prob``). Resamples the background and intensity until all of this holds
    (length bands occasionally need a second draw).
    """
    dims = {p.dim for p in aspects}
    quiet = any(p.dim == "length" for p in aspects)  # one of the two answers must be brief
    for attempt in range(max_tries):
        bg = background_style(dims, rng, quiet=quiet or attempt > max_tries // 2)
        style_c: dict[str, int | None] = {**bg, **{p.dim: p.side for p in aspects}}
        style_r: dict[str, int | None] = {**bg, **{p.dim: 1 - p.side for p in aspects}}
        # Distractors: a few unrelated marker dimensions differ at random between the two answers,
        # so only the user's own aspects separate chosen from rejected consistently.
        calm = quiet or attempt > max_tries // 2  # brevity (or repeated misses) leaves no room for distractors
        distract = [
            d.name
            for d in DIMENSIONS
            if not calm
            and d.name not in dims
            and not d.binary
            and d.name != "length"
            and rng.random() < knobs.distractor_prob
        ]
        for name in distract:
            style_c[name], style_r[name] = rng.choice((None, 0, 1)), rng.choice((None, 0, 1))
        others = [d.name for d in DIMENSIONS if d.name not in dims and d.name not in distract]
        chosen = render(content, style_c, knobs.intensity(rng), rng)
        rejected = render(content, style_r, knobs.intensity(rng), rng)
        if pair_ok(chosen, rejected, aspects, others):
            return chosen, rejected
    raise RuntimeError(f"could not render a valid pair for aspects {[p.title for p in aspects]}")


def pair_ok(chosen: str, rejected: str, aspects: Sequence[Pole], other_dims: Sequence[str]) -> bool:
    """The pair invariant (see :func:`render_pair`)."""
    for p in aspects:
        if not p.check(chosen) or dimension_state(p.dim, rejected) != 1 - p.side:
            return False
    return all(dimension_state(d, chosen) == dimension_state(d, rejected) for d in other_dims)


def answer_content(question: str, site: Site, rng: random.Random) -> Content:
    """The content (facts, clauses) of an answer to a personal question."""
    return make_content("answer", topic_of(question, site), site, rng)


def render_styled(content: Content, style: Mapping[str, int | None], knobs: Knobs, rng: random.Random) -> str:
    """Render with a given style and a knob-drawn intensity."""
    return render(content, style, knobs.intensity(rng), rng)
