"""The study's step ledger: which record each step made, so a finished study reruns in seconds.

A study step is decided in the parent, without composing its config in a worker, when the same step
(its overrides, under the same code and configs) made a record before that is still in the store.
One input escapes that rule: data read from outside the store (a local benchmark, prompt or preference
file or folder). A record names it by a hash of the rows read (:func:`rlexp.inputs.read_id`), which
only running the task computes, so the ledger checks it itself: it stamps each external path that a
finished step's records name with its size and modification time (a cheap first test) and a hash of
its bytes (the answer when the first test fails: a file touched or rewritten with the same bytes keeps
its steps).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from rlexp.config import CONF_DIR
from rlexp.errors import DamagedRecord, StoreError
from rlexp.store import NO_EFFECT_KEYS, Store, content_hash

log = logging.getLogger("rlexp")

Stamps = dict[str, list[str | None]]  # external path -> [stat signature, content hash]


class LedgerStep(Protocol):
    """What the ledger reads of a study step (:class:`rlexp.tasks.study.Step`)."""

    task: str
    key: str
    overrides: list[str]
    compose: str | None


# A bare value names a file only with a data file's suffix: a string such as "rlexp" (prompts.format)
# or "general" must not match a folder of the working directory by chance.
DATA_SUFFIXES = (".parquet", ".json", ".jsonl", ".csv", ".tsv", ".arrow", ".txt", ".yaml", ".yml")
# An input value that starts with a record id ("<id>" or "<id>:<checkpoint>") names a record.
_RECORD_REF = re.compile(r"^([0-9a-f]{16})(?::|$)")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def config_paths(config: Mapping[str, Any], store_root: Path) -> set[str]:
    """Existing files and folders outside ``store_root`` that the result-bearing part of a record's
    ``config`` names (absolute paths): the local data a task may have read."""
    found = set()
    for value in _strings({k: v for k, v in config.items() if k not in NO_EFFECT_KEYS}):
        if not value or not ("/" in value or value.startswith("~") or value.lower().endswith(DATA_SUFFIXES)):
            continue
        try:
            path = Path(value).expanduser().resolve()
            if not path.exists():
                continue
        except (OSError, RuntimeError, ValueError):  # a value that is no usable path
            continue
        if path == store_root or store_root in path.parents or path in store_root.parents or len(path.parts) < 2:
            continue  # the store's own files (their records decide them), or a folder above it
        if _is_model_folder(path):
            continue  # a model folder enters a record by its path, not its content: stamping it decides nothing
        found.add(str(path))
    return found


def _is_model_folder(path: Path) -> bool:
    return path.is_dir() and ((path / "config.json").is_file() or (path / "adapter_config.json").is_file())


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(Path(root) / name for root, _dirs, names in os.walk(path) for name in names)


def stat_signature(path: str) -> str | None:
    """Size and modification time of a file, or of every file of a folder (by relative path); None
    when the path is gone."""
    p = Path(path)
    try:
        if p.is_file():
            st = p.stat()
            return content_hash([st.st_size, st.st_mtime_ns])
        if not p.is_dir():
            return None
        rows = []
        for f in _files(p):
            st = f.stat()
            rows.append([str(f.relative_to(p)), st.st_size, st.st_mtime_ns])
        return content_hash(rows)
    except OSError:
        return None


def content_digest(path: str) -> str | None:
    """A hash of the bytes of a file, or of every file of a folder with its relative path; None when
    the path is gone or unreadable."""
    p = Path(path)
    h = hashlib.sha256()
    try:
        for f in _files(p):
            h.update(str(f.relative_to(p) if f != p else "").encode() + b"\0")
            with open(f, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
            h.update(b"\0")
    except OSError:
        return None
    return h.hexdigest()[:16] if p.exists() else None


class ExternalInputs:
    """The external paths of records and their stamps, each looked up once per instance (a study run:
    the RewardBench file every evaluation reads is stat'd once and hashed at most once)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._paths: dict[str, frozenset[str]] = {}
        self._stats: dict[str, str | None] = {}
        self._digests: dict[tuple[str, str | None], str | None] = {}

    def of_record(self, rid: str) -> frozenset[str]:
        """The external paths named by record ``rid`` and, transitively, by the records among its
        inputs (a pool or a pool's scores built inside a step read its prompts too)."""
        if rid in self._paths:
            return self._paths[rid]
        self._paths[rid] = frozenset()  # a cycle (none is expected) ends here
        try:
            record = self.store.get(rid)
        except (StoreError, OSError, ValueError):  # gone or unreadable: nothing known of it
            return frozenset()
        found = set(config_paths(record.config, self.store.root))
        for value in record.inputs.values():
            match = _RECORD_REF.match(str(value))
            if match and match.group(1) != rid:
                found |= self.of_record(match.group(1))
        self._paths[rid] = frozenset(found)
        return self._paths[rid]

    def stat(self, path: str) -> str | None:
        if path not in self._stats:
            self._stats[path] = stat_signature(path)
        return self._stats[path]

    def digest(self, path: str) -> str | None:
        key = (path, self.stat(path))
        if key not in self._digests:
            self._digests[key] = content_digest(path)
        return self._digests[key]

    def stamps(self, rid: str) -> Stamps:
        """``{path: [stat signature, content hash]}`` of every external path record ``rid`` names."""
        return {p: [self.stat(p), self.digest(p)] for p in sorted(self.of_record(rid))}

    def unchanged(self, stamps: Stamps) -> bool:
        """Whether every stamped path holds what it held: the same size and mtime, or else the same
        bytes (then its stamp is refreshed in place, so the next run needs only the stat)."""
        for path, (stat, digest) in stamps.items():
            now = self.stat(path)
            if now is not None and now == stat:
                continue
            if now is None or digest is None or self.digest(path) != digest:
                return False
            stamps[path] = [now, digest]
        return True


def code_fingerprint() -> str:
    """rlexp's code and configs: with a step's overrides, all its record id can depend on."""
    h = hashlib.sha256()
    package = Path(__file__).resolve().parent
    for root, pattern in ((package, "*.py"), (CONF_DIR, "*.yaml")):
        for path in sorted(root.rglob(pattern)):
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


class StepLedger:
    """The record each step made, remembered per :func:`code_fingerprint` in ``<store>/cache/study/``.

    A step's record id is a function of its composed config and its inputs' record ids; the config
    is one of its overrides, rlexp's code and ``conf/``, and the overrides name every input record
    by id (an RM, a pool's policy and prompt set). So a step seen before under the same fingerprint,
    whose record is still in the store, is decided here, in the parent, and never dispatched: a
    finished study reruns without composing one config per step in worker processes.

    Data read from outside the store (a local benchmark, prompt or preference file or folder) is the
    one input the overrides name by path only: a record names it by a hash of the rows read, which
    only running the task computes. So a step whose records name such a path is remembered with its
    stamps (:class:`ExternalInputs`: size and mtime, and a hash of the bytes), and is
    decided only while every one of them holds the same bytes; otherwise it runs, its task reads the
    rows afresh, and every step that names its new record runs too. A sandbox-only study has no
    stamps, and costs nothing more.
    """

    RECORD_TASK = {"pool": "sample"}  # a pool step's record is a `sample` record
    # Overrides that never change a record id (where files go, logging, progress bars).
    NO_EFFECT = ("paths.", "logger", "progress=")

    def __init__(self, store: Store, enabled: bool = True) -> None:
        self.store = store
        self.enabled = enabled
        self.path = store.root / "cache" / "study" / f"{code_fingerprint()}.json"
        self.known, self.reads = self._load() if enabled else ({}, {})
        self.external = ExternalInputs(store)
        self._refreshed: set[str] = set()  # keys whose stamps were refreshed (same bytes, new mtime)

    def _load(self) -> tuple[dict[str, str], dict[str, Stamps]]:
        """(step key -> record id, step key -> stamps of the external paths its records name). A ledger
        cut short (a full disk) or hand-edited is only a cache: it is dropped and written afresh."""
        try:
            data = json.loads(self.path.read_text()) if self.path.is_file() else {}
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            data = None
        if isinstance(data, dict) and "steps" not in data and all(isinstance(v, str) for v in data.values()):
            return data, {}  # a ledger written before stamps: every entry a record id
        if isinstance(data, dict) and isinstance(data.get("steps"), dict) and isinstance(data.get("reads", {}), dict):
            return data["steps"], data.get("reads", {})
        log.warning("study: step ledger %s is damaged; removed it (each step finds its record in the store "
                    "once, and the ledger is written afresh)", self.path)
        self.path.unlink(missing_ok=True)
        return {}, {}

    @classmethod
    def key(cls, step: LedgerStep) -> str:
        kept = [o for o in step.overrides if not o.startswith(cls.NO_EFFECT)]
        return content_hash({"task": step.task, "compose": step.compose, "overrides": kept})

    def cached(self, step: LedgerStep) -> str | None:
        """The record id of ``step`` when it ran before (same fingerprint), its record exists, and
        every file or folder outside the store that it read holds the same bytes."""
        if not self.enabled:
            return None
        key = self.key(step)
        rid = self.known.get(key)
        try:  # a damaged record (its file, or an artifact missing or cut short) is made again in a worker
            if not rid or self.store.intact(self.RECORD_TASK.get(step.task, step.task), str(rid)) is None:
                return None
        except DamagedRecord:
            return None
        stamps = self.reads.get(key)
        if stamps:
            before = json.dumps(stamps, sort_keys=True)
            if not self.external.unchanged(stamps):
                return None
            if json.dumps(stamps, sort_keys=True) != before:
                self._refreshed.add(key)
        return rid

    def remember(self, steps: Sequence[LedgerStep], results: Mapping[str, tuple[str | None, str | None]]) -> None:
        """Add the steps that made a record, with the stamps of the external paths their records name
        (atomically: parallel studies may share a store)."""
        if not self.enabled:
            return
        new = {self.key(s): str(results[s.key][0]) for s in steps if s.key in results and results[s.key][0]}
        reads = {}
        for key, rid in new.items():
            stamps = self.external.stamps(rid)
            if stamps or key in self.reads:
                reads[key] = stamps
        if all(self.known.get(k) == v for k, v in new.items()) and all(self.reads.get(k) == v for k, v in reads.items()):
            return
        self._write(new, reads)

    def flush(self) -> None:
        """Write the stamps refreshed while deciding steps (a file touched with the same bytes), so
        the next run needs only their size and mtime."""
        if self.enabled and self._refreshed:
            self._write({}, {k: self.reads[k] for k in self._refreshed if k in self.reads})
            self._refreshed.clear()

    def _write(self, steps: dict[str, str], reads: dict[str, Stamps]) -> None:
        on_steps, on_reads = self._load()
        self.known = {**on_steps, **self.known, **steps}
        self.reads = {**on_reads, **self.reads, **reads}
        self.reads = {k: v for k, v in self.reads.items() if v}  # a step that reads nothing outside: no entry
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"steps": self.known, "reads": self.reads}, sort_keys=True))
        os.replace(tmp, self.path)
