"""From a study's records to one table of reward models: :func:`build_table`.

The table is built in named stages, each a function below:

1. **gather** (:func:`_gather`): every record that could fill each (RM, column group) cell;
   judge-reward runs are set aside as upper bounds.
2. **choose** (:func:`_choose`): the most recent record fills a cell, the others are duplicates.
3. **check** (:func:`_check_compatible`, :func:`_bon_ks`): one benchmark data set and one gold
   judge per column; one BoN k per setting.
4. **rows** (:func:`rlexp.analysis.cells.fill_rows`): each RM's factors and cell values.
5. **columns** (:func:`_frame`): the frame in column order (:mod:`rlexp.analysis.columns`), with
   a short label per RM (:mod:`rlexp.analysis.labels`).
6. **context** (:func:`_context`): what the report needs besides the cells (:class:`StudyContext`).

Only what records hold is read; nothing here loads a model, so a whole study re-tabulates in
seconds. The correlations of the table come from :mod:`rlexp.analysis.correlation_table`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from rlexp.analysis.cells import Cell, Rows, fill_rows
from rlexp.analysis.columns import (
    FACTORS,
    USER_PAIR_BENCHMARKS,
    benchmark_columns,
    benchmark_group,
    benchmark_order,
    downstream_columns,
    downstream_order,
    gain_columns,
    is_benchmark_group,
    main_benchmark_columns,
    setting_of,
)
from rlexp.analysis.external import ExternalTable
from rlexp.analysis.labels import factor_summary, rm_labels
from rlexp.analysis.records import (
    JUDGE_PREFIX,
    Collection,
    curve_ks,
    describe,
    downstream_group,
    judge_key,
    policy_of,
    profile_mode,
    rm_of,
    short_name,
    upper_bound,
)
from rlexp.analysis.replicates import replicates, training_setting
from rlexp.analysis.study_table import ColumnRoles, Duplicate, StudyContext, StudyTable, UpperBound
from rlexp.errors import ConfigError, DataError
from rlexp.store import Record, Store


def build_table(
    collection: Collection, *, k: int | None = None, profile_modes: Sequence[str] | None = None,
    external: ExternalTable | None = None,
) -> StudyTable:
    """One row per reward model (index = RM id) with factor, benchmark and downstream columns.

    ``k``: the BoN k of the gain columns (None = the largest k every BoN record of that setting
    has). ``profile_modes``: the PRB profile modes to tabulate (None = all found). When several
    records fill the same cell, the most recent (by ``ended``) wins (for RB2, an evaluation with
    profile mode ``none`` is preferred) and the others are listed in ``context.duplicates``.

    ``external``: rows from an external results file (:mod:`rlexp.analysis.external`), added beside the
    records' RMs (marked ``external``; their groups and the file's provenance go to the context).

    Raises:
        DataError: an external RM's name is a store RM's id, the RB2 (or PRB) scores of one column come from different benchmark data, the
            downstream results of one column from different gold judges, or nothing is left to tabulate.
        ConfigError: ``k`` is not a positive integer.
    """
    if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1):
        raise ConfigError(f"k must be a positive integer or null, got {k!r}")
    modes = None if profile_modes is None else [str(m) for m in profile_modes]
    found = _gather(collection, modes)
    chosen, duplicates = _choose(found)
    rms = sorted({rm for rm, _ in chosen} | set(collection.rm_records))
    ext_rows = external.rows if external is not None else {}
    clash = sorted(set(rms) & set(ext_rows))
    if clash:
        raise DataError(f"external results {external.path}: name {clash[0]!r} is an RM of the store's records; rename it")
    rms += list(ext_rows)
    if not rms:
        raise DataError(f"nothing to tabulate for study {collection.selection}")
    warnings = _check_compatible(chosen)
    k_of, k_warnings = _bon_ks(chosen, k)
    rows = fill_rows(collection, chosen, rms, k_of)
    for rm, values in ext_rows.items():
        rows.rows[rm].update(values)
    frame, varying, constant = _frame(rows.rows)
    context = _context(collection, found, chosen, rows, frame, modes=modes, k_of=k_of)
    context.varying_factors, context.constant_factors = varying, constant
    context.duplicates = duplicates
    # In the order they arise: selection, records, cells, then whole column groups an RM lacks.
    context.missing = [*collection.notes, *found.notes, *rows.notes, *_missing_cells(frame, chosen, set(ext_rows))]
    context.external = external.provenance() if external is not None else None
    context.warnings = [*warnings, *k_warnings]
    return StudyTable(frame=frame, context=context)


# ------------------------------------------------------------------------------------------------
# 1. gather, 2. choose
# ------------------------------------------------------------------------------------------------


@dataclass
class _Found:
    """Stage 1: the candidate records of every (RM, column group), and what else was seen."""

    cells: dict[tuple[str, str], list[Record]] = field(default_factory=lambda: defaultdict(list))
    upper: list[Record] = field(default_factory=list)  # judge-reward runs: upper bounds, not RMs
    seen_modes: set[str] = field(default_factory=set)  # PRB profile modes evaluated
    downstream_modes: set[str] = field(default_factory=set)  # the profile modes the RMs scored with downstream
    policies: dict[str, set[str | None]] = field(default_factory=lambda: defaultdict(set))  # group -> policies
    notes: list[str] = field(default_factory=list)

    def setting(self, rec: Record) -> str:
        """A downstream record's column group; one per policy lineage when a prompt set had several."""
        group = downstream_group(rec)
        if group in self.policies and len(self.policies[group]) > 1:
            return f"{group}[{policy_of(rec)}]"
        return group


def _gather(collection: Collection, modes: list[str] | None) -> _Found:
    """Sort every result record into its (RM, column group); PRB only for ``modes`` (None = all)."""
    found = _Found()
    for rec in collection.results:
        rm = rm_of(rec)
        if rm is None:
            found.notes.append(f"{rec.task} record {rec.id} names no reward model: skipped")
            continue
        if rec.task == "evaluate":
            if isinstance(rec.metrics.get("rb2"), Mapping):
                found.cells[(rm, "rb2")].append(rec)
            if isinstance(rec.metrics.get("prb"), Mapping):
                mode = profile_mode(rec)
                found.seen_modes.add(mode)
                if modes is None or mode in modes:
                    found.cells[(rm, f"prb/{mode}")].append(rec)
            for bench in USER_PAIR_BENCHMARKS:
                if isinstance(rec.metrics.get(bench), Mapping):
                    found.cells[(rm, f"{bench}/{rec.metrics[bench].get('user_context', 'none')}")].append(rec)
            continue
        group = downstream_group(rec)
        if rm.startswith(JUDGE_PREFIX):
            found.upper.append(rec)
            continue
        found.downstream_modes.add(profile_mode(rec))
        found.policies[group].add(policy_of(rec))
        found.cells[(rm, group)].append(rec)
    for mode in modes or []:
        if mode not in found.seen_modes:
            found.notes.append(f"no PRB evaluation with profile mode {mode!r}")
    return found


def _choose(found: _Found) -> tuple[dict[tuple[str, str], Cell], list[Duplicate]]:
    """One cell per (RM, column group, policy), its records newest first; the superseded ones."""
    split: dict[tuple[str, str], list[Record]] = defaultdict(list)
    for (rm, group), recs in found.cells.items():
        for rec in recs:
            split[(rm, found.setting(rec) if rec.task != "evaluate" else group)].append(rec)
    chosen: dict[tuple[str, str], Cell] = {}
    duplicates: list[Duplicate] = []
    for (rm, group), recs in split.items():
        if group == "rb2":
            # RB2 has no profile: an evaluation without one is the plain score, whatever came later.
            ordered = sorted(recs, key=lambda r: (profile_mode(r) == "none", r.ended), reverse=True)
        else:
            ordered = sorted(recs, key=lambda r: r.ended, reverse=True)
        # A PPO cell pools its setting's runs over training seeds; another record fills a cell alone.
        pooled, superseded = replicates(ordered) if ordered[0].task == "ppo" else ([], ordered[1:])
        chosen[(rm, group)] = Cell(rm, group, ordered, pooled)
        for other in superseded:
            duplicates.append({"rm": rm, "column": group, "used": ordered[0].id, "superseded": other.id,
                               "task": other.task, "ended": other.ended})
    return chosen, duplicates


def _upper_bounds(found: _Found, store: Store) -> tuple[list[UpperBound], set[str]]:
    """The judge-reward runs as reference lines, one per judge, column group and training setting:
    PPO runs pooled over training seeds as an RM's PPO cell is, a BoN run alone; and the ids of the
    records the lines show (an older run of the same seed is superseded)."""
    groups: dict[tuple[str, str, str], list[Record]] = defaultdict(list)
    for rec in found.upper:
        setting = training_setting(rec) if rec.task == "ppo" else rec.id
        groups[(str(rm_of(rec)), found.setting(rec), setting)].append(rec)
    bounds: list[UpperBound] = []
    shown: set[str] = set()
    for (_, column_group, _), recs in groups.items():
        kept = replicates(sorted(recs, key=lambda r: r.ended, reverse=True))[0]
        bounds.append(upper_bound(kept, column_group, store))
        shown.update(r.id for r in kept)
    return bounds, shown


# ------------------------------------------------------------------------------------------------
# 3. check
# ------------------------------------------------------------------------------------------------


def _check_compatible(chosen: Mapping[tuple[str, str], Cell]) -> list[str]:
    """Raise unless each column's cells share benchmark data / gold judge; warn on mixed sample pools."""
    warnings: list[str] = []
    for group in sorted({g for _, g in chosen}):
        members = [c for (_, g), c in chosen.items() if g == group]
        if is_benchmark_group(group):
            _check_benchmark_data(group, members)
            continue
        judges = {judge_key(c.record) for c in members}
        if len(judges) > 1:
            raise DataError(
                f"incompatible downstream results: {group} records use {len(judges)} different gold "
                f"judges ({'; '.join(sorted(judges))}); select records of one judge with records=[...]"
            )
        pool_key = "pool" if group.startswith("bon/") else "baseline_pool"
        pools = {tuple(sorted(str(r.inputs.get(pool_key)) for r in c.used)) for c in members}
        if len(pools) > 1:
            warnings.append(f"{group}: the RMs' records use {len(pools)} different sample pools ({pool_key})")
    return warnings


def _check_benchmark_data(group: str, members: Sequence[Cell]) -> None:
    """Scores of one benchmark column must come from one benchmark data set (else not comparable)."""
    key = group.split("/")[0]
    ids: dict[str, list[str]] = defaultdict(list)
    for c in members:
        ids[_data_of(c.record, key)].append(short_name(c.rm))
    if len(ids) > 1:
        parts = "; ".join(f"{d} for RM {', '.join(sorted(r))}" for d, r in sorted(ids.items()))
        raise DataError(
            f"incompatible benchmarks: {group} scores come from different {key} data ({parts}); "
            "select records of one benchmark version with records=[...]"
        )


def _bon_ks(chosen: Mapping[tuple[str, str], Cell], k: int | None) -> tuple[dict[str, int], list[str]]:
    """The k of each BoN setting's gain columns: ``k``, else the largest k all its records have."""
    k_of: dict[str, int] = {}
    warnings: list[str] = []
    for group in sorted({g for _, g in chosen}):
        if not group.startswith("bon/"):
            continue
        kss = [set(curve_ks(c.record)) for (_, g), c in chosen.items() if g == group]
        common = set.intersection(*kss) if kss else set()
        if k is not None:
            k_of[group] = int(k)
        elif common:
            k_of[group] = max(common)
            if any(max(s) > k_of[group] for s in kss if s):
                warnings.append(f"{group}: k={k_of[group]} is the largest k every BoN record has (some go further)")
        else:
            raise DataError(f"{group} BoN records share no k in their curves")
    return k_of, warnings


# ------------------------------------------------------------------------------------------------
# 5. columns, 6. context
# ------------------------------------------------------------------------------------------------


def _frame(rows: Mapping[str, Mapping[str, Any]]) -> tuple[pd.DataFrame, dict[str, list[Any]], dict[str, Any]]:
    """The rows as a frame (rm, label, factors, external, benchmarks, downstream, lineage matches),
    and the factors that vary between the trained RMs and those they share (the labels use them)."""
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "rm_id"
    bench = sorted(benchmark_columns(table.columns), key=benchmark_order)
    down = sorted(downstream_columns(table.columns), key=downstream_order)
    extra = [c for c in table.columns if c.endswith("/lineage_match")]
    varying, constant = factor_summary(table)
    table.insert(1, "label", rm_labels(table, varying))
    table = table[["rm", "label", *FACTORS, "external", *bench, *down, *sorted(extra)]]
    for col in bench + down:
        table[col] = pd.to_numeric(table[col], errors="coerce")
    return table, varying, constant


def _missing_cells(frame: pd.DataFrame, chosen: Mapping[tuple[str, str], Cell], external: set[str]) -> list[str]:
    """One note per RM without some benchmark or downstream column group (an external RM: no value in it)."""
    bench, down = benchmark_columns(frame.columns), downstream_columns(frame.columns)
    group_of = {**{c: benchmark_group(c) for c in bench}, **{c: setting_of(c) for c in down}}
    groups = sorted({group_of[c] for c in bench}) + sorted({group_of[c] for c in down})
    notes = []
    for rm in frame.index:
        if rm in external:
            filled = {g for c, g in group_of.items() if pd.notna(frame.at[rm, c])}
            absent = [g for g in groups if g not in filled]
        else:
            absent = [g for g in groups if (rm, g) not in chosen]
        if absent:
            label = str(frame.at[rm, "label"])
            who = label if label == short_name(rm) else f"{label} ({short_name(rm)})"
            notes.append(f"RM {who}: no {', '.join(absent)}")
    return notes


def _context(collection: Collection, found: _Found, chosen: Mapping[tuple[str, str], Cell], rows: Rows,
             frame: pd.DataFrame, *, modes: list[str] | None, k_of: dict[str, int]) -> StudyContext:
    """The context of the table; :func:`build_table` adds the factor summary, duplicates, notes and warnings."""
    bench, down = benchmark_columns(frame.columns), downstream_columns(frame.columns)
    bounds, shown = _upper_bounds(found, collection.store)
    used = {r.id for c in chosen.values() for r in c.used} | set(collection.rm_records) | shown
    return StudyContext(
        selection=collection.selection,
        n_rms=len(frame),
        records_by_task=collection.by_task(),
        k=k_of,
        profile_modes=sorted(found.seen_modes if modes is None else set(modes) & found.seen_modes),
        downstream_profile_modes=sorted(found.downstream_modes),
        columns=ColumnRoles(factors=list(FACTORS), benchmarks=bench, main_benchmarks=main_benchmark_columns(bench),
                            downstream=down, gain=gain_columns(down)),
        data_ids=_data_ids(chosen),
        upper_bounds=bounds,
        curves=dict(rows.curves),
        per_prompt=dict(rows.per_prompt),
        ppo_ci=dict(rows.ppo_ci),
        ppo_proxy=dict(rows.ppo_proxy),
        gain_ci=dict(rows.gain_ci),
        bon_groups=dict(rows.bon_groups),
        ppo_groups=dict(rows.ppo_groups),
        ppo_seeds=dict(rows.ppo_seeds),
        records=[describe(r, used) for r in collection.records],
    )


def _data_ids(chosen: Mapping[tuple[str, str], Cell]) -> dict[str, list[str]]:
    """Per column group: the benchmark data (RB2/PRB) or sample pools (BoN/PPO) its records used."""
    out: dict[str, set[str]] = defaultdict(set)
    for (_, group), cell in chosen.items():
        rec = cell.record
        if is_benchmark_group(group):
            out[group].add(_data_of(rec, group.split("/")[0]))
        elif group.startswith("bon/"):
            out[group].add(str(rec.inputs.get("pool")))
        else:
            out[group].update(str(r.inputs.get("baseline_pool")) for r in cell.used)
    return {k: sorted(v) for k, v in sorted(out.items())}


def _data_of(rec: Record, bench: str) -> str:
    """The benchmark data an evaluate record scored (PRISM's persona context adds its survey)."""
    survey = rec.inputs.get(f"{bench}_survey")
    return str(rec.inputs.get(bench)) + (f" + {survey}" if survey else "")
