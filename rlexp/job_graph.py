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

import itertools
import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import dataclass
from typing import Any, Protocol

from rlexp.errors import ConfigError

Result = tuple[str | None, str | None]  # (record id, error)


@dataclass
class Job:
    """``key`` names the job; ``needs`` the keys whose record ids ``build`` receives."""

    key: str
    needs: tuple[str, ...]
    build: Callable[[Mapping[str, str]], Any]


class Dispatcher(Protocol):
    """Where payloads run: this process, local worker processes, or a cluster (rlexp/slurm_dispatch.py).

    ``slots`` caps the payloads in flight; ``submit`` starts one and returns a handle; ``wait`` blocks
    until at least one handle in flight has finished and returns each finished one with its result
    (a payload that died is a failed result, never an exception); ``abort`` is called once when the
    run stops early (Ctrl-C, an error in the parent)."""

    slots: int

    def submit(self, key: str, payload: Any) -> Hashable: ...

    def wait(self, handles: Sequence[Hashable]) -> list[tuple[Hashable, Result]]: ...

    def abort(self) -> None: ...


def run_jobs(
    jobs: Sequence[Job],
    run: Callable[[Any], Result],
    n_jobs: int | Dispatcher,
    *,
    decided: Callable[[Any], str | None] = lambda _payload: None,
    started: Callable[[str], None] = lambda _key: None,
    finished: Callable[[str, Any, Result], None] = lambda _key, _payload, _result: None,
) -> dict[str, Result]:
    """Every job's result by key. ``run`` executes a payload in a worker process (loky) when
    ``n_jobs > 1``, else in this process; it must be picklable and must not raise. A
    :class:`Dispatcher` in place of ``n_jobs`` runs payloads wherever it runs them."""
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

    dispatcher = n_jobs if not isinstance(n_jobs, int) else InProcess(run) if n_jobs <= 1 else LocalWorkers(run, n_jobs)
    in_flight: dict[Hashable, tuple[Job, Any]] = {}
    settle()
    try:
        while queue or in_flight:
            while queue and len(in_flight) < dispatcher.slots:
                job, payload = queue.pop(0)
                started(job.key)
                in_flight[dispatcher.submit(job.key, payload)] = (job, payload)
            for handle, result in dispatcher.wait(list(in_flight)):
                job, payload = in_flight.pop(handle)
                results[job.key] = result
                finished(job.key, payload, result)
            settle()
    except BaseException:
        dispatcher.abort()
        raise
    for job in waiting:  # only a cycle of needs leaves a job here
        results[job.key] = (None, "not run: its needs wait on each other")
    return results


class InProcess:
    """Runs each payload in this process, one at a time, when it is waited for."""

    slots = 1

    def __init__(self, run: Callable[[Any], Result]) -> None:
        self.run = run
        self.pending: dict[int, Any] = {}
        self.count = itertools.count()

    def submit(self, key: str, payload: Any) -> Hashable:
        handle = next(self.count)
        self.pending[handle] = payload
        return handle

    def wait(self, handles: Sequence[Hashable]) -> list[tuple[Hashable, Result]]:
        handle = handles[0]
        return [(handle, self.run(self.pending.pop(handle)))]  # type: ignore[arg-type]

    def abort(self) -> None:
        self.pending.clear()


class LocalWorkers:
    """Runs payloads in ``n_jobs`` loky worker processes on this machine."""

    def __init__(self, run: Callable[[Any], Result], n_jobs: int) -> None:
        self.run, self.slots = run, n_jobs
        self.executor: Any = None
        # Set before the workers start, which inherit it: a worker stopped mid-step (Ctrl-C) leaves
        # semaphores (tqdm's lock) that the stdlib's resource tracker frees at exit, warning on stderr
        # after the study's one-line message; the freeing is what matters.
        quiet = "ignore:resource_tracker:UserWarning"
        if quiet not in os.environ.get("PYTHONWARNINGS", ""):
            os.environ["PYTHONWARNINGS"] = ",".join(filter(None, (os.environ.get("PYTHONWARNINGS"), quiet)))

    def submit(self, key: str, payload: Any) -> Hashable:
        from joblib.externals.loky import get_reusable_executor

        # Asked each time: after a worker died, loky hands out a fresh executor.
        self.executor = get_reusable_executor(max_workers=self.slots)
        return self.executor.submit(self.run, payload)

    def wait(self, handles: Sequence[Hashable]) -> list[tuple[Hashable, Result]]:
        done, _ = wait(handles, return_when=FIRST_COMPLETED)  # type: ignore[arg-type]
        out: list[tuple[Hashable, Result]] = []
        for future in done:
            try:
                result = future.result()
            except Exception as exc:  # a worker that died (killed, out of memory) fails its job only
                result = (None, f"worker failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
            out.append((future, result))
        return out

    def abort(self) -> None:
        # Ctrl-C (or a failure here): the running steps stop as if killed (each resumes on the next
        # run); otherwise the interpreter would wait at exit for steps that may take minutes.
        if self.executor is not None:
            self.executor.shutdown(wait=False, kill_workers=True)


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
