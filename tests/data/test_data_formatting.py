"""The RM user turn and the policy prompt: exact rendering, modes, separator, planner, §10.1."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from rlexp.data.formatting import (
    SYSTEM_PERSONALIZED,
    policy_prompt,
    render_profile,
    rm_user_turn,
)
from rlexp.data.schemas import ProfilePost
from rlexp.errors import ConfigError

POSTS = (
    ProfilePost("cooking", "p1", "How long should I knead bread dough?"),
    ProfilePost("gardening", "p2", "Tomato leaves turning yellow"),
    ProfilePost("cooking", "p3", "Best flour for sourdough bread and baking bread at home"),
)
QUESTION = "Why does my sourdough bread not rise?"


def test_render_profile_exact_blocks_ranked_by_relevance() -> None:
    assert render_profile(POSTS, 2, QUESTION) == (
        "Post 1 (Category: cooking):\nBest flour for sourdough bread and baking bread at home\n"
        "Post 2 (Category: cooking):\nHow long should I knead bread dough?"
    )
    # without a question the given order is kept
    assert render_profile(POSTS, 1) == "Post 1 (Category: cooking):\nHow long should I knead bread dough?"
    assert render_profile((), 10, QUESTION) == ""


def test_modes_none_raw_planner() -> None:
    assert rm_user_turn(QUESTION, POSTS, "none") == QUESTION
    raw = rm_user_turn(QUESTION, POSTS, "raw", k=3)
    assert raw == QUESTION + "\n\n" + render_profile(POSTS, 3, QUESTION)
    assert raw.count("Post ") == 3
    assert rm_user_turn(QUESTION, POSTS, "raw", k=1, separator="\n---\n") == (
        QUESTION + "\n---\nPost 1 (Category: cooking):\nBest flour for sourdough bread and baking bread at home"
    )
    assert rm_user_turn(QUESTION, (), "raw") == QUESTION  # no dangling separator

    seen: list[tuple[str, tuple[str, ...]]] = []

    def planner(question: str, posts: Sequence[ProfilePost]) -> str:
        seen.append((question, tuple(p.id for p in posts)))
        return "The user expects:\n- baking science"

    turn = rm_user_turn(QUESTION, POSTS, "planner", k=2, separator=" || ", planner=planner)
    assert turn == QUESTION + " || The user expects:\n- baking science"
    assert seen == [(QUESTION, ("p3", "p1"))]  # the planner sees the same top-k posts


def test_mode_errors() -> None:
    with pytest.raises(ConfigError, match="unknown profile mode 'profile'; valid modes: none, raw, planner"):
        rm_user_turn(QUESTION, POSTS, "profile")
    with pytest.raises(ConfigError, match="'planner' needs a planner"):
        rm_user_turn(QUESTION, POSTS, "planner")
    for bad_k in (0, -1, 2.5, True):
        with pytest.raises(ConfigError, match="profile k must be a positive integer"):
            rm_user_turn(QUESTION, POSTS, "raw", k=bad_k)


def test_sorting_keeps_post_records_intact() -> None:
    """Reference §10.1: the ranking script kept ids in the old order but texts in the new one."""
    posts = [ProfilePost(f"site{i}", f"id{i}", f"text{i} " + "zebra " * i) for i in range(5)]
    rendered = render_profile(posts, 5, "zebra")
    blocks = rendered.split("\n")
    headers, texts = blocks[0::2], blocks[1::2]
    assert texts[0].startswith("text4")  # ranking really reordered them
    for i, (header, text) in enumerate(zip(headers, texts, strict=True), start=1):
        n = text.split()[0].removeprefix("text")
        assert header == f"Post {i} (Category: site{n}):"


def test_policy_prompt() -> None:
    text = policy_prompt(QUESTION, POSTS, k=2)
    assert "personalized" in text and "under 100 words" in text and "tone" in text
    assert render_profile(POSTS, 2, QUESTION) in text
    assert text.endswith(QUESTION) and text.index("Post 1") < text.index(QUESTION)
    assert "Post 3" not in text
    assert SYSTEM_PERSONALIZED.count(".") == 1 and "personalized" in SYSTEM_PERSONALIZED


def test_a_profile_in_retrieval_order_keeps_it() -> None:
    """A loader's own ranking (LaMP-QA's dense retriever) survives rendering; an unranked profile is
    ranked by BM25 against the question."""
    from rlexp.data.formatting import policy_prompt, rm_user_turn
    from rlexp.data.schemas import ProfilePost

    question = "how do I tune a guitar"
    posts = (ProfilePost("c", "1", "my favourite soup recipe"), ProfilePost("c", "2", "tune a guitar by ear"))
    for render in (lambda r: policy_prompt(question, posts, 1, ranked=r),
                   lambda r: rm_user_turn(question, posts, "raw", k=1, ranked=r)):
        assert "soup" in render(True) and "guitar by ear" not in render(True)
        assert "guitar by ear" in render(False) and "soup" not in render(False)
