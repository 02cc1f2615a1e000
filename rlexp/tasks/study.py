"""`rlexp study experiment=<preset>`: the whole grid in one resumable command.

lineages × mixes × epochs (× seeds) -> train_rm; every RM -> evaluate (both benchmarks, each profile mode;
the extra benchmarks, e.g. PRB's comparison sets);
one pool per (policy, prompt set) -> bon for every RM; ppo for a configured subset of RMs (plus
the gold judge as an upper bound); then correlate. Every step is a task run with its record, so
a killed study resumes where it stopped, a finished one only re-renders, and adding an RM costs
that RM's steps. Steps of a stage run in parallel processes (joblib, ``study.n_jobs``) with
``runtime.threads`` torch threads each; a failed step is reported and does not stop the others.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import os
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from joblib import Parallel, delayed
from omegaconf import DictConfig, OmegaConf

from rlexp import inputs
from rlexp.config import CONF_DIR
from rlexp.config.tasks import StudyGrid
from rlexp.errors import ConfigError, RlexpError
from rlexp.runtime import compose_task, hydra_entry, one_line
from rlexp.scoring.factory import check_gold_judge
from rlexp.store import Record, Store, content_hash
from rlexp.tasks import correlate

log = logging.getLogger("rlexp")

MODEL_TASKS = ("train_rm", "sample", "bon", "ppo")  # the tasks whose config holds a lineage (model=...)


@dataclass
class Step:
    """One job: ``task`` run with the config composed from ``overrides``.

    ``compose`` names the task whose config is composed when it differs: a lineage step reads the
    model settings of a ``train_rm`` config, a pool step samples the pool of a ``bon`` or ``ppo``
    config. Composition happens in the worker: it costs about 0.3 s of Hydra work per step, which in
    the main process left both workers idle between stages.
    """

    task: str
    key: str
    overrides: list[str]
    compose: str | None = None

    def config(self) -> DictConfig:
        return compose_task(self.compose or self.task, self.overrides)


def _run_step(step: Step, threads: int) -> tuple[str, str | None, str | None]:
    """(key, record id, error). Runs in a worker process or in-process."""
    if threads > 0:
        os.environ["OMP_NUM_THREADS"] = str(threads)
        import torch  # only now: OMP_NUM_THREADS must be set before torch starts its pool

        torch.set_num_threads(threads)
    try:
        cfg = step.config()
        if step.task == "lineage":
            return step.key, inputs.lineage(cfg).record_id, None
        if step.task == "pool":  # the pool a bon/ppo config reads
            return step.key, inputs.pool(cfg)[0].id, None
        # Tasks are imported by name: the study runs whichever task a step names.
        module = importlib.import_module(f"rlexp.tasks.{step.task}")
        record = module.run(cfg)
        return step.key, record.id, None
    except RlexpError as exc:
        return step.key, None, one_line(exc)
    except Exception as exc:  # a failed step must not stop the study
        tb = traceback.format_exc(limit=3).strip().splitlines()
        return step.key, None, f"{type(exc).__name__}: {one_line(exc)} ({tb[-2].strip() if len(tb) > 1 else ''})"


def _fingerprint() -> str:
    """rlexp's code and configs: with a step's overrides, all its record id can depend on."""
    h = hashlib.sha256()
    package = Path(__file__).resolve().parents[1]
    for root, pattern in ((package, "*.py"), (CONF_DIR, "*.yaml")):
        for path in sorted(root.rglob(pattern)):
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


class StepLedger:
    """The record each step made, remembered per :func:`_fingerprint` in ``<store>/cache/study/``.

    A step's record id is a function of its composed config and its inputs' record ids; the config
    is one of its overrides, rlexp's code and ``conf/``, and the overrides name every input record
    by id (an RM, a pool's policy and prompt set). So a step seen before under the same fingerprint,
    whose record is still in the store, is decided here, in the parent, and never dispatched: a
    finished study reruns without composing one config per step in worker processes.
    """

    RECORD_TASK = {"pool": "sample"}  # a pool step's record is a `sample` record
    # Overrides that never change a record id (where files go, logging, progress bars).
    NO_EFFECT = ("paths.", "logger", "progress=")

    def __init__(self, store: Store, enabled: bool = True) -> None:
        self.store = store
        self.enabled = enabled
        self.path = store.root / "cache" / "study" / f"{_fingerprint()}.json"
        self.known: dict[str, str] = json.loads(self.path.read_text()) if enabled and self.path.is_file() else {}

    @classmethod
    def key(cls, step: Step) -> str:
        kept = [o for o in step.overrides if not o.startswith(cls.NO_EFFECT)]
        return content_hash({"task": step.task, "compose": step.compose, "overrides": kept})

    def cached(self, step: Step) -> str | None:
        """The record id of ``step`` when it ran before (same fingerprint) and its record exists."""
        rid = self.known.get(self.key(step)) if self.enabled else None
        return rid if rid and self.store.exists(self.RECORD_TASK.get(step.task, step.task), rid) else None

    def remember(self, steps: list[Step], results: Results) -> None:
        """Add the steps that made a record (atomically: parallel studies may share a store)."""
        new = {self.key(s): results[s.key][0] for s in steps if s.key in results and results[s.key][0]}
        if not self.enabled or all(self.known.get(k) == v for k, v in new.items()):
            return
        on_disk = json.loads(self.path.read_text()) if self.path.is_file() else {}
        self.known = {**on_disk, **self.known, **new}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.known, sort_keys=True))
        os.replace(tmp, self.path)


def _run_stage(name: str, steps: list[Step], n_jobs: int, threads: int,
               ledger: StepLedger | None = None) -> dict[str, tuple[str | None, str | None]]:
    start = time.time()
    if not steps:
        return {}
    known = {s.key: rid for s in steps if ledger is not None and (rid := ledger.cached(s))}
    todo = [s for s in steps if s.key not in known]
    log.info("study: stage %s, %d step(s), %d of them done before", name, len(steps), len(known))
    results = [(key, rid, None) for key, rid in known.items()]
    if todo:
        # Fail fast on the overrides every step of the stage shares (a bad study.overrides value); a
        # bad grid value fails only its own steps, which are reported.
        todo[0].config()
    if n_jobs > 1 and len(todo) > 1:
        results += Parallel(n_jobs=min(n_jobs, len(todo)), backend="loky")(delayed(_run_step)(s, threads) for s in todo)
    else:
        results += [_run_step(s, threads) for s in todo]
    out = {key: (rid, err) for key, rid, err in results}
    if ledger is not None:
        ledger.remember(todo, out)
    failed = {k: e for k, (_, e) in out.items() if e}
    for key, err in failed.items():
        log.error("study: %s failed: %s", key, err)
    log.info("study: stage %s done in %.1fs (%d failed)", name, time.time() - start, len(failed))
    return out


def study_seeds(grid: DictConfig | StudyGrid, default: int) -> list[int]:
    """The training seeds of the grid: ``study.seeds`` (distinct, in order) or ``[default]``."""
    if grid.seeds is None:
        return [default]
    seeds = [int(s) for s in grid.seeds]
    if not seeds:
        raise ConfigError("study.seeds is empty: give at least one seed, or null for the study's seed")
    if len(set(seeds)) != len(seeds):
        raise ConfigError(f"study.seeds repeats a seed: {seeds}")
    return seeds


Results = dict[str, tuple[str | None, str | None]]  # step key -> (record id, error)


class StudyPlan:
    """The overrides every step shares, and how a step's full override list is made."""

    def __init__(self, cfg: DictConfig) -> None:
        g = cfg.study
        if not g.lineages or not g.mixes or not g.epochs:
            raise ConfigError("study grid is empty: study.lineages, study.mixes and study.epochs need at least one value")
        self.grid = g
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
        for bench in g.extra_benchmarks:
            if not (CONF_DIR / "benchmark" / f"{bench}.yaml").is_file():
                known = ", ".join(sorted(p.stem for p in (CONF_DIR / "benchmark").glob("*.yaml")))
                raise ConfigError(f"study.extra_benchmarks: no benchmark preset {bench!r} (known: {known})")
        # A bad value in study.overrides (an unknown key, a value outside a choice) fails here, as one
        # line, before the first stage runs, not when its task's stage is reached.
        for task in sorted({*self.extra} - {"model"} | ({*MODEL_TASKS} if "model" in self.extra else set())):
            self.config(task, [])
        # So does a gold judge that cannot judge a prompt set (an unset judge.model, AlpacaEval without
        # its preference judge), which would otherwise surface after every RM had trained.
        for task in ("bon", *(("ppo",) if g.ppo else ())):
            for ps in g.prompt_sets:
                down = self.config(task, [f"prompts={ps}"])
                check_gold_judge(down.judge, down.prompts)
        self.seeds = study_seeds(g, int(cfg.seed))
        self.threads = int(cfg.runtime.threads)
        self.n_jobs = int(g.n_jobs)
        self.ledger = StepLedger(Store(cfg.paths.store), enabled=bool(g.step_ledger) and not bool(cfg.get("force", False)))

    def overrides(self, task: str, overrides: list[str], seed: int | None = None) -> list[str]:
        shared = self.extra.get("model", []) if task in MODEL_TASKS else []
        base = self.common if seed is None else [f"seed={seed}" if o.startswith("seed=") else o for o in self.common]
        return base + shared + overrides + self.extra.get(task, [])

    def config(self, task: str, overrides: list[str]) -> DictConfig:
        return compose_task(task, self.overrides(task, overrides))

    def step(self, task: str, key: str, overrides: list[str], compose: str | None = None, seed: int | None = None) -> Step:
        return Step(task, key, self.overrides(compose or task, overrides, seed), compose)

    def seeded(self, key: str, seed: int) -> str:
        return key if len(self.seeds) == 1 else f"{key}/s{seed}"

    def stage(self, name: str, steps: list[Step]) -> Results:
        return _run_stage(name, steps, self.n_jobs, self.threads, self.ledger)


def _train_steps(plan: StudyPlan) -> list[Step]:
    g, steps = plan.grid, []
    # Longest first (more epochs, more work), so the stage does not end on one long job.
    for epochs in sorted(g.epochs, reverse=True):
        for seed in plan.seeds:
            for lineage in g.lineages:
                for mix in g.mixes:
                    key = plan.seeded(f"train_rm/{lineage}/{mix}/e{epochs:g}", seed)
                    ov = [f"model={lineage}", f"data={mix}", f"trainer.num_train_epochs={epochs}", f"profile={g.train_profile}"]
                    steps.append(plan.step("train_rm", key, ov, seed=seed))
    return steps


def _downstream_steps(plan: StudyPlan, rms: dict[str, str], results: Results) -> tuple[list[Step], list[Step], list[Step]]:
    """(bon steps, ppo steps, one reader per distinct pool); PPO picks without an RM fail in ``results``."""
    g = plan.grid
    bon_steps, ppo_steps = [], []
    # A pool depends on the policy, the prompt set and the sampling settings, not on the RM: one
    # step per (task, prompt set) tells which pools there are.
    readers: dict[tuple[str, str, int | None], Step] = {}

    def downstream(task: str, key: str, ps: str, ov: list[str], seed: int | None = None) -> Step:
        new = plan.step(task, key, ov, seed=seed)
        readers.setdefault((task, ps, seed), new)
        return new

    for key, rid in rms.items():
        for ps in g.prompt_sets:
            ov = [f"rm={rid}", f"model={g.policy}", f"prompts={ps}", f"profile={g.train_profile}"]
            bon_steps.append(downstream("bon", f"bon/{key}/{ps}", ps, ov))
    for pick in g.ppo:
        for seed in plan.seeds:
            key = plan.seeded(f"train_rm/{pick.model}/{pick.data}/e{float(pick.epochs):g}", seed)
            if key not in rms:
                log.error("study: ppo pick %s has no trained RM (not in the grid or failed)", key)
                results[f"ppo/{key}"] = (None, "no trained RM for this pick")
                continue
            for ps in g.prompt_sets:
                ov = [f"rm={rms[key]}", f"model={g.policy}", f"prompts={ps}", f"profile={g.train_profile}"]
                ppo_steps.append(downstream("ppo", f"ppo/{key}/{ps}", ps, ov, seed=None if len(plan.seeds) == 1 else seed))
    if g.ppo and g.ppo_upper_bound:
        for ps in g.prompt_sets:
            judge = "rubric" if ps == "personalized" else "verifier"
            ppo_steps.append(downstream("ppo", f"ppo/upper_bound/{ps}", ps, [f"rm=judge:{judge}", f"model={g.policy}", f"prompts={ps}"]))
    return bon_steps, ppo_steps, list(readers.values())


def _pool_steps(plan: StudyPlan, readers: list[Step]) -> list[Step]:
    """One step per distinct pool the readers need (BoN pools and PPO's shared baselines)."""
    pools: dict[str, Step] = {}
    for down in readers:
        scfg = inputs.sample_config(down.config())
        name = "pool" if down.task == "bon" else "ppo_baseline"
        pools.setdefault(OmegaConf.to_yaml(scfg), Step("pool", f"sample/{plan.grid.policy}/{scfg.prompts.name}/{name}",
                                                        down.overrides, compose=down.task))
    return list(pools.values())


def _eval_steps(plan: StudyPlan, rms: dict[str, str]) -> list[Step]:
    steps = []
    for key, rid in rms.items():
        for i, mode in enumerate(plan.grid.eval_profiles):
            bench = "both" if i == 0 else "prb"
            steps.append(plan.step("evaluate", f"evaluate/{key}/{mode}", [f"rm={rid}", f"benchmark={bench}", f"profile={mode}"]))
        for bench in plan.grid.extra_benchmarks:
            step = plan.step("evaluate", f"evaluate/{key}/{bench}", [f"rm={rid}"])
            # An extra benchmark names its own preset: a study-wide `benchmark=` override is for RB2/PRB.
            steps.append(Step("evaluate", step.key, [o for o in step.overrides if not o.startswith("benchmark=")]
                              + [f"benchmark={bench}"]))
    return steps


def _correlate(cfg: DictConfig, plan: StudyPlan, results: Results, rms: dict[str, str]) -> Record:
    """Correlate what finished, and say what did not."""
    record_ids = sorted({rid for rid, _ in results.values() if rid})
    failed = {k: e for k, (_, e) in results.items() if e}
    corr_overrides = [f"records=[{','.join(record_ids)}]"] + ([f"k={cfg.k}"] if cfg.k else [])
    record = correlate.run(plan.config("correlate", corr_overrides))
    report = Store(cfg.paths.store).resolve(record.artifacts.get("report", ""))
    if failed:
        print(f"rlexp study: {len(failed)} step(s) failed:")
        for k, e in failed.items():
            print(f"  {k}: {e}")
    print(f"rlexp study: {len(rms)} reward models, {len(record_ids)} records; report: {report}")
    return record


def run(cfg: DictConfig) -> Record:
    """Run (or resume) the grid, then correlate what finished."""
    plan = StudyPlan(cfg)
    g = plan.grid
    results: Results = {}
    # Stage 0: shared inputs once, before parallel jobs race to build them: the sandbox, then the
    # lineages side by side.
    inputs.sandbox_world(plan.config("data", []))
    lineage_steps = [plan.step("lineage", f"lineage/{name}", [f"model={name}"], compose="train_rm")
                     for name in dict.fromkeys([*g.lineages, g.policy])]
    results.update(plan.stage("lineages", lineage_steps))
    # Stage 1: reward models.
    train_steps = _train_steps(plan)
    results.update(plan.stage("train_rm", train_steps))
    rms = {s.key: results[s.key][0] for s in train_steps if results[s.key][0]}
    # Stage 2: evaluation of every RM, and every pool the next stage reads: one per policy x
    # prompt set for Best-of-N, and PPO's shared baseline (the initial policy on the held-out
    # prompts, sampled like PPO's evaluation). Built here, not inside the next stage's jobs, so two
    # parallel jobs never sample the same pool. Pools first: they take longer than an evaluation,
    # and the stage should not end on one.
    bon_steps, ppo_steps, readers = _downstream_steps(plan, rms, results)
    results.update(plan.stage("evaluate+sample", _pool_steps(plan, readers) + _eval_steps(plan, rms)))
    # Stage 3: PPO for the configured subset (personalized prompts first: the longest jobs), then
    # Best-of-N for every RM on every prompt set.
    ppo_steps.sort(key=lambda s: not s.key.endswith("/personalized"))
    results.update(plan.stage("bon+ppo", ppo_steps + bon_steps))
    return _correlate(cfg, plan, results, rms)


main = hydra_entry("study", run)

if __name__ == "__main__":
    main()
