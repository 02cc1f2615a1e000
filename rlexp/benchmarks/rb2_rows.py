"""Reading one RB2 score row: its fields, its scores and its ``num_correct``, checked with one-line errors.

Shared by the per-row RB2 scoring (:mod:`rlexp.benchmarks.rewardbench2_math`) and the Ties
formula (:mod:`rlexp.benchmarks.rb2_ties`). A row is a dict-like mapping or an attribute-style
object (such as :class:`~rlexp.data.schemas.RB2Item` plus its scores).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rlexp.errors import DataError


def row_field(row: Any, name: str, where: str) -> Any:
    """Read ``name`` from a dict-like row or an attribute-style object."""
    if isinstance(row, Mapping):
        if name not in row:
            raise DataError(f"{where}: missing field '{name}'")
        return row[name]
    if not hasattr(row, name):
        raise DataError(f"{where}: missing field '{name}'")
    return getattr(row, name)


def checked_score(value: Any, where: str) -> float:
    """Convert one score to a finite float.

    Published RB2 per-example results store each score as a one-element list, so such lists are
    unwrapped; anything else that is not a real number is rejected.
    """
    if isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]
    if isinstance(value, (bool, str, bytes)):
        raise DataError(f"{where}: score {value!r} is not a number")
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise DataError(f"{where}: score {value!r} is not a number") from None
    if not math.isfinite(out):
        # NaN would silently compare False everywhere and inf breaks the margin arithmetic.
        raise DataError(f"{where}: score is not finite ({out})")
    return out


def checked_scores(values: Any, where: str) -> list[float]:
    """A non-empty list of finite scores (see :func:`checked_score`)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise DataError(f"{where}: scores must be a list of numbers")
    out = [checked_score(v, f"{where}, score {j}") for j, v in enumerate(values)]
    if not out:
        raise DataError(f"{where}: scores are empty")
    return out


def checked_num_correct(value: Any, n_scores: int, where: str, *, need_incorrect: bool) -> int:
    """``num_correct`` as an int in ``1..n_scores`` (``1..n_scores-1`` when ``need_incorrect``)."""
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            as_int = int(value)
        except (TypeError, ValueError):
            raise DataError(f"{where}: num_correct {value!r} is not an integer") from None
        if as_int != value:
            raise DataError(f"{where}: num_correct {value!r} is not an integer")
        value = as_int
    upper = n_scores - 1 if need_incorrect else n_scores
    if not 1 <= value <= upper:
        raise DataError(f"{where}: num_correct={value} is out of range for {n_scores} scores")
    return value
