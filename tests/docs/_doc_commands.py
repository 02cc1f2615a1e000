"""The `rlexp ...` command lines the README and docs/ show, found in fenced code blocks and inline code."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Pages a newcomer reads: the README, every page under docs/, and the two script folders' READMEs.
PAGES = ("README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")),
         "perf/README.md", "experiments/README.md")
#: A line that ends with this comment shows a command that does not compose yet (a feature another change
#: is adding); the lint skips it. Keep such lines few, and take the marker off when the feature lands.
PENDING = "<!-- pending -->"
_FENCE = re.compile(r"^(\s*)```")
_INLINE = re.compile(r"(?<!`)`(rlexp [^`]+)`(?!`)")
_ENV = re.compile(r"^[A-Z_][A-Z0-9_]*=\S*$")
_PLACEHOLDER = re.compile(r"<[^<>]*>")


@dataclass(frozen=True)
class DocCommand:
    where: str          # page:line
    text: str           # the command as shown
    argv: tuple[str, ...]  # what follows `rlexp`, placeholders (<id>) filled in


def _argv(text: str) -> tuple[str, ...] | None:
    """``HF_HUB_OFFLINE=0 rlexp bon rm=<id> ...  # note`` -> ("bon", "rm=x", ...); None when it is no rlexp line."""
    text = text.split(" #", 1)[0].strip().rstrip("&").strip()
    try:
        words = shlex.split(_PLACEHOLDER.sub("x", text))
    except ValueError:
        return None
    while words and _ENV.match(words[0]):
        words = words[1:]
    if len(words) < 2 or words[0] != "rlexp":
        return None
    return tuple(words[1:])


def _fenced(page: str, lines: list[str]) -> list[DocCommand]:
    found, inside, i = [], False, 0
    while i < len(lines):
        line = lines[i]
        if _FENCE.match(line):
            inside = not inside
            i += 1
            continue
        if inside and line.lstrip().startswith(("rlexp ", "HF_", "RLEXP_", "WANDB_")) and PENDING not in line:
            start, text = i, line.strip()
            while text.endswith("\\") and i + 1 < len(lines):  # a command continued on the next line
                i += 1
                text = text[:-1].rstrip() + " " + lines[i].strip()
            argv = _argv(text)
            if argv:
                found.append(DocCommand(f"{page}:{start + 1}", text, argv))
        i += 1
    return found


def commands() -> list[DocCommand]:
    out: list[DocCommand] = []
    for page in PAGES:
        lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
        out += _fenced(page, lines)
        inside = False
        for n, line in enumerate(lines, 1):
            if _FENCE.match(line):
                inside = not inside
            if inside or PENDING in line:
                continue
            for m in _INLINE.finditer(line):
                argv = _argv(m.group(1))
                if argv:
                    out.append(DocCommand(f"{page}:{n}", m.group(1), argv))
    return out
