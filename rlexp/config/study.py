"""The study's grid (``study.*``): what it trains, evaluates and runs downstream, and on what launcher."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rlexp.config.checks import check_seed
from rlexp.config.choices import Launcher, coerce_choices
from rlexp.errors import ConfigError


@dataclass
class PPOPick:
    """A PPO run of the study: the RM the grid trains from ``model`` x ``data`` x ``epochs``, or (``rm``) one
    of ``study.rms`` by its name."""

    model: str = "tiny_llama"
    data: str = "personal"
    epochs: float = 1.0
    rm: str | None = None


@dataclass
class PublishedRM:
    """One of ``study.rms``: a reward model the study does not train (a hub id or a folder)."""

    rm: str = "???"
    # The RM's lineage for same- vs other-lineage PPO and the report; null: its config.json's model_type.
    lineage: str | None = None
    name: str | None = None  # its name in the study's steps; null: the folder's (hub id's) last part


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
    # Published or local reward models evaluated on every benchmark and used for Best-of-N (and PPO where a
    # pick names them: {rm: <name>}) exactly like the trained ones: hub ids or folders, or
    # {rm: ..., lineage: ..., name: ...}. With rms, ``lineages: []`` is a grid of published RMs only.
    rms: list[Any] = field(default_factory=list)
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
