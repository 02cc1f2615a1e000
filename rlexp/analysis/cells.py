"""The cells of the RM table: which record fills each (RM, column group), and the values it gives.

A column group is ``rb2``, ``prb/<mode>``, ``arena/<context>``, ``prism/<context>``, ``bon/<setting>`` or ``<algorithm>/<setting>``; its
record gives one or more columns of the RM's row (see :mod:`rlexp.analysis.columns`) and, for
downstream groups, what the context keeps beside the table: BoN curves, per-prompt result files,
the gains' CIs over prompts and the gains per prompt group.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rlexp.analysis.columns import is_benchmark_group
from rlexp.analysis.records import Collection, curve_ks, factors, short_name
from rlexp.analysis.replicates import pool
from rlexp.analysis.study_table import BonGroups, Curve, GroupGain, Interval, ProxyShift, SeedGains
from rlexp.analysis.values import finite_float, interval, score_or_none
from rlexp.data.schemas import RB2_SUBSETS
from rlexp.store import Record, Store

#: Keys of an evaluate record's ``rb2``/``prb`` metrics that are not a score column.
RB2_NON_SCORES = frozenset({"overall", "counts", "complete", "ties_components"})
PRB_NON_SCORES = frozenset({"accuracy", "ties", "mean_gap", "n"})


@dataclass
class Cell:
    """One (RM, column group) and the records that could fill it; the chosen one is first."""

    rm: str
    group: str  # rb2 | prb/<mode> | bon/<prompts> | <algorithm>/<prompts>
    records: list[Record]
    #: A PPO cell's runs of its setting, one per training seed (rlexp/analysis/replicates.py), pooled.
    replicates: list[Record] = field(default_factory=list)

    @property
    def record(self) -> Record:
        """The record that fills the cell (the newest, of a PPO cell's replicates)."""
        return self.records[0]

    @property
    def used(self) -> list[Record]:
        """Every record whose result the cell shows: its replicates, else its record."""
        return self.replicates or [self.record]


@dataclass
class Rows:
    """Every RM's row (column -> value), and what the context keeps per downstream cell."""

    rows: dict[str, dict[str, Any]]
    curves: dict[str, dict[str, Curve]] = field(default_factory=lambda: defaultdict(dict))
    per_prompt: dict[str, dict[str, list[str]]] = field(default_factory=lambda: defaultdict(dict))
    ppo_ci: dict[str, dict[str, Interval]] = field(default_factory=lambda: defaultdict(dict))
    ppo_proxy: dict[str, dict[str, ProxyShift]] = field(default_factory=lambda: defaultdict(dict))
    #: Every gain column's per-RM CI over prompts (BoN and PPO alike).
    gain_ci: dict[str, dict[str, Interval]] = field(default_factory=lambda: defaultdict(dict))
    bon_groups: dict[str, dict[str, BonGroups]] = field(default_factory=lambda: defaultdict(dict))
    ppo_groups: dict[str, dict[str, dict[str, GroupGain]]] = field(default_factory=lambda: defaultdict(dict))
    ppo_seeds: dict[str, dict[str, SeedGains]] = field(default_factory=lambda: defaultdict(dict))
    notes: list[str] = field(default_factory=list)  # cells that could not be filled


def fill_rows(collection: Collection, chosen: Mapping[tuple[str, str], Cell], rms: Sequence[str],
              k_of: Mapping[str, int]) -> Rows:
    """Each RM's factors, then the values of every chosen cell (``k_of``: the BoN k per setting)."""
    out = Rows(rows={rm: {"rm": rm} for rm in rms})
    for rm in rms:
        out.rows[rm].update(factors(collection.rm_records.get(rm)))
        out.rows[rm]["external"] = rm not in collection.rm_records
    for (rm, group), cell in sorted(chosen.items()):
        rec = cell.record
        if out.rows[rm]["external"] and out.rows[rm].get("lineage") is None:  # a published RM: as its records say
            out.rows[rm]["lineage"] = (rec.info.get("rm") or {}).get("lineage")
        if group == "rb2":
            _fill_rb2(out.rows[rm], rec.metrics["rb2"])
        elif group.startswith("prb/"):
            _fill_prb(out.rows[rm], group, rec.metrics["prb"])
        elif is_benchmark_group(group):
            _fill_user_pairs(out.rows[rm], group, rec.metrics[group.split("/")[0]])
        elif group.startswith("bon/"):
            _fill_bon(out, rm, group, rec, k_of[group], collection.store)
        else:
            _fill_ppo(out, rm, group, cell, collection.store)
    return out


def _is_score(value: Any) -> bool:
    # Nested results (counts, per-item lists) and flags sit beside the scores in the metrics.
    return not isinstance(value, (Mapping, list, bool))


def _fill_rb2(row: dict[str, Any], rb2: Mapping[str, Any]) -> None:
    row["rb2/overall"] = finite_float(rb2.get("overall"))
    for name in [*RB2_SUBSETS, *sorted(set(rb2) - set(RB2_SUBSETS))]:
        if name in rb2 and name not in RB2_NON_SCORES and _is_score(rb2[name]):
            row[f"rb2/{name}"] = finite_float(rb2[name])


def _fill_user_pairs(row: dict[str, Any], group: str, metrics: Mapping[str, Any]) -> None:
    """Chatbot Arena-/PRISM-Personalized: accuracy over votes, and the mean of the users' accuracies."""
    row[f"{group}/accuracy"] = finite_float(metrics.get("accuracy"))
    if _is_score(metrics.get("user_accuracy")):
        row[f"{group}/user_accuracy"] = finite_float(metrics["user_accuracy"])


def _fill_prb(row: dict[str, Any], group: str, prb: Mapping[str, Any]) -> None:
    row[f"{group}/accuracy"] = finite_float(prb.get("accuracy"))
    for name in sorted(prb):
        if name not in PRB_NON_SCORES and _is_score(prb[name]):
            row[f"{group}/{name}"] = finite_float(prb[name])


def _fill_bon(out: Rows, rm: str, group: str, rec: Record, k: int, store: Store) -> None:
    """gain@k and ngain@k, the curve, the per-prompt results file and the gains per prompt group."""
    row = out.rows[rm]
    curve = rec.metrics.get("curve") or {}
    point = curve.get(str(k))
    if point is None:
        out.notes.append(f"RM {short_name(rm)}: {group} record {rec.id} has no k={k} (ks {curve_ks(rec)})")
        row[f"{group}/gain@{k}"] = math.nan
        row[f"{group}/ngain@{k}"] = math.nan
    else:
        row[f"{group}/gain@{k}"] = finite_float(point.get("gain"))
        row[f"{group}/ngain@{k}"] = finite_float(point.get("normalised_gain"))
        out.gain_ci[f"{group}/gain@{k}"][rm] = interval(point.get("gain_ci"))
    ks = curve_ks(rec)
    out.curves[group][rm] = {
        "ks": ks, "bon": [score_or_none(curve[str(x)].get("bon")) for x in ks],
        "oracle": [score_or_none(curve[str(x)].get("oracle")) for x in ks],
        "first_k": [score_or_none(curve[str(x)].get("first_k")) for x in ks],
    }
    if rec.artifacts.get("per_prompt"):
        out.per_prompt[f"{group}/gain@{k}"][rm] = [str(store.resolve(rec.artifacts["per_prompt"]))]
    if rec.metrics.get("by_group"):
        out.bon_groups[group][rm] = {
            "n": rec.metrics.get("n"),
            "agreement": rec.metrics.get("rm_gold_agreement"),  # bon_math.rank_agreement's dict
            "groups": _group_gains(rec.metrics["by_group"]),
        }


def _group_gains(by_group: Mapping[str, Any]) -> dict[str, GroupGain]:
    """A record's ``by_group`` metrics (BoN's or PPO's) as the report shows them."""
    return {str(g): {"gain": score_or_none(v.get("gain")), "prompts": v.get("prompts"), "gain_ci": interval(v.get("gain_ci"))}
            for g, v in by_group.items()}


def _fill_ppo(out: Rows, rm: str, group: str, cell: Cell, store: Store) -> None:
    """The gain, whether the RM shares the policy's lineage, the gain's CI, the RM's score before and
    after (the proxy PPO optimised), its per-prompt files and its gains per prompt group; pooled over
    the cell's training seeds when it has several (:mod:`rlexp.analysis.replicates`)."""
    row, col, rec = out.rows[rm], f"{group}/gain", cell.record
    pooled = pool(cell.used, store)
    row[col] = pooled.gain
    match = rec.info.get("lineage_match")
    row[f"{group}/lineage_match"] = None if match is None else bool(match)
    out.ppo_ci[col][rm] = out.gain_ci[col][rm] = pooled.gain_ci
    if pooled.proxy is not None:
        out.ppo_proxy[col][rm] = pooled.proxy
    if pooled.per_prompt:
        out.per_prompt[col][rm] = pooled.per_prompt
    if len(pooled.seeds) > 1:
        out.ppo_seeds[col][rm] = {"seeds": pooled.seeds, "gains": pooled.seed_gains}
    by_group = [r.metrics["by_group"] for r in cell.used if r.metrics.get("by_group")]  # none before 2026-12-05
    if len(by_group) == 1:
        out.ppo_groups[col][rm] = _group_gains(by_group[0])
    elif by_group:
        out.ppo_groups[col][rm] = _mean_group_gains(by_group)


def _mean_group_gains(by_group: list[Mapping[str, Any]]) -> dict[str, GroupGain]:
    """Replicates' gains per prompt group, averaged over the seeds that have the group; no CI (the
    records keep each group's gains as a mean, not per prompt)."""
    out: dict[str, GroupGain] = {}
    for g in sorted({g for groups in by_group for g in groups}):
        runs = [groups[g] for groups in by_group if g in groups]
        gains = [v for r in runs if (v := score_or_none(r.get("gain"))) is not None]
        out[str(g)] = {"gain": float(sum(gains) / len(gains)) if gains else None, "prompts": runs[0].get("prompts"),
                       "gain_ci": [None, None]}
    return out
