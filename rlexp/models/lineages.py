"""Lineages: a model family = architecture + tokenizer + pretraining.

A tiny lineage is built locally from the sandbox corpora (:func:`build_tiny_lineage`);
:func:`rlexp.inputs.lineage` builds it on first use and caches it in the store as a ``lineage``
record (its id hashes the spec and the sandbox it was trained on). A hub id or a local folder is a
lineage too: nothing is built, the reference is used as is.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from rlexp.errors import ConfigError
from rlexp.models import tiny
from rlexp.models.loading import quiet_libraries
from rlexp.models.tiny import TinySpec


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
    """The TinySpec of a model node's ``tiny`` section."""
    tiny = dict(model_cfg["tiny"])
    return TinySpec(**tiny)


def build_tiny_lineage(spec: TinySpec, sandbox_dir: Path, work: Path) -> dict[str, Any]:
    """Pretrain a tiny base model on the sandbox corpus and instruct-tune it; writes
    ``work/base`` and ``work/instruct`` and returns the training metrics."""
    quiet_libraries()
    lines = [ln for ln in (sandbox_dir / "corpus" / f"pretrain_{spec.corpus}.txt").read_text().splitlines() if ln]
    sft = pq.read_table(sandbox_dir / "corpus" / "sft.parquet").to_pylist()
    # Worlds before version 4 have no system column.
    rows = [(r["prompt"], r["response"], r.get("system") or "") for r in sft]
    tokenizer = tiny.build_tokenizer(lines + [p for p, _, _ in rows] + [r for _, r, _ in rows], spec)
    model = tiny.build_model(spec, tokenizer)
    metrics: dict[str, Any] = {"params": sum(p.numel() for p in model.parameters()), "vocab": len(tokenizer)}
    metrics.update(tiny.pretrain(model, tokenizer, lines, spec, work))
    tiny.save(model, tokenizer, work / "base")
    metrics.update(tiny.instruct_tune(model, tokenizer, rows, spec, work))
    tiny.save(model, tokenizer, work / "instruct")
    for scratch in ("_pretrain", "_sft"):
        shutil.rmtree(work / scratch, ignore_errors=True)
    return metrics
