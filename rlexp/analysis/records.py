"""The records of a study, and what the RM table reads from each of them.

:func:`collect` gathers a study's records from the run store (explicit ids, the RMs' records, or
an experiment name) without choosing or merging anything; the readers below pull one fact out of
one record (its RM, prompt set, policy, profile mode, gold judge, BoN ks, factors) and describe
records for the report. Nothing here loads a model.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlexp.analysis.columns import DESIGN_FACTORS, FACTORS
from rlexp.analysis.replicates import mean_metric, pool
from rlexp.analysis.study_table import RecordLine, UpperBound
from rlexp.analysis.values import factor_value, interval, score_or_none
from rlexp.errors import ConfigError, DataError, misread_as_number
from rlexp.store import Record, Store

#: Tasks whose records carry benchmark or downstream results of one RM.
RESULT_TASKS: tuple[str, ...] = ("evaluate", "bon", "ppo")
RM_TASK = "train_rm"
#: RM names of downstream runs rewarded by a judge: upper bounds, not reward models.
JUDGE_PREFIX = "judge:"
RECORD_ID_RE = re.compile(r"^[0-9a-f]{16}$")


# ------------------------------------------------------------------------------------------------
# collecting records
# ------------------------------------------------------------------------------------------------


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
        """The evaluate/bon/ppo records, oldest first."""
        return [r for r in self.records if r.task in RESULT_TASKS]

    @property
    def ids(self) -> list[str]:
        """Every record's id, oldest first."""
        return [r.id for r in self.records]

    def by_task(self) -> dict[str, int]:
        """How many records of each task, tasks in alphabetical order."""
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
    requested: list[str] = []
    if record_ids:
        selection = f"records {', '.join(str(r) for r in record_ids)}"
        found = _find_ids(store, record_ids)
    elif rms:
        selection = f"RMs {', '.join(str(r) for r in rms)}"
        found, requested = _find_rms(store, rms)
    else:
        selection = f"experiment {experiment!r}"
        found = _find_experiment(store, experiment)
    records = sorted(found.values(), key=lambda r: (r.ended, r.id))
    results = [r for r in records if r.task in RESULT_TASKS]
    if not results:
        extra = f" (found {len(records)} train_rm record(s) but no evaluate/bon/ppo record)" if records else ""
        raise DataError(f"no records for study {selection} in store {store.root}{extra}")
    rm_records, notes = _rm_records(store, records, results)
    for rm in requested:
        if rm not in rm_records and not any(rm_of(r) == rm for r in results):
            notes.append(f"RM {rm}: no record at all")
    return Collection(store=store, selection=selection, records=records, rm_records=rm_records,
                      requested_rms=requested, notes=notes)


def _find_ids(store: Store, record_ids: Sequence[str]) -> dict[str, Record]:
    found: dict[str, Record] = {}
    for ref in record_ids:
        rec = store.find(str(ref))
        if rec is None:
            hint = misread_as_number(str(ref), quoted="records=['3476e31901852042']")
            raise DataError(f"record {ref!r} not found (or the prefix is ambiguous) in store {store.root}{hint}")
        found[rec.id] = rec
    return found


def _find_rms(store: Store, rms: Sequence[str]) -> tuple[dict[str, Record], list[str]]:
    """The RMs' train_rm records and every result record about them; and the RMs as requested."""
    found: dict[str, Record] = {}
    requested: list[str] = []
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
    return found, requested


def _find_experiment(store: Store, experiment: str | None) -> dict[str, Record]:
    found: dict[str, Record] = {}
    for task in (RM_TASK, *RESULT_TASKS):
        for rec in store.records(task):
            if rec.config.get("experiment_name") == experiment:
                found[rec.id] = rec
    return found


def _rm_records(store: Store, records: list[Record], results: list[Record]) -> tuple[dict[str, Record], list[str]]:
    """RM id -> train_rm record: the collected ones, plus those of RMs the results name (for factors)."""
    notes: list[str] = []
    rm_records: dict[str, Record] = {r.id: r for r in records if r.task == RM_TASK}
    for rec in results:
        rm = rm_of(rec)
        if rm is None or rm in rm_records or rm.startswith(JUDGE_PREFIX):
            continue
        if RECORD_ID_RE.match(rm):
            try:
                rm_records[rm] = store.get(rm, RM_TASK)
            except Exception:  # noqa: BLE001 - an absent train_rm record only loses the factors
                notes.append(f"train_rm record {rm} is not in the store: its factors are unknown")
    return rm_records, notes


# ------------------------------------------------------------------------------------------------
# reading one record
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
    # "???" is OmegaConf's missing value: a config that never named an RM.
    return None if value in (None, "", "???") else str(value)


def factors(rec: Record | None) -> dict[str, Any]:
    """The factor columns of an RM from its train_rm record (all None for an external RM)."""
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


def prompts_of(rec: Record) -> str:
    """The prompt set a downstream record ran on (its config's name, else its info's)."""
    prompts = rec.config.get("prompts")
    if isinstance(prompts, Mapping) and prompts.get("name"):
        return str(prompts["name"])
    return str(rec.info.get("prompts") or "prompts")


def policy_of(rec: Record) -> str | None:
    """The policy lineage a downstream record sampled from, when it says."""
    return _str_or_none(rec.info.get("policy_lineage") or (rec.config.get("model") or {}).get("lineage"))


def profile_mode(rec: Record) -> str:
    """The profile mode an RM scored with (``none`` when the config has no profile)."""
    profile = rec.config.get("profile")
    return str(profile.get("mode", "none")) if isinstance(profile, Mapping) else "none"


def judge_key(rec: Record) -> str:
    """The gold judge of a downstream record, as a comparable string (RMs of one column must share it)."""
    return json.dumps(rec.info.get("judge"), sort_keys=True, default=str)


def curve_ks(rec: Record) -> list[int]:
    """The ks of a BoN record's curve, ascending (keys that are not integers are skipped)."""
    curve = rec.metrics.get("curve") or {}
    out = []
    for key in curve:
        try:
            out.append(int(key))
        except (TypeError, ValueError):
            continue
    return sorted(out)


def short_name(rm: str) -> str:
    """An RM for messages: a record id's first 8 characters, or a path's last part."""
    if RECORD_ID_RE.match(rm):
        return rm[:8]
    return rm.rstrip("/").rsplit("/", 1)[-1]


def downstream_group(rec: Record) -> str:
    """``bon/<prompts>`` or ``<algorithm>/<prompts>`` of a downstream record.

    A PPO run evaluated on another prompt set than it trained on (``eval_prompts``) is named by its
    evaluation set, where its gain was measured: its column sits beside Best-of-N's on the same prompts.
    """
    if rec.task == "bon":
        return f"bon/{prompts_of(rec)}"
    evaluated = rec.info.get("eval_prompts")
    if rec.config.get("eval_prompts") is not None and isinstance(evaluated, Mapping) and evaluated.get("name"):
        return f"{rec.config.get('algorithm') or 'ppo'}/{evaluated['name']}"
    return f"{rec.config.get('algorithm') or 'ppo'}/{prompts_of(rec)}"


def upper_bound(recs: Sequence[Record], setting: str, store: Store) -> UpperBound:
    """Judge-reward downstream records of one setting as a reference line for ``setting``: one
    record as it is, PPO replicates over training seeds pooled (:mod:`rlexp.analysis.replicates`)."""
    rec = max(recs, key=lambda r: r.ended)
    base = {"id": rec.id, "task": rec.task, "rm": rm_of(rec), "setting": setting, "policy": policy_of(rec)}
    if rec.task == "bon":
        gain, ci = rec.metrics.get("gain_at_n"), rec.metrics.get("gain_at_n_ci")
        return {**base, "gain": score_or_none(gain), "gain_ci": interval(ci),
                "gold_before": score_or_none(rec.metrics.get("gold_before")),
                "gold_after": score_or_none(rec.metrics.get("gold_after"))}
    pooled = pool(recs, store)
    out: UpperBound = {**base, "gain": score_or_none(pooled.gain), "gain_ci": pooled.gain_ci,
                       "gold_before": mean_metric(pooled.records, "gold_before"),
                       "gold_after": mean_metric(pooled.records, "gold_after")}
    if len(pooled.seeds) > 1:
        out["seeds"] = {"seeds": pooled.seeds, "gains": pooled.seed_gains}
    return out


def describe(rec: Record, used: set[str]) -> RecordLine:
    """One line per record for the report: id, task, RM and the settings that tell records apart."""
    settings: dict[str, Any] = {}
    if rec.task == "evaluate":
        settings = {"benchmarks": ",".join(b for b in ("rb2", "prb") if b in rec.metrics),
                    "profile": profile_mode(rec),
                    **{f"{b}_data": rec.inputs[b] for b in ("rb2", "prb") if b in rec.inputs}}
    elif rec.task == "bon":
        settings = {"prompts": prompts_of(rec), "policy": policy_of(rec), "ks": ",".join(map(str, curve_ks(rec))),
                    "pool": rec.inputs.get("pool")}
    elif rec.task == "ppo":
        settings = {"prompts": prompts_of(rec), "algorithm": rec.config.get("algorithm", "ppo"),
                    "policy": policy_of(rec), "lineage_match": rec.info.get("lineage_match")}
    elif rec.task == RM_TASK:
        f = factors(rec)
        settings = {k: f[k] for k in DESIGN_FACTORS if f[k] is not None}
    return {"id": rec.id, "task": rec.task, "rm": rm_of(rec), "ended": rec.ended,
            "status": "used" if rec.id in used else "superseded",
            "settings": {k: factor_value(v) for k, v in settings.items()}}
