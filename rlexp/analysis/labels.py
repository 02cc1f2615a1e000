"""What tells the RMs of a study apart: the factors that vary, and a short label per RM from them."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import pandas as pd

from rlexp.analysis.columns import DESIGN_FACTORS
from rlexp.analysis.records import short_name
from rlexp.analysis.values import factor_value, is_missing


def _key(value: Any) -> str:
    """A factor value as a comparable string (1 and 1.0 compare equal, NaN is null)."""
    return json.dumps(factor_value(value), default=str)


def factor_summary(table: pd.DataFrame) -> tuple[dict[str, list[Any]], dict[str, Any]]:
    """Factors whose values differ between the trained RMs, and those shared by all of them."""
    trained = table[~table["external"].astype(bool)] if "external" in table else table
    varying: dict[str, list[Any]] = {}
    constant: dict[str, Any] = {}
    for f in DESIGN_FACTORS:
        values = [v for v in trained[f].tolist() if not is_missing(v)]
        uniq = sorted({_key(v) for v in values})
        if len(uniq) > 1:
            varying[f] = [json.loads(u) for u in uniq]
        elif len(uniq) == 1:
            constant[f] = json.loads(uniq[0])
    return varying, constant


def rm_labels(table: pd.DataFrame, varying: Mapping[str, Any]) -> list[str]:
    """Short RM names from the factors that vary (a factor that only repeats another one is left out).

    External RMs, and every RM when no factor varies, are named by :func:`short_name`; labels
    that still collide get the RM id's first six characters.
    """
    trained = table[~table["external"].astype(bool)]
    keep: list[str] = []
    partitions: list[list[int]] = []
    for f in varying:
        part = pd.factorize(trained[f].map(_key))[0].tolist()
        if part not in partitions:
            keep.append(f)
            partitions.append(part)
    labels = []
    for rm, row in table.iterrows():
        if row.get("external") or not keep:
            labels.append(short_name(str(rm)))
            continue
        labels.append(" ".join(_fmt_factor(f, row[f]) for f in keep if row[f] is not None))
    counts: dict[str, int] = defaultdict(int)
    for lab in labels:
        counts[lab] += 1
    return [f"{lab} #{str(rm)[:6]}" if counts[lab] > 1 else lab for lab, rm in zip(labels, table.index, strict=True)]


def _fmt_factor(name: str, value: Any) -> str:
    if name == "epochs":
        return f"e{_g(value)}"
    if name == "lr":
        return f"lr{_g(value)}"
    if name == "seed":
        return f"s{value}"
    if name == "train_profile":
        return f"p:{value}"
    return str(value)


def _g(value: Any) -> str:
    try:
        return f"{float(value):g}"
    except (TypeError, ValueError):
        return str(value)
