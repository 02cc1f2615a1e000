"""Typed schemas for the config nodes rlexp owns, registered in Hydra's ConfigStore.

Each primary config (``conf/<task>.yaml``) lists its schema first in its defaults, so a
misspelled key or a wrong type fails at compose time with a message naming the key. TRL's own
settings (``trainer:``) stay untyped YAML passed to ``instantiate`` (OmegaConf cannot type them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

PROJECT_ROOT = Path(__file__).resolve().parent.parent
CONF_DIR = Path(__file__).resolve().parent.parent / "conf"

if not OmegaConf.has_resolver("rlexp_root"):
    # The project root, so default paths never depend on the working directory.
    OmegaConf.register_new_resolver("rlexp_root", lambda: str(PROJECT_ROOT))
if not OmegaConf.has_resolver("rlexp_subdir"):
    # Sweep job folder: override_dirname (without seed and paths), then the seed on its own.
    # An empty override_dirname must not yield "/seed=1", which os.path.join treats as absolute.
    OmegaConf.register_new_resolver(
        "rlexp_subdir", lambda dirname, seed: f"{dirname}/seed={seed}" if dirname else f"seed={seed}"
    )


@dataclass
class PathsConfig:
    root: str = "${oc.env:RLEXP_ROOT,${rlexp_root:}}"
    store: str = "${.root}/runs"
    cache: str = "${.root}/.cache"
    output_root: str = "${.root}/outputs"


@dataclass
class LoggerConfig:
    kind: str = "none"  # wandb | none
    mode: str = "offline"  # offline | online | disabled
    project: str = "rlexp"
    entity: Optional[str] = None
    group: Optional[str] = None


@dataclass
class RuntimeConfig:
    threads: int = 0  # torch threads per job; 0 = leave torch's default
    device: str = "auto"  # auto | cpu | cuda


@dataclass
class TaskBase:
    """Keys every task has. ``paths``, ``logger``, ``runtime`` never change a result."""

    task_name: str = "???"
    experiment_name: str = "default"
    tags: list[str] = field(default_factory=list)
    seed: int = 0
    force: bool = False
    progress: bool = True
    paths: PathsConfig = field(default_factory=PathsConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    runtime: RuntimeConfig = field(default_factory=RuntimeConfig)
    study: Any = None


@dataclass
class EnvConfig(TaskBase):
    task_name: str = "env"
    note: str = ""


@dataclass
class SandboxConfig:
    seed: int = 0
    difficulty: float = 0.5


@dataclass
class DataConfig(TaskBase):
    task_name: str = "data"
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)


SCHEMAS: dict[str, type] = {
    "env": EnvConfig,
    "data": DataConfig,
}


def register(name: str, node: type) -> None:
    """Register a task's schema as ``<name>_schema`` (listed first in the task's defaults)."""
    SCHEMAS[name] = node
    ConfigStore.instance().store(name=f"{name}_schema", node=node)


def register_all() -> None:
    cs = ConfigStore.instance()
    for name, node in SCHEMAS.items():
        cs.store(name=f"{name}_schema", node=node)
    cs.store(group="paths", name="paths_schema", node=PathsConfig)
    cs.store(group="logger", name="logger_schema", node=LoggerConfig)


register_all()
