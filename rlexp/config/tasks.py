"""The schema of each task's primary config (``conf/<task>.yaml`` lists it first in its defaults)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rlexp.config.checks import check_folder_name, check_seed, check_wandb_tag
from rlexp.config.choices import Algorithm, Launcher, LoggerKind, ProfileMode, ValueInit, coerce_choices
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
class PPOPick:
    model: str = "tiny_llama"
    data: str = "personal"
    epochs: float = 1.0


# The kinds of study step (the first part of a step's key); `sample` is a Best-of-N or PPO baseline pool.
STEP_KINDS = ("lineage", "train_rm", "evaluate", "sample", "bon", "ppo")


@dataclass
class StepResources:
    """What one SLURM job of a kind of study step asks for (``study.resources.<kind>``; the kinds are
    :data:`STEP_KINDS`). A step with more than one GPU runs its task under ``accelerate launch`` inside
    its allocation."""

    gpus: int = 0
    cpus: int = 1
    mem_gb: float = 4.0
    time_min: int = 60
    partition: str | None = None  # null: the cluster's default partition
    # Further sbatch options, name -> value without the leading dashes, e.g. {account: lab, constraint: a100}.
    sbatch: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, low in (("gpus", 0), ("cpus", 1), ("time_min", 1)):
            if int(getattr(self, name)) < low:
                raise ConfigError(f"study.resources.*.{name}={getattr(self, name)}: must be at least {low}")
        if not float(self.mem_gb) > 0:
            raise ConfigError(f"study.resources.*.mem_gb={self.mem_gb}: must be above 0")


@dataclass
class SlurmSettings:
    """How ``study.launcher=slurm`` dispatches: submitit's job folders and logs, and the step-to-job map
    that lets a rerun find steps still running, live under ``folder`` (on a filesystem every node sees)."""

    folder: str = "${paths.output_root}/slurm"
    max_in_flight: int = 64  # steps submitted and not yet finished, at most
    poll_s: float = 2.0  # seconds between looks at the queue

    def __post_init__(self) -> None:
        if int(self.max_in_flight) < 1:
            raise ConfigError(f"study.slurm.max_in_flight={self.max_in_flight}: must be at least 1")
        if not float(self.poll_s) > 0:
            raise ConfigError(f"study.slurm.poll_s={self.poll_s}: must be above 0")


@dataclass
class StudyGrid:
    lineages: list[str] = field(default_factory=lambda: ["tiny_llama", "tiny_qwen"])
    mixes: list[str] = field(default_factory=lambda: ["general", "personal", "mix", "flipped"])
    epochs: list[float] = field(default_factory=lambda: [1.0, 2.0])
    train_profile: str = "planner"
    eval_profiles: list[str] = field(default_factory=lambda: ["none", "planner"])
    # Further benchmark presets (conf/benchmark) every RM is evaluated on once, e.g. `comparison`:
    # PRB's comparison benchmarks, Chatbot Arena- and PRISM-Personalized.
    extra_benchmarks: list[str] = field(default_factory=list)
    prompt_sets: list[str] = field(default_factory=lambda: ["personalized", "general"])
    policy: str = "tiny_llama"
    ppo: list[PPOPick] = field(default_factory=list)
    ppo_upper_bound: bool = True
    # PPO's training prompt set per evaluation prompt set (``prompt_sets`` names the evaluation sets):
    # e.g. {rb2_suite: tulu3_prefs}, RewardBench 2's protocol (PPO on the Tulu 3 preference-mixture
    # prompts, evaluated on the suite). A prompt set not listed trains on its own train split and is
    # evaluated on its held-out split (LaMP-QA: train, then test).
    ppo_train_prompts: dict[str, str] = field(default_factory=dict)
    # Training seeds: every RM configuration and every PPO pick runs once per seed (the RM of a
    # PPO pick is the one trained with the same seed), so the report can show seed-to-seed spread
    # next to the prompt CIs. null = the study's own ``seed`` only. Evaluation, sampling pools and
    # Best-of-N keep the study seed: one pool serves every RM.
    seeds: list[int] | None = None
    # PPO training seeds with the RMs fixed: every PPO pick and the upper bound run once per seed,
    # each training its own policy and drawing its own evaluation samples and baseline pool, and the
    # report pools a pick's seeds per prompt (rlexp/analysis/replicates.py). One run's PPO gain is one
    # seed's draw: in the sandbox the seed moves it as much as the choice of RM (docs/sandbox.md).
    # null = one run per pick, at the study's seed. Not combined with ``seeds``.
    ppo_seeds: list[int] | None = None
    # Worker processes (each with runtime.threads torch threads); null: one per usable core, at most one
    # per 2 GiB of available memory (rlexp/job_graph.py worker_count). Results do not depend on it.
    n_jobs: int | None = None
    # local: steps run in worker processes here (n_jobs); slurm: each step is a SLURM job (submitit),
    # sized by ``resources``; the parent plans, dispatches and correlates (rlexp/slurm_dispatch.py).
    launcher: Launcher = Launcher.local
    resources: dict[str, StepResources] = field(default_factory=lambda: {k: StepResources() for k in STEP_KINDS})
    slurm: SlurmSettings = field(default_factory=SlurmSettings)
    # Print every step the grid would run, how many of each kind and what each asks of a cluster
    # (``resources``), then stop: the bill before any GPU work. Nothing is built or probed.
    dry_run: bool = False
    # Decide steps whose record exists in the parent, from the ledger of steps run before with the
    # same code and configs (rlexp/step_ledger.py); false dispatches every step (as before).
    step_ledger: bool = True
    # task -> extra hydra overrides; the key ``model`` applies to every task that builds or loads
    # a lineage (train_rm, sample, bon, ppo), so e.g. a lighter tiny lineage stays one lineage.
    overrides: dict[str, list[str]] = field(default_factory=dict)
    # lineage -> extra hydra overrides for the steps that build or load that lineage only (its RMs; the
    # policy's pools, Best-of-N and PPO when it is the policy), after ``overrides.model``: e.g. one
    # lineage lighter than the other, as the test world's tiny_qwen.
    lineage_overrides: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        coerce_choices(self, "study")
        for key in ("seeds", "ppo_seeds"):
            for seed in getattr(self, key) or []:
                check_seed(seed, f"study.{key}")


@dataclass
class StudyConfig(TaskBase):
    task_name: str = "study"
    study: StudyGrid = field(default_factory=StudyGrid)  # typed here; other tasks ignore it
    k: int | None = None
