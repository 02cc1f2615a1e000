"""The README and docs/ stay true to the code: every `rlexp ...` command they show composes, every relative
link and anchor resolves, every page opens with a summary and a table of contents, and the README stays short
with its figure near the top."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from rlexp import cli
from rlexp.errors import ConfigError

from ._doc_commands import PAGES, ROOT, DocCommand, commands

#: Commands a page shows for a feature that has not landed yet: the text after `rlexp`, as the lint reads it
#: (placeholders as `x`) -> what it waits for. The lint skips them, and checks that each is still shown and
#: still does not compose, so an entry comes off once its feature lands. Keep it tiny; empty is best.
PENDING: dict[str, str] = {}
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
_CODE_SPAN = re.compile(r"`[^`]*`")
_FENCE = re.compile(r"^\s*```")


def _compose(argv: tuple[str, ...]) -> None:
    """What `rlexp <task> ... --cfg job` checks: the task's config composes with these overrides, every value
    of every sweep (the CLI's own composition, without the run-time checks a bare task name would fail)."""
    task, args = argv[0], [a for a in argv[1:] if a not in ("-m", "--multirun")]
    importlib.import_module(f"rlexp.tasks.{task}")
    check = cli.check_config
    cli.check_config = lambda cfg: None
    try:
        cli.validate_overrides(task, args)
    finally:
        cli.check_config = check


def _shown() -> dict[tuple[str, ...], list[DocCommand]]:
    out: dict[tuple[str, ...], list[DocCommand]] = {}
    for c in commands():
        if c.argv[0].endswith(":") or c.argv[0] == "x" or c.argv[0].startswith("-"):
            continue  # an error message quoted (`rlexp env: error: ...`), `rlexp <task> --help`, `rlexp --help`
        out.setdefault(c.argv, []).append(c)
    return out


SHOWN = _shown()


def _is_pending(argv: tuple[str, ...]) -> bool:
    return " ".join(argv) in PENDING


@pytest.mark.parametrize("argv", [a for a in SHOWN if not _is_pending(a)], ids=lambda a: " ".join(a)[:80])
def test_every_rlexp_command_shown_composes(argv: tuple[str, ...]) -> None:
    where = ", ".join(c.where for c in SHOWN[argv])
    name = argv[0]
    if name in cli.COMMANDS:
        return  # not a Hydra app: its name is all a page can get wrong here
    assert name in cli.TASKS, f"{where}: `rlexp {name}` is no task or command of rlexp"
    flags = [a for a in argv[1:] if a.startswith("-") and a not in ("-m", "--multirun", "--help", "--cfg", "job")]
    assert not flags, f"{where}: unknown flags {flags}"
    try:
        _compose(argv)
    except ConfigError as exc:
        pytest.fail(f"{where}: `rlexp {' '.join(argv)}` does not compose: {exc}")


def test_the_lint_sees_the_commands_it_should() -> None:
    """The extraction itself: commands in fenced blocks (continued lines joined, env prefixes and comments
    dropped, placeholders filled) and in inline code, across the README and docs/."""
    shown = {" ".join(a) for a in SHOWN}
    assert "study experiment=paper_prb" in shown  # `HF_HUB_OFFLINE=0 rlexp study experiment=paper_prb  # ...`
    assert any(s.startswith("train_rm -m model=tiny_llama,tiny_qwen data=general,personal,mix") and
               s.endswith("runtime.threads=1") for s in shown)  # a command continued with a backslash
    assert "bon -m rm=x,x,x prompts=personalized,general" in shown  # <id1>,<id2>,<id3> filled in
    assert "train_rm model=tiny_qwen data=personal trainer.num_train_epochs=2" in shown  # inline code
    pages = {c.where.split(":")[0] for cs in SHOWN.values() for c in cs}
    assert {"README.md", "docs/tasks.md", "docs/real-models.md"} <= pages
    assert len(SHOWN) >= 30


def test_a_renamed_key_breaks_the_lint() -> None:
    with pytest.raises(ConfigError, match="trainer.num_train_epoch"):
        _compose(("train_rm", "model=tiny_qwen", "trainer.num_train_epoch=2"))
    with pytest.raises(ConfigError):
        _compose(("bon", "-m", "rm=x", "prompts=personalized,no_such_set"))


def test_pending_commands_are_shown_and_still_pending() -> None:
    for line, waits_for in PENDING.items():
        argv = tuple(line.split())
        assert argv in SHOWN, f"`rlexp {line}` is no longer shown: take it off PENDING"
        with pytest.raises(ConfigError):
            _compose(argv)
            pytest.fail(f"`rlexp {line}` composes now ({waits_for} landed): take it off PENDING")
    # the one command this list held: the SLURM study the README shows, which composes since it landed
    assert ("study", "experiment=paper_rb2", "study.launcher=slurm") in SHOWN


# -- links -----------------------------------------------------------------------------------------------


def slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation but `-` and `_` dropped, spaces to `-`."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _lines_outside_code(text: str) -> list[str]:
    out, inside = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            inside = not inside
            continue
        if not inside:
            out.append(line)
    return out


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in _lines_outside_code(path.read_text(encoding="utf-8")):
        m = re.match(r"^#{1,6}\s+(.*)$", line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(page: str) -> list[tuple[int, str]]:
    out = []
    text = (ROOT / page).read_text(encoding="utf-8")
    inside = False
    for n, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            inside = not inside
            continue
        if inside:
            continue
        for m in _LINK.finditer(_CODE_SPAN.sub("", line)):
            out.append((n, m.group(1) or m.group(2)))
    return out


@pytest.mark.parametrize("page", PAGES)
def test_every_relative_link_and_anchor_resolves(page: str) -> None:
    here = (ROOT / page).parent
    bad = []
    for n, target in links(page):
        if re.match(r"^[a-z]+:", target):
            continue  # https:, mailto:
        path_part, _, anchor = target.partition("#")
        path = (here / path_part).resolve() if path_part else ROOT / page
        if not path.exists():
            bad.append(f"{page}:{n}: {target} (no such file)")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            bad.append(f"{page}:{n}: {target} (no heading #{anchor} in {path.relative_to(ROOT)})")
    assert not bad, "\n".join(bad)


def test_slugs_follow_github() -> None:
    assert slug("Weights & Biases") == "weights--biases"
    assert slug("`rlexp train_rm`") == "rlexp-train_rm"
    assert slug("The PPO baseline (`baseline_samples`)") == "the-ppo-baseline-baseline_samples"
    assert slug("Real models and the papers' presets") == "real-models-and-the-papers-presets"
    assert slug("Comparison sets: Chatbot Arena- and PRISM-Personalized analogues") == \
        "comparison-sets-chatbot-arena--and-prism-personalized-analogues"


# -- shape -----------------------------------------------------------------------------------------------

DOC_PAGES = sorted(p for p in PAGES if p.startswith("docs/"))


@pytest.mark.parametrize("page", DOC_PAGES)
def test_every_docs_page_opens_with_a_summary_and_contents(page: str) -> None:
    lines = _lines_outside_code((ROOT / page).read_text(encoding="utf-8"))
    assert lines[0].startswith("# "), f"{page}: no title"
    body = lines[1:lines.index("## Contents")] if "## Contents" in lines else None
    assert body is not None, f"{page}: no '## Contents' section"
    summary = [line for line in body if line.strip()]
    assert len(summary) >= 3 and not any(line.startswith("#") for line in summary), \
        f"{page}: a one-paragraph summary goes between the title and the contents"
    sections = [slug(line[3:]) for line in lines if line.startswith("## ") and line != "## Contents"]
    start = lines.index("## Contents")
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("## "))
    listed = {m.group(1)[1:] for line in lines[start:end] for m in re.finditer(r"\]\((#[^)]+)\)", line)}
    missing = [s for s in sections if s not in listed]
    assert not missing, f"{page}: sections missing from its contents: {missing}"


def test_readme_is_short_with_the_figure_first() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; the rest belongs in docs/"
    figure = next(i for i, line in enumerate(lines) if line.startswith("![") and "docs/images/" in line)
    assert figure < 12, "the key figure comes right after what rlexp answers"
    first_section = next(i for i, line in enumerate(lines) if line.startswith("## "))
    assert figure < first_section
    for section in ("## The two commands", "## What a report looks like", "## Tasks",
                    "## Real models and the papers' presets", "## Sweeps and the cluster", "## Where things go",
                    "## Weights & Biases", "## Documentation"):
        assert section in lines, section
    # every docs/ page is linked from the README's documentation table
    for page in DOC_PAGES:
        assert f"]({page})" in "\n".join(lines), f"README.md does not link {page}"
