"""Typed schemas for the config nodes rlexp owns, registered in Hydra's ConfigStore.

Each primary config (``conf/<task>.yaml``) lists its schema first in its defaults, so a
misspelled key, a wrong type or a value outside a choice fails at compose time with a message
naming the key. Tasks convert their nodes to these dataclasses once (``OmegaConf.to_object``) and
pass typed objects down. ``choices`` holds the enums, ``nodes`` the shared nodes, ``tasks`` the
per-task schemas, ``study`` the study grid; import a schema from its module (``from rlexp.config.nodes import ScorerConfig``).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from rlexp.config.nodes import LoggerConfig, PathsConfig
from rlexp.config.tasks import (
    BonConfig,
    CorrelateConfig,
    DataConfig,
    EnvConfig,
    EvaluateConfig,
    PPOTaskConfig,
    SampleConfig,
    StudyConfig,
    TrainRMConfig,
)
from rlexp.errors import ConfigError

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CONF_DIR = PROJECT_ROOT / "conf"


def data_root() -> str:
    """Where records, caches and Hydra outputs go: ``$RLEXP_ROOT`` (a leading ``~`` expanded), or this
    checkout when it is unset. Set but empty is an error: it would put the store at the filesystem
    root (``/runs``, ``/outputs``)."""
    value = os.environ.get("RLEXP_ROOT")
    if value is None:
        return str(PROJECT_ROOT)
    return checked_path(value, "RLEXP_ROOT")


def checked_path(value: object, name: str) -> str:
    """A root or store path as every part of rlexp uses it: ``~`` expanded once, for the store and for
    Hydra's job folders alike; an empty one (``paths.store=``) is a one-line ConfigError naming
    ``name``, since it would mean the working directory or the filesystem root, and so is a loop of
    symbolic links."""
    text = "" if value is None else str(value)
    if not text.strip():
        hint = ", or unset it for this checkout" if name == "RLEXP_ROOT" else ""
        raise ConfigError(f"{name} is set but empty: name a folder{hint}")
    path = os.path.expanduser(text)
    try:
        os.stat(path)  # microseconds; a path that does not exist yet is fine (it is created)
    except OSError as exc:
        # A symbolic link that points (through others) at itself: every later mkdir fails with ELOOP.
        if exc.errno == errno.ELOOP:
            raise ConfigError(f"{name}: {path} is a loop of symbolic links; point it at a folder") from None
    return path


def check_config(cfg: DictConfig) -> None:
    """Run every check the typed nodes declare (their ``__post_init__``) on a composed task config, or
    raise a one-line ConfigError: a value set by a key that is ``???`` is required first. Called for
    every sweep value before the first job (``rlexp.cli``) and by each task entry before its run."""
    missing = sorted(OmegaConf.missing_keys(cfg))
    if missing:
        raise ConfigError(f"{missing[0]} is required: pass {missing[0]}=<value>")
    OmegaConf.to_object(cfg)  # builds the dataclasses: each node's __post_init__ checks its values


if not OmegaConf.has_resolver("rlexp_root"):
    # The project root, so default paths never depend on the working directory.
    OmegaConf.register_new_resolver("rlexp_root", lambda: str(PROJECT_ROOT))
if not OmegaConf.has_resolver("rlexp_data_root"):
    # paths.root: RLEXP_ROOT or the project root (see data_root).
    OmegaConf.register_new_resolver("rlexp_data_root", data_root)
if not OmegaConf.has_resolver("rlexp_path"):
    # ${rlexp_path:<value>,<name>}: a path under paths.* checked and expanded (see checked_path).
    OmegaConf.register_new_resolver("rlexp_path", checked_path)
if not OmegaConf.has_resolver("rlexp_subdir"):
    # Sweep job folder: override_dirname (without seed, paths and any override holding a secret),
    # then the seed on its own (see rlexp.redaction.sweep_subdir).
    from rlexp.redaction import sweep_subdir

    OmegaConf.register_new_resolver("rlexp_subdir", sweep_subdir)


SCHEMAS: dict[str, type] = {
    "env": EnvConfig,
    "data": DataConfig,
    "train_rm": TrainRMConfig,
    "evaluate": EvaluateConfig,
    "sample": SampleConfig,
    "bon": BonConfig,
    "ppo": PPOTaskConfig,
    "correlate": CorrelateConfig,
    "study": StudyConfig,
}


def register_all() -> None:
    """Store every task schema as ``<task>_schema`` and the paths/logger node schemas."""
    cs = ConfigStore.instance()
    for name, node in SCHEMAS.items():
        cs.store(name=f"{name}_schema", node=node)
    cs.store(group="paths", name="paths_schema", node=PathsConfig)
    cs.store(group="logger", name="logger_schema", node=LoggerConfig)


register_all()
