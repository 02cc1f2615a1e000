"""Typed schemas for the config nodes rlexp owns, registered in Hydra's ConfigStore.

Each primary config (``conf/<task>.yaml``) lists its schema first in its defaults, so a
misspelled key or a wrong type fails at compose time with a message naming the key. TRL's own
settings (``trainer:``) stay untyped YAML passed to ``instantiate`` (OmegaConf cannot type them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from rlexp.errors import ConfigError

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


# Choice fields are enums, so Hydra rejects a bad value at compose time, naming the key and the
# allowed values. Members are named by their values (StrEnum): records, hashes and comparisons
# with plain strings see the same text as before.


class LoggerKind(StrEnum):
    wandb = "wandb"
    none = "none"


class WandbMode(StrEnum):
    offline = "offline"
    online = "online"
    disabled = "disabled"


class Device(StrEnum):
    auto = "auto"
    cpu = "cpu"
    cuda = "cuda"


class Checkpoint(StrEnum):
    base = "base"
    instruct = "instruct"


class ProfileMode(StrEnum):
    none = "none"
    raw = "raw"
    planner = "planner"


class PlannerKind(StrEnum):
    sandbox = "sandbox"
    lm = "lm"


class ScorerKind(StrEnum):
    seq_cls = "seq_cls"
    generative = "generative"


class TruncationSide(StrEnum):
    left = "left"
    right = "right"


class DType(StrEnum):
    auto = "auto"
    float32 = "float32"
    bfloat16 = "bfloat16"
    float16 = "float16"


class JudgeMode(StrEnum):
    ratings = "ratings"
    rankings = "rankings"


class TokenizerSource(StrEnum):
    auto = "auto"  # transformers' AutoTokenizer
    file = "file"  # the folder's tokenizer.json exactly as written


class TokenizerCheck(StrEnum):
    warn = "warn"
    error = "error"
    off = "off"


class SamplingBackend(StrEnum):
    hf = "hf"
    vllm = "vllm"


class JudgeName(StrEnum):
    auto = "auto"
    rubric = "rubric"
    verifier = "verifier"
    rm = "rm"
    llm = "llm"


class JudgeVariant(StrEnum):
    lampqa = "lampqa"  # per aspect, /2
    prb = "prb"  # one list judgement, 0-2


class Algorithm(StrEnum):
    ppo = "ppo"
    grpo = "grpo"
    rloo = "rloo"


class ValueInit(StrEnum):
    auto = "auto"  # the RM if same lineage, else the policy
    rm = "rm"
    policy = "policy"


@dataclass
class PathsConfig:
    root: str = "${oc.env:RLEXP_ROOT,${rlexp_root:}}"
    store: str = "${.root}/runs"
    cache: str = "${.root}/.cache"
    output_root: str = "${.root}/outputs"


@dataclass
class LoggerConfig:
    kind: LoggerKind = LoggerKind.none
    mode: WandbMode = WandbMode.offline
    project: str = "rlexp"
    entity: str | None = None
    group: str | None = None


@dataclass
class RuntimeConfig:
    threads: int = 0  # torch threads per job; 0 = leave torch's default
    device: Device = Device.auto


@dataclass
class SandboxConfig:
    """Which sandbox world a task reads (the `data` task materialises it)."""

    seed: int = 0
    difficulty: float = 0.5


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


@dataclass
class EnvConfig(TaskBase):
    task_name: str = "env"
    note: str = ""


@dataclass
class DataConfig(TaskBase):
    task_name: str = "data"


@dataclass
class TinyConfig:
    """A tiny lineage built locally (see rlexp.models.tiny.TinySpec)."""

    arch: str = "llama"
    chat_format: str = "llama"
    vocab_size: int = 2048
    hidden_size: int = 128
    num_layers: int = 2
    num_heads: int = 4
    intermediate_size: int = 352
    max_position: int = 1024
    corpus: str = "a"
    pretrain_epochs: float = 1.0
    sft_epochs: float = 2.0
    lr: float = 2e-3
    batch_size: int = 32
    max_length: int = 256
    seed: int = 0


@dataclass
class ModelConfig:
    """A lineage and a checkpoint of it: a tiny one (``tiny``) or a hub id / folder (``name_or_path``)."""

    name: str = "tiny_llama"
    lineage: str = "tiny_llama"
    checkpoint: Checkpoint = Checkpoint.instruct
    name_or_path: str | None = None
    trust_remote_code: bool = False
    tiny: TinyConfig | None = None


@dataclass
class MixConfig:
    """A preference-data mix: source name -> sandbox source / local file / hub id, with weights."""

    name: str = "general"
    # Empty by default: Hydra merges a data group's ``sources`` into this dict, so any default
    # entry here would silently join every mix.
    sources: dict[str, str] = field(default_factory=dict)
    weights: dict[str, float] | None = None
    max_rows: int | None = None


@dataclass
class ProfileConfig:
    """How a user profile reaches a scorer: none | raw | planner (same code everywhere)."""

    mode: ProfileMode = ProfileMode.none
    k: int = 10
    separator: str = "\n\n"
    planner: PlannerKind = PlannerKind.sandbox


@dataclass
class RewardTrainerConfig:
    """rlexp-owned settings of TRL's RewardTrainer; ``extra`` passes anything else to RewardConfig."""

    epochs: float = 1.0
    learning_rate: float = 1e-3
    batch_size: int = 16
    grad_accum: int = 1
    max_length: int = 512
    lr_scheduler: str = "linear"
    warmup_ratio: float = 0.05
    weight_decay: float = 0.0
    save_steps: int = 50
    logging_steps: int = 10
    bf16: str = "auto"  # auto (bf16 on GPU only) | true | false
    gradient_checkpointing: bool = False
    group_by_length: bool = True
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class PeftConfig:
    enabled: bool = False
    r: int = 8
    alpha: int = 16
    dropout: float = 0.0
    target_modules: list[str] | None = None


@dataclass
class DeepSpeedConfig:
    name: str = "none"
    config: dict[str, Any] | None = None


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
class ScorerConfig:
    """How a reward model reads its inputs; all of it is recorded with the scores."""

    kind: ScorerKind = ScorerKind.seq_cls
    max_length: int = 2048
    truncation_side: TruncationSide = TruncationSide.right
    batch_size: int = 32
    dtype: DType = DType.auto  # auto: float32 on CPU, bfloat16 on GPU
    device: Device = Device.auto
    sort_by_length: bool = True
    fallback_template: str = "tulu"
    trust_remote_code: bool = False
    judge_mode: JudgeMode = JudgeMode.ratings  # generative judges on RB2
    max_new_tokens: int = 512  # generative judges
    tokenizer: TokenizerSource = TokenizerSource.auto
    # When the loaded tokenizer's ids differ from tokenizer.json.
    tokenizer_check: TokenizerCheck = TokenizerCheck.warn


@dataclass
class RB2Benchmark:
    source: str = "sandbox:rb2"
    subsets: list[str] | None = None
    limit: int | None = None
    ties_version: str = "0.1.4"


@dataclass
class PRBBenchmark:
    source: str = "sandbox:prb"
    domains: list[str] | None = None
    limit: int | None = None


@dataclass
class BenchmarkConfig:
    name: str = "both"
    rb2: RB2Benchmark | None = None
    prb: PRBBenchmark | None = None


@dataclass
class EvaluateConfig(TaskBase):
    task_name: str = "evaluate"
    rm: str = "???"
    benchmark: BenchmarkConfig = field(default_factory=BenchmarkConfig)
    scorer: ScorerConfig = field(default_factory=ScorerConfig)
    profile: ProfileConfig = field(default_factory=ProfileConfig)


@dataclass
class PromptsConfig:
    """A downstream prompt set: ``eval`` for measuring, ``train`` for PPO (disjoint)."""

    name: str = "personalized"
    source: str = "sandbox:prompts/personalized"
    split: str = "eval"
    train_split: str = "train"
    limit: int | None = None


@dataclass
class SamplingConfig:
    n: int = 16
    temperature: float = 1.0
    top_p: float = 0.9
    max_new_tokens: int = 64
    batch_prompts: int = 8
    chunk_prompts: int = 32
    profile_k: int = 3
    backend: SamplingBackend = SamplingBackend.hf  # vllm: GPU only

    def __post_init__(self) -> None:
        # Runs when a task converts its node (OmegaConf.to_object), before any model loads.
        if self.n < 1:
            raise ConfigError(f"sampling.n={self.n} must be >= 1")
        if self.max_new_tokens < 1:
            raise ConfigError(f"sampling.max_new_tokens={self.max_new_tokens} must be >= 1")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"sampling.top_p={self.top_p} must be in (0, 1]")
        if self.temperature < 0:
            raise ConfigError(f"sampling.temperature={self.temperature} must be >= 0")


@dataclass
class SampleConfig(TaskBase):
    task_name: str = "sample"
    model: ModelConfig = field(default_factory=ModelConfig)
    policy: str | None = None  # a ppo record id / folder / hub id instead of the lineage's checkpoint
    prompts: PromptsConfig = field(default_factory=PromptsConfig)
    sampling: SamplingConfig = field(default_factory=SamplingConfig)


@dataclass
class JudgeConfig:
    """The gold judge: auto (rubric for personalized, verifier for general), rubric, verifier, rm, llm."""

    name: JudgeName = JudgeName.auto
    rm: str | None = None  # for name=rm: an RM used as gold
    model: str | None = None  # for name=llm: a causal LM folder / hub id / lineage name
    variant: JudgeVariant = JudgeVariant.lampqa  # for name=llm


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
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class PPOTaskConfig(SampleConfig):
    task_name: str = "ppo"
    rm: str = "???"  # train_rm record id | folder | hub id | judge:rubric | judge:verifier
    algorithm: Algorithm = Algorithm.ppo
    value_init: ValueInit = ValueInit.auto
    reward_scale: float = 1.0
    trainer: PPOSettings = field(default_factory=PPOSettings)
    peft: PeftConfig = field(default_factory=PeftConfig)
    deepspeed: DeepSpeedConfig = field(default_factory=DeepSpeedConfig)
    scorer: ScorerConfig = field(default_factory=ScorerConfig)
    profile: ProfileConfig = field(default_factory=ProfileConfig)
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    n_boot: int = 1000


@dataclass
class CorrelateNDCGConfig:
    """NDCG variants reported by `correlate`: every relevance x gain, at ``cutoff`` (null = all RMs)."""

    relevance: list[str] = field(default_factory=lambda: ["rank", "minmax", "raw"])
    gain: list[str] = field(default_factory=lambda: ["linear"])
    cutoff: int | None = None


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


@dataclass
class StudyGrid:
    lineages: list[str] = field(default_factory=lambda: ["tiny_llama", "tiny_qwen"])
    mixes: list[str] = field(default_factory=lambda: ["general", "personal", "mix", "flipped"])
    epochs: list[float] = field(default_factory=lambda: [1.0, 2.0])
    train_profile: str = "planner"
    eval_profiles: list[str] = field(default_factory=lambda: ["none", "planner"])
    prompt_sets: list[str] = field(default_factory=lambda: ["personalized", "general"])
    policy: str = "tiny_llama"
    ppo: list[PPOPick] = field(default_factory=list)
    ppo_upper_bound: bool = True
    # Training seeds: every RM configuration and every PPO pick runs once per seed (the RM of a
    # PPO pick is the one trained with the same seed), so the report can show seed-to-seed spread
    # next to the prompt CIs. null = the study's own ``seed`` only. Evaluation, sampling pools and
    # Best-of-N keep the study seed: one pool serves every RM.
    seeds: list[int] | None = None
    n_jobs: int = 2
    # task -> extra hydra overrides; the key ``model`` applies to every task that builds or loads
    # a lineage (train_rm, sample, bon, ppo), so e.g. a lighter tiny lineage stays one lineage.
    overrides: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class StudyConfig(TaskBase):
    task_name: str = "study"
    study: StudyGrid = field(default_factory=StudyGrid)  # typed here; other tasks ignore it
    k: int | None = None


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
    cs = ConfigStore.instance()
    for name, node in SCHEMAS.items():
        cs.store(name=f"{name}_schema", node=node)
    cs.store(group="paths", name="paths_schema", node=PathsConfig)
    cs.store(group="logger", name="logger_schema", node=LoggerConfig)


register_all()
