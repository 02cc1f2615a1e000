"""`rlexp data`: materialise the sandbox world as parquet files + manifest in the store.

Other tasks call :func:`ensure_sandbox` to get (or build, once) the world they read.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from rlexp.config import DataConfig
from rlexp.runtime import RunContext, execute, hydra_entry
from rlexp.store import Record, Store


def _world() -> dict[str, str]:
    """Part of the data record id: new generator code never reuses a world an older one stored.

    Imported here, not at module level: resolving a local (non-sandbox) file needs no generator.
    """
    from rlexp.sandbox.materialise import WORLD_VERSION

    return {"world_version": str(WORLD_VERSION)}


def _materialise(ctx: RunContext) -> dict[str, Any]:
    from rlexp.sandbox.materialise import materialise

    out = ctx.work_dir / "sandbox"
    if out.exists():  # left by a run killed between materialising and writing its record
        shutil.rmtree(out)
    manifest = materialise(
        out, seed=int(ctx.cfg.sandbox.seed), difficulty=float(ctx.cfg.sandbox.difficulty), progress=ctx.cfg.progress
    )
    ctx.add_artifact("sandbox", out)
    ctx.add_artifact("manifest", out / "manifest.json")
    ctx.tracker.artifact(f"sandbox-{ctx.rid}", "dataset", out / "manifest.json", reference=False)
    return {"counts": manifest.get("counts", {}), "baselines": manifest.get("baselines", {})}


def run(cfg: DictConfig) -> Record:
    """Materialise (or find) the sandbox world for ``cfg.sandbox``."""
    return execute("data", cfg, _materialise, inputs=_world())


def ensure_sandbox(cfg: DictConfig) -> tuple[Path, str]:
    """The sandbox folder and data record id for the world ``cfg`` names; builds it on first use."""
    data_cfg = OmegaConf.merge(
        OmegaConf.structured(DataConfig),
        {
            "paths": cfg.paths,
            "logger": cfg.logger,
            "sandbox": cfg.sandbox,
            "progress": cfg.get("progress", True),
            "experiment_name": cfg.get("experiment_name", "default"),
        },
    )
    record = execute("data", data_cfg, _materialise, inputs=_world())
    return Store(cfg.paths.store).resolve(record.artifacts["sandbox"]), record.id


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


def is_sandbox_ref(ref: str) -> bool:
    return str(ref).startswith("sandbox:")


def resolve_ref(ref: str, cfg: DictConfig) -> tuple[str, str | None]:
    """A data reference as a loadable path/hub id, plus the sandbox record id it came from.

    ``sandbox:<name>`` names a file of the sandbox world (built on first use); anything else
    (local path, hub id) is returned unchanged.
    """
    from rlexp.errors import ConfigError

    if not is_sandbox_ref(ref):
        return str(ref), None
    name = str(ref).split(":", 1)[1]
    if name not in SANDBOX_FILES:
        raise ConfigError(f"unknown sandbox source {ref!r}; known: {', '.join('sandbox:' + k for k in SANDBOX_FILES)}")
    folder, data_id = ensure_sandbox(cfg)
    return str(folder / SANDBOX_FILES[name]), data_id


main = hydra_entry("data", run)

if __name__ == "__main__":
    main()
