"""Column names of the RM table: which role a column has, and the order columns appear in.

Roles are read from names alone, so a table read back from ``table.csv`` has the same roles as
the one :func:`rlexp.analysis.table.build_table` returned. ``<setting>`` is the prompt set (e.g.
``personalized``), or ``personalized[<policy lineage>]`` when one prompt set was used with several
policy lineages::

    factors      lineage model checkpoint mix epochs lr train_profile seed heldout_accuracy
    benchmarks   rb2/overall  rb2/<subset>  prb/<mode>/accuracy  prb/<mode>/<domain>
                 arena/<context>/accuracy  arena/<context>/user_accuracy  (prism/... alike)
    downstream   bon/<setting>/gain@<k>  bon/<setting>/ngain@<k>  <algorithm>/<setting>/gain
                 <algorithm>/<setting>/score (external results only)
    extra        <algorithm>/<setting>/lineage_match
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from rlexp.config.choices import ProfileMode, UserContextMode
from rlexp.data.schemas import RB2_SUBSETS, USER_PAIR_SETS

#: Factor columns (from the train_rm record's lineage info); empty for external RMs.
FACTORS: tuple[str, ...] = (
    "lineage", "model", "checkpoint", "mix", "epochs", "lr", "train_profile", "seed", "heldout_accuracy",
)
#: Factors that describe how an RM was made (heldout accuracy is a result, not a factor).
DESIGN_FACTORS: tuple[str, ...] = FACTORS[:-1]
#: ``score``: a published absolute downstream score (external results, :mod:`rlexp.analysis.external`); across
#: RMs it correlates as its gain over a shared baseline would.
DOWNSTREAM_RE = re.compile(r"^(?P<task>[A-Za-z0-9_]+)/(?P<setting>[^/]+)/(?P<stat>gain@\d+|ngain@\d+|gain|score)$")
#: PRB profile modes in the order their columns appear (unknown modes after them).
_PRB_MODE_ORDER = {mode.value: i for i, mode in enumerate(ProfileMode)}
_CONTEXT_ORDER = {mode.value: i for i, mode in enumerate(UserContextMode)}


#: Benchmarks whose columns are per user-context mode: ``<name>/<mode>/...`` (PRB: the profile mode;
#: Chatbot Arena- and PRISM-Personalized: the user context), in the order their columns appear.
PERSONAL_BENCHMARKS: tuple[str, ...] = ("prb", "arena", "prism")
#: The comparison benchmarks of Personalized RewardBench (evaluate records' ``arena``/``prism`` metrics).
USER_PAIR_BENCHMARKS: tuple[str, ...] = tuple(USER_PAIR_SETS)
_BENCHMARK_PREFIXES = tuple(f"{b}/" for b in ("rb2", *PERSONAL_BENCHMARKS))


def is_benchmark_group(group: str) -> bool:
    """Whether a column group (``rb2``, ``prb/<mode>``, ``arena/<context>`` ...) holds benchmark scores."""
    return group == "rb2" or group.startswith(_BENCHMARK_PREFIXES)


def benchmark_columns(columns: Iterable[str]) -> list[str]:
    """Every benchmark column (``rb2/...``, ``prb/...``, ``arena/...``, ``prism/...``), in the given order."""
    return [c for c in columns if c.startswith(_BENCHMARK_PREFIXES)]


def main_benchmark_columns(columns: Iterable[str]) -> list[str]:
    """The headline score of each benchmark: ``rb2/overall`` and every ``<personal>/<mode>/accuracy``."""
    return [c for c in columns if c == "rb2/overall" or (c.startswith(_BENCHMARK_PREFIXES[1:]) and c.endswith("/accuracy"))]


def downstream_columns(columns: Iterable[str]) -> list[str]:
    """Every BoN gain, BoN normalised gain and PPO (or other algorithm) gain column."""
    return [c for c in columns if DOWNSTREAM_RE.match(c)]


def gain_columns(columns: Iterable[str]) -> list[str]:
    """One column per downstream setting: BoN gain@k and PPO gain (not the normalised gain)."""
    return [c for c in downstream_columns(columns) if not DOWNSTREAM_RE.match(c)["stat"].startswith("ngain")]


def setting_of(column: str) -> str:
    """``bon/personalized/gain@16`` -> ``bon/personalized``."""
    return column.rsplit("/", 1)[0]


def benchmark_group(column: str) -> str:
    """The record group a benchmark column comes from: ``rb2``, ``prb/<mode>``, ``arena/<context>`` ..."""
    return "rb2" if column.startswith("rb2/") else "/".join(column.split("/")[:2])


def benchmark_order(column: str) -> tuple[Any, ...]:
    """Sort key: RB2 (overall, then the subsets in RB2's order), then PRB by mode, then Chatbot Arena-
    and PRISM-Personalized by user context (accuracy first)."""
    if column.startswith("rb2/"):
        name = column[4:]
        return (0, "", 0 if name == "overall" else 1 + (RB2_SUBSETS.index(name) if name in RB2_SUBSETS else 99), name)
    bench, mode, name = column.split("/", 2)
    order = _PRB_MODE_ORDER if bench == "prb" else _CONTEXT_ORDER
    mode_rank = order.get(mode, 3)
    return (1 + PERSONAL_BENCHMARKS.index(bench), f"{mode_rank}{mode}", 0 if name == "accuracy" else 1, name)


def downstream_order(column: str) -> tuple[Any, ...]:
    """Sort key: BoN before the other algorithms, then by setting, gain before normalised gain."""
    m = DOWNSTREAM_RE.match(column)
    assert m is not None
    return (m["task"] != "bon", m["task"], m["setting"], m["stat"].startswith("ngain"))
