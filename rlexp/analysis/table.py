"""From run-store records to one table of reward models and a long table of correlations.

:func:`collect` gathers the records of a study (explicit ids, the RMs' records, or an experiment
name); :func:`build_table` turns them into one row per reward model with factor, benchmark and
downstream columns; :func:`correlation_table` correlates every benchmark column with every
downstream column using :mod:`rlexp.analysis.correlation`.

Column names (``<setting>`` is the prompt set, e.g. ``personalized``; when one prompt set was used
with several policy lineages it becomes ``personalized[<policy lineage>]``)::

    factors      lineage model checkpoint mix epochs lr train_profile seed heldout_accuracy
    benchmarks   rb2/overall  rb2/<subset>  prb/<mode>/accuracy  prb/<mode>/<domain>
    downstream   bon/<setting>/gain@<k>  bon/<setting>/ngain@<k>  <algorithm>/<setting>/gain
    extra        <algorithm>/<setting>/lineage_match

Only what records hold is read; nothing here loads a model, so a whole study re-tabulates in
seconds. Which record fills a cell, which records were superseded and which cells are empty is kept
in ``table.attrs["context"]`` (JSON-serialisable) for the report.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rlexp.analysis.correlation import MIN_ITEMS, bootstrap_prompts, correlate, gain_differences
from rlexp.errors import ConfigError, DataError
from rlexp.store import Record, Store

#: Tasks whose records carry benchmark or downstream results of one RM.
RESULT_TASKS: tuple[str, ...] = ("evaluate", "bon", "ppo")
RM_TASK = "train_rm"
#: Factor columns (from the train_rm record's lineage info); empty for external RMs.
FACTORS: tuple[str, ...] = (
    "lineage", "model", "checkpoint", "mix", "epochs", "lr", "train_profile", "seed", "heldout_accuracy",
)
#: Factors that describe how an RM was made (heldout accuracy is a result, not a factor).
DESIGN_FACTORS: tuple[str, ...] = FACTORS[:-1]
RB2_SUBSETS: tuple[str, ...] = ("Factuality", "Precise IF", "Math", "Safety", "Focus", "Ties")
RB2_NON_SCORES = frozenset({"overall", "counts", "complete", "ties_components"})
PRB_NON_SCORES = frozenset({"accuracy", "ties", "mean_gap", "n"})
DOWNSTREAM_RE = re.compile(r"^(?P<task>[A-Za-z0-9_]+)/(?P<setting>[^/]+)/(?P<stat>gain@\d+|ngain@\d+|gain)$")
JUDGE_PREFIX = "judge:"
_RECORD_ID_RE = re.compile(r"^[0-9a-f]{16}$")


# ------------------------------------------------------------------------------------------------
# column roles (by name, so a table read back from CSV has the same roles)
# ------------------------------------------------------------------------------------------------


def benchmark_columns(columns: Iterable[str]) -> list[str]:
    return [c for c in columns if c.startswith("rb2/") or c.startswith("prb/")]


def main_benchmark_columns(columns: Iterable[str]) -> list[str]:
    """The headline score of each benchmark: ``rb2/overall`` and every ``prb/<mode>/accuracy``."""
    return [c for c in columns if c == "rb2/overall" or (c.startswith("prb/") and c.endswith("/accuracy"))]


def downstream_columns(columns: Iterable[str]) -> list[str]:
    return [c for c in columns if DOWNSTREAM_RE.match(c)]


def gain_columns(columns: Iterable[str]) -> list[str]:
    """One column per downstream setting: BoN gain@k and PPO gain (not the normalised gain)."""
    return [c for c in downstream_columns(columns) if not DOWNSTREAM_RE.match(c)["stat"].startswith("ngain")]


def setting_of(column: str) -> str:
    """``bon/personalized/gain@16`` -> ``bon/personalized``."""
    return column.rsplit("/", 1)[0]


# ------------------------------------------------------------------------------------------------
# collecting records
# ------------------------------------------------------------------------------------------------


def rm_of(record: Record) -> str | None:
    """The reward model a result record is about (a train_rm id, a path/hub id, or judge:*)."""
    if record.task == "bon":
        rm = record.info.get("rm")
        if isinstance(rm, Mapping) and rm.get("id"):
            return str(rm["id"])
        return _str_or_none(record.inputs.get("rm") or record.config.get("rm"))
    if record.task in ("evaluate", "ppo"):
        value = record.inputs.get("rm")
        if value is None and isinstance(record.info.get("rm"), Mapping):
            value = record.info["rm"].get("id") or record.info["rm"].get("record")
        return _str_or_none(value or record.config.get("rm"))
    if record.task == RM_TASK:
        return record.id
    return None


def _str_or_none(value: Any) -> str | None:
    return None if value in (None, "", "???") else str(value)


@dataclass
class Collection:
    """The records of one study, as found in the store (nothing chosen or merged yet)."""

    store: Store
    selection: str  # human-readable: what was asked for
    records: list[Record]  # result records (evaluate/bon/ppo) and train_rm records, oldest first
    rm_records: dict[str, Record] = field(default_factory=dict)  # RM id -> its train_rm record
    requested_rms: list[str] = field(default_factory=list)  # RMs asked for (rms selection)
    notes: list[str] = field(default_factory=list)  # what was asked for but not found

    @property
    def results(self) -> list[Record]:
        return [r for r in self.records if r.task in RESULT_TASKS]

    @property
    def ids(self) -> list[str]:
        return [r.id for r in self.records]

    def by_task(self) -> dict[str, int]:
        counts: dict[str, int] = defaultdict(int)
        for r in self.records:
            counts[r.task] += 1
        return dict(sorted(counts.items()))


def collect(
    store: Store,
    *,
    record_ids: Sequence[str] | None = None,
    rms: Sequence[str] | None = None,
    experiment: str | None = None,
) -> Collection:
    """The records of a study: exactly one of ``record_ids``, ``rms`` or ``experiment``.

    * ``record_ids``: these records (ids or unique prefixes, any task); an unknown id is an error.
    * ``rms``: every evaluate/bon/ppo record whose RM is one of ``rms`` (train_rm ids or prefixes,
      or the path/hub id an external RM was evaluated under).
    * ``experiment``: every train_rm/evaluate/bon/ppo record whose ``experiment_name`` matches.

    Raises:
        ConfigError: none or several selections.
        DataError: an unknown record id, or no evaluate/bon/ppo record at all ("no records for study ...").
    """
    given = [name for name, v in (("records", record_ids), ("rms", rms), ("experiment", experiment)) if v]
    if len(given) != 1:
        raise ConfigError(f"select the study with exactly one of records, rms or an experiment name (got {given or 'none'})")
    notes: list[str] = []
    requested: list[str] = []
    found: dict[str, Record] = {}
    if record_ids:
        selection = f"records {', '.join(str(r) for r in record_ids)}"
        for ref in record_ids:
            rec = store.find(str(ref))
            if rec is None:
                raise DataError(f"record {ref!r} not found (or the prefix is ambiguous) in store {store.root}")
            found[rec.id] = rec
    elif rms:
        selection = f"RMs {', '.join(str(r) for r in rms)}"
        for ref in rms:
            rec = store.find(str(ref)) if "/" not in str(ref) else None
            if rec is None and Path(str(ref)).expanduser().exists():
                ref = str(Path(str(ref)).expanduser().resolve())  # evaluate records hold resolved folders
            requested.append(rec.id if rec is not None and rec.task == RM_TASK else str(ref))
            if rec is not None and rec.task == RM_TASK:
                found[rec.id] = rec
        wanted = set(requested)
        for task in RESULT_TASKS:
            for rec in store.records(task):
                if rm_of(rec) in wanted:
                    found[rec.id] = rec
    else:
        selection = f"experiment {experiment!r}"
        for task in (RM_TASK, *RESULT_TASKS):
            for rec in store.records(task):
                if rec.config.get("experiment_name") == experiment:
                    found[rec.id] = rec
    records = sorted(found.values(), key=lambda r: (r.ended, r.id))
    results = [r for r in records if r.task in RESULT_TASKS]
    if not results:
        extra = f" (found {len(records)} train_rm record(s) but no evaluate/bon/ppo record)" if records else ""
        raise DataError(f"no records for study {selection} in store {store.root}{extra}")

    rm_records: dict[str, Record] = {r.id: r for r in records if r.task == RM_TASK}
    for rec in results:
        rm = rm_of(rec)
        if rm is None or rm in rm_records or rm.startswith(JUDGE_PREFIX):
            continue
        if _RECORD_ID_RE.match(rm):
            try:
                rm_records[rm] = store.get(rm, RM_TASK)
            except Exception:  # noqa: BLE001 - an absent train_rm record only loses the factors
                notes.append(f"train_rm record {rm} is not in the store: its factors are unknown")
    for rm in requested:
        if rm not in rm_records and not any(rm_of(r) == rm for r in results):
            notes.append(f"RM {rm}: no record at all")
    return Collection(store=store, selection=selection, records=records, rm_records=rm_records,
                      requested_rms=requested, notes=notes)


# ------------------------------------------------------------------------------------------------
# the RM table
# ------------------------------------------------------------------------------------------------


@dataclass
class _Cell:
    """One (RM, column group) and the records that could fill it; the chosen one is first."""

    rm: str
    group: str  # rb2 | prb/<mode> | bon/<prompts> | <algorithm>/<prompts>
    records: list[Record]


def _num(value: Any) -> float:
    if isinstance(value, bool) or value is None:
        return math.nan
    try:
        out = float(value)
    except (TypeError, ValueError):
        return math.nan
    return out if math.isfinite(out) else math.nan


def _factors(rec: Record | None) -> dict[str, Any]:
    if rec is None:
        return {f: None for f in FACTORS}
    lin = rec.info.get("lineage") or {}
    mix = lin.get("mix")
    trainer = lin.get("trainer") or {}
    profile = lin.get("profile") or {}
    return {
        "lineage": lin.get("lineage"),
        "model": lin.get("model"),
        "checkpoint": lin.get("checkpoint"),
        "mix": mix.get("name") if isinstance(mix, Mapping) else mix,
        "epochs": lin.get("epochs", trainer.get("epochs")),
        "lr": trainer.get("learning_rate"),
        "train_profile": profile.get("mode") if isinstance(profile, Mapping) else profile,
        "seed": lin.get("seed", rec.config.get("seed")),
        "heldout_accuracy": rec.metrics.get("heldout/accuracy"),
    }


def _prompts(rec: Record) -> str:
    prompts = rec.config.get("prompts")
    if isinstance(prompts, Mapping) and prompts.get("name"):
        return str(prompts["name"])
    return str(rec.info.get("prompts") or "prompts")


def _policy(rec: Record) -> str | None:
    return _str_or_none(rec.info.get("policy_lineage") or (rec.config.get("model") or {}).get("lineage"))


def _profile_mode(rec: Record) -> str:
    profile = rec.config.get("profile")
    return str(profile.get("mode", "none")) if isinstance(profile, Mapping) else "none"


def _judge(rec: Record) -> str:
    return json.dumps(rec.info.get("judge"), sort_keys=True, default=str)


def _curve_ks(rec: Record) -> list[int]:
    curve = rec.metrics.get("curve") or {}
    out = []
    for key in curve:
        try:
            out.append(int(key))
        except (TypeError, ValueError):
            continue
    return sorted(out)


def _short(rm: str) -> str:
    if _RECORD_ID_RE.match(rm):
        return rm[:8]
    return rm.rstrip("/").rsplit("/", 1)[-1]


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


def _score(value: Any) -> float | None:
    """A score for the context: a finite float or None (``_jsonable`` would turn 0.0 into 0, printed "0")."""
    out = _num(value)
    return None if math.isnan(out) else out


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)  # pandas turns int factors into floats when an external RM leaves a gap
    if isinstance(value, (np.floating, np.integer)):
        return _jsonable(value.item())
    return value


def build_table(
    collection: Collection, *, k: int | None = None, profile_modes: Sequence[str] | None = None
) -> pd.DataFrame:
    """One row per reward model (index = RM id) with factor, benchmark and downstream columns.

    ``k``: the BoN k of the gain columns (None = the largest k every BoN record of that setting
    has). ``profile_modes``: the PRB profile modes to tabulate (None = all found). When several
    records fill the same cell, the most recent (by ``ended``) wins (for RB2, an evaluation with
    profile mode ``none`` is preferred) and the others are listed in ``attrs["context"]["duplicates"]``.

    Raises:
        DataError: the RB2 (or PRB) scores of one column come from different benchmark data, the
            downstream results of one column from different gold judges, or nothing is left to tabulate.
        ConfigError: ``k`` is not a positive integer.
    """
    if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1):
        raise ConfigError(f"k must be a positive integer or null, got {k!r}")
    modes = None if profile_modes is None else [str(m) for m in profile_modes]
    notes = list(collection.notes)
    warnings: list[str] = []

    # --- gather candidate records per (RM, group) -------------------------------------------------
    cells: dict[tuple[str, str], list[Record]] = defaultdict(list)
    upper: list[Record] = []
    seen_modes: set[str] = set()
    downstream_modes: set[str] = set()  # the profile modes the RMs scored with downstream
    policies: dict[str, set[str | None]] = defaultdict(set)
    for rec in collection.results:
        rm = rm_of(rec)
        if rm is None:
            notes.append(f"{rec.task} record {rec.id} names no reward model: skipped")
            continue
        if rec.task == "evaluate":
            if isinstance(rec.metrics.get("rb2"), Mapping):
                cells[(rm, "rb2")].append(rec)
            if isinstance(rec.metrics.get("prb"), Mapping):
                mode = _profile_mode(rec)
                seen_modes.add(mode)
                if modes is None or mode in modes:
                    cells[(rm, f"prb/{mode}")].append(rec)
            continue
        group = _group(rec)
        if rm.startswith(JUDGE_PREFIX):
            upper.append(rec)
            continue
        downstream_modes.add(_profile_mode(rec))
        policies[group].add(_policy(rec))
        cells[(rm, group)].append(rec)
    for mode in modes or []:
        if mode not in seen_modes:
            notes.append(f"no PRB evaluation with profile mode {mode!r}")

    # Several policy lineages for one prompt set: one setting per policy.
    def group_of(rec: Record, group: str) -> str:
        if group in policies and len(policies[group]) > 1:
            return f"{group}[{_policy(rec)}]"
        return group

    split: dict[tuple[str, str], list[Record]] = defaultdict(list)
    for (rm, group), recs in cells.items():
        for rec in recs:
            split[(rm, group_of(rec, group) if rec.task != "evaluate" else group)].append(rec)

    chosen: dict[tuple[str, str], _Cell] = {}
    duplicates: list[dict[str, Any]] = []
    for (rm, group), recs in split.items():
        if group == "rb2":
            ordered = sorted(recs, key=lambda r: (_profile_mode(r) == "none", r.ended), reverse=True)
        else:
            ordered = sorted(recs, key=lambda r: r.ended, reverse=True)
        chosen[(rm, group)] = _Cell(rm, group, ordered)
        for other in ordered[1:]:
            duplicates.append({"rm": rm, "column": group, "used": ordered[0].id, "superseded": other.id,
                               "task": other.task, "ended": other.ended})

    rms = sorted({rm for rm, _ in chosen} | set(collection.rm_records))
    if not rms:
        raise DataError(f"nothing to tabulate for study {collection.selection}")

    # --- compatibility: one benchmark data set / gold judge per column ---------------------------
    groups = sorted({g for _, g in chosen})
    for group in groups:
        members = [c for (_, g), c in chosen.items() if g == group]
        if group == "rb2" or group.startswith("prb/"):
            key = "rb2" if group == "rb2" else "prb"
            ids: dict[str, list[str]] = defaultdict(list)
            for c in members:
                ids[str(c.records[0].inputs.get(key))].append(_short(c.rm))
            if len(ids) > 1:
                parts = "; ".join(f"{d} for RM {', '.join(sorted(r))}" for d, r in sorted(ids.items()))
                raise DataError(
                    f"incompatible benchmarks: {group} scores come from different {key} data ({parts}); "
                    "select records of one benchmark version with records=[...]"
                )
        else:
            judges = {_judge(c.records[0]) for c in members}
            if len(judges) > 1:
                raise DataError(
                    f"incompatible downstream results: {group} records use {len(judges)} different gold "
                    f"judges ({'; '.join(sorted(judges))}); select records of one judge with records=[...]"
                )
            pool_key = "pool" if group.startswith("bon/") else "baseline_pool"
            pools = {str(c.records[0].inputs.get(pool_key)) for c in members}
            if len(pools) > 1:
                warnings.append(f"{group}: the RMs' records use {len(pools)} different sample pools ({pool_key})")

    # --- BoN k per setting ------------------------------------------------------------------------
    k_of: dict[str, int] = {}
    for group in groups:
        if not group.startswith("bon/"):
            continue
        kss = [set(_curve_ks(c.records[0])) for (_, g), c in chosen.items() if g == group]
        common = set.intersection(*kss) if kss else set()
        if k is not None:
            k_of[group] = int(k)
        elif common:
            k_of[group] = max(common)
            if any(max(s) > k_of[group] for s in kss if s):
                warnings.append(f"{group}: k={k_of[group]} is the largest k every BoN record has (some go further)")
        else:
            raise DataError(f"{group} BoN records share no k in their curves")

    # --- fill the rows ----------------------------------------------------------------------------
    rows: dict[str, dict[str, Any]] = {rm: {"rm": rm} for rm in rms}
    curves: dict[str, dict[str, Any]] = defaultdict(dict)
    per_prompt: dict[str, dict[str, str]] = defaultdict(dict)
    ppo_ci: dict[str, dict[str, list[float | None]]] = defaultdict(dict)
    gain_ci: dict[str, dict[str, list[float | None]]] = defaultdict(dict)  # every gain column's per-RM prompt CI
    bon_groups: dict[str, dict[str, Any]] = defaultdict(dict)  # setting -> RM -> gain@n per prompt group
    for rm in rms:
        rows[rm].update(_factors(collection.rm_records.get(rm)))
        rows[rm]["external"] = rm not in collection.rm_records
    for (rm, group), cell in sorted(chosen.items()):
        rec = cell.records[0]
        row = rows[rm]
        if group == "rb2":
            rb2 = rec.metrics["rb2"]
            row["rb2/overall"] = _num(rb2.get("overall"))
            for name in [*RB2_SUBSETS, *sorted(set(rb2) - set(RB2_SUBSETS))]:
                if name in rb2 and name not in RB2_NON_SCORES and not isinstance(rb2[name], (Mapping, list, bool)):
                    row[f"rb2/{name}"] = _num(rb2[name])
        elif group.startswith("prb/"):
            prb = rec.metrics["prb"]
            row[f"{group}/accuracy"] = _num(prb.get("accuracy"))
            for name in sorted(prb):
                if name not in PRB_NON_SCORES and not isinstance(prb[name], (Mapping, list, bool)):
                    row[f"{group}/{name}"] = _num(prb[name])
        elif group.startswith("bon/"):
            kk = k_of[group]
            point = (rec.metrics.get("curve") or {}).get(str(kk))
            if point is None:
                notes.append(f"RM {_short(rm)}: {group} record {rec.id} has no k={kk} (ks {_curve_ks(rec)})")
                row[f"{group}/gain@{kk}"] = math.nan
                row[f"{group}/ngain@{kk}"] = math.nan
            else:
                row[f"{group}/gain@{kk}"] = _num(point.get("gain"))
                row[f"{group}/ngain@{kk}"] = _num(point.get("normalised_gain"))
                gain_ci[f"{group}/gain@{kk}"][rm] = [_score(v) for v in list(point.get("gain_ci") or [None, None])[:2]]
            ks = _curve_ks(rec)
            curve = rec.metrics.get("curve") or {}
            curves[group][rm] = {
                "ks": ks,
                **{s: [_score(curve[str(x)].get(s)) for x in ks] for s in ("bon", "oracle", "first_k")},
            }
            if rec.artifacts.get("per_prompt"):
                per_prompt[f"{group}/gain@{kk}"][rm] = str(collection.store.resolve(rec.artifacts["per_prompt"]))
            if rec.metrics.get("by_group"):
                bon_groups[group][rm] = {
                    "n": rec.metrics.get("n"),
                    "agreement": rec.metrics.get("rm_gold_agreement"),  # bon_math.rank_agreement's dict
                    "groups": {
                        str(g): {"gain": _score(v.get("gain")), "prompts": v.get("prompts"),
                                 "gain_ci": [_score(x) for x in list(v.get("gain_ci") or [None, None])[:2]]}
                        for g, v in rec.metrics["by_group"].items()
                    },
                }
        else:
            row[f"{group}/gain"] = _num(rec.metrics.get("gain"))
            match = rec.info.get("lineage_match")
            row[f"{group}/lineage_match"] = None if match is None else bool(match)
            ci = rec.metrics.get("gain_ci") or [None, None]
            ppo_ci[f"{group}/gain"][rm] = gain_ci[f"{group}/gain"][rm] = [_score(v) for v in list(ci)[:2]]

    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "rm_id"
    bench = benchmark_columns(table.columns)
    bench = sorted(bench, key=_bench_order)
    down = sorted(downstream_columns(table.columns), key=_down_order)
    extra = [c for c in table.columns if c.endswith("/lineage_match")]
    varying, constant = _factor_summary(table)
    table.insert(1, "label", _labels(table, varying))
    table = table[["rm", "label", *FACTORS, "external", *bench, *down, *sorted(extra)]]
    for col in bench + down:
        table[col] = pd.to_numeric(table[col], errors="coerce")

    # --- what is missing ------------------------------------------------------------------------------
    bench_groups = sorted({_bench_group(c) for c in bench})
    down_groups = sorted({setting_of(c) for c in down})
    for rm in rms:
        absent = [g for g in bench_groups + down_groups if (rm, g) not in chosen]
        if absent:
            label = str(table.at[rm, "label"])
            who = label if label == _short(rm) else f"{label} ({_short(rm)})"
            notes.append(f"RM {who}: no {', '.join(absent)}")
    used = {c.records[0].id for c in chosen.values()} | set(collection.rm_records)
    used |= {r.id for r in upper}

    table.attrs["context"] = {
        "selection": collection.selection,
        "n_rms": len(rms),
        "records_by_task": collection.by_task(),
        "k": k_of,
        "profile_modes": sorted(seen_modes if modes is None else set(modes) & seen_modes),
        "downstream_profile_modes": sorted(downstream_modes),
        "columns": {
            "factors": list(FACTORS),
            "benchmarks": bench,
            "main_benchmarks": main_benchmark_columns(bench),
            "downstream": down,
            "gain": gain_columns(down),
        },
        "data_ids": _data_ids(chosen),
        "varying_factors": varying,
        "constant_factors": constant,
        "duplicates": duplicates,
        "missing": notes,
        "warnings": warnings,
        "upper_bounds": [_upper(r, group_of(r, _group(r))) for r in upper],
        "curves": dict(curves),
        "per_prompt": dict(per_prompt),
        "ppo_ci": dict(ppo_ci),
        "gain_ci": dict(gain_ci),
        "bon_groups": dict(bon_groups),
        "records": [_describe(r, used) for r in collection.records],
    }
    return table


def _bench_order(col: str) -> tuple[Any, ...]:
    if col.startswith("rb2/"):
        name = col[4:]
        return (0, "", 0 if name == "overall" else 1 + (RB2_SUBSETS.index(name) if name in RB2_SUBSETS else 99), name)
    _, mode, name = col.split("/", 2)
    mode_rank = {"none": 0, "raw": 1, "planner": 2}.get(mode, 3)
    return (1, f"{mode_rank}{mode}", 0 if name == "accuracy" else 1, name)


def _down_order(col: str) -> tuple[Any, ...]:
    m = DOWNSTREAM_RE.match(col)
    assert m is not None
    return (m["task"] != "bon", m["task"], m["setting"], m["stat"].startswith("ngain"))


def _bench_group(col: str) -> str:
    return "rb2" if col.startswith("rb2/") else "/".join(col.split("/")[:2])


def _factor_summary(table: pd.DataFrame) -> tuple[dict[str, list[Any]], dict[str, Any]]:
    """Factors whose values differ between the trained RMs, and those shared by all of them."""
    trained = table[~table["external"].astype(bool)] if "external" in table else table
    varying: dict[str, list[Any]] = {}
    constant: dict[str, Any] = {}
    for f in DESIGN_FACTORS:
        values = [v for v in trained[f].tolist() if v is not None and not (isinstance(v, float) and math.isnan(v))]
        uniq = sorted({json.dumps(_jsonable(v), default=str) for v in values})
        if len(uniq) > 1:
            varying[f] = [json.loads(u) for u in uniq]
        elif len(uniq) == 1:
            constant[f] = json.loads(uniq[0])
    return varying, constant


def _labels(table: pd.DataFrame, varying: Mapping[str, Any]) -> list[str]:
    """Short RM names from the factors that vary (a factor that only repeats another one is left out)."""
    trained = table[~table["external"].astype(bool)]
    keep: list[str] = []
    partitions: list[list[int]] = []
    for f in varying:
        part = pd.factorize(trained[f].map(lambda v: json.dumps(_jsonable(v), default=str)))[0].tolist()
        if part not in partitions:
            keep.append(f)
            partitions.append(part)
    labels = []
    for rm, row in table.iterrows():
        if row.get("external") or not keep:
            labels.append(_short(str(rm)))
            continue
        labels.append(" ".join(_fmt_factor(f, row[f]) for f in keep if row[f] is not None))
    counts: dict[str, int] = defaultdict(int)
    for lab in labels:
        counts[lab] += 1
    return [f"{lab} #{str(rm)[:6]}" if counts[lab] > 1 else lab for lab, rm in zip(labels, table.index, strict=True)]


def _data_ids(chosen: Mapping[tuple[str, str], _Cell]) -> dict[str, list[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for (_, group), cell in chosen.items():
        rec = cell.records[0]
        if group == "rb2":
            out["rb2"].add(str(rec.inputs.get("rb2")))
        elif group.startswith("prb/"):
            out[group].add(str(rec.inputs.get("prb")))
        elif group.startswith("bon/"):
            out[group].add(str(rec.inputs.get("pool")))
        else:
            out[group].add(str(rec.inputs.get("baseline_pool")))
    return {k: sorted(v) for k, v in sorted(out.items())}


def _group(rec: Record) -> str:
    """``bon/<prompts>`` or ``<algorithm>/<prompts>`` of a downstream record."""
    base = "bon" if rec.task == "bon" else str(rec.config.get("algorithm") or "ppo")
    return f"{base}/{_prompts(rec)}"


def _upper(rec: Record, setting: str) -> dict[str, Any]:
    if rec.task == "bon":
        gain, ci = rec.metrics.get("gain_at_n"), rec.metrics.get("gain_at_n_ci")
    else:
        gain, ci = rec.metrics.get("gain"), rec.metrics.get("gain_ci")
    return {"id": rec.id, "task": rec.task, "rm": rm_of(rec), "setting": setting,
            "policy": _policy(rec), "gain": _score(gain),
            "gain_ci": [_score(v) for v in list(ci or [None, None])[:2]],
            "gold_before": _score(rec.metrics.get("gold_before")),
            "gold_after": _score(rec.metrics.get("gold_after"))}


def _describe(rec: Record, used: set[str]) -> dict[str, Any]:
    """One line per record for the report: id, task, RM and the settings that tell records apart."""
    settings: dict[str, Any] = {}
    if rec.task == "evaluate":
        settings = {"benchmarks": ",".join(b for b in ("rb2", "prb") if b in rec.metrics),
                    "profile": _profile_mode(rec),
                    **{f"{b}_data": rec.inputs[b] for b in ("rb2", "prb") if b in rec.inputs}}
    elif rec.task == "bon":
        settings = {"prompts": _prompts(rec), "policy": _policy(rec), "ks": ",".join(map(str, _curve_ks(rec))),
                    "pool": rec.inputs.get("pool")}
    elif rec.task == "ppo":
        settings = {"prompts": _prompts(rec), "algorithm": rec.config.get("algorithm", "ppo"),
                    "policy": _policy(rec), "lineage_match": rec.info.get("lineage_match")}
    elif rec.task == RM_TASK:
        f = _factors(rec)
        settings = {k: f[k] for k in DESIGN_FACTORS if f[k] is not None}
    return {"id": rec.id, "task": rec.task, "rm": rm_of(rec), "ended": rec.ended,
            "status": "used" if rec.id in used else "superseded",
            "settings": {k: _jsonable(v) for k, v in settings.items()}}


# ------------------------------------------------------------------------------------------------
# correlations
# ------------------------------------------------------------------------------------------------

CORR_COLUMNS: tuple[str, ...] = (
    "benchmark", "downstream", "statistic", "value", "pvalue", "ci_low", "ci_high",
    "prompt_ci_low", "prompt_ci_high", "null_mean", "null_p", "normalised", "n", "n_boot", "main", "note",
)


def ndcg_variants(relevance: Sequence[str] = ("rank", "minmax", "raw"), gain: Sequence[str] = ("linear",),
                  cutoff: int | None = None) -> list[tuple[str, str, int | None]]:
    """Every relevance x gain combination at ``cutoff`` (None = all RMs), in config order."""
    if cutoff is not None and (isinstance(cutoff, bool) or not isinstance(cutoff, (int, np.integer)) or cutoff < 1):
        raise ConfigError(f"ndcg.cutoff must be a positive integer or null, got {cutoff!r}")
    if not relevance or not gain:
        raise ConfigError("ndcg.relevance and ndcg.gain must each name at least one option")
    return [(str(r), str(g), None if cutoff is None else int(cutoff)) for r in relevance for g in gain]


def without_attrs(table: pd.DataFrame) -> pd.DataFrame:
    """A shallow copy without ``attrs``: pandas deep-copies attrs on every operation (slow)."""
    out = table.copy(deep=False)
    out.attrs = {}
    return out


def _per_prompt_matrix(paths: Mapping[str, str], rms: Sequence[str], k: int,
                       cache: dict[str, pd.DataFrame]) -> tuple[np.ndarray | None, str | None]:
    """``[RMs, prompts]`` per-prompt BoN gain at k (bon@k - bon_at_1), prompts aligned by id."""
    frames = []
    for rm in rms:
        path = paths.get(rm)
        if path is None:
            return None, f"no per-prompt BoN results for RM {_short(rm)}"
        if path not in cache:
            try:
                cache[path] = pd.read_parquet(path)
            except (OSError, ValueError) as exc:
                return None, f"per-prompt BoN results unreadable for RM {_short(rm)} ({exc.__class__.__name__})"
        frame = cache[path]
        col = f"bon@{k}"
        if col not in frame or "bon_at_1" not in frame or "prompt_id" not in frame:
            return None, f"per-prompt BoN results of RM {_short(rm)} lack {col}"
        frames.append(pd.Series((frame[col] - frame["bon_at_1"]).to_numpy(), index=frame["prompt_id"].astype(str)))
    common = frames[0].index
    for s in frames[1:]:
        common = common.intersection(s.index)
    if len(common) == 0:
        return None, "the RMs' per-prompt BoN results share no prompt"
    matrix = np.stack([s[~s.index.duplicated()].reindex(common).to_numpy(dtype=float) for s in frames])
    return matrix, None


def correlation_table(
    table: pd.DataFrame,
    *,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
    ndcg: Sequence[tuple[str, str, int | None]] | None = None,
    boot_subsets: bool = False,
) -> pd.DataFrame:
    """Every (benchmark column, downstream column) pair x statistic, long format (:data:`CORR_COLUMNS`).

    Statistics come from :func:`rlexp.analysis.correlation.correlate` (RMs with both values; CIs by
    resampling RMs). For BoN gain columns with per-prompt results for every RM, ``prompt_ci_*`` is
    the CI of :func:`~rlexp.analysis.correlation.bootstrap_prompts` (prompts resampled). Bootstrap
    CIs are computed for the main benchmark columns (``rb2/overall``, ``prb/<mode>/accuracy``), and
    for subsets/domains only with ``boot_subsets``. With fewer than 3 RMs every statistic, NDCG
    included, is undefined: ``value`` is None and ``note`` says why.
    """
    variants = list(ndcg) if ndcg is not None else ndcg_variants()
    context = table.attrs.get("context", {})
    table = without_attrs(table)
    per_prompt = context.get("per_prompt", {})
    bench = benchmark_columns(table.columns)
    main = set(main_benchmark_columns(bench))
    down = downstream_columns(table.columns)
    cache: dict[str, pd.DataFrame] = {}
    rows: list[dict[str, Any]] = []
    for b in bench:
        for d in down:
            pair = table[[b, d]].apply(pd.to_numeric, errors="coerce").dropna()
            x, y = pair[b].to_numpy(float), pair[d].to_numpy(float)
            n = len(pair)
            boot = n_boot if (b in main or boot_subsets) and n >= MIN_ITEMS else 0
            results = correlate(x, y, n_boot=boot, seed=seed, ndcg_variants=variants, alpha=alpha)
            prompt: dict[str, Any] = {}
            prompt_note = None
            m = DOWNSTREAM_RE.match(d)
            if boot and m and m["task"] == "bon" and m["stat"].startswith("gain@") and d in per_prompt:
                matrix, prompt_note = _per_prompt_matrix(per_prompt[d], list(pair.index), int(m["stat"][5:]), cache)
                if matrix is not None:
                    prompt = {c.name: c for c in bootstrap_prompts(
                        x, matrix, n_boot=boot, seed=seed, ndcg_variants=variants, alpha=alpha)}
            for corr in results:
                value, pvalue, lo, hi, note = corr.value, corr.pvalue, corr.ci_low, corr.ci_high, corr.note
                if n < MIN_ITEMS:  # NDCG is computable for 2 RMs, but no statistic is meaningful there
                    value = pvalue = lo = hi = None
                    note = f"undefined: fewer than {MIN_ITEMS} RMs with both values (n={n})"
                elif value is None:
                    lo = hi = None  # no interval around an undefined point estimate
                pc = prompt.get(corr.name)
                if prompt_note and b in main:
                    note = (f"{note}; " if note else "") + f"no prompt CI: {prompt_note}"
                rows.append({
                    "benchmark": b, "downstream": d, "statistic": corr.name,
                    "value": value, "pvalue": pvalue, "ci_low": lo, "ci_high": hi,
                    "prompt_ci_low": pc.ci_low if pc is not None and value is not None else None,
                    "prompt_ci_high": pc.ci_high if pc is not None and value is not None else None,
                    **_null_cells(corr, value),
                    "n": n, "n_boot": boot, "main": b in main, "note": note,
                })
    out = pd.DataFrame(rows, columns=list(CORR_COLUMNS))
    for col in ("value", "pvalue", "ci_low", "ci_high", "prompt_ci_low", "prompt_ci_high", "null_mean", "null_p",
                "normalised"):
        out[col] = out[col].astype(object).where(out[col].notna(), None)
    return out


def _null_cells(corr: Any, value: float | None) -> dict[str, float | None]:
    """NDCG's chance level (mean, p) and normalised value; None for the other statistics."""
    if value is None:
        return {"null_mean": None, "null_p": None, "normalised": None}
    return {"null_mean": corr.null_mean, "null_p": corr.null_p, "normalised": corr.normalised}


def bon_gain_differences(
    table: pd.DataFrame, *, n_boot: int = 1000, alpha: float = 0.05, seed: int = 0
) -> dict[str, dict[str, Any]]:
    """Per BoN gain column: do the RMs' gains differ beyond prompt noise? (paired bootstrap).

    For each ``bon/<setting>/gain@k`` column whose RMs all have per-prompt results: the highest and
    lowest gain, their difference with its CI, how many RM pairs differ beyond the CI, and the
    Friedman test over prompts (see :func:`~rlexp.analysis.correlation.gain_differences`). A column without per-prompt results, or
    with fewer than 2 RMs, gets ``note`` instead.
    """
    context = table.attrs.get("context", {})
    per_prompt = context.get("per_prompt", {})
    plain = without_attrs(table)
    out: dict[str, dict[str, Any]] = {}
    cache: dict[str, pd.DataFrame] = {}
    for col in downstream_columns(plain.columns):
        m = DOWNSTREAM_RE.match(col)
        if not (m and m["task"] == "bon" and m["stat"].startswith("gain@")):
            continue
        rms = [str(r) for r in pd.to_numeric(plain[col], errors="coerce").dropna().index]
        if len(rms) < 2:
            out[col] = {"note": f"fewer than 2 RMs with a gain (n={len(rms)})"}
            continue
        matrix, note = _per_prompt_matrix(per_prompt.get(col, {}), rms, int(m["stat"][5:]), cache)
        if matrix is None or n_boot < 1:
            out[col] = {"note": note or "n_boot=0: no bootstrap"}
            continue
        diffs = gain_differences(matrix, n_boot=n_boot, seed=seed, alpha=alpha)
        hi, lo = int(np.argmax(diffs.means)), int(np.argmin(diffs.means))
        out[col] = {
            "rms": len(rms), "prompts": int(matrix.shape[1]), "n_boot": n_boot,
            "best": {"rm": rms[hi], "label": str(plain.loc[rms[hi], "label"]), "gain": float(diffs.means[hi])},
            "worst": {"rm": rms[lo], "label": str(plain.loc[rms[lo], "label"]), "gain": float(diffs.means[lo])},
            "difference": float(diffs.diff[hi, lo]),
            "difference_ci": [float(diffs.ci_low[hi, lo]), float(diffs.ci_high[hi, lo])],
            "pairs": len(rms) * (len(rms) - 1) // 2, "pairs_separated": diffs.n_separated_pairs(),
            "friedman": {"statistic": diffs.friedman_statistic, "pvalue": diffs.friedman_pvalue},
        }
    return out


def summary(table: pd.DataFrame, corr: pd.DataFrame, prb_column: str | None = None) -> dict[str, Any]:
    """Compact record metrics: per downstream gain column, Spearman and NDCG of rb2/overall and of
    the declared headline PRB column (``prb_column``; None = the first PRB accuracy column); plus counts.

    The PRB column is never chosen by its result: picking the best of several after the fact
    overstates how well PRB predicts."""
    context = table.attrs.get("context", {})
    table = without_attrs(table)
    ndcg_names = [s for s in corr["statistic"].unique() if str(s).startswith("ndcg")] if len(corr) else []
    ndcg_name = ndcg_names[0] if ndcg_names else None

    def stat(b: str, d: str, s: str | None) -> float | None:
        if s is None:
            return None
        hit = corr[(corr.benchmark == b) & (corr.downstream == d) & (corr.statistic == s)]
        return None if hit.empty or hit.iloc[0]["value"] is None else float(hit.iloc[0]["value"])

    def n_of(b: str, d: str) -> int:
        hit = corr[(corr.benchmark == b) & (corr.downstream == d)]
        return 0 if hit.empty else int(hit.iloc[0]["n"])

    settings: dict[str, Any] = {}
    prb_cols = [c for c in main_benchmark_columns(table.columns) if c.startswith("prb/")]
    for d in gain_columns(table.columns):
        entry: dict[str, Any] = {}
        if "rb2/overall" in table:
            entry["rb2/overall"] = {"spearman": stat("rb2/overall", d, "spearman"), "ndcg": stat("rb2/overall", d, ndcg_name),
                                    "n": n_of("rb2/overall", d)}
        if prb_cols:
            col = prb_column if prb_column in prb_cols else prb_cols[0]
            entry["prb"] = {"column": col, "spearman": stat(col, d, "spearman"), "ndcg": stat(col, d, ndcg_name),
                            "n": n_of(col, d)}
        settings[d] = entry
    downstream = downstream_columns(table.columns)
    return {
        "n_rms": int(len(table)),
        "n_rms_trained": int((~table["external"].astype(bool)).sum()) if "external" in table else int(len(table)),
        "n_rms_with": {c: int(table[c].notna().sum()) for c in [*main_benchmark_columns(table.columns), *downstream]},
        "records": context.get("records_by_task", {}),
        "k": context.get("k", {}),
        "ndcg_variant": ndcg_name,
        "settings": settings,
        "n_duplicates": len(context.get("duplicates", [])),
        "n_missing": len(context.get("missing", [])),
    }
