"""The study parent's own cost per dispatched step on a grid of about 1,000 steps (issue 61's bound:
under 50 ms a step, so that a paper grid on SLURM is bounded by the cluster, not by rlexp).

It plans the quick preset's grid over 28 training seeds (StudyPlan, every step built, one step of each
task through the typed nodes' checks), then runs every step through the job graph against a fake
executor that finishes each job the moment it is waited on: what remains is the parent's planning,
building, ledger look-ups and writes, and its bookkeeping per poll. Nothing trains; no record is
written but the step ledger's.

    .venv/bin/python perf/study_dispatch_overhead.py [--seeds 28]
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Hashable, Sequence
from typing import Any

from _common import compose, use_root


class FakeCluster:
    """A job graph dispatcher whose jobs finish at once, each with a made-up record id."""

    slots = 64

    def __init__(self) -> None:
        self.count = itertools.count()
        self.submitted = 0

    def submit(self, key: str, payload: Any) -> Hashable:
        self.submitted += 1
        return next(self.count)

    def wait(self, handles: Sequence[Hashable]) -> list[tuple[Hashable, tuple[str | None, str | None]]]:
        return [(h, (f"{int(h):016x}", None)) for h in handles]

    def abort(self) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=28)
    args = parser.parse_args()
    use_root("dispatch_overhead")
    from rlexp.tasks.study import StudyPlan, check_steps, study_jobs

    seeds = ",".join(str(s) for s in range(args.seeds))
    t0 = time.perf_counter()
    plan = StudyPlan(compose("study", "experiment=quick", f"study.seeds=[{seeds}]", "study.step_ledger=true"))
    jobs = study_jobs(plan)
    check_steps(jobs)
    planned = time.perf_counter() - t0
    fake = FakeCluster()
    t1 = time.perf_counter()
    results = plan.run(jobs, where=fake)
    dispatched = time.perf_counter() - t1
    assert fake.submitted == len(jobs) == len(results), (fake.submitted, len(jobs))
    per_step = 1000 * (planned + dispatched) / len(jobs)
    print(f"steps: {len(jobs)}")
    print(f"planning (StudyPlan, building the jobs, checking one step per task): {planned:.2f} s")
    print(f"dispatching through the job graph (build, ledger look-up and write, bookkeeping): {dispatched:.2f} s")
    print(f"parent overhead per step: {per_step:.1f} ms (bound: 50 ms) -> {'within' if per_step < 50 else 'OVER'}")


if __name__ == "__main__":
    main()
