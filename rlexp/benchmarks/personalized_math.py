"""Scoring math for Personalized RewardBench (PRB).

Pure functions for the two ways an RM is scored on PRB (PRB reference §3):

* scalar RMs: :func:`pairwise_accuracy` - strict ``s(chosen) > s(rejected)``; an exact tie is wrong;
* generative pairwise judges: :func:`seeded_positions` (which slot holds ``chosen``),
  :func:`parse_pairwise_verdict` (the reference parser) and :func:`pairwise_judge_summary`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

from rlexp.errors import ConfigError, DataError

FAILURE_POLICIES: tuple[str, ...] = ("reference", "exclude")


def _finite(value: Any, where: str) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise DataError(f"{where}: {value!r} is not a number") from None
    if math.isnan(out):
        raise DataError(f"{where}: score is NaN")
    if math.isinf(out):
        raise DataError(f"{where}: score is infinite")
    return out


def pairwise_accuracy(
    chosen_scores: Sequence[float],
    rejected_scores: Sequence[float],
    domains: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Accuracy of a scalar RM on preference pairs (PRB §3.1).

    A pair is correct iff ``chosen > rejected`` strictly; an exact tie counts as wrong and is
    reported in ``ties``.

    Returns:
        ``n, correct, accuracy, ties, mean_chosen, mean_rejected, mean_gap`` (gap = chosen -
        rejected) and ``per_domain``: domain -> ``{n, correct, accuracy, ties}`` (empty dict when
        ``domains`` is None).

    Raises:
        DataError: length mismatch, no pairs, or a NaN/inf score (the message names the index).
    """
    n = len(chosen_scores)
    if len(rejected_scores) != n:
        raise DataError(f"pairwise_accuracy: {n} chosen scores but {len(rejected_scores)} rejected scores")
    if domains is not None and len(domains) != n:
        raise DataError(f"pairwise_accuracy: {n} pairs but {len(domains)} domains")
    if n == 0:
        raise DataError("pairwise_accuracy: no pairs to score")

    chosen = [_finite(v, f"pair {i}, chosen") for i, v in enumerate(chosen_scores)]
    rejected = [_finite(v, f"pair {i}, rejected") for i, v in enumerate(rejected_scores)]
    wins = [c > r for c, r in zip(chosen, rejected, strict=True)]
    ties = [c == r for c, r in zip(chosen, rejected, strict=True)]

    per_domain: dict[str, dict[str, Any]] = {}
    if domains is not None:
        for i, domain in enumerate(domains):
            bucket = per_domain.setdefault(str(domain), {"n": 0, "correct": 0, "ties": 0})
            bucket["n"] += 1
            bucket["correct"] += int(wins[i])
            bucket["ties"] += int(ties[i])
        for bucket in per_domain.values():
            bucket["accuracy"] = bucket["correct"] / bucket["n"]

    mean_chosen = sum(chosen) / n
    mean_rejected = sum(rejected) / n
    return {
        "n": n,
        "correct": sum(wins),
        "accuracy": sum(wins) / n,
        "ties": sum(ties),
        "mean_chosen": mean_chosen,
        "mean_rejected": mean_rejected,
        "mean_gap": sum(c - r for c, r in zip(chosen, rejected, strict=True)) / n,
        "per_domain": per_domain,
    }


def parse_pairwise_verdict(text: str | None) -> str | None:
    """Parse a pairwise judge's output the way the PRB reference does (PRB §3.2).

    Keep the text after the last ``</think>``; remove double quotes and asterisks; lower-case it;
    take the text after the **first** ``result:``; strip it; the verdict is ``"A"``/``"B"`` if that
    text starts with ``a``/``b``. Returns None on a parse failure (no ``result:``, or neither letter).
    """
    if not text:
        return None
    tail = text.split("</think>")[-1]
    cleaned = tail.replace('"', "").replace("*", "").lower()
    marker = "result:"
    pos = cleaned.find(marker)
    if pos < 0:
        return None
    answer = cleaned[pos + len(marker) :].strip()
    if answer.startswith("a"):
        return "A"
    if answer.startswith("b"):
        return "B"
    return None


def seeded_positions(n: int, seed: int = 42) -> list[bool]:
    """Whether ``chosen`` goes in slot A for each of ``n`` items, as the PRB reference draws it.

    One ``random() < 0.5`` per item, in order, from a ``random.Random(seed)`` (the reference seeds
    the global generator once with 42, which yields the same stream). Matching the reference needs
    the same row order.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ConfigError(f"seeded_positions: n must be a non-negative integer, got {n!r}")
    rng = random.Random(seed)
    return [rng.random() < 0.5 for _ in range(n)]


def _rate(correct: int, total: int) -> float | None:
    return correct / total if total else None


def pairwise_judge_summary(
    verdicts: Sequence[str | None],
    chosen_in_a: Sequence[bool],
    failure_policy: str = "reference",
) -> dict[str, Any]:
    """Summarise a generative pairwise judge's verdicts (PRB §3.2).

    ``verdicts[i]`` is ``"A"``, ``"B"`` or None (parse failure); ``chosen_in_a[i]`` says whether the
    preferred answer was shown in slot A. ``failure_policy``:

    * ``"reference"``: a failure is counted and then treated as a vote for A, as the reference does
      (this biases towards slot A);
    * ``"exclude"``: failures are dropped from every rate and from the A/B counts.

    Returns:
        ``n, parse_failures, failure_policy, correct, accuracy`` (under the policy),
        ``accuracy_excluding_failures`` (always computed on parsed verdicts only),
        ``accuracy_chosen_in_a``, ``accuracy_chosen_in_b``, ``n_chosen_in_a``, ``n_chosen_in_b``,
        ``position_bias`` = ``|acc_A - acc_B|``, ``pred_a``, ``pred_b``. A rate over an empty set is
        None (the reference prints 0.0), and so is ``position_bias`` when either side is None.

    Raises:
        ConfigError: unknown ``failure_policy``.
        DataError: length mismatch, no items, or a verdict other than A/B/None.
    """
    if failure_policy not in FAILURE_POLICIES:
        raise ConfigError(f"failure_policy must be one of {list(FAILURE_POLICIES)}, got {failure_policy!r}")
    n = len(verdicts)
    if len(chosen_in_a) != n:
        raise DataError(f"pairwise_judge_summary: {n} verdicts but {len(chosen_in_a)} positions")
    if n == 0:
        raise DataError("pairwise_judge_summary: no verdicts")
    for i, verdict in enumerate(verdicts):
        if verdict not in ("A", "B", None):
            raise DataError(f"pairwise_judge_summary: verdict {i} is {verdict!r}, expected 'A', 'B' or None")

    failures = sum(1 for v in verdicts if v is None)
    # Parsed-only accuracy, reported whatever the policy (PRB §10.8 asks for both).
    parsed = [(v, a) for v, a in zip(verdicts, chosen_in_a, strict=True) if v is not None]
    parsed_correct = sum(1 for v, a in parsed if (v == "A") == bool(a))

    if failure_policy == "reference":
        effective = [("A" if v is None else v, bool(a)) for v, a in zip(verdicts, chosen_in_a, strict=True)]
    else:
        effective = [(v, bool(a)) for v, a in parsed]

    hits = [(v == "A") == a for v, a in effective]
    in_a = [h for h, (_, a) in zip(hits, effective, strict=True) if a]
    in_b = [h for h, (_, a) in zip(hits, effective, strict=True) if not a]
    acc_a = _rate(sum(in_a), len(in_a))
    acc_b = _rate(sum(in_b), len(in_b))
    return {
        "n": n,
        "failure_policy": failure_policy,
        "parse_failures": failures,
        "correct": sum(hits),
        "accuracy": _rate(sum(hits), len(effective)),
        "accuracy_excluding_failures": _rate(parsed_correct, len(parsed)),
        "n_chosen_in_a": len(in_a),
        "n_chosen_in_b": len(in_b),
        "accuracy_chosen_in_a": acc_a,
        "accuracy_chosen_in_b": acc_b,
        "position_bias": abs(acc_a - acc_b) if acc_a is not None and acc_b is not None else None,
        "pred_a": sum(1 for v, _ in effective if v == "A"),
        "pred_b": sum(1 for v, _ in effective if v == "B"),
    }
