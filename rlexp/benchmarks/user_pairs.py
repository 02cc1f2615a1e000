"""Chatbot Arena- and PRISM-Personalized as benchmarks: which votes are scored, with which user context.

A user's rows carry their own ``split`` column (SynthesizeMe): the ``eval_split`` votes are scored,
and the user's other votes (``train``/``val``) are their history, the only personal signal these
sets have besides PRISM's survey. Accuracy is PRB's rule: strict ``s(chosen) > s(rejected)``, an
exact tie is wrong and reported. Pure functions: no model is loaded here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rlexp.benchmarks.personalized_math import pairwise_accuracy
from rlexp.data.formatting import history_block, persona_block
from rlexp.data.schemas import UserPairItem, UserSurvey
from rlexp.errors import ConfigError, DataError

# Bump whenever the history an RM sees changes for the same votes: an evaluation's record id carries it
# (user_context=history only), so a store never serves an evaluation made with another rendering.
# 2: earlier votes rendered whole and trimmed oldest-first to fit max_length (SynthesizeMe).
HISTORY_FORMAT = 2


@dataclass(frozen=True)
class UserPairCase:
    """One scored vote and what its user showed before it."""

    item: UserPairItem
    # (conversation, chosen, rejected) of the user's other votes: the whole context as (role, content) messages
    history: tuple[tuple[tuple[tuple[str, str], ...], str, str], ...]
    survey: UserSurvey | None = None


# A user's known data in SynthesizeMe's order (``get_user_data`` returns train, then val): the history.
HISTORY_ORDER: dict[str, int] = {"train": 0, "val": 1}


class UserPairCases(list):
    """The scored votes, with the loader's skipped rows (reason -> count) carried to the record; a slice keeps them."""

    skipped: dict[str, int]

    def __init__(self, items: Any = (), skipped: Mapping[str, int] | None = None) -> None:
        super().__init__(items)
        self.skipped = dict(skipped or {})

    def __getitem__(self, index: Any) -> Any:  # type: ignore[override]
        out = super().__getitem__(index)
        return type(self)(out, self.skipped) if isinstance(index, slice) else out


def user_pair_cases(
    items: Sequence[UserPairItem], eval_split: str = "test", surveys: Mapping[str, UserSurvey] | None = None
) -> UserPairCases:
    """The ``eval_split`` votes, each with its user's votes of the other splits and survey.

    The history is the user's known data as SynthesizeMe orders it: the ``train`` votes, then the
    ``val`` votes, each in file order (the sets have no timestamps, so "latest" can only mean this
    order); the block shows its last ``k``.
    """
    history: dict[str, list[tuple[int, int, tuple[tuple[tuple[str, str], ...], str, str]]]] = defaultdict(list)
    for row, it in enumerate(items):
        if it.split != eval_split:
            history[it.user_id].append((HISTORY_ORDER.get(it.split, len(HISTORY_ORDER)), row,
                                        (it.context, it.chosen, it.rejected)))
    ordered = {user: tuple(v for *_, v in sorted(votes, key=lambda x: x[:2])) for user, votes in history.items()}
    cases = [UserPairCase(it, ordered.get(it.user_id, ()), (surveys or {}).get(it.user_id))
             for it in items if it.split == eval_split]
    if not cases:
        found = sorted({it.split for it in items})
        raise DataError(f"no votes with split {eval_split!r} to score (the rows' splits: {', '.join(found) or 'none'})")
    return UserPairCases(cases, getattr(items, "skipped", {}))


def context_block(case: UserPairCase, mode: str, k: int, drop: int = 0) -> str:
    """What the RM reads about the user under ``mode`` (``none`` | ``history`` | ``persona``); ``drop`` leaves
    out the oldest of the ``k`` votes shown (to fit the RM's ``max_length``)."""
    if mode == "none":
        return ""
    if mode == "history":
        return history_block(case.history, k, drop)
    if mode == "persona":
        s = case.survey
        return persona_block(s.self_description, s.stated_prefs) if s is not None else ""
    raise ConfigError(f"unknown user_context {mode!r}; valid: none, history, persona")


def user_pairs_summary(chosen: Sequence[float], rejected: Sequence[float], cases: Sequence[UserPairCase],
                       with_context: Sequence[bool]) -> dict[str, Any]:
    """Accuracy overall, per vote type and per user (and the mean over users, each user weighted once)."""
    by_kind = pairwise_accuracy(chosen, rejected, [c.item.kind or "-" for c in cases])
    by_user = pairwise_accuracy(chosen, rejected, [c.item.user_id for c in cases])["per_domain"]
    per_user = [u["accuracy"] for u in by_user.values()]
    return {
        **{k: by_kind[k] for k in ("n", "correct", "accuracy", "ties", "mean_gap")},
        "per_type": {k: v["accuracy"] for k, v in by_kind["per_domain"].items()},
        "user_accuracy": sum(per_user) / len(per_user),
        "n_users": len(per_user),
        "with_context": int(sum(with_context)),
        "per_user": {u: {"n": v["n"], "accuracy": v["accuracy"]} for u, v in by_user.items()},
    }
