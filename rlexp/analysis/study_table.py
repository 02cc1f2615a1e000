"""The RM table of a study and its context: what the report needs besides the table itself.

:class:`StudyTable` is what :func:`rlexp.analysis.table.build_table` returns: ``frame`` (one row
per RM, see :mod:`rlexp.analysis.columns`) and ``context`` (:class:`StudyContext`: which record
filled which cell, what was superseded or is missing, the BoN curves, per-prompt result files,
...). The correlate task adds the statistics computed on the table (``gain_differences``,
``headline``) and the report the settings and library versions; ``context.json`` is
:meth:`StudyContext.to_json`, and :meth:`StudyContext.from_json` reads it back so a study can be
re-rendered from its files alone.

Entries of the lists and maps are TypedDicts: they are read back from JSON as plain dicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, TypedDict

import pandas as pd

from rlexp.analysis.values import jsonable

#: ``[low, high]`` of a confidence interval; a bound is None where it is undefined.
Interval = list[float | None]


class Duplicate(TypedDict):
    """A record that could fill a cell but was superseded by a more recent one."""

    rm: str
    column: str  # the column group: rb2 | prb/<mode> | bon/<setting> | <algorithm>/<setting>
    used: str  # id of the record that fills the cell
    superseded: str  # id of this record
    task: str
    ended: float


class SeedGains(TypedDict):
    """A PPO cell pooled over training seeds: each seed's own gain, in seed order."""

    seeds: list[int | None]
    gains: list[float]


class UpperBound(TypedDict, total=False):
    """A downstream run with a judge as reward (``judge:*``): a reference line, not an RM (``seeds``:
    PPO runs of one setting pooled over training seeds; absent for one run)."""

    id: str
    task: str
    rm: str | None
    setting: str
    policy: str | None
    gain: float | None
    gain_ci: Interval
    gold_before: float | None
    gold_after: float | None
    seeds: SeedGains


class ProxyShift(TypedDict):
    """What a PPO run did to the reward it optimised: the RM's mean score of the initial and the
    trained policy's held-out samples, and the policy's final KL to the initial one."""

    before: float | None
    after: float | None
    kl: float | None


class RecordLine(TypedDict):
    """One record of the study as the report lists it, with the settings that tell records apart."""

    id: str
    task: str
    rm: str | None
    ended: float
    status: str  # "used" | "superseded"
    settings: dict[str, Any]


class Curve(TypedDict):
    """One RM's BoN curve: the gold score of BoN@k, of the oracle and of the first k, per k."""

    ks: list[int]
    bon: list[float | None]
    oracle: list[float | None]
    first_k: list[float | None]


class GroupGain(TypedDict):
    """A downstream gain on one prompt group (general kind or personalized domain): BoN gain@n or PPO gain."""

    gain: float | None
    prompts: int | None
    gain_ci: Interval


class BonGroups(TypedDict):
    """One RM's BoN gains per prompt group, and how well its scores agree with the gold judge."""

    n: int | None
    agreement: dict[str, Any] | None  # bon_math.rank_agreement's dict
    groups: dict[str, GroupGain]


@dataclass
class ColumnRoles:
    """The table's columns by role (see :mod:`rlexp.analysis.columns`), in table order."""

    factors: list[str] = field(default_factory=list)
    benchmarks: list[str] = field(default_factory=list)
    main_benchmarks: list[str] = field(default_factory=list)
    downstream: list[str] = field(default_factory=list)
    gain: list[str] = field(default_factory=list)


@dataclass
class StudyContext:
    """Everything about a study's table that is not a cell of it (written as ``context.json``).

    Maps keyed by ``column`` use table column names, by ``setting`` the column group (e.g.
    ``bon/personalized``), by ``rm`` the RM id (a table index value). The last four fields are
    None until the correlate task and the report fill them.
    """

    selection: str | None = None  # human-readable: what was asked for
    n_rms: int = 0
    records_by_task: dict[str, int] = field(default_factory=dict)
    k: dict[str, int] = field(default_factory=dict)  # BoN setting -> the k of its gain columns
    profile_modes: list[str] = field(default_factory=list)  # PRB profile modes tabulated
    downstream_profile_modes: list[str] = field(default_factory=list)  # modes the RMs scored with downstream
    columns: ColumnRoles = field(default_factory=ColumnRoles)
    data_ids: dict[str, list[str]] = field(default_factory=dict)  # group -> benchmark data / sample pool ids
    varying_factors: dict[str, list[Any]] = field(default_factory=dict)  # factor -> its values (trained RMs)
    constant_factors: dict[str, Any] = field(default_factory=dict)  # factor -> the value all trained RMs share
    duplicates: list[Duplicate] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # notes: what was asked for or expected but not found
    warnings: list[str] = field(default_factory=list)
    upper_bounds: list[UpperBound] = field(default_factory=list)
    curves: dict[str, dict[str, Curve]] = field(default_factory=dict)  # setting -> rm -> curve
    per_prompt: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # column -> rm -> per-prompt parquets (one per seed)
    ppo_ci: dict[str, dict[str, Interval]] = field(default_factory=dict)  # PPO column -> rm -> gain CI
    ppo_proxy: dict[str, dict[str, ProxyShift]] = field(default_factory=dict)  # PPO column -> rm -> proxy shift
    gain_ci: dict[str, dict[str, Interval]] = field(default_factory=dict)  # gain column -> rm -> CI over prompts
    bon_groups: dict[str, dict[str, BonGroups]] = field(default_factory=dict)  # setting -> rm -> groups
    ppo_groups: dict[str, dict[str, dict[str, GroupGain]]] = field(default_factory=dict)  # PPO column -> rm -> group -> gain
    ppo_seeds: dict[str, dict[str, SeedGains]] = field(default_factory=dict)  # PPO column -> rm -> per-seed gains (pooled cells)
    records: list[RecordLine] = field(default_factory=list)
    #: Per BoN gain column: do the RMs' gains differ (correlation_table.bon_gain_differences).
    gain_differences: dict[str, dict[str, Any]] | None = None
    ppo_lineage: dict[str, dict[str, Any]] | None = None  # PPO column -> same vs other lineage gains
    headline: dict[str, Any] | None = None  # page one's numbers (headline.summarise)
    versions: dict[str, str] | None = None  # library -> version, when the outputs were written
    settings: dict[str, Any] | None = None  # the correlate statistics settings the outputs used
    external: dict[str, Any] | None = None  # external results read beside the records (ExternalTable.provenance)
    external_groups: list[dict[str, Any]] | None = None  # Pearson and Spearman within the external table's groups

    def to_json(self) -> dict[str, Any]:
        """The context as ``context.json`` holds it: JSON types only; fields still None are left out."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}
        out["columns"] = asdict(self.columns)
        return jsonable(out)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StudyContext:
        """The inverse of :meth:`to_json`: unknown keys are ignored, missing or null ones defaulted."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known and v is not None}
        if isinstance(values.get("columns"), Mapping):
            roles = {f.name for f in fields(ColumnRoles)}
            values["columns"] = ColumnRoles(**{k: v for k, v in values["columns"].items() if k in roles})
        return cls(**values)


@dataclass
class StudyTable:
    """One row per reward model (``frame``, index = RM id) and the study's :class:`StudyContext`."""

    frame: pd.DataFrame
    context: StudyContext = field(default_factory=StudyContext)
