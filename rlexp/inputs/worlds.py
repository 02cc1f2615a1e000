"""The sandbox world and ``sandbox:<name>`` data references: built as store records on first use.

The main world (``rlexp data``) holds RewardBench 2, Personalized RewardBench, the training sources,
the downstream prompt sets and the corpora. The Chatbot Arena-/PRISM-Personalized analogues are a
second record of the same seed and difficulty (:mod:`rlexp.sandbox.comparison`): adding them left
the main world, and every record built on it, byte for byte as it was. Data read from anywhere else
(a local file or folder, a hub dataset) is named in a record's inputs by :func:`read_id`.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from rlexp.config.tasks import DataConfig
from rlexp.errors import ConfigError
from rlexp.runtime import RunContext, execute
from rlexp.sandbox.comparison import COMPARISON_FILES, COMPARISON_VERSION, materialise_comparison
from rlexp.sandbox.materialise import WORLD_VERSION, materialise
from rlexp.store import Record, Store, content_hash

# Short names for the files of the sandbox world ("sandbox:<name>" in configs).
SANDBOX_FILES: dict[str, str] = {
    "general": "pairs/general.parquet",
    "personal": "pairs/personal.parquet",
    "length_bias": "pairs/length_bias.parquet",
    "flipped": "pairs/flipped.parquet",
    "rb2": "rb2",
    "prb": "prb",
    "prompts/personalized": "prompts/personalized",
    "prompts/general": "prompts/general",
}


def world_inputs() -> dict[str, str]:
    """Part of the data record id: new generator code never reuses a world an older one stored."""
    return {"world_version": str(WORLD_VERSION)}


def _materialising(build: Callable[..., dict[str, Any]], folder: str, keep: tuple[str, ...]) -> Callable[[RunContext], dict[str, Any]]:
    """The body of a `data` run: ``build`` writes its files into the record's ``folder``; the
    manifest's ``keep`` entries become the record's metrics."""

    def body(ctx: RunContext) -> dict[str, Any]:
        out = ctx.work_dir / folder
        if out.exists():  # left by a run killed between materialising and writing its record
            shutil.rmtree(out)
        manifest = build(out, seed=int(ctx.cfg.sandbox.seed), difficulty=float(ctx.cfg.sandbox.difficulty),
                         progress=ctx.cfg.progress)
        ctx.add_artifact("sandbox", out)
        ctx.add_artifact("manifest", out / "manifest.json")
        ctx.tracker.artifact(f"{folder}-{ctx.rid}", "dataset", out / "manifest.json", reference=False)
        return {k: manifest.get(k, {}) for k in keep}

    return body


def sandbox_record(cfg: DictConfig) -> Record:
    """The `data` record of the world ``cfg.sandbox`` names; materialised on first use."""
    return execute("data", cfg, _materialising(materialise, "sandbox", ("counts", "baselines")), inputs=world_inputs())


def _data_config(cfg: DictConfig) -> DictConfig:
    """The `data` task's config for the world any task's ``cfg`` names."""
    return OmegaConf.merge(
        OmegaConf.structured(DataConfig),
        {
            "paths": cfg.paths,
            "logger": cfg.logger,
            "sandbox": cfg.sandbox,
            "progress": cfg.get("progress", True),
            "experiment_name": cfg.get("experiment_name", "default"),
        },
    )


def sandbox_world(cfg: DictConfig) -> tuple[Path, str]:
    """The sandbox folder and data record id for the world any task's ``cfg`` names."""
    record = sandbox_record(_data_config(cfg))
    return Store(cfg.paths.store).resolve(record.artifacts["sandbox"]), record.id


def comparison_world(cfg: DictConfig) -> tuple[Path, str]:
    """The folder and record id of the sandbox's Chatbot Arena-/PRISM-Personalized analogues."""
    inputs = {**world_inputs(), "comparison_version": str(COMPARISON_VERSION)}
    body = _materialising(materialise_comparison, "comparison", ("counts", "stats"))
    record = execute("data", _data_config(cfg), body, inputs=inputs)
    return Store(cfg.paths.store).resolve(record.artifacts["sandbox"]), record.id


def is_sandbox_ref(ref: str) -> bool:
    """Whether a data reference names a file of the sandbox world (``sandbox:<name>``)."""
    return str(ref).startswith("sandbox:")


def data_ref(ref: str, cfg: DictConfig) -> tuple[str, str | None]:
    """A data reference as a loadable path/hub id, plus the sandbox record id it came from.

    ``sandbox:<name>`` names a file of the sandbox world (built on first use); anything else
    (local path, hub id) is returned unchanged.
    """
    if not is_sandbox_ref(ref):
        return str(ref), None
    name = str(ref).split(":", 1)[1]
    if name in COMPARISON_FILES:
        folder, data_id = comparison_world(cfg)
        return str(folder / COMPARISON_FILES[name]), data_id
    if name not in SANDBOX_FILES:
        known = ", ".join(f"sandbox:{k}" for k in (*SANDBOX_FILES, *COMPARISON_FILES))
        raise ConfigError(f"unknown sandbox source {ref!r}; known: {known}")
    folder, data_id = sandbox_world(cfg)
    return str(folder / SANDBOX_FILES[name]), data_id


def rows_hash(rows: Sequence[Any] | Mapping[str, Any]) -> str:
    """A short hash of rows read from a data source (dataclasses or plain values)."""

    def plain(row: Any) -> Any:
        if not dataclasses.is_dataclass(row) or isinstance(row, type):
            return row
        out = dataclasses.asdict(row)
        for f in dataclasses.fields(row):  # fields added later are hashed only when set (schemas.HASH_NEUTRAL)
            if f.metadata.get("hash_neutral") and out[f.name] == (f.default if f.default is not dataclasses.MISSING
                                                                  else f.default_factory()):  # type: ignore[misc]
                del out[f.name]
        return out

    return content_hash({k: plain(v) for k, v in rows.items()} if isinstance(rows, Mapping) else [plain(r) for r in rows])


def read_id(data_id: str | None, path: str, rows: Sequence[Any] | Mapping[str, Any]) -> str:
    """What names data read from ``path`` in a record's inputs: its sandbox record id, or for a local
    file/folder or hub dataset the path and a hash of the rows read from it, so that a source edited in
    place is read afresh instead of matching the records made from its old content."""
    return data_id if data_id is not None else f"{path}#{rows_hash(rows)}"
