"""The study's plan: the overrides every step shares, one step, and how a step runs.

:class:`StudyPlan` reads and checks ``study.*`` (before the first step: a bad override, judge or
launcher fails as one line), and makes each step's override list; :func:`run_step` runs one step in a
worker, in-process or as a SLURM job. The grid's jobs and the command itself are `rlexp/tasks/study.py`.
"""

from __future__ import annotations

import importlib
import logging
import os
import traceback
from dataclasses import dataclass
from functools import partial
from typing import Any

from omegaconf import DictConfig, OmegaConf

from rlexp import inputs
from rlexp.config import CONF_DIR
from rlexp.config.study import STEP_KINDS, PublishedRM, StudyGrid
from rlexp.errors import ConfigError, RlexpError
from rlexp.job_graph import Dispatcher, Job, KindClock, Result, run_jobs, worker_count
from rlexp.runtime import compose_task, one_line, quote
from rlexp.scoring.factory import check_gold_judge, judge_cache_dir, probe_served_judges
from rlexp.step_ledger import StepLedger
from rlexp.store import Store

log = logging.getLogger("rlexp")

MODEL_TASKS = ("train_rm", "sample", "bon", "ppo")  # the tasks whose config holds a lineage (model=...)


@dataclass
class Step:
    """One job: ``task`` run with the config composed from ``overrides``.

    ``compose`` names the task whose config is composed when it differs: a lineage step reads the
    model settings of a ``train_rm`` config, a pool step samples the pool of a ``bon`` or ``ppo``
    config. Composition happens in the worker: it costs about 0.3 s of Hydra work per step, which in
    the main process would leave both workers idle.
    """

    task: str
    key: str
    overrides: list[str]
    compose: str | None = None

    def config(self) -> DictConfig:
        return compose_task(self.compose or self.task, self.overrides)


def read_first(task: str | None, cfg: DictConfig) -> DictConfig:
    """The config of the pool a ``bon`` or ``ppo`` config reads first: BoN's pool, or PPO's baseline,
    the initial policy on PPO's evaluation prompt set (``eval_prompts``, when it names another set)."""
    if task == "ppo":
        from rlexp.tasks.ppo_evaluation import eval_config

        cfg = eval_config(cfg)
    return inputs.first_pool_config(cfg)


def run_step(step: Step, threads: int) -> Result:
    """(record id, error) of one step. Runs in a worker process or in-process."""
    if threads > 0:
        os.environ["OMP_NUM_THREADS"] = str(threads)
        import torch  # only now: OMP_NUM_THREADS must be set before torch starts its pool

        torch.set_num_threads(threads)
    try:
        cfg = step.config()
        if step.task == "lineage":
            return inputs.lineage(cfg).record_id, None
        if step.task == "pool":  # the pool a bon/ppo config reads first (PPO: its baseline)
            return inputs.pool(read_first(step.compose, cfg))[0].id, None
        # Tasks are imported by name: the study runs whichever task a step names.
        module = importlib.import_module(f"rlexp.tasks.{step.task}")
        record = module.run(cfg)
        return record.id, None
    except RlexpError as exc:
        return None, one_line(exc)
    except Exception as exc:  # a failed step must not stop the study
        tb = traceback.format_exc(limit=3).strip().splitlines()
        return None, f"{type(exc).__name__}: {one_line(exc)} ({tb[-2].strip() if len(tb) > 1 else ''})"


def study_seeds(grid: DictConfig | StudyGrid, default: int, field: str = "seeds") -> list[int]:
    """The training seeds of the grid: ``study.<field>`` (distinct, in order) or ``[default]``."""
    values = getattr(grid, field)
    if values is None:
        return [default]
    seeds = [int(s) for s in values]
    if not seeds:
        raise ConfigError(f"study.{field} is empty: give at least one seed, or null for the study's seed")
    if len(set(seeds)) != len(seeds):
        raise ConfigError(f"study.{field} repeats a seed: {seeds}")
    return seeds


Results = dict[str, Result]  # step key -> (record id, error)


@dataclass(frozen=True)
class Published:
    """One of ``study.rms``, resolved: the reference its steps pass as ``rm=`` and its lineage."""

    ref: str
    lineage: str | None

    def overrides(self) -> list[str]:
        return [f"rm={quote(self.ref)}"] + ([f"rm_lineage={quote(self.lineage)}"] if self.lineage else [])


def published_rms(entries: Any, store: Store) -> dict[str, Published]:
    """``study.rms`` by name: each entry a hub id or folder, or {rm, lineage, name}; a folder must hold a
    model, names must differ. Every problem is one line naming the entry."""
    out: dict[str, Published] = {}
    items = OmegaConf.to_container(entries, resolve=True) if OmegaConf.is_config(entries) else list(entries or [])
    for i, item in enumerate(items):
        where = f"study.rms[{i}]"
        try:
            entry = PublishedRM(rm=item) if isinstance(item, str) else PublishedRM(**dict(item))
        except TypeError as exc:
            raise ConfigError(f"{where}: give a hub id or folder, or {{rm, lineage, name}} ({exc})") from None
        try:
            found = inputs.rm(str(entry.rm), store, entry.lineage)
        except RlexpError as exc:
            raise ConfigError(f"{where}: {one_line(exc)}") from None
        if found.record_id is not None:
            raise ConfigError(f"{where}: {entry.rm!r} is a record of this store; study.rms is for RMs the study "
                              "does not train (a hub id or a folder)")
        name = entry.name or str(entry.rm).rstrip("/").rsplit("/", 1)[-1]
        if name in out:
            raise ConfigError(f"{where}: the name {name!r} is taken by another entry; give it a name: {{rm: ..., name: ...}}")
        out[name] = Published(found.input_id, found.lineage)
    return out


class StudyPlan:
    """The overrides every step shares, and how a step's full override list is made."""

    def __init__(self, cfg: DictConfig) -> None:
        g = cfg.study
        if (g.lineages and (not g.mixes or not g.epochs)) or not (g.lineages or g.rms):
            raise ConfigError("study grid is empty: study.lineages, study.mixes and study.epochs need at least one "
                              "value (or study.lineages: [] with published RMs in study.rms)")
        self.grid = g
        self.published = published_rms(g.rms, Store(cfg.paths.store))
        for i, pick in enumerate(g.ppo):
            if pick.get("rm") is not None and str(pick.rm) not in self.published:
                raise ConfigError(f"study.ppo[{i}].rm={pick.rm!r}: not a name of study.rms "
                                  f"({', '.join(self.published) or 'none'})")
        self.seeds = study_seeds(g, int(cfg.seed))  # before any composition: a bad list fails at once
        # PPO seeds of the study's RMs: None = one run per pick, at the seed of its RM.
        self.ppo_seeds = None if g.ppo_seeds is None else study_seeds(g, int(cfg.seed), "ppo_seeds")
        if self.ppo_seeds is not None and len(self.seeds) > 1:
            raise ConfigError("study.ppo_seeds and study.seeds together: give PPO seeds to a one-seed grid "
                              "(study.seeds: null), or train the RMs over seeds without study.ppo_seeds")
        self.common = [
            f"paths.root={cfg.paths.root}",
            f"paths.store={cfg.paths.store}",
            f"paths.cache={cfg.paths.cache}",
            f"paths.output_root={cfg.paths.output_root}",
            f"logger={'wandb' if cfg.logger.kind == 'wandb' else 'none'}",
            f"logger.mode={cfg.logger.mode}",
            f"experiment_name={cfg.experiment_name}",
            f"seed={cfg.seed}",
            f"sandbox.seed={cfg.sandbox.seed}",
            f"sandbox.difficulty={cfg.sandbox.difficulty}",
            f"runtime.threads={cfg.runtime.threads}",
            f"progress={str(bool(cfg.progress)).lower()}",
        ]
        self.extra = {k: list(v) for k, v in (OmegaConf.to_container(g.overrides) or {}).items()}
        unknown = sorted(set(self.extra) - {*MODEL_TASKS, "evaluate", "correlate", "data", "model"})
        if unknown:
            raise ConfigError(f"study.overrides.{unknown[0]}: not a task of the study (or 'model')")
        self.by_lineage = {k: list(v) for k, v in (OmegaConf.to_container(g.lineage_overrides) or {}).items()}
        stray = sorted(set(self.by_lineage) - {*g.lineages, g.policy})
        if stray:
            raise ConfigError(f"study.lineage_overrides.{stray[0]}: not a lineage of the study "
                              f"(study.lineages: {', '.join(g.lineages)}; policy: {g.policy})")
        for bench in g.extra_benchmarks:
            if not (CONF_DIR / "benchmark" / f"{bench}.yaml").is_file():
                known = ", ".join(sorted(p.stem for p in (CONF_DIR / "benchmark").glob("*.yaml")))
                raise ConfigError(f"study.extra_benchmarks: no benchmark preset {bench!r} (known: {known})")
        # A bad value in study.overrides (an unknown key, a value outside a choice) fails here, as one
        # line, before the first stage runs, not when its task's stage is reached.
        for task in sorted({*self.extra} - {"model"} | ({*MODEL_TASKS} if "model" in self.extra else set())):
            self.config(task, [])
        for lineage in self.by_lineage:
            try:
                self.config("train_rm", [f"model={lineage}"])
            except ConfigError as exc:
                raise ConfigError(f"study.lineage_overrides.{lineage}: {exc}") from None
        # So does a gold judge that cannot judge a prompt set (an unset judge.model, AlpacaEval without
        # its preference judge), which would otherwise surface after every RM had trained.
        # And a served judge that is down: probed here, before the first RM trains or pool is sampled.
        # Keys are evaluation sets (one not in study.prompt_sets is unused: a rehearsal inherits its paper's),
        # values training sets; both must name prompt presets.
        for eval_set, train_set in (g.ppo_train_prompts or {}).items():
            for name in (eval_set, train_set):
                if not (CONF_DIR / "prompts" / f"{name}.yaml").is_file():
                    raise ConfigError(f"study.ppo_train_prompts: {name!r} is not a prompt set of conf/prompts/")
        for task in ("bon", *(("ppo",) if g.ppo else ())):
            for ps in g.prompt_sets:
                down = self.config(task, ppo_prompts(g, ps) if task == "ppo" else [f"prompts={ps}"])
                check_gold_judge(down.judge, down.prompts)
                if not g.dry_run:
                    probe_served_judges(down, judge_cache_dir(down))
        self.threads = int(cfg.runtime.threads)
        self.n_jobs = worker_count(g.n_jobs, "study.n_jobs")
        self.slurm = g.launcher == "slurm"
        if self.slurm and not g.dry_run:
            from rlexp import slurm_dispatch

            slurm_dispatch.preflight(g.resources, STEP_KINDS)
        self.ledger = StepLedger(Store(cfg.paths.store), enabled=bool(g.step_ledger) and not bool(cfg.get("force", False)))

    def overrides(self, task: str, overrides: list[str], seed: int | None = None) -> list[str]:
        shared, own = [], []
        if task in MODEL_TASKS:
            shared = self.extra.get("model", [])
            lineage = next((o.split("=", 1)[1] for o in reversed(overrides) if o.startswith("model=")), None)
            own = self.by_lineage.get(lineage, []) if lineage else []
        base = self.common if seed is None else [f"seed={seed}" if o.startswith("seed=") else o for o in self.common]
        return base + shared + overrides + own + self.extra.get(task, [])

    def config(self, task: str, overrides: list[str]) -> DictConfig:
        return compose_task(task, self.overrides(task, overrides))

    def step(self, task: str, key: str, overrides: list[str], compose: str | None = None, seed: int | None = None) -> Step:
        return Step(task, key, self.overrides(compose or task, overrides, seed), compose)

    def seeded(self, key: str, seed: int) -> str:
        return key if len(self.seeds) == 1 else f"{key}/s{seed}"

    def run(self, jobs: list[Job], where: Dispatcher | None = None) -> Results:
        """Run the jobs (see :mod:`rlexp.job_graph`), logging each kind of step as it finishes;
        ``where`` replaces the launcher the config names (perf/study_dispatch_overhead.py)."""
        clock = KindClock(jobs, log, "study")
        checked: set[str] = set()

        def decided(step: Step) -> str | None:
            rid = self.ledger.cached(step)
            if rid is None and step.task not in checked:
                # A bad shared override fails here, once, as one line, not in every worker.
                checked.add(step.task)
                step.config()
            return rid

        def finished(key: str, step: Step, result: Result) -> None:
            self.ledger.remember([step], {key: result})
            clock.finished(key, result)

        run = partial(run_step, threads=self.threads)
        launcher: int | Dispatcher = self.n_jobs
        if where is not None:
            launcher = where
        elif self.slurm:
            from rlexp.slurm_dispatch import SlurmDispatcher

            g = self.grid
            launcher = SlurmDispatcher(run, g.resources, g.slurm.folder, StepLedger.key, g.slurm.max_in_flight,
                                       g.slurm.poll_s)
            log.info("study: SLURM, at most %d step(s) in flight, %d torch thread(s) each", launcher.slots, self.threads)
        else:
            log.info("study: %d worker process(es), %d torch thread(s) each", self.n_jobs, self.threads)
        results = run_jobs(jobs, run, launcher, decided=decided, started=clock.started, finished=finished)
        self.ledger.flush()
        for key, result in results.items():
            if key not in clock.done:  # decided in the parent or never run
                clock.finished(key, result, dispatched=False)
        return results


def ppo_prompts(g: DictConfig | StudyGrid, ps: str) -> list[str]:
    """PPO's prompt overrides for evaluation prompt set ``ps``: its own splits, or training on the set
    ``study.ppo_train_prompts`` names for it and evaluating on ``ps``."""
    train = (g.ppo_train_prompts or {}).get(ps)
    return [f"prompts={train}", f"eval_prompts={ps}"] if train else [f"prompts={ps}"]
