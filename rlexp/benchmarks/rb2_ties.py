"""Scoring math for the RewardBench 2 Ties subset (RB2 reference §2.2), in the ``0.1.4`` and ``main`` variants.

Ties is scored at the subset level, not per row: a prompt has a reference row ``ref:<n>`` and a
tied row ``tied:<n>`` (several equally correct answers), and the score combines both rows'
accuracy with how far the correct answers stand above the incorrect ones compared with how far
apart the correct answers are. Pure functions: no models, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

from rlexp.benchmarks.rb2_rows import checked_num_correct, checked_scores, row_field
from rlexp.data.schemas import RB2_TIES_ID
from rlexp.errors import ConfigError, DataError

#: Supported variants of the Ties formula (they differ only when w(p) == 0).
TIES_VERSIONS: tuple[str, ...] = ("0.1.4", "main")
#: Weights of the Ties components: A_tied, A_ref, CP, CP_hard, MS.
TIES_WEIGHTS: dict[str, float] = {"A_tied": 0.30, "A_ref": 0.30, "CP": 0.20, "CP_hard": 0.20, "MS": 0.01}


class _RowStats(NamedTuple):
    """What the formula needs of one Ties row."""

    accurate: bool  # a = 1[min C > max I]
    margin: float  # m = min C - max I
    width: float | None  # w = max C - min C; undefined (None) with a single correct answer


class _PairedTerms(NamedTuple):
    """Per-prompt terms over the prompts having both a ref and a tied row."""

    n_pairs: int  # |P|
    cp: list[float]
    cp_hard: list[float]
    ms: list[float]


def check_ties_version(version: str) -> None:
    """Refuse a Ties formula variant other than :data:`TIES_VERSIONS`."""
    if version not in TIES_VERSIONS:
        raise ConfigError(f"ties_version must be one of {list(TIES_VERSIONS)}, got {version!r}")


def _mean_or_zero(values: list[float]) -> float:
    # The reference reports 0 for an empty group rather than NaN; keep that so the weighted sum
    # stays a number.
    return float(sum(values) / len(values)) if values else 0.0


def _margin_term(numerator: float, width: float, version: str) -> float | None:
    """One prompt's MS term ``tanh(numerator / width - 1)``, or None when the prompt is skipped."""
    if width > 0:
        return math.tanh(numerator / width - 1.0)
    # width == 0: two correct answers with identical scores.
    if version == "0.1.4":
        return None  # 0.1.4 averages MS only over prompts with w > 0
    # `main` divides by zero: +-inf -> tanh = +-1, and 0/0 = NaN which it maps to 0.
    if numerator > 0:
        return 1.0
    if numerator < 0:
        return -1.0
    return 0.0


def _row_stats(rows: Sequence[Any]) -> dict[str, dict[int, _RowStats]]:
    """Per row type (``ref`` / ``tied``): prompt number -> the row's accuracy, margin and width."""
    stats: dict[str, dict[int, _RowStats]] = {"ref": {}, "tied": {}}
    for i, row in enumerate(rows):
        row_id = row_field(row, "id", f"Ties row {i}")
        where = f"Ties row {row_id!r}"
        match = RB2_TIES_ID.match(str(row_id))
        if match is None:
            raise DataError(f"{where}: id must look like 'ref:<n>' or 'tied:<n>'")
        kind, number = match.group(1), int(match.group(2))
        if number in stats[kind]:
            raise DataError(f"{where}: duplicate Ties id ({kind}:{number})")
        scores = checked_scores(row_field(row, "scores", where), where)
        n_correct = checked_num_correct(row_field(row, "num_correct", where), len(scores), where, need_incorrect=True)
        correct, incorrect = scores[:n_correct], scores[n_correct:]
        margin = min(correct) - max(incorrect)
        width = max(correct) - min(correct) if len(correct) > 1 else None
        stats[kind][number] = _RowStats(margin > 0, margin, width)
    return stats


def _paired_terms(stats: dict[str, dict[int, _RowStats]], version: str) -> _PairedTerms:
    """The CP, CP_hard and MS terms of every prompt with both rows, in prompt-number order."""
    paired = sorted(set(stats["ref"]) & set(stats["tied"]))
    cp_terms: list[float] = []
    cp_hard_terms: list[float] = []
    ms_terms: list[float] = []
    for p in paired:
        m_ref = stats["ref"][p].margin
        m_tied, w = stats["tied"][p].margin, stats["tied"][p].width
        if w is None:
            # w is undefined for a tied row with a single correct answer; both versions skip it
            # (0.1.4 filters it out; `main` would crash on it).
            continue
        hard_margin = min(m_ref, m_tied)
        cp_terms.append(float(m_tied > w))
        cp_hard_terms.append(float(hard_margin > w))
        term = _margin_term(hard_margin, w, version)
        if term is not None:
            ms_terms.append(term)
    return _PairedTerms(len(paired), cp_terms, cp_hard_terms, ms_terms)


def ties_score(rows: Sequence[Any], version: str = "0.1.4") -> dict[str, Any]:
    """Score the RB2 Ties subset (RB2 §2.2).

    Each row has ``id`` (``"ref:<n>"`` or ``"tied:<n>"``), ``scores`` laid out ``chosen + rejected``
    and ``num_correct``. Per row, with C the correct and I the incorrect scores:
    ``a = 1[min C > max I]``, ``m = min C - max I`` and, for rows with ``|C| > 1``,
    ``w = max C - min C``. With P the prompt numbers having both a ref and a tied row::

        A_ref  = mean a over ref rows,   A_tied = mean a over tied rows
        CP     = mean_{p in P} 1[m_tied(p) > w(p)]
        CP_hard= mean_{p in P} 1[min(m_ref(p), m_tied(p)) > w(p)]
        MS     = mean_{p in P} tanh(min(m_ref(p), m_tied(p)) / w(p) - 1)
        score  = 0.30 A_tied + 0.30 A_ref + 0.20 CP + 0.20 CP_hard + 0.01 MS

    CP, CP_hard and MS only use prompts of P whose tied row defines w (|C| > 1). ``version``:

    * ``"0.1.4"`` (leaderboard): MS is averaged only over prompts with ``w > 0``;
    * ``"main"``: a prompt with ``w == 0`` stays in MS and contributes ``tanh(+-inf) = +-1``, or 0
      when the numerator is also 0.

    A tied row without a ref partner (and vice versa) counts only toward its accuracy. An empty
    group or an empty average yields 0 for that component.

    Returns:
        ``A_ref, A_tied, CP, CP_hard, MS, score`` plus the counts ``n_ref, n_tied, n_pairs`` (|P|),
        ``n_margin`` (prompts used for CP/CP_hard) and ``n_ms`` (prompts used for MS).

    Raises:
        ConfigError: unknown ``version``.
        DataError: malformed id, duplicate id, bad scores, or a row without correct or incorrect
            completions.
    """
    check_ties_version(version)
    stats = _row_stats(rows)
    terms = _paired_terms(stats, version)
    components = {
        "A_ref": _mean_or_zero([float(s.accurate) for s in stats["ref"].values()]),
        "A_tied": _mean_or_zero([float(s.accurate) for s in stats["tied"].values()]),
        "CP": _mean_or_zero(terms.cp),
        "CP_hard": _mean_or_zero(terms.cp_hard),
        "MS": _mean_or_zero(terms.ms),
    }
    score = sum(TIES_WEIGHTS[name] * value for name, value in components.items())
    return {
        **components,
        "score": float(score),
        "n_ref": len(stats["ref"]),
        "n_tied": len(stats["tied"]),
        "n_pairs": terms.n_pairs,
        "n_margin": len(terms.cp),
        "n_ms": len(terms.ms),
    }
