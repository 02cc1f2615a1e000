"""Which PPO records are replicates of one setting, and what their pooled result is (no model anywhere)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rlexp.analysis.bootstrap import bootstrap_ci
from rlexp.analysis.replicates import pool, replicates
from rlexp.store import Record, Store


def _run(store: Store, rid: str, seed: int, ended: float, gains: list[float] | None, **config) -> Record:
    """A PPO record of the setting ``config`` at ``seed``, with per-prompt gains when given."""
    artifacts = {}
    if gains is not None:
        folder = store.artifact_dir("ppo", rid)
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"prompt_id": [f"p{i}" for i in range(len(gains))], "gain": gains}), folder / "per_prompt.parquet")
        artifacts["per_prompt"] = store.relative(folder / "per_prompt.parquet")
    mean = float(np.mean(gains)) if gains else 0.5
    return Record(id=rid, task="ppo", ended=ended, artifacts=artifacts,
                  config={"rm": "r", "prompts": {"name": "general"}, "trainer": {"learning_rate": 5e-5}, "seed": seed,
                          "paths": {"root": f"/somewhere/{rid}"}, **config},
                  inputs={"rm": "r", "baseline_pool": f"pool-{seed}"},
                  metrics={"gain": mean, "gain_ci": [mean - 1, mean + 1], "proxy_before": 0.0, "proxy_after": float(seed)})


def test_one_replicate_per_seed_of_the_newest_setting(tmp_path: Path) -> None:
    """The newest record's setting keeps its newest record of each seed, whatever else differs (where
    the store lives, the baseline pool the seed drew); another setting and an older run of a seed are
    superseded."""
    store = Store(tmp_path)
    newest = _run(store, "a" * 16, 1, 50.0, None)
    older_same_seed = _run(store, "b" * 16, 1, 40.0, None)
    seed0 = _run(store, "c" * 16, 0, 30.0, None)
    other_setting = _run(store, "d" * 16, 2, 45.0, None, trainer={"learning_rate": 2e-4})
    kept, superseded = replicates([newest, other_setting, older_same_seed, seed0])
    assert [r.id for r in kept] == [seed0.id, newest.id]
    assert sorted(r.id for r in superseded) == sorted([other_setting.id, older_same_seed.id])


def test_pooled_gain_is_the_per_prompt_mean_over_seeds(tmp_path: Path) -> None:
    """Per prompt the seeds' gains are averaged over the prompts all of them have; the CI is the
    bootstrap of those means; a replicate without per-prompt gains leaves the newest record alone."""
    store = Store(tmp_path)
    a = _run(store, "a" * 16, 0, 10.0, [0.1, 0.2, 0.3, 0.4])
    b = _run(store, "b" * 16, 1, 20.0, [0.3, 0.0, 0.1])  # has no p3
    pooled = pool([a, b], store)
    means = np.array([0.2, 0.1, 0.2])
    assert pooled.gain == pytest.approx(means.mean()) and pooled.seeds == [0, 1]
    assert pooled.seed_gains == pytest.approx([0.25, 0.4 / 3])
    assert pooled.gain_ci == pytest.approx(list(bootstrap_ci(means, n_boot=1000, seed=0)))
    assert pooled.proxy == {"before": 0.0, "after": 0.5, "kl": None} and len(pooled.per_prompt) == 2

    bare = _run(store, "c" * 16, 2, 30.0, None)
    alone = pool([a, b, bare], store)
    assert alone.records == [bare] and alone.gain == bare.metrics["gain"] and alone.gain_ci == bare.metrics["gain_ci"]
    one = pool([a], store)
    assert one.gain == a.metrics["gain"] and one.gain_ci == a.metrics["gain_ci"]  # a single run is read as it is
