"""Markdown tables for the report (GitHub-flavoured; no tabulate/jinja2 needed)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def _md_escape(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table; ``|`` in cells is escaped."""
    lines = ["| " + " | ".join(_md_escape(h) for h in headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(_md_escape(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
