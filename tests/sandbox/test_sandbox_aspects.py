"""Aspect dimensions: disjoint marker lexicons, renderers that move only their own dimension."""

from __future__ import annotations

import itertools
import random
from collections import Counter

from rlexp.sandbox import DIMENSIONS, POLES, POLES_BY_TITLE, style_vector
from rlexp.sandbox.aspects import LEXICONS
from rlexp.sandbox.general import BLUFFS, DIGRESSIONS, HEDGES
from rlexp.sandbox.knobs import knobs_for
from rlexp.sandbox.render import ADDON_DIMS, render, render_for_pole
from rlexp.sandbox.render_content import make_content
from rlexp.sandbox.sites import SITES
from rlexp.sandbox.users import MAJORITY_POLES

from .conftest import Loaded

MARKER_DIMS = [*ADDON_DIMS, "tone"]


def test_dimensions_and_titles() -> None:
    assert len(DIMENSIONS) >= 8
    assert len({p.title for p in POLES}) == len(POLES) == 2 * len(DIMENSIONS)


def test_marker_lexicons_are_disjoint() -> None:
    owner: dict[str, str] = {}
    for name, phrases in LEXICONS.items():
        for p in phrases:
            assert p not in owner, (p, owner.get(p), name)
            owner[p] = name
    general_cues = {c.strip(" ,:").lower() for c in (*HEDGES, *BLUFFS, *DIGRESSIONS)}
    assert not general_cues & set(owner)


def _contents(kind: str, n: int = 12) -> list:
    rng = random.Random(5)
    names = sorted(SITES)
    return [make_content(kind, rng.choice(SITES[s].topics), SITES[s], rng) for s in rng.sample(names, n)]


def test_unstyled_text_is_neutral_everywhere() -> None:
    rng = random.Random(1)
    for kind in ("answer", "post"):
        for c in _contents(kind):
            v = style_vector(render(c, {}, 1, rng))
            assert all(v[d] is None for d in MARKER_DIMS), v
            assert v["format"] == 1 and v["ending"] == 1


def test_each_pole_renderer_moves_only_its_own_dimension() -> None:
    rng = random.Random(2)
    for kind in ("answer", "post"):
        for c, dim, side, k, brief in itertools.product(
            _contents(kind, 4), MARKER_DIMS, (0, 1), (1, 2, 3), (False, True)
        ):
            style = {dim: side, "length": 0 if brief else None}
            v = style_vector(render(c, style, k, rng))
            assert v[dim] == side, (kind, dim, side, k, brief)
            assert all(v[d] is None for d in MARKER_DIMS if d != dim), (kind, dim, side, v)
    for c in _contents("answer", 4):
        for fmt, end in itertools.product((0, 1), (0, 1)):
            v = style_vector(render(c, {"format": fmt, "ending": end}, 1, rng))
            assert (v["format"], v["ending"]) == (fmt, end)


def test_every_pole_can_be_satisfied_and_violated() -> None:
    rng = random.Random(4)
    for c in _contents("answer", 6):
        for pole in POLES:
            assert pole.check(render_for_pole(c, pole, True, rng)), pole.title
            assert not pole.check(render_for_pole(c, pole, False, rng)), pole.title


def test_length_poles_render_in_their_bands() -> None:
    rng = random.Random(3)
    for c in _contents("answer"):
        assert style_vector(render(c, {"length": 0}, 1, rng))["length"] == 0
        assert style_vector(render(c, {"length": 1}, 1, rng))["length"] == 1


def test_poles_are_preferred_in_their_stated_shares(world: Loaded) -> None:
    """Why personalization matters: on balanced dimensions a user-blind scorer is at chance; the
    skewed ones have exactly their majority share (quotas, not coin flips)."""
    counts = Counter(a.aspect for i in world.prb_items for a in i.rubric_aspects)
    for d in DIMENSIONS:
        a, b = (counts[p.title] for p in d.poles)
        assert a > 0 and b > 0, d.name
        side, share = MAJORITY_POLES.get(d.name, (0, 0.5))
        majority = (a, b)[side]
        assert abs(majority - share * (a + b)) <= 1, (d.name, a, b)
    assert all(t in POLES_BY_TITLE for t in counts)


def test_difficulty_lowers_marker_intensity() -> None:
    rng = random.Random(0)
    easy = sum(knobs_for(0.0).intensity(rng) for _ in range(500))
    hard = sum(knobs_for(1.0).intensity(rng) for _ in range(500))
    assert easy > hard == 500
