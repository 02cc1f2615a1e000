"""What every task run shares: environment set-up, the record lifecycle, the Hydra entry point.

A task file defines ``run(cfg) -> Record`` that resolves its inputs, then calls :func:`execute`
with a body that does the work. ``execute`` computes the record id, skips the work when the record
exists (unless ``force=true``), opens tracking, and writes the record only after the body
succeeded, so a crashed or killed run leaves no record.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from rlexp.config import CONF_DIR, check_config
from rlexp.errors import ConfigError, DamagedRecord, RlexpError, rlexp_cause
from rlexp.store import Record, Store, git_commit, library_versions, record_id
from rlexp.tracking import Tracker, redact, track

log = logging.getLogger("rlexp")


def setup_environment(cfg: DictConfig) -> None:
    """Point every cache inside the project's cache folder and cap threads before heavy imports."""
    cache = Path(cfg.paths.cache).expanduser()
    defaults = {
        "HF_HOME": cache / "huggingface",
        "TORCH_EXTENSIONS_DIR": cache / "torch_extensions",
        "TRITON_CACHE_DIR": cache / "triton",
        "MPLCONFIGDIR": cache / "matplotlib",
    }
    for var, path in defaults.items():
        os.environ.setdefault(var, str(path))
    # Nothing can be downloaded at run time; fail fast instead of retrying the hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    threads = int(cfg.runtime.threads) if "runtime" in cfg else 0
    if threads > 0:
        os.environ["OMP_NUM_THREADS"] = str(threads)
        if "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(threads)


def output_dir(cfg: DictConfig, task: str, rid: str) -> Path:
    """Hydra's job folder for the job's own task; a stable per-record folder for a task run
    on behalf of another one (an input built on first use, a study step) or without Hydra."""
    from hydra.core.hydra_config import HydraConfig

    if HydraConfig.initialized() and HydraConfig.get().job.config_name == task:
        return Path(HydraConfig.get().runtime.output_dir)
    return Path(cfg.paths.output_root).expanduser() / task / "direct" / rid


@dataclass
class RunContext:
    """Handed to a task body: where to write, how to log."""

    task: str
    rid: str
    cfg: DictConfig
    store: Store
    work_dir: Path  # the record's artifact folder in the store (also holds checkpoints)
    out_dir: Path  # the job's output folder (logs, W&B)
    tracker: Tracker
    artifacts: dict[str, str] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)

    def add_artifact(self, name: str, path: Path) -> None:
        self.artifacts[name] = self.store.relative(path)

    @property
    def progress(self) -> bool:
        return bool(self.cfg.get("progress", True)) and sys.stderr.isatty()


Body = Callable[[RunContext], Mapping[str, Any]]


def existing_record(task: str, cfg: DictConfig, inputs: Mapping[str, str] | None = None) -> Record | None:
    """The record :func:`execute` would return without running (the same id; None with
    ``force=true``): lets a task skip work it does before ``execute`` when its result is stored."""
    if bool(cfg.get("force", False)):
        return None
    rid = record_id(task, OmegaConf.to_container(cfg, resolve=True), dict(inputs or {}))
    return reusable(Store(cfg.paths.store), task, rid)


def reusable(store: Store, task: str, rid: str, set_aside: bool = False) -> Record | None:
    """The stored record ``rid`` when it is whole; None when there is none or it is damaged (its file
    no record, an artifact missing or cut short): the run makes it again, with the same result.
    ``set_aside`` (under the record's lock) moves a damaged one to ``<store>/damaged/`` first."""
    try:
        return store.intact(task, rid)
    except DamagedRecord as exc:
        if set_aside:
            moved = store.set_aside(task, rid)
            log.warning("%s: record %s is damaged (%s); set aside in %s, running it again", task, rid, exc.problem, moved)
        return None


def execute(task: str, cfg: DictConfig, body: Body, inputs: Mapping[str, str] | None = None) -> Record:
    """Run ``body`` once per distinct (config, inputs) and return its record."""
    setup_environment(cfg)
    store = Store(cfg.paths.store)
    store.ensure_writable()
    config = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(config, dict)
    inputs = dict(inputs or {})
    rid = record_id(task, config, inputs)
    force = bool(cfg.get("force", False))
    if not force and (found := reusable(store, task, rid)) is not None:
        log.info("%s: record %s exists, skipping (force=true redoes it)", task, rid)
        return found
    with store.lock(task, rid) as waited:
        # A second identical run waits for the first and reuses its record instead of redoing the work.
        if (not force or waited) and (found := reusable(store, task, rid, set_aside=True)) is not None:
            log.info("%s: record %s was written by a concurrent run; reusing it", task, rid)
            return found
        return _run_body(task, cfg, body, store, config, inputs, rid)


def _run_body(task: str, cfg: DictConfig, body: Body, store: Store, config: dict[str, Any], inputs: dict[str, str],
              rid: str) -> Record:
    out = output_dir(cfg, task, rid)
    work = store.artifact_dir(task, rid)
    work.mkdir(parents=True, exist_ok=True)
    try:
        return _tracked(task, cfg, body, store, config, inputs, rid, out, work)
    except BaseException:
        # A failed run leaves no empty artifact folder behind (a non-empty one holds checkpoints or
        # chunks that the next attempt resumes from).
        if work.is_dir() and not any(p.is_file() for p in work.rglob("*")):
            shutil.rmtree(work, ignore_errors=True)
        raise


def _tracked(task: str, cfg: DictConfig, body: Body, store: Store, config: dict[str, Any], inputs: dict[str, str],
             rid: str, out: Path, work: Path) -> Record:
    started = time.time()
    group = cfg.logger.get("group") or cfg.get("experiment_name")
    with track(
        cfg.logger,
        out_dir=out,
        job_type=task,
        name=f"{task}-{rid}",
        group=group,
        tags=list(cfg.get("tags", [])) + [str(cfg.get("experiment_name"))],
        config={**config, "record_id": rid, "inputs": inputs},
    ) as tracker:
        ctx = RunContext(task=task, rid=rid, cfg=cfg, store=store, work_dir=work, out_dir=out, tracker=tracker)
        metrics = dict(body(ctx))
        record = Record(
            id=rid,
            task=task,
            config=redact(config),
            inputs=inputs,
            metrics=metrics,
            artifacts=ctx.artifacts,
            info=ctx.info,
            started=started,
            ended=time.time(),
            git_commit=git_commit(),
            versions=library_versions(),
        )
        tracker.summary(metrics)
        store.put(record)
    log.info("%s: wrote record %s", task, rid)
    return record


def compose_task(task: str, overrides: list[str]) -> DictConfig:
    """A task's config, composed like `rlexp <task> overrides` would; a bad override (an unknown key,
    a wrong type, a value outside a choice) is a one-line ConfigError naming the task."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        if GlobalHydra.instance().is_initialized():
            return compose(task, overrides=overrides)
        with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
            return compose(task, overrides=overrides)
    except (HydraException, OmegaConfBaseException) as exc:
        own = rlexp_cause(exc)
        if own is not None:  # raised by a resolver (an empty RLEXP_ROOT): its own line
            raise own from None
        cause = f" {one_line(exc.__cause__)}" if exc.__cause__ is not None else ""
        raise ConfigError(f"{task}: {one_line(exc)}{cause}") from None


def quote(value: str) -> str:
    """An override value Hydra keeps as this very string. Unquoted, a record id of digits and one
    ``e`` (``3476e31901852042``, about one id in 1,300) is read as a number (``inf``). Inside quotes
    Hydra reads a backslash as an escape only before a quote or at the end, so only those double."""
    escaped = re.sub(r"(\\*)'", lambda m: m.group(1) * 2 + "\\'", str(value))
    return "'" + re.sub(r"(\\+)$", lambda m: m.group(1) * 2, escaped) + "'"


def report_error(task: str, exc: BaseException) -> None:
    """Print a task's error as one line on stderr."""
    print(f"rlexp {task}: error: {one_line(exc)}", file=sys.stderr)


def one_line(exc: BaseException) -> str:
    """Collapse an exception message (Hydra/OmegaConf ones are multi-line) into one line."""
    skip = ("full_key:", "object_type", "reference_type", "To append", "Set the environment variable")
    parts = [ln.strip() for ln in str(exc).splitlines() if ln.strip() and not ln.strip().startswith(skip)]
    return " ".join(parts) or type(exc).__name__


#: A failed sweep job's one-line error, in its job folder; the sweep's exit code counts these files.
JOB_ERROR = "error.txt"
# Writes that failed for want of space; libraries that wrap the OSError (pyarrow, torch) keep the text.
_NO_SPACE = {errno.ENOSPC: "No space left on device", errno.EDQUOT: "Disk quota exceeded",
             errno.EFBIG: "File too large"}


def no_space(exc: BaseException, root: object = None) -> RlexpError | None:
    """A write that failed for want of space (a full disk, a quota, a file size limit) as a one-line
    error naming the file (or, when the library that failed does not say, the ``root`` written
    under); None for any other exception."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        code = getattr(cur, "errno", None)
        reason = _NO_SPACE.get(code) if isinstance(code, int) else None
        reason = reason or next((text for text in _NO_SPACE.values() if text in str(cur)), None)
        if reason is not None:
            name = getattr(cur, "filename", None)
            where = f" while writing {name}" if name else f" while writing under {root}" if root else ""
            return RlexpError(f"{reason.lower()}{where}: free some space (or raise the limit) and rerun the same command")
        cur = cur.__cause__ or cur.__context__
    return None


class SweepOutcome(Callback):
    """Hydra callback (conf/base.yaml): after a sweep, the failed jobs (those that left a
    :data:`JOB_ERROR`) are counted, so the sweep's exit code says a job failed."""

    failed: tuple[int, int, Path] | None = None  # (failed jobs, jobs, sweep folder) of the last sweep

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        SweepOutcome.failed = None

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep = Path(str(config.hydra.sweep.dir))
        jobs = [p.parent for p in sweep.rglob(".hydra") if p.is_dir()]
        failed = [job for job in jobs if (job / JOB_ERROR).is_file()]
        SweepOutcome.failed = (len(failed), len(jobs), sweep) if failed else None


def _job_failed(task: str, exc: RlexpError, multirun: bool) -> None:
    """Report a task's error as one line; outside a sweep exit with its code, in one leave it in the
    job folder for :class:`SweepOutcome` and let the sweep go on with the other jobs."""
    from hydra.core.hydra_config import HydraConfig

    report_error(task, exc)
    if not multirun:
        sys.exit(exc.exit_code)
    out = Path(HydraConfig.get().runtime.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / JOB_ERROR).write_text(one_line(exc) + "\n")


def _check_slurm_sweep(task: str) -> None:
    """A sweep on Hydra's SLURM launcher from a machine that cannot submit is one line (exit 2), not
    the launcher's traceback once the sweep starts."""
    args = sys.argv[1:]
    launcher = next((a.split("=", 1)[1] for a in reversed(args) if a.lstrip("+").startswith("hydra/launcher=")), "")
    if launcher in ("slurm", "submitit_slurm") and ("-m" in args or "--multirun" in args):
        from rlexp.slurm_dispatch import check_submission

        try:
            check_submission(f"hydra/launcher={launcher}")
        except RlexpError as exc:
            report_error(task, exc)
            sys.exit(exc.exit_code)


def hydra_entry(task: str, run: Callable[[DictConfig], Any]) -> Callable[[], None]:
    """The entry of a task (``@hydra.main``): user errors, a full disk and Ctrl-C become one line.

    A user error exits 2, Ctrl-C 130 (``interrupted``; the same command resumes). In a multirun a
    failed job is reported and the sweep goes on with the other jobs; the sweep then exits 2 with a
    last line counting the failed jobs.
    """
    import hydra

    @hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name=task)
    def _main(cfg: DictConfig) -> Any:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        logging.basicConfig(level=logging.INFO, format="[%(name)s] %(message)s")
        multirun = HydraConfig.get().mode == RunMode.MULTIRUN
        try:
            # Every ``???`` left unset and every check of the typed nodes fails here, before any work
            # (a lineage build, say); the CLI ran them already, `python -m rlexp.tasks.<task>` did not.
            check_config(cfg)
            record = run(cfg)
        except RlexpError as exc:
            return _job_failed(task, exc, multirun)
        except Exception as exc:
            full = no_space(exc, OmegaConf.select(cfg, "paths.root"))
            if full is None:
                raise
            return _job_failed(task, full, multirun)
        if multirun:  # a job run again in the same sweep folder, successfully this time
            (Path(HydraConfig.get().runtime.output_dir) / JOB_ERROR).unlink(missing_ok=True)
        return record.id if isinstance(record, Record) else record

    def entry() -> None:
        SweepOutcome.failed = None
        _check_slurm_sweep(task)
        try:
            _main()
        except KeyboardInterrupt:
            # Records are written only when a run ends, so nothing half-done is kept as a result.
            print(f"rlexp {task}: interrupted (rerun the same command to resume)", file=sys.stderr)
            sys.exit(130)
        if SweepOutcome.failed is not None:
            failed, jobs, sweep = SweepOutcome.failed
            print(f"rlexp {task}: error: {failed} of {jobs} sweep jobs failed (each one's {JOB_ERROR} is under {sweep})",
                  file=sys.stderr)
            sys.exit(2)

    return entry
