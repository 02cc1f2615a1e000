"""Cell values: missing-value tests, numbers read from records, and JSON-ready values.

Records hold whatever a task wrote (ints, floats, numpy scalars, None, strings); the table wants
floats with NaN for "no value", and ``context.json`` wants plain JSON. One helper per conversion,
shared by every module of :mod:`rlexp.analysis`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np


def is_missing(v: Any) -> bool:
    """None or NaN: a cell with no value."""
    return v is None or (isinstance(v, float) and math.isnan(v))


def lineage_flag(v: Any) -> bool | None:
    """A lineage-match cell (bool, or "True"/"False" read back from CSV) as True/False/None."""
    if is_missing(v) or v == "":
        return None
    if isinstance(v, str):
        return {"true": True, "false": False}.get(v.strip().lower())
    return bool(v)


def none_if_missing(v: Any) -> Any:
    """``v``, or None when it is missing (NaN read back from a CSV becomes None, as JSON wants)."""
    return None if is_missing(v) else v


def finite_float(value: Any) -> float:
    """A table cell: ``value`` as a finite float, NaN for anything else (None, bools, text, inf)."""
    if isinstance(value, bool) or value is None:
        return math.nan  # a bool is not a score, although float(True) would accept it
    try:
        out = float(value)
    except (TypeError, ValueError):
        return math.nan
    return out if math.isfinite(out) else math.nan


def score_or_none(value: Any) -> float | None:
    """A score for the context: a finite float or None.

    Kept a float on purpose: :func:`factor_value` would turn 0.0 into 0, which the report prints
    as "0" instead of "0.000".
    """
    out = finite_float(value)
    return None if math.isnan(out) else out


def interval(values: Any) -> list[float | None]:
    """The first two entries of a record's CI as scores (a missing CI gives [None, None])."""
    return [score_or_none(v) for v in list(values or [None, None])[:2]]


def factor_value(value: Any) -> Any:
    """A factor value as JSON would hold it: None for NaN, whole floats as ints, numpy unwrapped.

    Whole floats become ints because pandas turns an int factor column into floats as soon as an
    external RM leaves a gap in it, and ``seed=1.0`` must still read (and compare) as ``seed=1``.
    """
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, (np.floating, np.integer)):
        return factor_value(value.item())
    return value


def jsonable(obj: Any) -> Any:
    """``obj`` with str keys, lists for tuples, None for NaN/inf and numpy scalars unwrapped.

    Floats stay floats (unlike :func:`factor_value`): ``context.json`` keeps 0.0 a score.
    """
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        return jsonable(obj.item())  # numpy scalar
    return obj
