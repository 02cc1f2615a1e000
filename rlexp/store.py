"""The run store: one JSON record per task run, content-addressed, written atomically.

Layout under ``paths.store``::

    records/<task>/<id>.json      the record (exists only for a finished run)
    artifacts/<task>/<id>/...     files the run produced (checkpoints, parquet, models)
    cache/judge/responses.sqlite  a served judge's answers by request (read by every later run)
    damaged/<task>/<id>/          a record found damaged, set aside with its artifacts (deletable)

A record id is a hash of what determines the result: the task, its config minus keys that have no
effect on the result (paths, logging, progress bars, ...), and the ids of its inputs (:mod:`rlexp.record_hash`). The same config
in another process or on another machine gives the same id, so re-running finds it and skips the work.

A record is damaged when its file is no record (cut short, ``{}``) or an artifact it names is missing
or cut short (:mod:`rlexp.integrity`). Where rlexp would make that record it counts as absent (the
run sets it aside and makes it again, which gives the same result); a record a user names is refused
with one line (:class:`~rlexp.errors.DamagedRecord`) that says what to delete.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rlexp.errors import DamagedRecord, StoreError
from rlexp.integrity import artifact_problem, record_problem
from rlexp.record_hash import (  # noqa: F401 - re-exported: callers name them from rlexp.store
    HASH_NEUTRAL,
    NO_EFFECT_KEYS,
    canonical_json,
    content_hash,
    record_id,
    result_config,
)

SCHEMA_VERSION = 1


@dataclass
class Record:
    """What a finished task run leaves behind. Paths in ``artifacts`` are relative to the store."""

    id: str
    task: str
    config: dict[str, Any]
    inputs: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    started: float = 0.0
    ended: float = 0.0
    git_commit: str | None = None
    versions: dict[str, str] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True, default=str)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Record:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


class Store:
    """A directory of records and artifacts. Safe for concurrent writers (atomic renames)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        if not str(root).strip():  # Path("") is the working directory: records would land wherever one stands
            raise StoreError("the store path is empty (paths.store): name a folder")
        self.root = Path(root).expanduser().resolve()

    def ensure_writable(self) -> None:
        """Create the store or fail with one line naming the path."""
        try:
            (self.root / "records").mkdir(parents=True, exist_ok=True)
            probe = tempfile.NamedTemporaryFile(dir=self.root, prefix=".probe-", delete=True)
            probe.close()
        except OSError as exc:
            raise StoreError(f"store path {self.root} is not writable ({exc.strerror or exc})") from None

    def record_path(self, task: str, rid: str) -> Path:
        return self.root / "records" / task / f"{rid}.json"

    def artifact_dir(self, task: str, rid: str) -> Path:
        return self.root / "artifacts" / task / rid

    def exists(self, task: str, rid: str) -> bool:
        return self.record_path(task, rid).is_file()

    def get(self, rid: str, task: str | None = None) -> Record:
        """Load a record by id (optionally restricted to a task); a missing id is a StoreError, an
        unreadable record file a :class:`DamagedRecord`."""
        if task is not None:
            path = self.record_path(task, rid)
            if path.is_file():
                return self.read(path)
        else:
            for path in (self.root / "records").glob(f"*/{rid}.json"):
                return self.read(path)
        where = f"task {task!r}" if task else "any task"
        raise StoreError(f"no record {rid!r} for {where} in store {self.root}")

    def find(self, rid_or_prefix: str) -> Record | None:
        """A record whose id is ``rid_or_prefix`` or starts with it (unique), else None; an unreadable
        record file is a :class:`DamagedRecord`."""
        matches = list((self.root / "records").glob(f"*/{rid_or_prefix}*.json"))
        if len(matches) == 1:
            return self.read(matches[0])
        return None

    def read(self, path: Path) -> Record:
        """The record in file ``path``, or a :class:`DamagedRecord` naming the file when it holds none
        (cut short by a crash or a full disk, emptied, another id's)."""
        try:
            data = json.loads(path.read_text())
        except (UnicodeDecodeError, json.JSONDecodeError):
            problem = "not valid JSON: cut short?"
        else:
            problem = record_problem(data, path)
        if problem is None:
            return Record.from_dict(data)
        raise DamagedRecord(f"record file {path} is damaged ({problem}); delete it, or set it aside with "
                            f"`rlexp store check --fix`, and rerun what made it", path, problem)

    def damage(self, record: Record) -> tuple[Path, str] | None:
        """(file, problem) of the first artifact of ``record`` that is missing or cut short, else None."""
        for rel in record.artifacts.values():
            found = artifact_problem(self.resolve(str(rel)))
            if found:
                return found
        return None

    def checked(self, record: Record) -> Record:
        """``record`` when its artifacts are whole; else a :class:`DamagedRecord` naming the file and
        the record to delete (for a record a user names: nothing can make it again here)."""
        found = self.damage(record)
        if found is None:
            return record
        path = self.record_path(record.task, record.id)
        problem = f"{found[0]} is {found[1]}"
        raise DamagedRecord(f"{record.task} record {record.id}: {problem}; delete {path}, or set it aside with "
                            f"`rlexp store check --fix`, and rerun {record.task} to make it again", path, problem)

    def intact(self, task: str, rid: str) -> Record | None:
        """The record when it exists and is whole, None when there is none, a :class:`DamagedRecord`
        when its file or an artifact is damaged."""
        path = self.record_path(task, rid)
        return self.checked(self.read(path)) if path.is_file() else None

    def set_aside(self, task: str, rid: str) -> Path:
        """Move a damaged record and its artifact folder to ``damaged/<task>/<rid>[.N]/``; returns it.
        Call it holding the record's lock: the next run makes the record afresh."""
        dst = self.root / "damaged" / task / rid
        n = 0
        while dst.exists():
            n += 1
            dst = dst.with_name(f"{rid}.{n}")
        dst.mkdir(parents=True)
        for src, name in ((self.record_path(task, rid), "record.json"), (self.artifact_dir(task, rid), "artifacts")):
            if src.exists():
                os.replace(src, dst / name)
        return dst

    def put(self, record: Record) -> Path:
        """Write a record atomically: temporary file in the same directory, fsync, rename."""
        path = self.record_path(record.task, record.id)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{record.id}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(record.to_json())
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    @contextmanager
    def lock(self, task: str, rid: str) -> Iterator[bool]:
        """Hold the lock of one record id; yields whether it had to wait for another holder.

        ``fcntl.flock`` on ``records/<task>/.<rid>.lock``: the kernel releases it when the holder
        exits, so a killed run never leaves a lock that blocks.
        """
        import fcntl

        path = self.record_path(task, rid).with_name(f".{rid}.lock")
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a+") as fh:
            waited = False
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                waited = True
                fh.seek(0)
                holder = fh.read().strip() or "another process"
                print(f"rlexp: {task} {rid} is being computed by {holder}; waiting for it", file=sys.stderr)
                fcntl.flock(fh, fcntl.LOCK_EX)
            fh.seek(0)
            fh.truncate()
            fh.write(f"pid {os.getpid()} on {platform.node()}")
            fh.flush()
            try:
                yield waited
            finally:
                # Removed before release: a waiter still holds the old file and proceeds; a newcomer
                # finds the record (or, after a failure, starts afresh). A SIGKILL leaves an empty file
                # that the next run of this id reuses and removes.
                path.unlink(missing_ok=True)
                fcntl.flock(fh, fcntl.LOCK_UN)

    def records(self, task: str | None = None, skipped: list[DamagedRecord] | None = None) -> Iterator[Record]:
        """All finished records (of one task), oldest first. Damaged record files are skipped (and
        added to ``skipped``); so are files gone meanwhile."""
        stamped = []
        for path in (self.root / "records").glob(f"{task}/*.json" if task else "*/*.json"):
            try:
                stamped.append((path.stat().st_mtime, path))
            except OSError:
                continue
        for _, path in sorted(stamped):
            try:
                yield self.read(path)
            except OSError:
                continue
            except DamagedRecord as exc:
                if skipped is not None:
                    skipped.append(exc)

    def resolve(self, rel: str) -> Path:
        """Absolute path of an artifact path stored relative to the store root."""
        return self.root / rel

    def relative(self, path: Path) -> str:
        return str(Path(path).resolve().relative_to(self.root))


def git_commit() -> str | None:
    """The commit of the rlexp checkout, if it is one."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent,
                             capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def library_versions() -> dict[str, str]:
    """Versions of the libraries that decide results; read from metadata, no heavy imports."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for name in ("rlexp", "torch", "transformers", "trl", "peft", "deepspeed", "datasets", "hydra-core"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            continue
    return out
