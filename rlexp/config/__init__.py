"""Typed schemas for the config nodes rlexp owns, registered in Hydra's ConfigStore.

Each primary config (``conf/<task>.yaml``) lists its schema first in its defaults, so a
misspelled key, a wrong type or a value outside a choice fails at compose time with a message
naming the key. Tasks convert their nodes to these dataclasses once (``OmegaConf.to_object``) and
pass typed objects down. ``choices`` holds the enums, ``nodes`` the shared nodes, ``tasks`` the
per-task schemas.
"""

from __future__ import annotations

from pathlib import Path

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from rlexp.config.choices import (
    Algorithm,
    Checkpoint,
    Device,
    DType,
    JudgeMode,
    JudgeName,
    JudgeVariant,
    LoggerKind,
    PlannerKind,
    ProfileMode,
    SamplingBackend,
    ScorerKind,
    TokenizerCheck,
    TokenizerSource,
    TruncationSide,
    ValueInit,
    WandbMode,
)
from rlexp.config.nodes import (
    BenchmarkConfig,
    DeepSpeedConfig,
    JudgeConfig,
    LoggerConfig,
    MixConfig,
    ModelConfig,
    PathsConfig,
    PeftConfig,
    PRBBenchmark,
    ProfileConfig,
    PromptsConfig,
    RB2Benchmark,
    RuntimeConfig,
    SamplingConfig,
    SandboxConfig,
    ScorerConfig,
    TinyConfig,
)
from rlexp.config.tasks import (
    REWARD_TRAINER_OWN,
    BonConfig,
    CorrelateConfig,
    CorrelateHeadlineConfig,
    CorrelateNDCGConfig,
    DataConfig,
    EnvConfig,
    EvaluateConfig,
    PPOPick,
    PPOSettings,
    PPOTaskConfig,
    RewardTrainerConfig,
    SampleConfig,
    StudyConfig,
    StudyGrid,
    TaskBase,
    TrainRMConfig,
)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CONF_DIR = PROJECT_ROOT / "conf"

if not OmegaConf.has_resolver("rlexp_root"):
    # The project root, so default paths never depend on the working directory.
    OmegaConf.register_new_resolver("rlexp_root", lambda: str(PROJECT_ROOT))
if not OmegaConf.has_resolver("rlexp_subdir"):
    # Sweep job folder: override_dirname (without seed and paths), then the seed on its own.
    # An empty override_dirname must not yield "/seed=1", which os.path.join treats as absolute.
    OmegaConf.register_new_resolver(
        "rlexp_subdir", lambda dirname, seed: f"{dirname}/seed={seed}" if dirname else f"seed={seed}"
    )


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

__all__ = [
    "LoggerKind",
    "WandbMode",
    "Device",
    "Checkpoint",
    "ProfileMode",
    "PlannerKind",
    "ScorerKind",
    "TruncationSide",
    "DType",
    "JudgeMode",
    "TokenizerSource",
    "TokenizerCheck",
    "SamplingBackend",
    "JudgeName",
    "JudgeVariant",
    "Algorithm",
    "ValueInit",
    "PathsConfig",
    "LoggerConfig",
    "RuntimeConfig",
    "SandboxConfig",
    "TinyConfig",
    "ModelConfig",
    "MixConfig",
    "ProfileConfig",
    "ScorerConfig",
    "RB2Benchmark",
    "PRBBenchmark",
    "BenchmarkConfig",
    "PromptsConfig",
    "SamplingConfig",
    "JudgeConfig",
    "PeftConfig",
    "DeepSpeedConfig",
    "TaskBase",
    "EnvConfig",
    "DataConfig",
    "REWARD_TRAINER_OWN",
    "RewardTrainerConfig",
    "TrainRMConfig",
    "EvaluateConfig",
    "SampleConfig",
    "BonConfig",
    "PPOSettings",
    "PPOTaskConfig",
    "CorrelateNDCGConfig",
    "CorrelateHeadlineConfig",
    "CorrelateConfig",
    "PPOPick",
    "StudyGrid",
    "StudyConfig",
    "PROJECT_ROOT",
    "CONF_DIR",
    "SCHEMAS",
    "register_all",
]
