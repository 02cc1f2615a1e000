"""Run jobs that wait on other jobs' records, each as soon as what it needs exists.

The study used to run in stages with a barrier between them, and one of its two cores idled at
every barrier while the stage's longest job finished (80 s at the lineage barrier alone: the
policy lineage trains twice the SFT epochs of the other). Here a job declares the keys of the jobs
whose records it needs; it is built (``build`` turns those record ids into its payload) and
dispatched the moment they exist, so a reward model of one lineage trains while the other lineage
is still being built. Among the jobs that are ready, the one listed first runs first: callers list
long jobs before short ones so the run does not end on one long job.

A job whose need failed is not run, and its result says which need failed; a payload that
``decided`` already knows the record of is never dispatched.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from typing import Any

from rlexp.errors import ConfigError

Result = tuple[str | None, str | None]  # (record id, error)


@dataclass
class Job:
    """``key`` names the job; ``needs`` the keys whose record ids ``build`` receives."""

    key: str
    needs: tuple[str, ...]
    build: Callable[[Mapping[str, str]], Any]


def run_jobs(
    jobs: Sequence[Job],
    run: Callable[[Any], Result],
    n_jobs: int,
    *,
    decided: Callable[[Any], str | None] = lambda _payload: None,
    started: Callable[[str], None] = lambda _key: None,
    finished: Callable[[str, Any, Result], None] = lambda _key, _payload, _result: None,
) -> dict[str, Result]:
    """Every job's result by key. ``run`` executes a payload in a worker process (loky) when
    ``n_jobs > 1``, else in this process; it must be picklable and must not raise."""
    known = {j.key for j in jobs}
    if len(known) != len(jobs):
        raise ValueError("run_jobs: two jobs share a key")
    for job in jobs:
        unknown = [k for k in job.needs if k not in known]
        if unknown:
            raise ValueError(f"run_jobs: job {job.key!r} needs {unknown[0]!r}, which is not a job")
    rank = {j.key: i for i, j in enumerate(jobs)}
    results: dict[str, Result] = {}
    waiting = list(jobs)
    queue: list[tuple[Job, Any]] = []  # built, not yet dispatched

    def settle() -> None:
        """Build every job whose needs are done; skip those with a failed need or a known record."""
        changed = True
        while changed:
            changed = False
            for job in [j for j in waiting if all(k in results for k in j.needs)]:
                waiting.remove(job)
                changed = True
                failed = next((k for k in job.needs if not results[k][0]), None)
                if failed is not None:
                    results[job.key] = (None, f"not run: {failed} failed")
                    continue
                payload = job.build({k: str(results[k][0]) for k in job.needs})
                rid = decided(payload)
                if rid:
                    results[job.key] = (rid, None)
                else:
                    queue.append((job, payload))
        queue.sort(key=lambda item: rank[item[0].key])

    def record(job: Job, payload: Any, result: Result) -> None:
        results[job.key] = result
        finished(job.key, payload, result)

    settle()
    if n_jobs <= 1:
        while queue:
            job, payload = queue.pop(0)
            started(job.key)
            record(job, payload, run(payload))
            settle()
    else:
        _run_in_workers(queue, run, n_jobs, started, record, settle)
    for job in waiting:  # only a cycle of needs leaves a job here
        results[job.key] = (None, "not run: its needs wait on each other")
    return results


def _run_in_workers(queue: list[tuple[Job, Any]], run: Callable[[Any], Result], n_jobs: int,
                    started: Callable[[str], None], record: Callable[[Job, Any, Result], None],
                    settle: Callable[[], None]) -> None:
    """Run the ``queue`` in ``n_jobs`` loky workers; ``settle`` refills it as jobs finish."""
    from joblib.externals.loky import get_reusable_executor

    # Set before the workers start, which inherit it: a worker stopped mid-step (Ctrl-C) leaves
    # semaphores (tqdm's lock) that the stdlib's resource tracker frees at exit, warning on stderr
    # after the study's one-line message; the freeing is what matters.
    quiet = "ignore:resource_tracker:UserWarning"
    if quiet not in os.environ.get("PYTHONWARNINGS", ""):
        os.environ["PYTHONWARNINGS"] = ",".join(filter(None, (os.environ.get("PYTHONWARNINGS"), quiet)))
    running: dict[Future[Result], tuple[Job, Any]] = {}
    executor = None
    try:
        while queue or running:
            while queue and len(running) < n_jobs:
                job, payload = queue.pop(0)
                started(job.key)
                # Asked each time: after a worker died, loky hands out a fresh executor.
                executor = get_reusable_executor(max_workers=n_jobs)
                running[executor.submit(run, payload)] = (job, payload)
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                job, payload = running.pop(future)
                try:
                    result = future.result()
                except Exception as exc:  # a worker that died (killed, out of memory) fails its job only
                    result = (None, f"worker failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
                record(job, payload, result)
            settle()
    except BaseException:
        # Ctrl-C (or a failure here): the running steps stop as if killed (each resumes on the next
        # run); otherwise the interpreter would wait at exit for steps that may take minutes.
        if executor is not None:
            executor.shutdown(wait=False, kill_workers=True)
        raise


def worker_count(n_jobs: int | None, setting: str = "n_jobs", per_worker_gib: float = 2.0) -> int:
    """``n_jobs`` worker processes, or with None as many as this machine runs side by side: its usable
    cores (joblib's count, which honours CPU affinity and cgroup CPU quotas, as under SLURM or in a
    container), at most one per ``per_worker_gib`` of available memory (a sandbox study worker peaks
    at about 1 GiB). ``setting`` names the option in the error for a count below 1."""
    if n_jobs is not None:
        if int(n_jobs) < 1:
            raise ConfigError(f"{setting}={n_jobs}: needs at least 1 worker process, or null for one per usable core")
        return int(n_jobs)
    import joblib
    import psutil

    memory = int(psutil.virtual_memory().available / 2**30 // per_worker_gib)
    return max(1, min(joblib.cpu_count(), memory))


class KindClock:
    """Logs each kind of job (its key up to the first "/": lineage, train_rm, ppo, ...) when the last
    one of that kind ends: how many ran, from when to when, how many failed."""

    def __init__(self, jobs: Sequence[Job], log: logging.Logger, prefix: str) -> None:
        self.log, self.prefix = log, prefix
        self.t0 = time.time()
        self.left = Counter(self.kind(j.key) for j in jobs)
        self.first: dict[str, float] = {}
        self.ran: Counter[str] = Counter()
        self.failed: Counter[str] = Counter()
        self.done: set[str] = set()

    @staticmethod
    def kind(key: str) -> str:
        return key.split("/", 1)[0]

    def started(self, key: str) -> None:
        self.first.setdefault(self.kind(key), time.time() - self.t0)

    def finished(self, key: str, result: Result, dispatched: bool = True) -> None:
        kind = self.kind(key)
        self.done.add(key)
        self.left[kind] -= 1
        self.ran[kind] += dispatched
        if result[1]:
            self.failed[kind] += 1
            self.log.error("%s: %s failed: %s", self.prefix, key, result[1])
        if self.left[kind] == 0 and self.ran[kind]:
            self.log.info("%s: %s: %d step(s) ran from %.1fs to %.1fs (%d failed)", self.prefix, kind, self.ran[kind],
                          self.first.get(kind, 0.0), time.time() - self.t0, self.failed[kind])
