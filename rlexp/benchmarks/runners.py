"""Running a scorer over a benchmark: the model side, separate from the scoring math.

Both runners return (summary, per-example rows). RB2 rows are per completion, so any external
scorer can recompute the subset scores from the parquet file alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rlexp.benchmarks.personalized_math import pairwise_accuracy
from rlexp.benchmarks.rewardbench2_math import reroll, score_rewardbench2, unroll
from rlexp.benchmarks.user_pairs import UserPairCase, context_block, user_pairs_summary
from rlexp.data.formatting import with_user_context
from rlexp.data.schemas import PRBItem, RB2Item
from rlexp.scorer import ScoreInput, Scorer


def score_chunked(scorer: Scorer, inputs: list[ScoreInput], desc: str, progress: bool, chunk: int = 256) -> np.ndarray:
    """Score in chunks so the progress bar moves; the scorer still batches within a chunk."""
    from tqdm.auto import tqdm

    out = np.empty(len(inputs), dtype=np.float64)
    with tqdm(total=len(inputs), desc=desc, disable=not progress, unit="seq") as bar:
        for start in range(0, len(inputs), chunk):
            part = inputs[start : start + chunk]
            out[start : start + len(part)] = scorer.score(part)
            bar.update(len(part))
    return out


def run_rewardbench2(
    scorer: Scorer, items: Sequence[RB2Item], *, ties_version: str = "0.1.4", progress: bool = False
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Unroll chosen + rejected, score every completion, re-roll by total_completions, score RB2."""
    texts, index = unroll(items)
    inputs = [ScoreInput(items[i].prompt, t) for t, (i, _) in zip(texts, index, strict=False)]
    flat = score_chunked(scorer, inputs, "RewardBench 2", progress)
    grouped = reroll(flat.tolist(), [it.total_completions for it in items])
    rows = [
        {"id": it.id, "subset": it.subset, "scores": s, "num_correct": it.num_correct} for it, s in zip(items, grouped, strict=False)
    ]
    summary = score_rewardbench2(rows, ties_version=ties_version)
    per_example = [
        {
            "id": items[i].id,
            "subset": items[i].subset,
            "completion_index": j,
            "is_correct": j < items[i].num_correct,
            "num_correct": items[i].num_correct,
            "total_completions": items[i].total_completions,
            "score": float(flat[f]),
        }
        for f, (i, j) in enumerate(index)
    ]
    summary.pop("per_row", None)
    return summary, per_example


def run_personalized(
    scorer: Scorer, items: Sequence[PRBItem], *, progress: bool = False
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Score chosen and rejected of every pair (with the user's profile); strict-> accuracy."""
    inputs = []
    for it in items:
        inputs.append(ScoreInput(it.question, it.chosen, it.profile))
        inputs.append(ScoreInput(it.question, it.rejected, it.profile))
    flat = score_chunked(scorer, inputs, "Personalized RewardBench", progress)
    chosen, rejected = flat[0::2], flat[1::2]
    summary = pairwise_accuracy(chosen.tolist(), rejected.tolist(), [it.domain for it in items])
    per_example = [
        {"id": it.id, "domain": it.domain, "chosen_score": float(c), "rejected_score": float(r), "correct": bool(c > r)}
        for it, c, r in zip(items, chosen, rejected, strict=False)
    ]
    return summary, per_example


# The user context of Chatbot Arena-/PRISM-Personalized is rlexp's assumption: the record says so.
USER_CONTEXT_NOTE = ("user context is rlexp's assumption: PRB's released scorer passes none; benchmark.<set>."
                     "user_context=none scores the conversation alone")


def _too_long(scorer: Scorer) -> Any:
    """``too_long(items)``: whether any of ``items`` renders past the scorer's ``max_length`` (None for a
    scorer without a tokenizer and a max_length, which then sees the whole text)."""
    render, tokenizer = getattr(scorer, "render", None), getattr(scorer, "tokenizer", None)
    limit = getattr(getattr(scorer, "settings", None), "max_length", None)
    if render is None or tokenizer is None or not limit:
        return None

    def too_long(items: Sequence[ScoreInput]) -> bool:
        ids = tokenizer([render(it) for it in items], add_special_tokens=True, truncation=False)["input_ids"]
        return any(len(x) > int(limit) for x in ids)

    return too_long


def run_user_pairs(
    scorer: Scorer, cases: Sequence[UserPairCase], *, mode: str, k: int, separator: str, name: str,
    progress: bool = False,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Score chosen and rejected of every vote with the user context of ``mode``; strict-> accuracy.

    When history and conversation exceed the scorer's ``max_length``, the history is cut first, from its
    oldest vote: cutting the end (right truncation) would cut both answers alike, tie their scores and
    count the vote wrong. ``history_trimmed`` counts the votes dropped so; ``still_too_long`` the pairs
    that do not fit even without history (the scorer truncates those as configured).
    """
    inputs: list[ScoreInput] = []
    with_context: list[bool] = []
    shown: list[int] = []
    too_long = _too_long(scorer) if mode == "history" else None
    trimmed = over = 0
    for case in cases:
        drop, full = 0, min(k, len(case.history)) if mode == "history" else 0
        while True:
            block = context_block(case, mode, k, drop)
            turns, prompt = with_user_context(case.item.context, block, separator)  # the block before the conversation
            pair = [ScoreInput(prompt, case.item.chosen, turns=turns), ScoreInput(prompt, case.item.rejected, turns=turns)]
            if too_long is None or drop >= full or not too_long(pair):
                break
            drop += 1
        trimmed += drop
        if too_long is not None and drop >= full and full and too_long(pair):
            over += 1
        with_context.append(bool(block))
        shown.append(full - drop)
        inputs.extend(pair)
    flat = score_chunked(scorer, inputs, name, progress)
    chosen, rejected = flat[0::2], flat[1::2]
    summary = user_pairs_summary(chosen.tolist(), rejected.tolist(), cases, with_context)
    summary["skipped"] = dict(getattr(cases, "skipped", {}))
    if mode == "history":
        summary["history_trimmed"] = trimmed
        summary["still_too_long"] = over
    if mode != "none":
        summary["user_context_note"] = USER_CONTEXT_NOTE
    per_example = [
        {"id": c.item.id, "user_id": c.item.user_id, "type": c.item.kind, "history": len(c.history),
         "history_shown": n, "with_context": w, "chosen_score": float(a), "rejected_score": float(b),
         "correct": bool(a > b)}
        for c, n, w, a, b in zip(cases, shown, with_context, chosen, rejected, strict=True)
    ]
    return summary, per_example
