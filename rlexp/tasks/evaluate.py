"""`rlexp evaluate`: a reward model on RewardBench 2 and/or Personalized RewardBench.

``rm`` is a train_rm record id, a local folder or a hub id; benchmarks come from the sandbox or
the real datasets (hub id or local file) through the same loaders. The record carries per-subset
and per-domain scores; per-example scores go to parquet so anyone can recompute them.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from omegaconf import DictConfig, OmegaConf

from rlexp.config import EvaluateConfig  # noqa: F401  (schema registration)
from rlexp.data.formatting import PROFILE_MODES
from rlexp.data.loaders import load_prb, load_rb2
from rlexp.errors import ConfigError
from rlexp.runtime import RunContext, execute, hydra_entry
from rlexp.scoring.resolve import RMRef, resolve_rm, reward_scorer
from rlexp.store import Record, Store


def _evaluate(ctx: RunContext, cfg: DictConfig, rm: RMRef, rb2: list[Any] | None, prb: list[Any] | None) -> dict[str, Any]:
    from rlexp.models.loading import quiet_libraries

    quiet_libraries()
    scorer = reward_scorer(rm, cfg.scorer, cfg.profile)
    metrics: dict[str, Any] = {}
    if rb2 is not None:
        from rlexp.benchmarks.runners import run_rewardbench2

        summary, rows = run_rewardbench2(
            scorer, rb2, ties_version=cfg.benchmark.rb2.ties_version, progress=ctx.cfg.progress
        )
        metrics["rb2"] = {"overall": summary["overall"], **summary["subsets"], "counts": summary["counts"],
                          "complete": summary["complete"], "ties_components": summary["ties"]}
        path = ctx.work_dir / "rb2_scores.parquet"
        pq.write_table(pa.Table.from_pylist(rows), path)
        ctx.add_artifact("rb2_scores", path)
        ctx.tracker.table("rb2/examples", list(rows[0]), [list(r.values()) for r in rows[:2000]])
    if prb is not None:
        from rlexp.benchmarks.runners import run_personalized

        summary, rows = run_personalized(scorer, prb, progress=ctx.cfg.progress)
        metrics["prb"] = {
            "accuracy": summary["accuracy"],
            **{d: v["accuracy"] for d, v in summary["per_domain"].items()},
            "ties": summary["ties"],
            "mean_gap": summary["mean_gap"],
            "n": summary["n"],
        }
        path = ctx.work_dir / "prb_scores.parquet"
        pq.write_table(pa.Table.from_pylist(rows), path)
        ctx.add_artifact("prb_scores", path)
        ctx.tracker.table("prb/examples", list(rows[0]), [list(r.values()) for r in rows[:2000]])
    metrics["scoring"] = {"items": scorer.stats.items, "truncated": scorer.stats.truncated}
    ctx.info["rm"] = {"path": rm.path, "lineage": rm.lineage, "record": rm.record_id}
    ctx.info["scorer_settings"] = vars(scorer.settings)
    return metrics


def run(cfg: DictConfig) -> Record:
    """Evaluate (or find the evaluation of) ``cfg.rm`` on ``cfg.benchmark``."""
    from rlexp.tasks.data import resolve_ref

    if cfg.profile.mode not in PROFILE_MODES:
        raise ConfigError(f"profile={cfg.profile.mode!r} is not one of {', '.join(PROFILE_MODES)}")
    if cfg.benchmark.rb2 is None and cfg.benchmark.prb is None:
        raise ConfigError(f"benchmark {cfg.benchmark.name!r} names neither rb2 nor prb")
    store = Store(cfg.paths.store)
    rm = resolve_rm(cfg.rm, store)
    inputs = {"rm": rm.input_id}
    rb2 = prb = None
    if cfg.benchmark.rb2 is not None:
        b = cfg.benchmark.rb2
        path, data_id = resolve_ref(b.source, cfg)
        subsets = OmegaConf.to_container(b.subsets) if b.subsets is not None else None
        rb2 = load_rb2(path, subsets=subsets, limit=b.limit)
        inputs["rb2"] = data_id or path
    if cfg.benchmark.prb is not None:
        b = cfg.benchmark.prb
        path, data_id = resolve_ref(b.source, cfg)
        domains = OmegaConf.to_container(b.domains) if b.domains is not None else None
        prb = load_prb(path, domains=domains, limit=b.limit)
        inputs["prb"] = data_id or path
    return execute("evaluate", cfg, lambda ctx: _evaluate(ctx, cfg, rm, rb2, prb), inputs)


main = hydra_entry("evaluate", run)

if __name__ == "__main__":
    main()
