"""Loaders: every record kind from a hub id or a local file / folder, validated row by row.

A *source* is either a local path (a ``.parquet``, ``.jsonl`` or ``.json`` file, or a folder of
them) or a Hugging Face hub id ``org/name`` (read with :func:`datasets.load_dataset`). The
sandbox writes files in the exact arrow schemas of the real datasets, so the same code reads
both.

Validation is strict and happens before anything is returned: a malformed row raises a
one-line :class:`~rlexp.errors.DataError` naming the file, the row (position and id) and the
field. Loading never drops rows on its own; the only selections are the explicit ``subsets``,
``domains``, ``split`` and ``limit`` arguments. Loaders never write anything: local JSON is read
with the standard library and parquet with pyarrow, because ``datasets``' json builder writes
arrow files into its cache.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq

from rlexp.data.schemas import (
    RB2_SUBSETS,
    PRBItem,
    PreferencePair,
    ProfilePost,
    PromptItem,
    RB2Item,
    RubricAspect,
    UserContext,
)
from rlexp.errors import ConfigError, DataError

DATA_SUFFIXES: tuple[str, ...] = (".parquet", ".jsonl", ".json")
PROMPT_KINDS: tuple[str, ...] = ("personalized", "general")

# `org/name` with the characters the hub allows; anything else that does not exist is a path.
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
_TIES_ID = re.compile(r"^(ref|tied):\d+$")
# Split names the hub recognises at the start of a data file name (`test-00000-of-00001.parquet`).
_SPLIT_PREFIX = re.compile(r"^(train|test|validation|valid|eval|dev)(?=$|[-_.])", re.IGNORECASE)

_KIND_NAMES = {
    "rb2": ("RewardBench 2", "load_rb2"),
    "prb": ("Personalized RewardBench", "load_prb"),
    "pairs": ("preference-pair", "load_pairs"),
    "prompts": ("prompt-set", "load_prompts"),
}


# --------------------------------------------------------------------------- sources


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


# --------------------------------------------------------------------------- raw reading


@dataclass
class _Chunk:
    """Rows read from one file (or one hub config/split), before validation."""

    label: str  # the file (or hub id) named in error messages
    rows: list[dict[str, Any]]
    positions: list[str]  # "row 3" / "line 7": where each row sits in the file
    columns: set[str]
    group: str = ""  # PRB: the domain (config / folder name)


def _one_line(text: str, limit: int = 200) -> str:
    """Collapse an exception text to one short line (our messages must be one line)."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _read_parquet(path: Path) -> _Chunk:
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise DataError(f"{path}: cannot read as parquet: {_one_line(exc)}") from exc
    rows = table.to_pylist()
    return _Chunk(str(path), rows, [f"row {i}" for i in range(len(rows))], set(table.column_names))


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except OSError as exc:
        raise DataError(f"{path}: cannot read: {_one_line(exc)}") from exc


def _jsonl_chunk(path: Path, text: str) -> _Chunk:
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
    return _Chunk(str(path), rows, positions, {k for r in rows for k in r})


def _read_json(path: Path) -> _Chunk:
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
    return _Chunk(str(path), obj, [f"row {i}" for i in range(len(obj))], {k for r in obj for k in r})


def _read_file(path: Path) -> _Chunk:
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return _read_parquet(path)
    if suffix in (".jsonl", ".json"):
        return _read_json(path)
    raise DataError(f"{path}: unsupported file type {suffix or '(none)'!r}; expected one of {', '.join(DATA_SUFFIXES)}")


def _split_of(path: Path) -> str | None:
    match = _SPLIT_PREFIX.match(path.name)
    return match.group(1).lower() if match else None


def _data_files(folder: Path, split: str | None) -> list[Path]:
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
    named = {p: _split_of(p) for p in files}
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


def _read_local(path: Path, split: str | None) -> list[_Chunk]:
    if path.is_dir():
        return [_read_file(p) for p in _data_files(path, split)]
    return [_read_file(path)]


def _hub_label(hub_id: str, config: str | None, split: str) -> str:
    return f"hub:{hub_id}[{config or 'default'}/{split}]"


def _read_hub(hub_id: str, *, config: str | None, split: str, revision: str | None) -> _Chunk:
    """One hub config/split through :func:`datasets.load_dataset`."""
    import datasets  # imported lazily: ~1 s, and only hub sources need it

    label = _hub_label(hub_id, config, split)
    try:
        ds = datasets.load_dataset(hub_id, name=config, split=split, revision=revision)
    except Exception as exc:  # noqa: BLE001 - network, auth, unknown config/split: all fixed by the user
        raise DataError(f"{label}: cannot load hub dataset: {type(exc).__name__}: {_one_line(exc)}") from exc
    rows = ds.to_list()
    return _Chunk(label, rows, [f"row {i}" for i in range(len(rows))], set(ds.column_names))


def _read(source: str | os.PathLike[str], *, split: str, config: str | None, revision: str | None) -> list[_Chunk]:
    ref = resolve_source(source)
    if ref.kind == "hub":
        return [_read_hub(ref.value, config=config, split=split, revision=revision)]
    return _read_local(ref.path, split)


# --------------------------------------------------------------------------- validation helpers


class _At:
    """The location of one row, for error messages: ``<file>: line 4 (id 'x'): field 'f': ...``."""

    def __init__(self, label: str, position: str) -> None:
        self.label = label
        self.position = position
        self.row_id: str | None = None

    def __str__(self) -> str:
        rid = f"id {self.row_id!r}" if self.row_id is not None else "no id"
        return f"{self.label}: {self.position} ({rid})"

    def error(self, field: str, problem: str) -> DataError:
        return DataError(_one_line(f"{self}: field '{field}': {problem}", 400))


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _get(row: Mapping[str, Any], field: str, at: _At) -> Any:
    if field not in row:
        raise at.error(field, "missing")
    value = row[field]
    if value is None:
        raise at.error(field, "is null")
    return value


def _str(row: Mapping[str, Any], field: str, at: _At, *, nonempty: bool = True) -> str:
    value = _get(row, field, at)
    if not isinstance(value, str):
        raise at.error(field, f"expected a string, got {_type_name(value)} {_show(value)}")
    if nonempty and not value.strip():
        raise at.error(field, "is empty")
    return value


def _opt_str(row: Mapping[str, Any], field: str, at: _At) -> str:
    """An optional string field: absent or null reads as ``""``."""
    value = row.get(field)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise at.error(field, f"expected a string, got {_type_name(value)} {_show(value)}")
    return value


def _str_list(value: Any, field: str, at: _At, *, nonempty: bool) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)):
        raise at.error(field, f"expected a list of strings, got {_type_name(value)} {_show(value)}")
    if nonempty and not value:
        raise at.error(field, "is an empty list")
    for j, item in enumerate(value):
        if not isinstance(item, str):
            raise at.error(f"{field}[{j}]", f"expected a string, got {_type_name(item)} {_show(item)}")
        if nonempty and not item.strip():
            raise at.error(f"{field}[{j}]", "is empty")
    return tuple(value)


def _count(row: Mapping[str, Any], field: str, at: _At, expected: int, what: str) -> None:
    """Check an optional count column (``num_correct`` ...) against the lists it counts."""
    value = row.get(field)
    if value is None:  # absent / null: derived from the lists, nothing to check
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise at.error(field, f"expected an integer, got {_type_name(value)} {_show(value)}")
    if value != expected:
        raise at.error(field, f"is {value} but {what} is {expected}")


def _records(value: Any, field: str, at: _At) -> list[Mapping[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise at.error(field, f"expected a list of objects, got {_type_name(value)} {_show(value)}")
    for j, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise at.error(f"{field}[{j}]", f"expected an object, got {_type_name(item)} {_show(item)}")
    return list(value)


def _profile(row: Mapping[str, Any], at: _At, *, required: bool) -> tuple[ProfilePost, ...]:
    value = _get(row, "profile", at) if required else row.get("profile")
    posts = []
    for j, item in enumerate(_records(value, "profile", at)):
        text = item.get("text")
        if not isinstance(text, str) or not text.strip():
            if "text" not in item:
                problem = "missing: a profile post needs its text"
            elif text is None:
                problem = "is null: a profile post needs its text"
            elif isinstance(text, str):
                problem = "is empty: a profile post needs its text"
            else:
                problem = f"expected a string, got {_type_name(text)} {_show(text)}"
            raise at.error(f"profile[{j}].text", problem)
        category, post_id = item.get("category"), item.get("id")
        if not isinstance(category, str):
            raise at.error(f"profile[{j}].category", f"expected a string, got {_type_name(category)} {_show(category)}")
        if not isinstance(post_id, str):
            raise at.error(f"profile[{j}].id", f"expected a string, got {_type_name(post_id)} {_show(post_id)}")
        posts.append(ProfilePost(category=category, id=post_id, text=text))
    return tuple(posts)


def _aspects(row: Mapping[str, Any], at: _At) -> tuple[RubricAspect, ...]:
    aspects = []
    for j, item in enumerate(_records(row.get("rubric_aspects"), "rubric_aspects", at)):
        aspect = item.get("aspect")
        if not isinstance(aspect, str) or not aspect.strip():
            raise at.error(f"rubric_aspects[{j}].aspect", f"expected a non-empty string, got {_show(aspect)}")
        extra = {}
        for key in ("evidence", "reason"):
            val = item.get(key)
            if val is not None and not isinstance(val, str):
                raise at.error(f"rubric_aspects[{j}].{key}", f"expected a string, got {_type_name(val)} {_show(val)}")
            extra[key] = val or ""
        aspects.append(RubricAspect(aspect=aspect, **extra))
    return tuple(aspects)


def _row_id(row: Mapping[str, Any], at: _At, field: str = "id") -> str:
    value = row.get(field)
    if isinstance(value, str) and value.strip():
        at.row_id = value  # name the row by its id from now on
        return value
    return _str(row, field, at)  # raises with the precise problem


class _Ids:
    """Duplicate-id detection across every file of one load."""

    def __init__(self, field: str = "id") -> None:
        self.field = field
        self.seen: dict[Any, str] = {}

    def add(self, key: Any, at: _At) -> None:
        first = self.seen.get(key)
        if first is not None:
            raise at.error(self.field, f"duplicate id (first seen at {first})")
        self.seen[key] = f"{at.label} {at.position}"


def _check_kind(chunk: _Chunk, expected: str) -> None:
    """Refuse a file of another record kind with a message that says what it is."""
    cols = chunk.columns
    first = chunk.rows[0] if chunk.rows else {}
    guess: str | None = None
    if "prompt_id" in cols:
        guess = "prompts"
    elif cols & {"num_correct", "num_incorrect", "total_completions"}:
        guess = "rb2"
    elif {"question", "profile"} <= cols:
        guess = "prb"
    elif (
        "subset" in cols
        and isinstance(first.get("chosen"), list)
        and all(isinstance(c, str) for c in first.get("chosen") or [])
    ):
        guess = "rb2"  # a list of *strings* (not messages) under `chosen` is RB2's layout
    if guess is not None and guess != expected:
        name, loader = _KIND_NAMES[guess]
        shown = ", ".join(sorted(cols)[:10])
        raise DataError(
            f"{chunk.label}: this is a {name} file (columns: {shown}), not a {_KIND_NAMES[expected][0]} file; "
            f"load it with {loader}()"
        )


def _check_limit(limit: int | None) -> None:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ConfigError(f"limit must be a non-negative integer or None, got {limit!r}")


def _select(values: Sequence[str] | None, valid: Iterable[str], what: str) -> list[str] | None:
    """Validate an explicit selection (``subsets`` / ``domains``) against what exists."""
    if values is None:
        return None
    if isinstance(values, str):  # a bare string would be iterated character by character
        values = [values]
    valid = list(valid)
    if not values:
        raise ConfigError(f"an empty {what} selection selects nothing; pass None for all of: {', '.join(valid)}")
    unknown = [v for v in values if v not in valid]
    if unknown:
        raise ConfigError(f"unknown {what} {unknown[0]!r}; valid: {', '.join(valid)}")
    return list(values)


def _validated(chunks: Sequence[_Chunk], expected: str, convert: Callable[[dict[str, Any], _At], Any]) -> list[Any]:
    out = []
    for chunk in chunks:
        _check_kind(chunk, expected)
        for row, position in zip(chunk.rows, chunk.positions, strict=True):
            out.append(convert(row, _At(chunk.label, position)))
    return out


# --------------------------------------------------------------------------- RewardBench 2


def _rb2_item(row: Mapping[str, Any], at: _At) -> RB2Item:
    item_id = _row_id(row, at)
    prompt = _str(row, "prompt", at)
    chosen = _str_list(_get(row, "chosen", at), "chosen", at, nonempty=True)
    rejected = _str_list(_get(row, "rejected", at), "rejected", at, nonempty=True)
    subset = _str(row, "subset", at)
    if subset not in RB2_SUBSETS:
        raise at.error("subset", f"unknown subset {subset!r}; valid: {', '.join(RB2_SUBSETS)}")
    if subset == "Ties" and not _TIES_ID.match(item_id):
        raise at.error("id", f"Ties ids must look like 'ref:N' or 'tied:N', got {item_id!r}")
    _count(row, "num_correct", at, len(chosen), "len(chosen)")
    _count(row, "num_incorrect", at, len(rejected), "len(rejected)")
    _count(row, "total_completions", at, len(chosen) + len(rejected), "len(chosen) + len(rejected)")
    models = row.get("models")
    models = () if models is None else _str_list(models, "models", at, nonempty=False)
    meta = row.get("additional_metadata")
    if meta is not None and not isinstance(meta, Mapping):
        raise at.error("additional_metadata", f"expected an object, got {_type_name(meta)}")
    return RB2Item(
        id=item_id,
        prompt=prompt,
        chosen=chosen,
        rejected=rejected,
        subset=subset,
        models=models,
        additional_metadata=dict(meta or {}),
    )


def load_rb2(
    source: str | os.PathLike[str],
    *,
    split: str = "test",
    subsets: Sequence[str] | None = None,
    limit: int | None = None,
    config: str | None = None,
    revision: str | None = None,
) -> list[RB2Item]:
    """Load RewardBench 2 items (``allenai/reward-bench-2`` or a file/folder of the same schema).

    Every row is validated (counts match the lists, subset names, ``ref:N``/``tied:N`` ids in
    Ties, unique ids) before ``subsets`` (exact names from ``RB2_SUBSETS``) and then ``limit``
    (the first rows in file order) select from them. ``config``/``revision`` apply to hub ids.
    """
    _check_limit(limit)
    wanted = _select(subsets, RB2_SUBSETS, "RewardBench 2 subset")
    ids = _Ids()

    def convert(row: dict[str, Any], at: _At) -> RB2Item:
        item = _rb2_item(row, at)
        ids.add(item.id, at)
        return item

    items = _validated(_read(source, split=split, config=config, revision=revision), "rb2", convert)
    if wanted is not None:
        items = [it for it in items if it.subset in wanted]
    return items[:limit] if limit is not None else items


# --------------------------------------------------------------------------- Personalized RewardBench


def _prb_item(row: Mapping[str, Any], at: _At, domain: str) -> PRBItem:
    item_id = _row_id(row, at)
    question = _str(row, "question", at)
    profile = _profile(row, at, required=True)
    aspects = _aspects(row, at)
    chosen = _str(row, "chosen", at)
    rejected = _str(row, "rejected", at)
    if chosen == rejected:
        raise at.error("rejected", "identical to chosen")
    return PRBItem(
        id=item_id,
        question=question,
        profile=profile,
        rubric_aspects=aspects,
        narrative=_opt_str(row, "narrative", at),
        category=_opt_str(row, "category", at),
        chosen=chosen,
        rejected=rejected,
        domain=domain,
    )


def _prb_local(path: Path, split: str, domains: Sequence[str] | None) -> list[_Chunk]:
    """PRB from disk: ``<root>/<Domain>/*.parquet`` (domain = first folder under root)."""
    by_domain: dict[str, list[Path]] = {}
    if path.is_file():
        by_domain[path.parent.name] = [path]
    else:
        for f in _data_files(path, split):
            rel = f.relative_to(path).parts
            by_domain.setdefault(rel[0] if len(rel) > 1 else path.name, []).append(f)
    chunks = []
    # Only the selected domains are read: real PRB files are ~90 MB each.
    selected = _select(domains, by_domain, "Personalized RewardBench domain")
    for domain in by_domain if selected is None else selected:
        for f in by_domain[domain]:
            chunk = _read_file(f)
            chunk.group = domain
            chunks.append(chunk)
    return chunks


def load_prb(
    source: str | os.PathLike[str],
    *,
    domains: Sequence[str] | None = None,
    split: str = "test",
    limit: int | None = None,
    revision: str | None = None,
) -> list[PRBItem]:
    """Load Personalized RewardBench pairs (``QiyaoMa/Personalized-RewardBench`` or the same layout).

    The domain of an item is its hub config, or locally the first folder under ``source``
    (``<source>/<Domain>/test-*.parquet``; a single file takes its parent folder's name).
    ``domains`` selects configs/folders before reading (default: all of them); ``limit`` keeps
    the first rows overall, in domain order. Ids must be unique within a domain.
    """
    _check_limit(limit)
    ref = resolve_source(source)
    if ref.kind == "hub":
        if domains is None:
            import datasets

            try:
                domains = datasets.get_dataset_config_names(ref.value, revision=revision)
            except Exception as exc:  # noqa: BLE001 - any failure here means the hub is unreachable
                raise DataError(
                    f"hub:{ref.value}: cannot list its configs (pass domains=...): {type(exc).__name__}: {_one_line(exc)}"
                ) from exc
        elif isinstance(domains, str):
            domains = [domains]
        chunks = []
        for domain in domains:
            chunk = _read_hub(ref.value, config=domain, split=split, revision=revision)
            chunk.group = domain
            chunks.append(chunk)
    else:
        chunks = _prb_local(ref.path, split, domains)

    ids = _Ids()
    items: list[PRBItem] = []
    for chunk in chunks:
        _check_kind(chunk, "prb")
        for row, position in zip(chunk.rows, chunk.positions, strict=True):
            at = _At(chunk.label, position)
            item = _prb_item(row, at, chunk.group)
            ids.add((item.domain, item.id), at)
            items.append(item)
    return items[:limit] if limit is not None else items


# --------------------------------------------------------------------------- preference pairs


def _messages(value: list[Any], field: str, at: _At) -> list[tuple[str, str]]:
    if not value:
        raise at.error(field, "is an empty conversation")
    out = []
    for j, msg in enumerate(value):
        if not isinstance(msg, Mapping):
            raise at.error(f"{field}[{j}]", f"expected a message {{role, content}}, got {_type_name(msg)}")
        role, content = msg.get("role"), msg.get("content")
        if not isinstance(role, str):
            raise at.error(f"{field}[{j}].role", f"expected a string, got {_type_name(role)} {_show(role)}")
        if not isinstance(content, str):
            raise at.error(f"{field}[{j}].content", f"expected a string, got {_type_name(content)} {_show(content)}")
        out.append((role, content))
    return out


def _response_and_prefix(value: list[Any], field: str, at: _At) -> tuple[str, list[tuple[str, str]]]:
    """The final assistant message of a conversation and the turns before it."""
    msgs = _messages(value, field, at)
    role, content = msgs[-1]
    if role != "assistant":
        raise at.error(
            f"{field}[{len(msgs) - 1}].role", f"the last message must be the assistant's answer, got {role!r}"
        )
    return content, msgs[:-1]


def _prompt_from_turns(turns: list[tuple[str, str]], at: _At, multi_turn: str) -> str:
    """The prompt string of the turns before the final answer.

    Only a single user turn maps onto a string prompt without loss. ``multi_turn="last_user"``
    explicitly accepts the loss (earlier turns and system messages are dropped, the last user
    turn is the prompt); the default refuses such rows.
    """
    if len(turns) == 1 and turns[0][0] == "user":
        return turns[0][1]
    if multi_turn == "last_user" and turns[-1][0] == "user":
        return turns[-1][1]
    roles = [r for r, _ in turns]
    raise at.error(
        "chosen",
        f"expected one user turn before the answer, got roles {roles}; pass multi_turn='last_user' "
        "to keep only the last user turn",
    )


def _pair(
    row: Mapping[str, Any], at: _At, *, derived_id: str | None, default_source: str, multi_turn: str
) -> PreferencePair:
    pair_id = derived_id if derived_id is not None else _row_id(row, at)
    if derived_id is not None:
        at.row_id = derived_id
    chosen_raw = _get(row, "chosen", at)
    rejected_raw = _get(row, "rejected", at)
    prompt_raw = row.get("prompt")

    if isinstance(chosen_raw, str) and isinstance(rejected_raw, str):
        chosen, rejected = chosen_raw, rejected_raw
        prompt = _str(row, "prompt", at)
    elif isinstance(chosen_raw, list) and isinstance(rejected_raw, list):
        chosen, prefix_c = _response_and_prefix(chosen_raw, "chosen", at)
        rejected, prefix_r = _response_and_prefix(rejected_raw, "rejected", at)
        if prefix_c != prefix_r:
            raise at.error("rejected", "its turns before the final answer differ from chosen's")
        if prefix_c:
            # The conversation itself says what was asked; a `prompt` column may hold only one
            # turn of a multi-turn conversation, not necessarily the one the answer responds to.
            prompt = _prompt_from_turns(prefix_c, at, multi_turn)
        elif isinstance(prompt_raw, list):  # prompt given as messages: a single user turn
            turns = _messages(prompt_raw, "prompt", at)
            if len(turns) != 1 or turns[0][0] != "user":
                raise at.error("prompt", "as a message list it must be exactly one user message")
            prompt = turns[0][1]
        else:
            prompt = _str(row, "prompt", at)
        if not prompt.strip():
            raise at.error("prompt", "is empty")
    else:
        raise at.error(
            "rejected",
            f"chosen and rejected must both be strings or both message lists, got "
            f"{_type_name(chosen_raw)} and {_type_name(rejected_raw)}",
        )
    if not chosen.strip():
        raise at.error("chosen", "is empty")
    if not rejected.strip():
        raise at.error("rejected", "is empty")
    if chosen == rejected:
        raise at.error("rejected", "identical to chosen")

    profile = _profile(row, at, required=False)
    aspects = _aspects(row, at)
    narrative = _opt_str(row, "narrative", at)
    context = (
        UserContext(profile=profile, rubric_aspects=aspects, narrative=narrative)
        if (profile or aspects or narrative)
        else None
    )
    source = _opt_str(row, "source", at) or default_source
    return PreferencePair(id=pair_id, prompt=prompt, chosen=chosen, rejected=rejected, source=source, context=context)


def _source_name(source: str | os.PathLike[str]) -> str:
    ref = resolve_source(source)
    return ref.value if ref.kind == "hub" else ref.path.stem


def load_pairs(
    source: str | os.PathLike[str],
    *,
    limit: int | None = None,
    split: str = "train",
    config: str | None = None,
    revision: str | None = None,
    name: str | None = None,
    multi_turn: Literal["error", "last_user"] = "error",
) -> list[PreferencePair]:
    """Load training preference pairs.

    Accepts rlexp's ``PAIRS_ARROW_SCHEMA`` (personalized pairs carry ``profile`` /
    ``rubric_aspects`` / ``narrative``), plain ``id/prompt/chosen/rejected`` files, and hub-style
    sets whose ``chosen``/``rejected`` are message lists ``[{role, content}, ...]``: the answer is
    the last (assistant) message and the prompt the single user turn before it (the ``prompt``
    column only when the conversations hold no turn before the answer). Both conversations must
    agree before the answer. Multi-turn or system-prompted rows are refused unless
    ``multi_turn="last_user"`` (keep the last user turn, drop the rest). Files without an ``id``
    column get ids ``<file stem>:<row>``; a row's ``source`` defaults to ``name`` or else the
    file stem / hub id.
    """
    _check_limit(limit)
    if multi_turn not in ("error", "last_user"):
        raise ConfigError(f"multi_turn must be 'error' or 'last_user', got {multi_turn!r}")
    chunks = _read(source, split=split, config=config, revision=revision)
    default_source = name or _source_name(source)
    ids = _Ids()
    pairs: list[PreferencePair] = []
    for chunk in chunks:
        _check_kind(chunk, "pairs")
        stem = Path(chunk.label).stem if not chunk.label.startswith("hub:") else default_source
        has_ids = "id" in chunk.columns
        for i, (row, position) in enumerate(zip(chunk.rows, chunk.positions, strict=True)):
            at = _At(chunk.label, position)
            derived = None if has_ids else f"{stem}:{i}"
            pair = _pair(row, at, derived_id=derived, default_source=default_source, multi_turn=multi_turn)
            ids.add(pair.id, at)
            pairs.append(pair)
    return pairs[:limit] if limit is not None else pairs


# --------------------------------------------------------------------------- prompt sets


def _hidden(row: Mapping[str, Any], at: _At) -> dict[str, Any]:
    value = row.get("hidden")
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise at.error("hidden", f"is not valid JSON ({exc.msg} at column {exc.colno})") from exc
    if not isinstance(value, dict):
        raise at.error("hidden", f"expected a JSON object, got {_type_name(value)}")
    return value


def _prompt_item(row: Mapping[str, Any], at: _At) -> PromptItem:
    prompt_id = _row_id(row, at, "prompt_id")
    prompt = _str(row, "prompt", at)
    kind = _str(row, "kind", at)
    if kind not in PROMPT_KINDS:
        raise at.error("kind", f"unknown kind {kind!r}; valid: {', '.join(PROMPT_KINDS)}")
    profile = _profile(row, at, required=False)
    if kind == "personalized" and not profile:
        raise at.error("profile", "a personalized prompt needs at least one profile post")
    return PromptItem(prompt_id=prompt_id, prompt=prompt, kind=kind, profile=profile, hidden=_hidden(row, at))


def load_prompts(
    source: str | os.PathLike[str],
    *,
    split: str = "eval",
    limit: int | None = None,
    config: str | None = None,
    revision: str | None = None,
) -> list[PromptItem]:
    """Load a downstream prompt set (``PROMPTS_ARROW_SCHEMA``; ``hidden`` is a JSON object string).

    ``kind`` is ``personalized`` (needs a non-empty profile) or ``general``; ``prompt_id`` must
    be unique.
    """
    _check_limit(limit)
    ids = _Ids("prompt_id")

    def convert(row: dict[str, Any], at: _At) -> PromptItem:
        item = _prompt_item(row, at)
        ids.add(item.prompt_id, at)
        return item

    items = _validated(_read(source, split=split, config=config, revision=revision), "prompts", convert)
    return items[:limit] if limit is not None else items


LOADERS: dict[str, Callable[..., list[Any]]] = {
    "rb2": load_rb2,
    "prb": load_prb,
    "pairs": load_pairs,
    "prompts": load_prompts,
}
"""Record kind -> loader, for tasks that take the kind from config."""


def load_records(kind: str, source: str | os.PathLike[str], **kwargs: Any) -> list[Any]:
    """Dispatch to the loader of ``kind`` (``rb2``, ``prb``, ``pairs``, ``prompts``)."""
    loader = LOADERS.get(kind)
    if loader is None:
        raise ConfigError(f"unknown record kind {kind!r}; valid: {', '.join(LOADERS)}")
    return loader(source, **kwargs)


__all__ = [
    "DATA_SUFFIXES",
    "LOADERS",
    "PROMPT_KINDS",
    "SourceRef",
    "load_pairs",
    "load_prb",
    "load_prompts",
    "load_rb2",
    "load_records",
    "resolve_source",
]
