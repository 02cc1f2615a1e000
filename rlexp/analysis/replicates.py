"""PPO runs of one setting repeated over training seeds, pooled into one result.

One PPO run's gain rests on one training seed, and the sandbox's tiny policy turns seed and float
noise into gain changes as large as the differences between RMs (docs/sandbox.md, "PPO over three
training seeds"). PPO records that differ only in ``seed`` are replicates of one setting: each seed
trained its own policy and drew its own evaluation samples and baseline pool. The report pools them
per prompt: a prompt's gain is the mean of the seeds' gains on it, the setting's gain the mean over
the prompts all seeds share, and its CI resamples those prompts (every seed's gain on a prompt kept
together, as one run's CI resamples its prompts). One record is read as it is: its own gain and CI.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rlexp.analysis.bootstrap import bootstrap_ci
from rlexp.analysis.study_table import Interval, ProxyShift
from rlexp.analysis.values import finite_float, interval, score_or_none
from rlexp.errors import DataError
from rlexp.store import Record, Store, canonical_json, result_config


def training_setting(rec: Record) -> str:
    """What determines a downstream record's result apart from its seed (and the baseline pool that
    seed draws): records with one setting and different seeds are replicates of it."""
    config = {k: v for k, v in result_config(rec.config, rec.task).items() if k != "seed"}
    inputs = {k: v for k, v in rec.inputs.items() if k != "baseline_pool"}
    return canonical_json([config, inputs])


def seed_of(rec: Record) -> int | None:
    """A record's training seed (None when its config has none)."""
    seed = rec.config.get("seed")
    return None if seed is None else int(seed)


def replicates(ordered: Sequence[Record]) -> tuple[list[Record], list[Record]]:
    """(the replicates of the first record's setting, one per seed, newest per seed, in seed order;
    every other record: superseded). ``ordered``: the candidate records, newest first."""
    setting = training_setting(ordered[0])
    newest: dict[int | None, Record] = {}
    for rec in ordered:
        if training_setting(rec) == setting:
            newest.setdefault(seed_of(rec), rec)
    kept = [newest[s] for s in sorted(newest, key=lambda s: -1 if s is None else s)]
    ids = {r.id for r in kept}
    return kept, [r for r in ordered if r.id not in ids]


@dataclass
class Pooled:
    """One setting's gain over its replicates (a single record's own gain and CI when there is one)."""

    gain: float
    gain_ci: Interval
    seeds: list[int | None]
    seed_gains: list[float]
    per_prompt: list[str]  # each replicate's per-prompt file, resolved
    proxy: ProxyShift | None
    records: list[Record]  # the records the result comes from


def mean_over_seeds(gains: Sequence[pd.Series]) -> pd.Series:
    """Per prompt id, the mean of the replicates' gains, on the prompts all of them have (a prompt
    listed twice in one file counts once)."""
    unique = [s[~s.index.duplicated()] for s in gains]
    return unique[0] if len(unique) == 1 else pd.concat(unique, axis=1, join="inner").mean(axis=1)


def per_prompt_gains(paths: Sequence[str]) -> pd.Series:
    """Per prompt id, the mean gain over the replicates' per-prompt files."""
    series = []
    for path in paths:
        frame = pd.read_parquet(path, columns=["prompt_id", "gain"])
        series.append(pd.Series(frame["gain"].to_numpy(dtype=float), index=frame["prompt_id"].astype(str)))
    pooled = mean_over_seeds(series)
    if pooled.empty:
        raise DataError(f"the {len(paths)} replicates' per-prompt PPO results share no prompt ({paths[0]} ...)")
    return pooled


def mean_metric(recs: Sequence[Record], key: str) -> float | None:
    """The mean of a metric over the replicates that have it (None when none has it)."""
    values = [v for r in recs if (v := score_or_none(r.metrics.get(key))) is not None]
    return float(np.mean(values)) if values else None


def _proxy(recs: Sequence[Record]) -> ProxyShift | None:
    """The replicates' mean proxy shift (RM score before/after, final KL), over the runs that have it."""
    if not any("proxy_before" in r.metrics for r in recs):
        return None
    return {"before": mean_metric(recs, "proxy_before"), "after": mean_metric(recs, "proxy_after"),
            "kl": mean_metric(recs, "final_kl")}


def pool(recs: Sequence[Record], store: Store) -> Pooled:
    """The pooled result of a setting's replicates (:func:`replicates`), in seed order."""
    paths = [str(store.resolve(r.artifacts["per_prompt"])) for r in recs if r.artifacts.get("per_prompt")]
    if len(recs) == 1 or len(paths) < len(recs):
        # One run, or a replicate without per-prompt gains (nothing to pair it by): the newest as it is.
        rec = max(recs, key=lambda r: r.ended)
        gain = finite_float(rec.metrics.get("gain"))
        own = [str(store.resolve(rec.artifacts["per_prompt"]))] if rec.artifacts.get("per_prompt") else []
        return Pooled(gain, interval(rec.metrics.get("gain_ci")), [seed_of(rec)], [gain], own, _proxy([rec]), [rec])
    gains = per_prompt_gains(paths).to_numpy()
    config: dict[str, Any] = recs[0].config
    lo, hi = bootstrap_ci(gains, n_boot=int(config.get("n_boot") or 1000), seed=0)
    return Pooled(float(gains.mean()), [lo, hi], [seed_of(r) for r in recs],
                  [finite_float(r.metrics.get("gain")) for r in recs], paths, _proxy(recs), list(recs))
