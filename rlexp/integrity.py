"""Files cut short: the cheap checks that tell a damaged artifact from a whole one.

A run killed while writing, a full disk or a copy interrupted half-way leaves a file that exists but
ends early. Two formats rlexp stores say how long they are, so a check reads a few bytes instead of
the file: safetensors (an 8-byte header length, a JSON header with each tensor's byte range) and
parquet (``PAR1`` at both ends, the footer's length just before the last one). Other files are only
checked to exist.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

CHECKED_SUFFIXES = (".safetensors", ".parquet")


def _safetensors_problem(path: Path, size: int) -> str | None:
    with open(path, "rb") as fh:
        head = fh.read(8)
        if len(head) < 8:
            return f"cut short ({size} bytes, no safetensors header)"
        length = int.from_bytes(head, "little")
        if length > size - 8:
            return f"cut short ({size} bytes, its header alone needs {length + 8})"
        try:
            header = json.loads(fh.read(length))
        except (UnicodeDecodeError, json.JSONDecodeError):
            return "damaged (its safetensors header is no JSON)"
    ends = [v["data_offsets"][1] for k, v in header.items()
            if k != "__metadata__" and isinstance(v, dict) and len(v.get("data_offsets", ())) == 2]
    need = 8 + length + max(ends, default=0)
    return f"cut short ({size} of {need} bytes)" if size < need else None


def _parquet_problem(path: Path, size: int) -> str | None:
    if size < 12:
        return f"cut short ({size} bytes, no parquet footer)"
    with open(path, "rb") as fh:
        start = fh.read(4)
        fh.seek(size - 8)
        tail = fh.read(8)
    if start != b"PAR1" or tail[4:] != b"PAR1":
        return "cut short or damaged (no parquet magic bytes at both ends)"
    if int.from_bytes(tail[:4], "little") > size - 12:
        return "cut short (its parquet footer is longer than the file)"
    return None


def file_problem(path: Path) -> str | None:
    """Why the file at ``path`` is damaged (missing, cut short), or None when it looks whole."""
    try:
        size = path.stat().st_size
        if path.suffix == ".safetensors":
            return _safetensors_problem(path, size)
        if path.suffix == ".parquet":
            return _parquet_problem(path, size)
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    return None


def artifact_problem(path: Path) -> tuple[Path, str] | None:
    """(the file, why it is damaged) for an artifact file or folder that is missing or holds a
    safetensors or parquet file cut short; None when it looks whole."""
    if path.is_dir():
        for root, _dirs, names in os.walk(path):
            for name in sorted(names):
                if name.endswith(CHECKED_SUFFIXES) and (problem := file_problem(Path(root) / name)):
                    return Path(root) / name, problem
        return None
    if not path.exists():
        return path, "missing"
    problem = file_problem(path)
    return (path, problem) if problem else None


def record_problem(data: Any, path: Path) -> str | None:
    """What makes ``data``, the parsed JSON of record file ``path`` (``records/<task>/<id>.json``), no
    record (``{}``, another record's content), or None."""
    if not isinstance(data, dict):
        return f"a JSON {type(data).__name__}, not a record"
    missing = [k for k in ("id", "task", "config") if k not in data]
    if missing:
        return f"no {', '.join(missing)}"
    if not isinstance(data["config"], dict) or not all(isinstance(data.get(k, {}), dict) for k in ("inputs", "artifacts")):
        return "config, inputs or artifacts is no mapping"
    if (data["task"], data["id"]) != (path.parent.name, path.stem):
        return f"it holds {data['task']} record {data['id']}"
    return None
