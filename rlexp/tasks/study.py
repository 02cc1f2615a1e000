"""`rlexp study experiment=<preset>`: the whole grid in one resumable command.

lineages × mixes × epochs (× seeds) -> train_rm; every RM -> evaluate (both benchmarks, each profile mode;
the extra benchmarks, e.g. PRB's comparison sets);
one pool per (policy, prompt set) -> bon for every RM; ppo for a configured subset of RMs (plus
the gold judge as an upper bound); then correlate. Every step is a task run with its record, so
a killed study resumes where it stopped, a finished one only re-renders, and adding an RM costs
that RM's steps. A step runs as soon as the records it names exist (:mod:`rlexp.job_graph`: no
barrier between lineages, RMs, evaluation and downstream), in ``study.n_jobs`` worker processes with
``runtime.threads`` torch threads each, or with ``study.launcher=slurm`` each as one SLURM job
(:mod:`rlexp.slurm_dispatch`); a failed step is reported, and only the steps that need its record are
skipped.
"""

from __future__ import annotations

import logging
from collections import Counter

from omegaconf import DictConfig, OmegaConf

from rlexp import inputs
from rlexp.config import check_config
from rlexp.config.study import STEP_KINDS
from rlexp.errors import ConfigError, RlexpError, StoreError
from rlexp.job_graph import Job, KindClock
from rlexp.runtime import hydra_entry, one_line, quote
from rlexp.store import Record, Store
from rlexp.tasks import correlate
from rlexp.tasks.study_plan import Published, Results, Step, StudyPlan, ppo_prompts, read_first

log = logging.getLogger("rlexp")

def _train_jobs(plan: StudyPlan) -> list[Job]:
    g, jobs = plan.grid, []
    for epochs in sorted(g.epochs, reverse=True):  # more epochs, more work: first
        for seed in plan.seeds:
            for lineage in g.lineages:
                for mix in g.mixes:
                    key = plan.seeded(f"train_rm/{lineage}/{mix}/e{epochs:g}", seed)
                    ov = [f"model={lineage}", f"data={mix}", f"trainer.num_train_epochs={epochs}", f"profile={g.train_profile}"]
                    step = plan.step("train_rm", key, ov, seed=seed)
                    jobs.append(Job(key, (f"lineage/{lineage}",), lambda _ids, s=step: s))
    return jobs


def _pool_jobs(plan: StudyPlan) -> tuple[list[Job], dict[tuple[str, str, int | None], str]]:
    """One job per distinct pool (BoN's pool, PPO's shared baseline per seed), and which pool each
    (task, prompt set, seed) reads: a pool depends on the policy, prompts and sampling, not on the RM."""
    g = plan.grid
    jobs: dict[str, Job] = {}
    seen: dict[str, str] = {}  # the pool's sample config -> its job key
    pool_of: dict[tuple[str, str, int | None], str] = {}
    for task in ("bon", "ppo") if g.ppo else ("bon",):
        seeds: list[int | None] = [None] if task == "bon" else _ppo_pool_seeds(plan)
        for ps in g.prompt_sets:
            for seed in seeds:
                prompts = ppo_prompts(g, ps) if task == "ppo" else [f"prompts={ps}"]
                reader = plan.step(task, "", [inputs.UNUSED_RM, f"model={g.policy}", *prompts, f"profile={g.train_profile}"],
                                   seed=seed)
                sample = OmegaConf.to_yaml(inputs.sample_config(read_first(task, reader.config())))
                if sample not in seen:
                    name = "pool" if task == "bon" else "ppo_baseline"
                    key = f"sample/{g.policy}/{ps}/{name}" + ("" if seed is None else f"/s{seed}")
                    step = Step("pool", key, reader.overrides, compose=task)
                    jobs[key] = Job(key, (f"lineage/{g.policy}",), lambda _ids, s=step: s)
                    seen[sample] = key
                pool_of[(task, ps, seed)] = seen[sample]
    return list(jobs.values()), pool_of


def _ppo_pool_seeds(plan: StudyPlan) -> list[int | None]:
    """The seeds PPO's baseline pools are drawn at: the study's (None; the upper bound of a grid with
    training seeds reads it) and each PPO seed's, else each training seed's. A seed equal to the
    study's draws the same pool, sampled once."""
    extra = plan.ppo_seeds if plan.ppo_seeds is not None else plan.seeds if len(plan.seeds) > 1 else []
    return [None, *extra]


def _rm_overrides(rm: str | Published | None, ids: dict[str, str]) -> list[str]:
    """``rm=`` of a step: the record id the job ``rm`` made, a published RM's reference, or none (a judge)."""
    if isinstance(rm, str):
        return [f"rm={quote(ids[rm])}"]
    return rm.overrides() if rm is not None else []


def _reader(plan: StudyPlan, task: str, key: str, rm: str | Published | None, pool: str, ov: list[str],
            seed: int | None = None) -> Job:
    """A BoN or PPO job: it waits for its pool and, for a trained RM (``rm``: its job's key), that RM; a
    published RM (:class:`Published`) is there already, a gold judge (None) needs none."""
    needs = (rm, pool) if isinstance(rm, str) else (pool,)
    return Job(key, needs, lambda ids: plan.step(task, key, _rm_overrides(rm, ids) + ov, seed=seed))


def _ppo_jobs(plan: StudyPlan, pool_of: dict[tuple[str, str, int | None], str]) -> list[Job]:
    """Every PPO run: each pick per training seed (or per PPO seed), then the gold-judge upper bound."""
    g = plan.grid
    ppo: list[Job] = []
    for ps in sorted(g.prompt_sets, key=lambda p: p != "personalized"):  # the longest PPO runs first
        ov = [f"model={g.policy}", *ppo_prompts(g, ps), f"profile={g.train_profile}"]
        for pick in g.ppo:
            if pick.get("rm") is not None:  # a published RM: no training seed of its own
                rm_key, rm, seeds = f"rm/{pick.rm}", plan.published[str(pick.rm)], [None]
            else:
                rm_key = f"train_rm/{pick.model}/{pick.data}/e{float(pick.epochs):g}"
                rm, seeds = None, plan.seeds
            for seed in seeds:
                key = rm_key if seed is None else plan.seeded(rm_key, seed)
                src = rm or key
                if plan.ppo_seeds is None:
                    sd = None if seed is None or len(plan.seeds) == 1 else seed
                    ppo.append(_reader(plan, "ppo", f"ppo/{key}/{ps}", src, pool_of[("ppo", ps, sd)], ov, sd))
                for t in plan.ppo_seeds or []:
                    ppo.append(_reader(plan, "ppo", f"ppo/{key}/{ps}/s{t}", src, pool_of[("ppo", ps, t)], ov, t))
        if g.ppo and g.ppo_upper_bound:
            judge = "rubric" if ps == "personalized" else "verifier"
            for t in plan.ppo_seeds or [None]:
                key = f"ppo/upper_bound/{ps}" + ("" if t is None else f"/s{t}")
                ppo.append(_reader(plan, "ppo", key, None, pool_of[("ppo", ps, t)],
                                   [f"rm=judge:{judge}", f"model={g.policy}", *ppo_prompts(g, ps)], t))
    return ppo


def _downstream_jobs(plan: StudyPlan, trains: list[Job],
                     pool_of: dict[tuple[str, str, int | None], str]) -> tuple[list[Job], list[Job], list[Job]]:
    """(PPO jobs, personalized first; evaluation jobs; Best-of-N jobs) of every RM, trained and published."""
    g = plan.grid
    sources: list[tuple[str, str | Published]] = [(t.key, t.key) for t in trains]
    sources += [(f"rm/{name}", pub) for name, pub in plan.published.items()]
    evals: list[Job] = []
    bon: list[Job] = []
    for src_key, rm in sources:
        needs = (rm,) if isinstance(rm, str) else ()
        for i, mode in enumerate(g.eval_profiles):
            ov = [f"benchmark={'both' if i == 0 else 'prb'}", f"profile={mode}"]
            key = f"evaluate/{src_key}/{mode}"
            evals.append(Job(key, needs, lambda ids, k=key, r=rm, o=ov: plan.step("evaluate", k, [*_rm_overrides(r, ids), *o])))
        for bench in g.extra_benchmarks:
            key = f"evaluate/{src_key}/{bench}"
            evals.append(Job(key, needs, lambda ids, k=key, r=rm, b=bench: _extra_benchmark(plan, k, _rm_overrides(r, ids), b)))
        for ps in g.prompt_sets:
            ov = [f"model={g.policy}", f"prompts={ps}", f"profile={g.train_profile}"]
            bon.append(_reader(plan, "bon", f"bon/{src_key}/{ps}", rm, pool_of[("bon", ps, None)], ov))
    return _ppo_jobs(plan, pool_of), evals, bon


def _extra_benchmark(plan: StudyPlan, key: str, rm: list[str], bench: str) -> Step:
    # An extra benchmark names its own preset: a study-wide `benchmark=` override is for RB2/PRB.
    step = plan.step("evaluate", key, rm)
    return Step("evaluate", key, [o for o in step.overrides if not o.startswith("benchmark=")] + [f"benchmark={bench}"])


def check_rm_folders(store: Store, rms: dict[str, str]) -> None:
    """Refuse a study whose trained RM lost its model folder (deleted from the store by hand): its
    evaluations and downstream runs fail, and a report without its rows would look complete."""
    from rlexp.models.loading import check_model_dir

    lost = []
    for key, rid in rms.items():
        record = store.get(rid, "train_rm")
        folder = store.resolve(record.artifacts.get("model", f"artifacts/train_rm/{rid}/model"))
        try:
            check_model_dir(folder)
        except ConfigError as exc:
            lost.append((key, rid, one_line(exc)))
    if lost:
        key, rid, problem = lost[0]
        more = f" (and {len(lost) - 1} more reward model(s))" if len(lost) > 1 else ""
        raise StoreError(f"reward model {key}: {problem}{more}; restore it, or delete its record "
                         f"{store.record_path('train_rm', rid)} to train it again (no report written)")


def _correlate(cfg: DictConfig, plan: StudyPlan, results: Results, rms: dict[str, str]) -> Record:
    """Correlate what finished, and say what did not."""
    record_ids = sorted({rid for rid, _ in results.values() if rid})
    failed = {k: e for k, (_, e) in results.items() if e}
    corr_overrides = [f"records=[{','.join(map(quote, record_ids))}]"] + ([f"k={cfg.k}"] if cfg.k else [])
    record = correlate.run(plan.config("correlate", corr_overrides))
    report = Store(cfg.paths.store).resolve(record.artifacts.get("report", ""))
    if failed:
        print(f"rlexp study: {len(failed)} step(s) failed:")
        for k, e in failed.items():
            print(f"  {k}: {e}")
    print(f"rlexp study: {len(rms) + len(plan.published)} reward models, {len(record_ids)} records; report: {report}")
    if failed:
        # The report covers what finished; a failed step must not pass for a finished study (exit 2, as a
        # sweep whose jobs failed). The same command retries exactly the failed steps and their dependants.
        raise RlexpError(f"{len(failed)} of {len(results)} study steps failed (listed above); the report covers "
                         f"the steps that finished: {report}; rerun the same command to retry the failed ones")
    return record


def study_jobs(plan: StudyPlan) -> list[Job]:
    """Every step of the grid as a job, in priority order (see :mod:`rlexp.job_graph`)."""
    g = plan.grid
    lineages = [Job(f"lineage/{n}", (), lambda _ids, n=n: plan.step("lineage", f"lineage/{n}", [f"model={n}"], compose="train_rm"))
                for n in dict.fromkeys([g.policy, *g.lineages])]  # the policy lineage trains longest
    trains = _train_jobs(plan)
    pools, pool_of = _pool_jobs(plan)
    ppo, evals, bon = _downstream_jobs(plan, trains, pool_of)
    return [*lineages, *pools, *trains, *ppo, *evals, *bon]


def check_steps(jobs: list[Job]) -> None:
    """One step of each task, with placeholder record ids for what it needs, through the typed nodes'
    checks before any job runs: a value in ``study.overrides`` a node refuses fails in a second, not in
    each of its steps once the lineages are built."""
    seen: set[str] = set()
    for job in jobs:
        step = job.build(dict.fromkeys(job.needs, "0" * 16))
        if step.task not in seen:
            seen.add(step.task)
            check_config(step.config())


def print_plan(plan: StudyPlan, jobs: list[Job]) -> None:
    """The bill before any work: every kind of step, how many, and what each asks of a cluster
    (``study.resources``; GPU-hours at each job's time limit, so an upper bound)."""
    counts = Counter(KindClock.kind(j.key) for j in jobs)
    g = plan.grid
    print(f"rlexp study (plan only, study.dry_run=true): {len(jobs) + 1} steps, launcher {g.launcher}")
    print(f"{'kind':<10} {'steps':>6} {'gpus':>5} {'cpus':>5} {'mem GB':>7} {'hours':>6} {'GPU-hours':>10}")
    total = 0.0
    for kind in STEP_KINDS:
        if not counts[kind]:
            continue
        res = g.resources[kind]
        gpu_hours = counts[kind] * int(res.gpus) * int(res.time_min) / 60
        total += gpu_hours
        print(f"{kind:<10} {counts[kind]:>6} {int(res.gpus):>5} {int(res.cpus):>5} {float(res.mem_gb):>7g} "
              f"{int(res.time_min) / 60:>6.1f} {gpu_hours:>10.0f}")
    print(f"{'correlate':<10} {1:>6}  (in the study's own process)")
    print(f"at most {total:.0f} GPU-hours (each job at its time limit); nothing was run")


def run(cfg: DictConfig) -> Record | None:
    """Run (or resume) the grid, then correlate what finished; with ``study.dry_run`` only print the plan."""
    plan = StudyPlan(cfg)
    jobs = study_jobs(plan)
    check_steps(jobs)  # before anything is built
    if plan.grid.dry_run:
        print_plan(plan, jobs)
        return None
    # The sandbox once, in this process, before parallel jobs race to build it.
    inputs.sandbox_world(plan.config("data", []))
    known = {j.key for j in jobs}
    missing = {n for j in jobs for n in j.needs if n not in known}
    for key in sorted(missing):
        log.error("study: ppo pick %s has no trained RM (not in the grid)", key)
    results = plan.run([j for j in jobs if not set(j.needs) & missing])
    results.update({f"ppo/{key}": (None, "no trained RM for this pick") for key in sorted(missing)})
    rms = {k: rid for k, (rid, _) in results.items() if k.startswith("train_rm/") and rid}
    check_rm_folders(Store(cfg.paths.store), rms)
    return _correlate(cfg, plan, results, rms)


main = hydra_entry("study", run)

if __name__ == "__main__":
    main()
