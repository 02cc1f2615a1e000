"""The schema of each task's primary config (``conf/<task>.yaml`` lists it first in its defaults)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rlexp.config.checks import check_folder_name, check_seed, check_wandb_tag
from rlexp.config.choices import Algorithm, LoggerKind, ProfileMode, ValueInit
from rlexp.config.nodes import (
    BenchmarkConfig,
    DeepSpeedConfig,
    JudgeConfig,
    LoggerConfig,
    MixConfig,
    ModelConfig,
    PathsConfig,
    PeftConfig,
    ProfileConfig,
    PromptsConfig,
    RuntimeConfig,
    SamplingConfig,
    SandboxConfig,
    ScorerConfig,
)
from rlexp.config.study import StudyGrid
from rlexp.errors import ConfigError


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
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)

    def __post_init__(self) -> None:
        check_seed(self.seed, "seed")
        # It names Hydra's job folder (outputs/<task>/runs/<experiment_name>/) and is a W&B tag.
        check_folder_name(self.experiment_name, "experiment_name")
        if self.logger.kind == LoggerKind.wandb:
            for i, tag in enumerate([*self.tags, self.experiment_name]):
                check_wandb_tag(tag, "experiment_name" if i == len(self.tags) else f"tags[{i}]")


def check_tiny_context(cfg: SampleConfig, value: int, key: str) -> None:
    """A generation length that cannot fit a tiny lineage's context fails here, from the spec in the
    config, before the sandbox and the lineage are built (minutes); a hub model's context is checked
    from its config.json before its weights load (``rlexp.models.loading.check_generation_length``)."""
    model = cfg.model
    if cfg.policy is not None or model.name_or_path or model.tiny is None:
        return
    context = int(model.tiny.max_position)
    if value >= context:
        raise ConfigError(f"{key}={value} does not fit the context of {model.name} ({context} positions, "
                          "prompt included; model.tiny.max_position)")


@dataclass
class EnvConfig(TaskBase):
    task_name: str = "env"
    note: str = ""


@dataclass
class DataConfig(TaskBase):
    task_name: str = "data"


@dataclass
class RewardTrainerConfig:
    """TRL's ``RewardConfig`` fields under TRL's own names, handed to it as they are, then the three
    settings rlexp handles itself (:data:`REWARD_TRAINER_OWN`). ``extra`` passes any other
    ``RewardConfig``/``TrainingArguments`` field."""

    num_train_epochs: float = 1.0
    learning_rate: float = 1e-3
    per_device_train_batch_size: int = 16
    gradient_accumulation_steps: int = 1
    max_length: int = 512
    lr_scheduler_type: str = "linear"
    warmup_steps: float = 0.05  # transformers 5: below 1 it is a ratio of the total steps
    weight_decay: float = 0.0
    save_steps: int = 50
    logging_steps: int = 10
    gradient_checkpointing: bool = False
    bf16: str = "auto"  # rlexp resolves auto (bf16 on GPU only) | true | false to TRL's bool
    # rlexp's length grouping (random windows of 4 batches); not transformers' group_by_length,
    # which trainer.extra.group_by_length would switch on as well.
    length_grouping: bool = True
    extra: dict[str, Any] = field(default_factory=dict)


#: RewardTrainerConfig fields rlexp resolves itself instead of handing them to TRL.
REWARD_TRAINER_OWN: tuple[str, ...] = ("bf16", "length_grouping", "extra")


@dataclass
class TrainRMConfig(TaskBase):
    task_name: str = "train_rm"
    model: ModelConfig = field(default_factory=ModelConfig)
    data: MixConfig = field(default_factory=MixConfig)
    trainer: RewardTrainerConfig = field(default_factory=RewardTrainerConfig)
    peft: PeftConfig = field(default_factory=PeftConfig)
    deepspeed: DeepSpeedConfig = field(default_factory=DeepSpeedConfig)
    profile: ProfileConfig = field(default_factory=ProfileConfig)
    heldout_fraction: float = 0.1
    max_dropped_share: float = 0.05


@dataclass
class EvaluateConfig(TaskBase):
    task_name: str = "evaluate"
    rm: str = "???"
    # The lineage of an RM given as a folder or hub id (null: its config.json's model_type); a record's wins.
    rm_lineage: str | None = None
    benchmark: BenchmarkConfig = field(default_factory=BenchmarkConfig)
    scorer: ScorerConfig = field(default_factory=ScorerConfig)
    profile: ProfileConfig = field(default_factory=ProfileConfig)


@dataclass
class SampleConfig(TaskBase):
    task_name: str = "sample"
    model: ModelConfig = field(default_factory=ModelConfig)
    policy: str | None = None  # a ppo record id / folder / hub id instead of the lineage's checkpoint
    prompts: PromptsConfig = field(default_factory=PromptsConfig)
    sampling: SamplingConfig = field(default_factory=SamplingConfig)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_tiny_context(self, int(self.sampling.max_new_tokens), "sampling.max_new_tokens")


@dataclass
class BonConfig(SampleConfig):
    task_name: str = "bon"
    rm: str = "???"
    # The lineage of an RM given as a folder or hub id (null: its config.json's model_type); a record's wins.
    rm_lineage: str | None = None
    scorer: ScorerConfig = field(default_factory=ScorerConfig)
    profile: ProfileConfig = field(default_factory=ProfileConfig)
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    ks: list[int] | None = None
    n_boot: int = 1000


@dataclass
class PPOSettings:
    """TRL PPO settings rlexp owns (CPU-safe defaults); ``extra`` passes anything else to TRL's PPOConfig."""

    learning_rate: float = 5e-5
    total_episodes: int = 256
    per_device_train_batch_size: int = 8
    gradient_accumulation_steps: int = 1
    num_mini_batches: int = 1
    num_ppo_epochs: int = 4
    response_length: int = 64  # conf/trainer/ppo.yaml ties it to sampling.max_new_tokens
    temperature: float = 1.0  # ... and this to sampling.temperature
    kl_coef: float = 0.0
    cliprange: float = 0.2
    vf_coef: float = 0.1
    cliprange_value: float = 0.2
    lam: float = 1.0
    gamma: float = 1.0
    missing_eos_penalty: float | None = None
    local_rollout_forward_batch_size: int = 8
    save_steps: int = 0  # 0: no intermediate checkpoints
    logging_steps: int = 1
    bf16: str = "auto"
    # The policy's and the reference's logits at the response positions only (rlexp/downstream/ppo.py,
    # logits_at_responses): the same logits, less compute and memory with long prompts; the gradients
    # differ by float noise (the output layer's weight gradient sums fewer rows), so other weights.
    response_logits_only: bool = False
    # The critic's (value model's) own learning rate (verl's critic.optim.lr; PRB: 5e-6 against the actor's
    # 5e-7). null: one learning rate for both, TRL's default. Set, TRL's one optimizer gets two parameter
    # groups (policy at learning_rate, value model at this), under the same schedule (rlexp.tasks.ppo).
    critic_learning_rate: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class PPOTaskConfig(SampleConfig):
    task_name: str = "ppo"
    rm: str = "???"  # train_rm record id | folder | hub id | judge:rubric | judge:verifier
    # The lineage of an RM given as a folder or hub id (null: its config.json's model_type); a record's wins.
    rm_lineage: str | None = None
    algorithm: Algorithm = Algorithm.ppo
    value_init: ValueInit = ValueInit.auto
    reward_scale: float = 1.0
    # Samples per prompt in the initial policy's pool, the baseline of every gain (null: sampling.n).
    # Set to BoN's n, the baseline is BoN's pool: its sampling noise falls at no cost.
    baseline_samples: int | None = None
    # The evaluation prompt set, apart from the training one (prompts, at prompts.train_split): a name of
    # conf/prompts/ (e.g. rb2_suite), or a prompts node (a mapping; `preset: <name>` in it is merged under
    # the rest). null: prompts at prompts.split, the held-out split of the training set. Disjoint from the
    # training prompts (checked). The baseline is the initial policy's pool of this set (BoN's where shared).
    eval_prompts: Any = None
    # Every eval_every PPO updates (and at the end) the policy is sampled and gold-judged on the evaluation
    # set: the record's metrics.checkpoints curve (gold and gain with CIs per step). 0: at the end only.
    eval_every: int = 0
    # Which gain metrics.headline_gain is: `final` (the trained policy's) or `best_checkpoint` (the best
    # gold over the evaluated checkpoints: RewardBench 2's choice, optimistic, as it selects on the eval set).
    headline_gain: str = "final"
    trainer: PPOSettings = field(default_factory=PPOSettings)
    peft: PeftConfig = field(default_factory=PeftConfig)
    deepspeed: DeepSpeedConfig = field(default_factory=DeepSpeedConfig)
    scorer: ScorerConfig = field(default_factory=ScorerConfig)
    profile: ProfileConfig = field(default_factory=ProfileConfig)
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    n_boot: int = 1000

    def __post_init__(self) -> None:
        super().__post_init__()
        check_tiny_context(self, int(self.trainer.response_length), "trainer.response_length")
        if isinstance(self.eval_every, bool) or not isinstance(self.eval_every, int) or self.eval_every < 0:
            raise ConfigError(f"eval_every={self.eval_every!r} must be a non-negative integer (0: at the end only)")
        if self.headline_gain not in ("final", "best_checkpoint"):
            raise ConfigError(f"headline_gain={self.headline_gain!r} is not one of final, best_checkpoint")
        if self.headline_gain == "best_checkpoint" and self.eval_every == 0:
            raise ConfigError("headline_gain=best_checkpoint needs checkpoints to pick from: set eval_every > 0")
        lr = self.trainer.critic_learning_rate
        if lr is not None and not lr > 0:
            raise ConfigError(f"trainer.critic_learning_rate={lr} must be > 0 (or null: the policy's learning_rate)")


@dataclass
class CorrelateNDCGConfig:
    """NDCG variants reported by `correlate`: every relevance x gain, at ``cutoff`` (null = all RMs)."""

    relevance: list[str] = field(default_factory=lambda: ["rank", "minmax", "raw"])
    gain: list[str] = field(default_factory=lambda: ["linear"])
    cutoff: int | None = None
    # First, before the relevance x gain grid: ndcg[prb,exp2], rlexp's reconstruction of Personalized
    # RewardBench's NDCG (it reproduces the paper's four values); the benchmark comparison table reads it.
    prb: bool = True


@dataclass
class CorrelateHeadlineConfig:
    """What page one of the report leads with, declared before the numbers are seen."""

    # PRB profile mode of the headline PRB column; null = the mode the downstream RMs scored with.
    prb_mode: ProfileMode | None = None
    # Data mixes whose RMs are controls (e.g. flipped labels): headline correlations are also
    # reported without them.
    controls: list[str] = field(default_factory=lambda: ["flipped"])


@dataclass
class CorrelateConfig(TaskBase):
    """`correlate`: which records to read (records | rms | select_experiment) and how to correlate them."""

    task_name: str = "correlate"
    records: list[str] | None = None  # explicit record ids (any task)
    rms: list[str] | None = None  # every evaluate/bon/ppo record of these RMs
    select_experiment: str | None = None  # null: experiment_name (when neither records nor rms)
    # An external results CSV (rlexp/analysis/external.py): beside the selected records, or alone when
    # none of records, rms and select_experiment is given.
    external: str | None = None
    k: int | None = None  # BoN k of the gain columns; null = the largest available
    profile_modes: list[ProfileMode] | None = None  # PRB profile modes to tabulate; null = all found
    n_boot: int = 1000
    boot_subsets: bool = False  # bootstrap CIs for RB2 subset / PRB domain columns too (slow)
    ndcg: CorrelateNDCGConfig = field(default_factory=CorrelateNDCGConfig)
    headline: CorrelateHeadlineConfig = field(default_factory=CorrelateHeadlineConfig)
    alpha: float = 0.05


@dataclass
class StudyConfig(TaskBase):
    task_name: str = "study"
    study: StudyGrid = field(default_factory=StudyGrid)  # typed here; other tasks ignore it
    k: int | None = None
