"""`rlexp study` rejects a grid it cannot run before doing any work."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import rlexp_cmd


def _study(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(rlexp_cmd("study", "logger=none", *args), capture_output=True, text=True, timeout=120)


def test_empty_grid_is_one_line(root: Path) -> None:
    out = _study("study.mixes=[]")
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "study grid is empty" in out.stderr
    assert not (root / "runs").exists()


def test_bad_choice_in_a_later_stage_fails_before_the_first(root: Path) -> None:
    # PPO's stage comes last; its bad choice must not wait for the RMs to train.
    out = _study("study.overrides.ppo=['algorithm=bogus']")
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "bogus" in out.stderr and "ppo" in out.stderr
    assert not (root / "runs" / "records").exists()


def test_override_for_an_unknown_task_is_one_line(root: Path) -> None:
    out = _study("study.overrides.trian_rm=['data.max_rows=10']")
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "study.overrides.trian_rm" in out.stderr
    assert not (root / "runs").exists()


def test_an_unknown_extra_benchmark_is_one_line(root: Path) -> None:
    out = _study("study.extra_benchmarks=[comparisons]")
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "study.extra_benchmarks: no benchmark preset 'comparisons'" in out.stderr


def test_lineage_overrides_reach_that_lineages_steps_only(root: Path) -> None:
    """`study.lineage_overrides.<lineage>` lands in the steps that build or load that lineage: its lineage
    step and RMs, and, for the policy, its pools, Best-of-N and PPO runs; no other lineage's step. A
    lineage the study does not have, or a value its config refuses, is one line before any work."""
    from rlexp.job_graph import run_jobs
    from rlexp.runtime import compose_task
    from rlexp.tasks.study import StudyPlan, study_jobs

    light = "model.tiny.sft_epochs=0.75"  # the quick study's own lighter lineages set 0.5 for both

    def steps(lineage: str) -> dict:
        cfg = compose_task("study", ["experiment=quick", "logger=none", f"+study.lineage_overrides.{lineage}=['{light}']"])
        found: dict = {}
        run_jobs(study_jobs(StudyPlan(cfg)), lambda step: (f"{len(found):016x}", None), 1,
                 decided=lambda step: found.setdefault(step.key, step) and None)
        return found

    for lineage, other in (("tiny_qwen", "tiny_llama"), ("tiny_llama", "tiny_qwen")):
        found = steps(lineage)
        has = {key for key, step in found.items() if light in step.overrides}
        assert "lineage/" + lineage in has and "lineage/" + other not in has
        assert {k for k in found if k.startswith(f"train_rm/{lineage}/")} <= has
        assert not has & {k for k in found if k.startswith(f"train_rm/{other}/")}
        # tiny_llama is the quick study's policy: every pool, Best-of-N and PPO step reads it.
        policy_steps = {k for k in found if k.split("/", 1)[0] in ("sample", "bon", "ppo")}
        assert policy_steps and ((policy_steps <= has) if lineage == "tiny_llama" else not policy_steps & has)
        assert not has & {k for k in found if k.startswith(("evaluate/", "correlate"))}

    out = _study("+study.lineage_overrides.tiny_gpt=['model.tiny.sft_epochs=0.5']")
    assert out.returncode == 2 and out.stderr.strip().count("\n") == 0
    assert "study.lineage_overrides.tiny_gpt: not a lineage of the study" in out.stderr
    out = _study("+study.lineage_overrides.tiny_qwen=['model.tiny.sft_epoch=0.5']")
    assert out.returncode == 2 and out.stderr.strip().count("\n") == 0
    assert "study.lineage_overrides.tiny_qwen" in out.stderr and "sft_epoch" in out.stderr
    assert not (root / "runs").exists()


def test_step_ledger_decides_steps_whose_record_exists(tmp_path: Path) -> None:
    """A step run before (same code and configs) whose record is still stored is answered from the
    ledger; another override, a deleted record, a disabled ledger all send the step to a worker."""
    from rlexp.step_ledger import StepLedger
    from rlexp.store import Record, Store
    from rlexp.tasks.study_plan import Step

    store = Store(tmp_path / "runs")
    step = Step("evaluate", "evaluate/x/none", ["paths.root=/a", "logger=none", "rm=abc", "profile=none"])
    pool = Step("pool", "sample/p", ["rm=abc", "prompts=general"], compose="bon")
    ledger = StepLedger(store)
    assert ledger.cached(step) is None
    store.put(Record(id="e" * 16, task="evaluate", config={}))
    store.put(Record(id="s" * 16, task="sample", config={}))
    ledger.remember([step, pool], {step.key: ("e" * 16, None), pool.key: ("s" * 16, None), "other": (None, "failed")})
    again = StepLedger(store)  # read back from <store>/cache/study/
    assert again.cached(step) == "e" * 16 and again.cached(pool) == "s" * 16
    # Where files go and how it logs change no record: still the same step.
    moved = Step("evaluate", "evaluate/x/none", ["paths.root=/b", "logger=wandb", "rm=abc", "profile=none", "progress=true"])
    assert again.cached(moved) == "e" * 16
    assert again.cached(Step("evaluate", "evaluate/x/none", ["rm=abc", "profile=planner"])) is None
    assert StepLedger(store, enabled=False).cached(step) is None
    store.record_path("evaluate", "e" * 16).unlink()
    assert StepLedger(store).cached(step) is None


def test_every_step_of_the_default_study_builds_from_its_needs(root: Path) -> None:
    """The job graph of `make study` (no training): every job's needs are jobs, every job builds a
    step once given record ids, and the gold-judge PPO runs name their judge, not an RM."""
    from rlexp.job_graph import run_jobs
    from rlexp.runtime import compose_task
    from rlexp.tasks.study import StudyPlan, study_jobs

    plan = StudyPlan(compose_task("study", ["experiment=sandbox_study", "logger=none"]))
    jobs = study_jobs(plan)
    kinds = [j.key.split("/", 1)[0] for j in jobs]
    # Two pools: PPO's baseline is BoN's pool (baseline_samples = BoN's n), so it is sampled once.
    assert kinds.count("lineage") == 2 and kinds.count("train_rm") == 12 and kinds.count("sample") == 2
    assert kinds.count("ppo") == 14 and kinds.count("evaluate") == 36 and kinds.count("bon") == 24
    steps = {}
    out = run_jobs(jobs, lambda step: (f"{len(steps):016x}", None), 1, decided=lambda step: steps.setdefault(step.key, step) and None)
    assert all(rid for rid, _ in out.values()) and len(steps) == len(jobs)
    upper = steps["ppo/upper_bound/general"].overrides
    assert "rm=judge:verifier" in upper and not any(o.startswith("rm=0") for o in upper)
    bon = steps["bon/train_rm/tiny_qwen/personal/e1/personalized"].overrides
    assert sum(o.startswith("rm=") for o in bon) == 1
    # The study's pools draw among the kept tokens (the quick study keeps transformers' full draw).
    drawn = [s for k, s in steps.items() if k.split("/", 1)[0] in ("sample", "bon", "ppo")]
    assert len(drawn) == 2 + 24 + 14 and all("sampling.draw=kept" in s.overrides for s in drawn)
    # Long kinds first: the policy lineage, then the pools, then the RMs, the longest PPO runs before evaluation.
    assert jobs[0].key == "lineage/tiny_llama" and kinds.index("sample") < kinds.index("train_rm") < kinds.index("ppo")
    assert kinds.index("ppo") < kinds.index("evaluate") < kinds.index("bon")


def test_a_second_seed_adds_only_its_own_steps(root: Path) -> None:
    """`study.seeds=[0,1]` on the quick grid (two mixes, general prompts): every record of the one-seed
    study is one of the two-seed study's (seed 0's steps are cache hits), and seed 1 adds its own four
    RMs, their evaluations and Best-of-N runs, the two PPO picks and their baseline pool. Stand-ins for
    the record ids are hashed from each step's composed config as the store hashes it (the records a
    step reads are named in its config by id), without training anything."""
    from omegaconf import OmegaConf

    from rlexp.job_graph import run_jobs
    from rlexp.runtime import compose_task
    from rlexp.store import record_id
    from rlexp.tasks.study import Step, StudyPlan, study_jobs

    def record_ids(*overrides: str) -> dict[str, str]:
        grid = ["experiment=quick", "logger=none", "study.mixes=[general,personal]", "study.prompt_sets=[general]",
                "study.extra_benchmarks=[]", "study.eval_profiles=[planner]", *overrides]
        plan = StudyPlan(compose_task("study", grid))

        def would_write(step: Step) -> tuple[str, None]:  # the id a step's record gets (its inputs are in rm=...)
            return record_id(step.task, OmegaConf.to_container(step.config(), resolve=True)), None

        return {key: str(rid) for key, (rid, _) in run_jobs(study_jobs(plan), would_write, 1).items()}

    one, two = set(record_ids().values()), record_ids("study.seeds=[0,1]")
    assert one <= set(two.values())
    added = [key for key, rid in two.items() if rid not in one]
    assert sorted(k.split("/", 1)[0] for k in added) == sorted(["train_rm"] * 4 + ["evaluate"] * 4 + ["bon"] * 4
                                                              + ["ppo"] * 2 + ["sample"])
    assert all(k.endswith("/s1") or "/s1/" in k for k in added)


def test_ppo_seeds_add_ppo_runs_only(root: Path) -> None:
    """`study.ppo_seeds=[0,1,2]` on the quick grid with its upper bound: seed 0's PPO runs are the
    one-seed study's records, and seeds 1 and 2 add only PPO runs (the two picks and the upper bound,
    each seed's) and their baseline pool; the RMs, evaluations and Best-of-N stay as they were.
    Combined with `study.seeds`, or empty, it is one line before any work."""
    from omegaconf import OmegaConf

    from rlexp.job_graph import run_jobs
    from rlexp.runtime import compose_task
    from rlexp.store import record_id
    from rlexp.tasks.study import Step, StudyPlan, study_jobs

    def record_ids(*overrides: str) -> dict[str, str]:
        grid = ["experiment=quick", "logger=none", "study.mixes=[general,personal]", "study.prompt_sets=[general]",
                "study.extra_benchmarks=[]", "study.eval_profiles=[planner]", "study.ppo_upper_bound=true", *overrides]
        plan = StudyPlan(compose_task("study", grid))

        def would_write(step: Step) -> tuple[str, None]:
            return record_id(step.task, OmegaConf.to_container(step.config(), resolve=True)), None

        return {key: str(rid) for key, (rid, _) in run_jobs(study_jobs(plan), would_write, 1).items()}

    one, three = record_ids(), record_ids("study.ppo_seeds=[0,1,2]")
    assert set(one.values()) <= set(three.values())
    added = sorted(key for key, rid in three.items() if rid not in set(one.values()))
    assert [k.split("/", 1)[0] for k in added] == ["ppo"] * 6 + ["sample"] * 2
    assert sorted(k.rsplit("/", 1)[-1] for k in added) == ["s1"] * 4 + ["s2"] * 4
    assert {three["ppo/upper_bound/general/s0"], three["ppo/train_rm/tiny_llama/personal/e1/general/s0"]} <= set(one.values())

    for bad, says in (("study.ppo_seeds=[]", "study.ppo_seeds is empty"),
                      ("study.ppo_seeds=[1,1]", "study.ppo_seeds repeats a seed"),
                      ("study.seeds=[0,1] study.ppo_seeds=[0,1]", "study.ppo_seeds and study.seeds together")):
        out = _study("experiment=quick", *bad.split())
        assert out.returncode == 2 and out.stderr.strip().count("\n") == 0 and says in out.stderr, out.stderr
    assert not (root / "runs" / "records").exists()


def test_record_ids_that_read_as_numbers_reach_the_steps_as_strings(root: Path) -> None:
    """About one record id in a thousand is digits and one `e` (3476e31901852042), which Hydra reads as
    a float (`inf`) when unquoted: the study quotes every id it passes (each RM to its evaluations,
    Best-of-N and PPO runs; the records to correlate), and a hand-typed one gets a hint."""
    from rlexp.job_graph import run_jobs
    from rlexp.runtime import compose_task, quote
    from rlexp.tasks.study import StudyPlan, study_jobs

    plan = StudyPlan(compose_task("study", ["experiment=quick", "logger=none"]))
    ids, rms = {}, {}

    def run(step):
        ids[step.key] = f"{len(ids):04d}e{len(ids):011d}"
        cfg = step.config()
        if step.task in ("evaluate", "bon", "ppo"):
            rms[step.key] = str(cfg.rm)
        return ids[step.key], None

    out = run_jobs(study_jobs(plan), run, 1)
    assert all(rid for rid, _ in out.values())
    trained = {v for k, v in ids.items() if k.startswith("train_rm/")}
    readers = {k: v for k, v in rms.items() if not v.startswith("judge:")}
    assert len(readers) > 10 and set(readers.values()) <= trained
    corr = compose_task("correlate", ["logger=none", f"records=[{','.join(map(quote, sorted(trained)))}]"])
    assert list(corr.records) == sorted(trained)

    bon = subprocess.run(rlexp_cmd("bon", "logger=none", "rm=3476e31901852042"), capture_output=True, text=True, timeout=120)
    assert bon.returncode == 2 and "quote it, rm='3476e31901852042'" in bon.stderr, bon.stderr


@pytest.mark.parametrize("value", ["3476e31901852042", "judge:rubric", "/a b/c", "it's", "a\\b", "a\\", "a\\'b", "a\\\\b"])
def test_quote_keeps_every_value_as_hydra_reads_it(value: str) -> None:
    """`quote` makes any string an override value Hydra reads back unchanged (quotes and the backslashes
    Hydra treats as escapes included), not only record ids."""
    from rlexp.runtime import compose_task, quote

    assert compose_task("ppo", ["logger=none", f"rm={quote(value)}"]).rm == value


def test_no_worker_is_one_line(root: Path) -> None:
    out = _study("study.n_jobs=0")
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "study.n_jobs=0: needs at least 1 worker" in out.stderr
    assert not (root / "runs").exists()
