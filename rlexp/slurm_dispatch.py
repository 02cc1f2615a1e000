"""`study.launcher=slurm`: each step of a study is one SLURM job, submitted through submitit.

The parent process plans, builds each step from the record ids its needs produced and dispatches it
the moment they exist, exactly as with local workers (:mod:`rlexp.job_graph`); only where a step runs
changes. No SLURM ``--dependency`` is used: the parent waits on results, so a failed or cancelled job
fails only the steps that need it, and its summary line carries the job id and the last line of the
job's log.

A rerun must not submit a step twice. Each submission is written to ``<folder>/jobs/<step id>.json``
(the step ledger's fingerprint of the step): a rerun after the parent was killed finds a step that
is still pending or running and waits on that job again, and takes the result of one that finished
meanwhile. A step whose job failed, was cancelled or was forgotten by SLURM, or that was submitted by other code
(rlexp's code and configs, as the step ledger fingerprints them), is submitted anew.

Each kind of step (the first part of its key: lineage, train_rm, evaluate, sample, bon, ppo) asks for
``study.resources.<kind>``. A step with more than one GPU runs its
task under ``accelerate launch`` inside its allocation, with the DeepSpeed preset its overrides name.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rlexp.errors import ConfigError
from rlexp.step_ledger import code_fingerprint

log = logging.getLogger("rlexp")

Result = tuple[str | None, str | None]
# SLURM states of a job that may still write its result: wait on it rather than submit again.
LIVE_STATES = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "REQUEUED", "RESIZING", "SUSPENDED", "PREEMPTED"}
# Steps that are task modules with a CLI (`python -m rlexp.tasks.<task>`), so they can run under accelerate.
ACCELERATE_TASKS = {"train_rm", "evaluate", "sample", "bon", "ppo"}
ACCELERATE_CONFIGS = Path(__file__).resolve().parents[1] / "launch" / "accelerate"


def kind_of(key: str) -> str:
    """The kind of a study step: its key up to the first "/" (``train_rm/tiny_llama/general/e1``)."""
    return key.split("/", 1)[0]


def _run(command: list[str], step: str, what: str) -> str:
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise ConfigError(f"{what}: `{command[0]}` is not on PATH; run where SLURM's commands are (a login node)") from None
    except subprocess.TimeoutExpired:
        raise ConfigError(f"{what}: `{' '.join(command)}` did not answer in 60 s ({step})") from None
    if proc.returncode != 0:
        last = next((ln for ln in reversed(proc.stderr.splitlines()) if ln.strip()), f"exit code {proc.returncode}")
        raise ConfigError(f"{what}: cannot reach the SLURM controller ({step}): {last.strip()}")
    return proc.stdout


def check_submission(what: str = "study.launcher=slurm") -> set[str]:
    """The cluster's partitions, or one line saying why this machine cannot submit SLURM jobs:
    submitit missing, SLURM's commands not on PATH, a controller that does not answer."""
    try:
        import submitit  # noqa: F401
    except ImportError:
        raise ConfigError(f"{what} needs submitit: pip install -e '.[slurm]'") from None
    for command in ("sbatch", "srun"):
        if shutil.which(command) is None:
            raise ConfigError(f"{what}: `{command}` is not on PATH; run where SLURM's commands are (a login node), "
                              "or launch on this machine (study.launcher=local, hydra/launcher=joblib_cpu)")
    return {p.strip().rstrip("*") for p in _run(["sinfo", "-h", "-o", "%P"], "sinfo", what).split()}


def preflight(resources: Mapping[str, Any], kinds: Sequence[str]) -> None:
    """One line, before anything is built, when this machine cannot submit the study's jobs
    (:func:`check_submission`), a partition the cluster does not have, or a ``study.resources`` entry
    for a kind of step the study does not have."""
    unknown = sorted(set(resources) - set(kinds))
    if unknown:
        raise ConfigError(f"study.resources.{unknown[0]}: not a kind of study step (kinds: {', '.join(kinds)})")
    partitions = check_submission()
    for kind, res in resources.items():
        if res.partition and res.partition not in partitions:
            raise ConfigError(f"study.resources.{kind}.partition={res.partition}: no such SLURM partition "
                              f"(sinfo lists: {', '.join(sorted(partitions)) or 'none'})")


def accelerate_command(step: Any, gpus: int) -> list[str]:
    """The command that runs ``step``'s task on ``gpus`` processes: the DeepSpeed preset its overrides
    name (``deepspeed=zero2``) picks the accelerate config in ``launch/accelerate/`` when there is one."""
    preset = next((o.split("=", 1)[1] for o in reversed(step.overrides) if o.startswith("deepspeed=")), None)
    config = ACCELERATE_CONFIGS / f"{preset}.yaml"
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", str(gpus)]
    if preset and config.is_file():
        cmd += ["--config_file", str(config)]
    return [*cmd, "-m", f"rlexp.tasks.{step.task}", *step.overrides]


def on_node(run: Callable[[Any], Result], step: Any, gpus: int) -> Result:
    """What a SLURM job runs. With several GPUs the task runs under ``accelerate launch`` first, then
    ``run`` finds the record it wrote (a task with its record makes nothing again) and returns its id."""
    if gpus > 1 and step.task in ACCELERATE_TASKS:
        code = subprocess.run(accelerate_command(step, gpus)).returncode
        if code != 0:
            return None, f"accelerate launch of {step.task} on {gpus} GPUs exited with code {code} (see the job's log)"
    return run(step)


def _last_line(job: Any) -> str:
    for path in (job.paths.stderr, job.paths.stdout):
        try:
            lines = [ln.strip() for ln in Path(path).read_text(errors="replace").splitlines() if ln.strip()]
        except OSError:
            continue
        if lines:
            return lines[-1][:300]
    return "no log"


class SlurmDispatcher:
    """A :class:`rlexp.job_graph.Dispatcher` that runs each payload (a study ``Step``) as a SLURM job."""

    def __init__(self, run: Callable[[Any], Result], resources: Mapping[str, Any], folder: str | Path,
                 identity: Callable[[Any], str], max_in_flight: int = 64, poll_s: float = 2.0) -> None:
        import submitit

        self.submitit = submitit
        self.run, self.resources, self.identity = run, resources, identity
        self.slots, self.poll_s = int(max_in_flight), float(poll_s)
        self.folder = Path(folder)
        self.logs = self.folder / "logs" / "%j"
        (self.folder / "jobs").mkdir(parents=True, exist_ok=True)
        self.jobs: dict[str, Any] = {}  # job id -> submitit job
        self.submitted: list[str] = []  # job ids this dispatcher submitted (not found again)
        self.found: list[str] = []  # job ids of earlier runs it waited on again
        self.refused: dict[str, Result] = {}  # steps sbatch would not take
        self.code = code_fingerprint()

    def _entry(self, step: Any) -> Path:
        return self.folder / "jobs" / f"{self.identity(step)}.json"

    def _again(self, step: Any) -> Any | None:
        """The job an earlier run submitted for ``step`` when it is still live or finished with a record."""
        try:
            entry = json.loads(self._entry(step).read_text())
        except (OSError, ValueError):
            return None
        if entry.get("code") != self.code:  # submitted by other code: its record may not be this code's
            return None
        job = self.submitit.SlurmJob(folder=entry.get("logs", self.logs), job_id=str(entry["job_id"]))
        if job.paths.result_pickle.exists():
            try:
                result = job.result()
            except Exception:
                return None
            return job if isinstance(result, tuple) and result and result[0] else None
        job.watcher.update()
        return job if job.watcher.get_state(job.job_id, mode="cache").upper() in LIVE_STATES else None

    def submit(self, key: str, payload: Any) -> Hashable:
        job = self._again(payload)
        if job is not None:
            log.info("study: %s: SLURM job %s of an earlier run found again", key, job.job_id)
            self.found.append(job.job_id)
        else:
            res = self.resources[kind_of(key)]
            executor = self.submitit.AutoExecutor(folder=self.logs, cluster="slurm")
            params: dict[str, Any] = {
                "name": f"rlexp-{payload.task}-{self.identity(payload)[:8]}",
                "timeout_min": int(res.time_min),
                "cpus_per_task": int(res.cpus),
                "mem_gb": float(res.mem_gb),
                "nodes": 1,
                "tasks_per_node": 1,
                "slurm_additional_parameters": {str(k): str(v) for k, v in dict(res.sbatch).items()},
            }
            if int(res.gpus):
                params["gpus_per_node"] = int(res.gpus)
            if res.partition:
                params["slurm_partition"] = str(res.partition)
            executor.update_parameters(**params)
            try:
                job = executor.submit(on_node, self.run, payload, int(res.gpus))
            except Exception as exc:  # sbatch refused it (a bad option, a limit): this step fails, the rest go on
                message = next((ln for ln in reversed(str(exc).splitlines()) if ln.strip()), type(exc).__name__)
                handle = f"refused:{key}"
                self.refused[handle] = (None, f"sbatch refused it: {message.strip()[:300]}")
                return handle
            self.submitted.append(job.job_id)
            entry = {"job_id": job.job_id, "key": key, "logs": str(self.logs), "code": self.code, "submitted": time.time()}
            tmp = self._entry(payload).with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(entry))
            os.replace(tmp, self._entry(payload))
            log.info("study: %s: SLURM job %s", key, job.job_id)
        self.jobs[job.job_id] = job
        return job.job_id

    def _result(self, job: Any) -> Result:
        if job.paths.result_pickle.exists():
            try:
                return job.result()
            except Exception as exc:  # the job raised (an import failed on the node, ...)
                last = next((ln for ln in reversed(str(exc).splitlines()) if ln.strip()), type(exc).__name__)
                return None, f"slurm job {job.job_id} failed: {last.strip()[:300]}"
        state = job.watcher.get_state(job.job_id, mode="cache")
        return None, f"slurm job {job.job_id} {state.split()[0].lower()}: {_last_line(job)}"

    def wait(self, handles: Sequence[Hashable]) -> list[tuple[Hashable, Result]]:
        watcher = self.submitit.SlurmJob.watcher
        refused = [(h, self.refused.pop(str(h))) for h in handles if str(h) in self.refused]
        if refused:
            return refused
        while True:
            done = []
            for handle in handles:
                job = self.jobs[str(handle)]
                if job.paths.result_pickle.exists() or watcher.is_done(job.job_id, mode="cache"):
                    done.append(handle)
            if done:
                return [(h, self._result(self.jobs.pop(str(h)))) for h in done]
            time.sleep(self.poll_s)
            watcher.update()  # one sacct call for every job in flight

    def abort(self) -> None:
        if self.jobs:
            ids = " ".join(sorted(self.jobs))
            log.warning("study: %d SLURM job(s) still queued or running (%s); a rerun waits on them again "
                        "instead of submitting them twice; `scancel %s` stops them", len(self.jobs), ids, ids)
