"""Reading a data source into raw rows: local ``.parquet`` / ``.jsonl`` / ``.json`` files and folders, or hub ids.

Nothing here validates a row's fields (that is :mod:`rlexp.data.loaders.validation`); this module
only turns a source into chunks (:class:`Chunk`) of plain dicts and says precisely which file could not
be read and why. Local JSON is read with the standard library and parquet with pyarrow, because
``datasets``' json builder writes arrow files into its cache and loaders never write anything.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq

from rlexp.errors import ConfigError, DataError

DATA_SUFFIXES: tuple[str, ...] = (".parquet", ".jsonl", ".json")

# `org/name` with the characters the hub allows; anything else that does not exist is a path.
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
# Split names the hub recognises at the start of a data file name (`test-00000-of-00001.parquet`).
_SPLIT_PREFIX = re.compile(r"^(train|test|validation|valid|eval|dev)(?=$|[-_.])", re.IGNORECASE)


@dataclass(frozen=True)
class SourceRef:
    """Where records come from: a local path or a hub id."""

    kind: Literal["local", "hub"]
    value: str

    @property
    def path(self) -> Path:
        """The local path (only meaningful when ``kind == "local"``)."""
        return Path(self.value)


def resolve_source(source: str | os.PathLike[str]) -> SourceRef:
    """Decide whether ``source`` is a local file/folder or a hub dataset id.

    An existing path is always local (so a local folder shadows a hub id of the same name). A
    path that does not exist is a hub id only if it looks like ``org/name`` (no leading ``/``,
    ``.`` or ``~``, no data-file suffix); any other missing path raises :class:`DataError`
    naming it.
    """
    if not isinstance(source, (str, os.PathLike)):
        raise ConfigError(f"data source must be a path or hub id string, got {type(source).__name__} {source!r}")
    text = os.fspath(source)
    if not isinstance(text, str) or not text.strip():
        raise DataError(f"data source {source!r} is empty; give a local path or a hub id 'org/name'")
    path = Path(text).expanduser()
    if path.exists():
        return SourceRef("local", str(path))
    if _HUB_ID.match(text) and not text.lower().endswith(DATA_SUFFIXES):
        return SourceRef("hub", text)
    raise DataError(f"data source {text!r} does not exist (and is not a hub id of the form 'org/name')")


@dataclass
class Chunk:
    """Rows read from one file (or one hub config/split), before validation."""

    label: str  # the file (or hub id) named in error messages
    rows: list[dict[str, Any]]
    positions: list[str]  # "row 3" / "line 7": where each row sits in the file
    columns: set[str]
    group: str = ""  # PRB: the domain (config / folder name)


def one_line(text: object, limit: int = 200) -> str:
    """Collapse an exception text to one short line (our messages must be one line)."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


# --------------------------------------------------------------------------- local files


def _read_parquet(path: Path) -> Chunk:
    """All rows of one parquet file."""
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise DataError(f"{path}: cannot read as parquet: {one_line(exc)}") from exc
    rows = table.to_pylist()
    return Chunk(str(path), rows, [f"row {i}" for i in range(len(rows))], set(table.column_names))


def _read_text(path: Path) -> str:
    """The file's text; a non-UTF-8 or unreadable file is a one-line :class:`DataError`."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except OSError as exc:
        raise DataError(f"{path}: cannot read: {one_line(exc)}") from exc


def _jsonl_chunk(path: Path, text: str) -> Chunk:
    """Rows of a JSON-lines text: one object per non-blank line, positions named by line number."""
    rows: list[dict[str, Any]] = []
    positions: list[str] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}: line {lineno}: invalid JSON ({exc.msg} at column {exc.colno})") from exc
        if not isinstance(obj, dict):
            raise DataError(f"{path}: line {lineno}: expected a JSON object, got {type(obj).__name__}")
        rows.append(obj)
        positions.append(f"line {lineno}")
    return Chunk(str(path), rows, positions, {k for r in rows for k in r})


def _read_json(path: Path) -> Chunk:
    """Rows of a ``.jsonl`` file, or of a ``.json`` list (bare or under ``"data"``, or JSON lines)."""
    text = _read_text(path)
    if path.suffix.lower() == ".jsonl":
        return _jsonl_chunk(path, text)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        # `.json` files written by pandas/datasets are often JSON lines; accept them.
        if exc.msg == "Extra data":
            return _jsonl_chunk(path, text)
        raise DataError(f"{path}: invalid JSON ({exc.msg} at line {exc.lineno})") from exc
    if isinstance(obj, dict) and isinstance(obj.get("data"), list):
        obj = obj["data"]
    if not isinstance(obj, list):
        raise DataError(f'{path}: expected a list of objects (or {{"data": [...]}}), got {type(obj).__name__}')
    for i, row in enumerate(obj):
        if not isinstance(row, dict):
            raise DataError(f"{path}: row {i}: expected a JSON object, got {type(row).__name__}")
    return Chunk(str(path), obj, [f"row {i}" for i in range(len(obj))], {k for r in obj for k in r})


def read_file(path: Path) -> Chunk:
    """All rows of one local data file, by its suffix (see :data:`DATA_SUFFIXES`)."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return _read_parquet(path)
    if suffix in (".jsonl", ".json"):
        return _read_json(path)
    raise DataError(f"{path}: unsupported file type {suffix or '(none)'!r}; expected one of {', '.join(DATA_SUFFIXES)}")


def split_of(path: Path) -> str | None:
    """The split a file name starts with (``test-00000-of-00001.parquet`` -> ``test``), if any."""
    match = _SPLIT_PREFIX.match(path.name)
    return match.group(1).lower() if match else None


def data_files(folder: Path, split: str | None) -> list[Path]:
    """The data files of a folder (recursively, sorted), restricted to ``split`` when files name one.

    Files are split by name like the hub does (``test-00000-of-00001.parquet``, ``train.jsonl``).
    If no file names a split, all files are used. A file whose split cannot be told apart from
    others that name one is an error rather than a silent inclusion or exclusion.
    """
    files = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and p.suffix.lower() in DATA_SUFFIXES
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )
    if not files:
        raise DataError(f"{folder}: folder has no {'/'.join(DATA_SUFFIXES)} files")
    if split is None:
        return files
    named = {p: split_of(p) for p in files}
    if all(s is None for s in named.values()):
        return files
    unnamed = [p for p, s in named.items() if s is None]
    if unnamed:
        raise DataError(
            f"{unnamed[0]}: cannot tell which split this file belongs to (other files in {folder} are "
            f"named by split); rename it '<split>-....{unnamed[0].suffix.lstrip('.')}' or pass the file itself"
        )
    wanted = split.lower()
    chosen = [p for p, s in named.items() if s == wanted]
    if not chosen:
        found = sorted({s for s in named.values() if s})
        raise DataError(f"{folder}: no files for split {split!r} (found splits: {', '.join(found)})")
    return chosen


def _read_local(path: Path, split: str | None) -> list[Chunk]:
    """One chunk per data file of ``path`` (a file, or a folder restricted to ``split``)."""
    if path.is_dir():
        return [read_file(p) for p in data_files(path, split)]
    return [read_file(path)]


# --------------------------------------------------------------------------- hub


def _hub_label(hub_id: str, config: str | None, split: str) -> str:
    return f"hub:{hub_id}[{config or 'default'}/{split}]"


def read_hub(hub_id: str, *, config: str | None, split: str, revision: str | None) -> Chunk:
    """One hub config/split through :func:`datasets.load_dataset`."""
    import datasets  # imported lazily: ~1 s, and only hub sources need it

    label = _hub_label(hub_id, config, split)
    try:
        ds = datasets.load_dataset(hub_id, name=config, split=split, revision=revision)
    except Exception as exc:  # noqa: BLE001 - network, auth, unknown config/split: all fixed by the user
        raise DataError(f"{label}: cannot load hub dataset: {type(exc).__name__}: {one_line(exc)}") from exc
    rows = ds.to_list()
    return Chunk(label, rows, [f"row {i}" for i in range(len(rows))], set(ds.column_names))


def hub_configs(hub_id: str, revision: str | None) -> list[str]:
    """The config names of a hub dataset (PRB: one config per domain)."""
    import datasets  # imported lazily: ~1 s, and only hub sources need it

    try:
        return datasets.get_dataset_config_names(hub_id, revision=revision)
    except Exception as exc:  # noqa: BLE001 - any failure here means the hub is unreachable
        raise DataError(
            f"hub:{hub_id}: cannot list its configs (pass domains=...): {type(exc).__name__}: {one_line(exc)}"
        ) from exc


def read_source(source: str | os.PathLike[str], *, split: str, config: str | None, revision: str | None) -> list[Chunk]:
    """The raw chunks of ``source``: one per local data file, or the one hub config/split."""
    ref = resolve_source(source)
    if ref.kind == "hub":
        return [read_hub(ref.value, config=config, split=split, revision=revision)]
    return _read_local(ref.path, split)
