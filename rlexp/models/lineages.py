"""Lineages: a model family = architecture + tokenizer + pretraining.

A tiny lineage is built locally on first use from the sandbox corpora and cached in the store as
a ``lineage`` record (its id hashes the spec and the sandbox it was trained on). A hub id or a
local folder is a lineage too: nothing is built, the reference is used as is.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from rlexp.errors import ConfigError
from rlexp.models.loading import quiet_libraries
from rlexp.models.tiny import TinySpec

log = logging.getLogger("rlexp")


@dataclass(frozen=True)
class Lineage:
    """Where a lineage's checkpoints are. ``record_id`` is None for hub/local lineages."""

    name: str
    base: str  # folder or hub id of the base causal LM
    instruct: str  # folder or hub id of the instruct policy
    record_id: str | None
    trust_remote_code: bool = False

    def checkpoint(self, which: str) -> str:
        if which not in ("base", "instruct"):
            raise ConfigError(f"model.checkpoint={which!r} is not one of base, instruct")
        return self.base if which == "base" else self.instruct


def tiny_spec(model_cfg: Mapping[str, Any]) -> TinySpec:
    tiny = dict(model_cfg["tiny"])
    return TinySpec(**tiny)


def _build(ctx: Any, spec: TinySpec, sandbox_dir: Path) -> dict[str, Any]:
    import pyarrow.parquet as pq

    from rlexp.models import tiny

    quiet_libraries()
    lines = [ln for ln in (sandbox_dir / "corpus" / f"pretrain_{spec.corpus}.txt").read_text().splitlines() if ln]
    sft = pq.read_table(sandbox_dir / "corpus" / "sft.parquet").to_pylist()
    pairs = [(r["prompt"], r["response"]) for r in sft]
    work = ctx.work_dir
    tokenizer = tiny.build_tokenizer(lines + [p for p, _ in pairs] + [r for _, r in pairs], spec)
    model = tiny.build_model(spec, tokenizer)
    metrics: dict[str, Any] = {"params": sum(p.numel() for p in model.parameters()), "vocab": len(tokenizer)}
    metrics.update(tiny.pretrain(model, tokenizer, lines, spec, work))
    tiny.save(model, tokenizer, work / "base")
    metrics.update(tiny.instruct_tune(model, tokenizer, pairs, spec, work))
    tiny.save(model, tokenizer, work / "instruct")
    for scratch in ("_pretrain", "_sft"):
        shutil.rmtree(work / scratch, ignore_errors=True)
    ctx.add_artifact("base", work / "base")
    ctx.add_artifact("instruct", work / "instruct")
    ctx.tracker.artifact(f"base-{ctx.rid}", "model", work / "base")
    return metrics


def resolve_lineage(cfg: DictConfig) -> Lineage:
    """The lineage ``cfg.model`` names, building a tiny one (once) if needed."""
    model_cfg = cfg.model
    if model_cfg.get("name_or_path"):
        ref = str(model_cfg.name_or_path)
        return Lineage(model_cfg.lineage, ref, ref, None, bool(model_cfg.get("trust_remote_code", False)))
    if not model_cfg.get("tiny"):
        raise ConfigError(f"model {model_cfg.get('name')!r} has neither name_or_path nor a tiny spec")
    from rlexp.runtime import execute
    from rlexp.store import Store
    from rlexp.tasks.data import ensure_sandbox

    sandbox_dir, data_id = ensure_sandbox(cfg)
    spec = tiny_spec(model_cfg)
    lineage_cfg = OmegaConf.create(
        {
            "paths": OmegaConf.to_container(cfg.paths, resolve=True),
            "logger": OmegaConf.to_container(cfg.logger, resolve=True),
            "runtime": OmegaConf.to_container(cfg.runtime, resolve=True),
            "experiment_name": cfg.get("experiment_name", "default"),
            "progress": cfg.get("progress", True),
            "lineage": model_cfg.lineage,
            "tiny": OmegaConf.to_container(model_cfg.tiny, resolve=True),
        }
    )
    record = execute("lineage", lineage_cfg, lambda ctx: _build(ctx, spec, sandbox_dir), inputs={"data": data_id})
    store = Store(cfg.paths.store)
    return Lineage(
        name=str(model_cfg.lineage),
        base=str(store.resolve(record.artifacts["base"])),
        instruct=str(store.resolve(record.artifacts["instruct"])),
        record_id=record.id,
    )
