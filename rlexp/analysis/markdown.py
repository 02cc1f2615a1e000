"""Markdown tables and number cells for the report (GitHub-flavoured; no tabulate/jinja2 needed)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rlexp.analysis.values import is_missing


def _md_escape(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table; ``|`` in cells is escaped."""
    lines = ["| " + " | ".join(_md_escape(h) for h in headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(_md_escape(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def fmt_num(v: Any, digits: int = 3) -> str:
    """A table cell: floats to ``digits`` places, ints and strings as they are, ``n/a`` when missing."""
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        v = v.item()  # numpy scalar
    if is_missing(v):
        return "n/a"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, (int, float)):
        return f"{float(v):.{digits}f}" if isinstance(v, float) else str(v)
    return str(v)
