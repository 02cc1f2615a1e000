"""The text that reaches reward models and policies, built in ONE place.

Benchmarks, Best-of-N, PPO and RM training all call :func:`rm_user_turn`, so the RM sees the
same user turn everywhere (reference: personalized-rewardbench.md §3.3, §4, §10.3). The profile
modes are ``none`` (question only, what the released PRB benchmark runs), ``raw`` (question,
separator, top-k posts) and ``planner`` (question, separator, the planner's inferred aspects).
Unlike the reference code, the separator between question and profile is explicit.

Chatbot Arena- and PRISM-Personalized carry no profile posts; what an RM sees of their users
(``none``, ``history``: the user's earlier votes, ``persona``: PRISM's survey) is built here too, by
:func:`history_block`, :func:`persona_block` and :func:`with_user_context`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from rlexp.config.choices import ProfileMode, UserContextMode
from rlexp.config.nodes import ProfileConfig
from rlexp.data.retrieval import rank_posts
from rlexp.data.schemas import ProfilePost
from rlexp.errors import ConfigError

# The config schema's values, for callers that format without a composed config.
PROFILE_MODES: tuple[str, ...] = tuple(ProfileMode)
DEFAULT_K: int = ProfileConfig.k  # one k for BoN, PPO training and inference (reference §10.6)
DEFAULT_SEPARATOR: str = ProfileConfig.separator

Planner = Callable[[str, Sequence[ProfilePost]], str]

SYSTEM_PERSONALIZED = "You are a helpful assistant that writes answers personalized to each user."

_POLICY_INSTRUCTION = (
    "Answer the user's current question in a personalized way. Infer from the user's past posts "
    "below what they care about, and match their tone, level of detail and preferred format; use "
    "the interests and constraints you can infer. Answer the question directly, do not describe "
    "your analysis, and keep the answer under 100 words."
)


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigError(f"profile k must be a positive integer, got {k!r}")


def top_posts(posts: Sequence[ProfilePost], k: int = DEFAULT_K, question: str | None = None) -> list[ProfilePost]:
    """The first ``k`` posts, ranked by BM25 relevance to ``question`` when one is given."""
    _check_k(k)
    ranked = _ranked(question, tuple(posts)) if question is not None else posts
    return list(ranked[:k])


@lru_cache(maxsize=16384)
def _ranked(question: str, posts: tuple[ProfilePost, ...]) -> tuple[ProfilePost, ...]:
    # One prompt's posts are ranked again for every sample of a pool, every RM and every profile
    # mode; BM25 over them was a tenth of an RM's training time.
    return tuple(rank_posts(question, posts))


def render_profile(posts: Sequence[ProfilePost], k: int = DEFAULT_K, question: str | None = None) -> str:
    """Render the top-``k`` posts as ``Post i (Category: c):\\n<text>`` blocks joined by ``\\n``.

    Posts are ranked against ``question`` first when it is given (else kept in order); ``i``
    counts from 1 in the rendered order. Each block is built from one post record, so a post's
    category and text can never come apart (the reference ranking bug, §10.1). No posts -> ``""``.
    """
    chosen = top_posts(posts, k, question)
    return "\n".join(f"{_post_header(i, p)}\n{p.text}" for i, p in enumerate(chosen, start=1))


def _post_header(i: int, post: ProfilePost) -> str:
    """``Post i (Category: c):`` (PRB's ``format_profile``); ``Post i:`` for a post without a category
    (LaMP-QA's ranked files keep none)."""
    return f"Post {i} (Category: {post.category}):" if post.category else f"Post {i}:"


def rm_user_turn(
    question: str,
    profile: Sequence[ProfilePost],
    mode: str,
    *,
    k: int = DEFAULT_K,
    separator: str = DEFAULT_SEPARATOR,
    planner: Planner | None = None,
    ranked: bool = False,
) -> str:
    """The reward model's user turn for ``question`` under profile ``mode`` (``ranked``: the profile is
    in retrieval order already, so its first ``k`` posts are used as they are).

    - ``none``: the question alone.
    - ``raw``: question + ``separator`` + :func:`render_profile` of the top-``k`` posts.
    - ``planner``: question + ``separator`` + ``planner(question, top-k posts)``.

    With no posts in raw mode, or a planner that returns "", the turn is the question alone, without
    a dangling separator. The sandbox planner returns its header line even when it infers no aspect
    (no posts: a general prompt), so a planner-mode turn always carries that line, as it did when the
    stored planner-mode RMs were trained. The assistant turn (the response) is added by the caller's
    chat template.
    """
    if mode not in PROFILE_MODES:
        raise ConfigError(f"unknown profile mode {mode!r}; valid modes: {', '.join(PROFILE_MODES)}")
    if not isinstance(separator, str):
        raise ConfigError(f"profile separator must be a string, got {type(separator).__name__}")
    _check_k(k)
    if mode == "none":
        return question
    query = None if ranked else question
    if mode == "raw":
        block = render_profile(profile, k, query)
    else:
        if planner is None:
            raise ConfigError("profile mode 'planner' needs a planner (none was configured)")
        # The planner sees the same top-k posts the raw mode would show (LaMP-QA PlanPers uses top-10).
        block = planner(question, top_posts(profile, k, query))
        if not isinstance(block, str):
            raise TypeError(f"planner returned {type(block).__name__}, expected str")
    return f"{question}{separator}{block}" if block else question


# PRB's BoN policy prompt, verbatim: Martin-qyma/Personalized-RewardBench@d8a0cdaa prompts/sample.txt (read with
# .strip(), as BoN/sample.py's load_template does), filled by replacing {question} and {profile}; the profile is
# format_profile's top-k "Post i (Category: c):\n<text>" blocks joined by "\n"; the system message is
# BoN/sample.py's. PRB samples LaMP-QA with it, 100-word cap included (PRB's, not the sandbox's).
PRB_TEMPLATE = "prb"
PRB_SYSTEM = "You are a helpful assistant designed to generate personalized responses to user questions."
PRB_SAMPLE_PROMPT = (
    "Your task is to generate a personalized answer to the user's current question by analyzing their past posts "
    "(including questions and detailed descriptions) to understand their preferences, interests, and communication "
    "style.\n\n"
    "# Input:\n"
    "- The user's current question from a post.\n"
    "- The user's past post questions and detailed descriptions of these questions.\n\n"
    "# Requirements:\n"
    "- Tailor the response to the user\u2019s demonstrated style (tone, level of detail, format).\n"
    "- Incorporate relevant interests and constraints inferred from the user's past posts.\n"
    "- Directly answer the current question.\n"
    "- Do not mention the analysis process, just provide the final answer.\n"
    "- Keep the response under 100 words.\n\n"
    "Output:\n"
    "- A single, customized answer within 100 words.\n\n"
    "# Data provided:\n"
    "- User's current question:\n"
    "{question}\n"
    "- Past post questions and detailed descriptions of these questions:\n"
    "{profile}\n\n"
    "Generate the answer to user's current question following above instructions."
)


def prb_policy_messages(question: str, profile: Sequence[ProfilePost], k: int = DEFAULT_K, *,
                        ranked: bool = True) -> list[dict[str, str]]:
    """The policy's conversation as PRB's ``BoN/sample.py`` builds it: its system message, and
    ``prompts/sample.txt`` with the question and the top-``k`` posts (in retrieval order when ``ranked``)."""
    profile_text = render_profile(profile, k, None if ranked else question)
    user = PRB_SAMPLE_PROMPT.replace("{question}", question).replace("{profile}", profile_text)
    return [{"role": "system", "content": PRB_SYSTEM}, {"role": "user", "content": user}]


def policy_prompt(question: str, profile: Sequence[ProfilePost], k: int = DEFAULT_K, *, ranked: bool = False) -> str:
    """The user message for personalized sampling: instruction, past posts, current question.

    Pair it with :data:`SYSTEM_PERSONALIZED` as the system message. ``ranked``: the profile is in
    retrieval order already, so its first ``k`` posts are shown as they are.
    """
    posts = render_profile(profile, k, None if ranked else question) or "(no past posts)"
    return f"{_POLICY_INSTRUCTION}\n\n# Past posts\n{posts}\n\n# Current question\n{question}"


# --- Chatbot Arena- / PRISM-Personalized: what an RM sees of the user (config.choices.UserContextMode) ---

USER_CONTEXT_MODES: tuple[str, ...] = tuple(UserContextMode)


ROLE_NAMES = {"user": "User", "assistant": "Assistant", "system": "System"}


def conversation_text(context: str | Sequence[tuple[str, str]]) -> str:
    """An earlier vote's conversation as the history block shows it: a single user message as
    ``Question: <text>``, a longer one whole (SynthesizeMe renders every turn), one ``Role: text``
    line block per message under ``Conversation:``."""
    if isinstance(context, str):
        return f"Question: {context}"
    messages = list(context)
    if len(messages) == 1 and messages[0][0] == "user":
        return f"Question: {messages[0][1]}"
    return "Conversation:\n" + "\n".join(f"{ROLE_NAMES.get(r, r.title())}: {c}" for r, c in messages)


def history_block(votes: Sequence[tuple[Any, str, str]], k: int, drop: int = 0) -> str:
    """The user's last ``k`` earlier votes (conversation, preferred, other), in the order given, as one text
    block; ``drop`` leaves out the oldest of those ``k`` (to fit a reward model's ``max_length``).
    A vote's conversation is its whole context (:func:`conversation_text`)."""
    _check_k(k)
    shown = list(votes)[-k:][drop:]
    if not shown:
        return ""
    parts = [f"{conversation_text(q)}\nPreferred answer: {c}\nOther answer: {r}" for q, c, r in shown]
    return "Earlier choices of this user:\n\n" + "\n\n".join(parts)


def persona_block(self_description: str, stated_prefs: Sequence[tuple[str, int]]) -> str:
    """A PRISM user's self-description and stated priorities (0-100 sliders), as one text block."""
    lines = [f"About the user: {self_description}"] if self_description else []
    if stated_prefs:
        lines.append("The user's stated priorities (0-100): " + ", ".join(f"{n} {v}" for n, v in stated_prefs))
    return "\n".join(lines)


def with_user_context(
    context: Sequence[tuple[str, str]], block: str, separator: str = DEFAULT_SEPARATOR
) -> tuple[tuple[tuple[str, str], ...], str]:
    """A conversation as (earlier turns, final user message), with ``block`` placed before it.

    The block goes in front of the first user message, so every chat template (with or without a
    system role) reads it before the conversation. An empty block leaves the conversation as it is.
    """
    messages = list(context)
    if block:
        first = next(i for i, (role, _) in enumerate(messages) if role == "user")
        messages[first] = ("user", f"{block}{separator}{messages[first][1]}")
    return tuple(messages[:-1]), messages[-1][1]


__all__ = [
    "DEFAULT_K",
    "DEFAULT_SEPARATOR",
    "PROFILE_MODES",
    "PRB_SAMPLE_PROMPT",
    "PRB_SYSTEM",
    "PRB_TEMPLATE",
    "SYSTEM_PERSONALIZED",
    "USER_CONTEXT_MODES",
    "Planner",
    "conversation_text",
    "history_block",
    "persona_block",
    "policy_prompt",
    "prb_policy_messages",
    "render_profile",
    "rm_user_turn",
    "top_posts",
    "with_user_context",
]
