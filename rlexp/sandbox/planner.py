"""The sandbox planner: infer a user's aspects from their profile, without a language model.

It plays the role of PRB's planner / LaMP-QA PlanPers (reference/personalized-rewardbench.md §5):
profile in, aspect titles out. For each dimension it runs the checkers over every post and takes
the *margin* = share of posts showing the first pole minus share showing the second. Dimensions
whose |margin| clears a threshold are kept, strongest first, up to ``max_aspects``. Users are
noisy (posts do not always follow the user's style, unrelated dimensions vary at random), so the
planner is good but not perfect; the manifest reports its precision and recall.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rlexp.data.schemas import ProfilePost
from rlexp.sandbox.aspects import DIMENSIONS, dimension_state

MARGIN_THRESHOLD = 0.4
PLAN_HEADER = "The user probably expects the response to have the following aspects:"


def dimension_margins(profile: Sequence[ProfilePost]) -> dict[str, float]:
    """Per dimension: share of posts in the first pole minus share in the second (in [-1, 1])."""
    texts = [p.text for p in profile]
    n = max(1, len(texts))
    out = {}
    for d in DIMENSIONS:
        states = [dimension_state(d.name, t) for t in texts]
        out[d.name] = (states.count(0) - states.count(1)) / n
    return out


def infer_aspects(
    profile: Sequence[ProfilePost], max_aspects: int = 4, threshold: float = MARGIN_THRESHOLD
) -> list[str]:
    """Pole titles inferred from the profile text, strongest evidence first.

    A dimension is kept when the majority of posts lean to one pole by at least ``threshold``.
    Ties in strength are broken by the fixed dimension order, so the output is deterministic.
    """
    margins = dimension_margins(profile)
    ranked = sorted(
        ((abs(m), i, d) for i, d in enumerate(DIMENSIONS) if abs(m := margins[d.name]) >= threshold),
        key=lambda t: (-t[0], t[1]),
    )
    return [d.poles[0 if margins[d.name] > 0 else 1].title for _, _, d in ranked[: max(0, max_aspects)]]


def format_plan(titles: Iterable[str]) -> str:
    """LaMP-QA PlanPers-style plan: one sentence, then one bulleted line per aspect title."""
    lines = [PLAN_HEADER, *(f"- {t}" for t in titles)]
    return "\n".join(lines)


@dataclass(frozen=True)
class PlannerQuality:
    """Micro-averaged precision/recall of inferred titles against hidden titles."""

    precision: float
    recall: float
    exact_match: float
    users: int

    def to_dict(self) -> dict[str, float | int]:
        return {
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
            "exact_match": round(self.exact_match, 4),
            "users": self.users,
        }


def planner_quality(
    cases: Iterable[tuple[Sequence[ProfilePost], Sequence[str]]], max_aspects: int = 4
) -> PlannerQuality:
    """Score :func:`infer_aspects` on (profile, hidden titles) cases."""
    tp = n_pred = n_gold = exact = users = 0
    for profile, gold in cases:
        pred = set(infer_aspects(profile, max_aspects))
        g = set(gold)
        tp += len(pred & g)
        n_pred += len(pred)
        n_gold += len(g)
        exact += pred == g
        users += 1
    return PlannerQuality(tp / max(1, n_pred), tp / max(1, n_gold), exact / max(1, users), users)
