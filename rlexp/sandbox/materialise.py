"""Write a sandbox world to disk as parquet/text files plus a manifest.

Layout under ``out_dir``::

    rb2/test.parquet                                  RB2_ARROW_SCHEMA
    prb/<Domain>/test-00000-of-00001.parquet          PRB_ARROW_SCHEMA, one per domain
    pairs/<source>.parquet                            PAIRS_ARROW_SCHEMA: general, personal, length_bias, flipped
    prompts/<personalized|general>/<train|eval>.parquet   PROMPTS_ARROW_SCHEMA (hidden = JSON)
    corpus/pretrain_a.txt, corpus/pretrain_b.txt      documents separated by one blank line
    corpus/sft.parquet                                SFT_ARROW_SCHEMA
    manifest.json                                     counts, sha256 per file, seed, difficulty, baselines, planner

The output is deterministic (same seed and difficulty, same bytes). Everything is written into a
temporary sibling directory that is renamed into place at the end, so a crash never leaves a
half-written world behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from rlexp.data.schemas import (
    PAIRS_ARROW_SCHEMA,
    PRB_ARROW_SCHEMA,
    PRB_DOMAINS,
    PROMPTS_ARROW_SCHEMA,
    RB2_ARROW_SCHEMA,
    SFT_ARROW_SCHEMA,
    PreferencePair,
)
from rlexp.errors import ConfigError
from rlexp.sandbox.baselines import compute_baselines
from rlexp.sandbox.planner import MARGIN_THRESHOLD, planner_quality
from rlexp.sandbox.prb import prb_row
from rlexp.sandbox.prompts import prompt_row
from rlexp.sandbox.rb2 import rb2_row, subset_counts
from rlexp.sandbox.world import World, build_world

SCHEMA_VERSION = 1
# Bump whenever the generator's output changes for the same (seed, difficulty): the data record's
# id includes it, so a stored world from older code (and every RM, pool and score built on it) is
# not silently reused after an upgrade.
WORLD_VERSION = 4  # 3: flipped control holds the personal pairs too; 300 general eval prompts; 4: planned SFT
MANIFEST = "manifest.json"
_STAGES = (
    "knowledge base",
    "rewardbench 2",
    "personalized rewardbench",
    "downstream prompts",
    "training pairs",
    "corpora",
    "writing files",
    "baselines and planner",
)


def pair_row(p: PreferencePair) -> dict[str, Any]:
    """One row of ``pairs/<source>.parquet`` (empty context fields for general pairs)."""
    ctx = p.context
    return {
        "id": p.id,
        "prompt": p.prompt,
        "chosen": p.chosen,
        "rejected": p.rejected,
        "source": p.source,
        "profile": [{"category": q.category, "id": q.id, "text": q.text} for q in ctx.profile] if ctx else [],
        "rubric_aspects": [{"aspect": a.aspect, "evidence": a.evidence, "reason": a.reason} for a in ctx.rubric_aspects]
        if ctx
        else [],
        "narrative": ctx.narrative if ctx else "",
    }


def _write_parquet(path: Path, rows: list[dict[str, Any]], schema: pa.Schema) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(rows, schema=schema)
    pq.write_table(table, path, compression="zstd")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _write_world(w: World, root: Path) -> dict[str, int]:
    """Write every data file of ``w`` under ``root``; return rows per relative path."""
    rows: dict[str, int] = {}

    def put(rel: str, data: list[dict[str, Any]], schema: pa.Schema) -> None:
        _write_parquet(root / rel, data, schema)
        rows[rel] = len(data)

    put("rb2/test.parquet", [rb2_row(i) for i in w.rb2], RB2_ARROW_SCHEMA)
    for domain in PRB_DOMAINS:
        put(
            f"prb/{domain}/test-00000-of-00001.parquet",
            [prb_row(i) for i in w.prb if i.domain == domain],
            PRB_ARROW_SCHEMA,
        )
    for source, pairs in w.pairs.items():
        put(f"pairs/{source}.parquet", [pair_row(p) for p in pairs], PAIRS_ARROW_SCHEMA)
    for (kind, split), items in sorted(w.prompts.items()):
        put(f"prompts/{kind}/{split}.parquet", [prompt_row(i) for i in items], PROMPTS_ARROW_SCHEMA)
    for variant, docs in w.pretrain.items():
        rel = f"corpus/pretrain_{variant}.txt"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        # Documents may span lines (lists), so a blank line separates documents.
        path.write_text("\n\n".join(d.strip() for d in docs) + "\n", encoding="utf-8")
        rows[rel] = len(docs)
    put("corpus/sft.parquet", [{"prompt": p, "response": r, "system": sy} for p, r, sy in w.sft], SFT_ARROW_SCHEMA)
    return rows


def _counts(w: World) -> dict[str, Any]:
    return {
        "rb2": {
            "rows": len(w.rb2),
            "subsets": subset_counts(w.rb2),
            "ties_prompts": len({i.id.split(":")[1] for i in w.rb2 if i.subset == "Ties"}),
        },
        "prb": {"rows": len(w.prb), "domains": {d: sum(i.domain == d for i in w.prb) for d in PRB_DOMAINS}},
        "pairs": {s: len(p) for s, p in w.pairs.items()},
        "prompts": {f"{k}/{s}": len(v) for (k, s), v in sorted(w.prompts.items())},
        "corpus": {f"pretrain_{v}": len(d) for v, d in w.pretrain.items()} | {"sft": len(w.sft)},
        "users": {
            "prb": len(w.prb_users),
            "train": len(w.train_users),
            **{f"prompts_personalized_{s}": len(u) for s, u in w.prompt_users.items()},
        },
        "kb_entities": len(w.kb.entities),
    }


def _planner(w: World) -> dict[str, Any]:
    def q(users: list[Any]) -> dict[str, Any]:
        return planner_quality((u.profile, u.titles) for u in users).to_dict()

    return {
        "threshold": MARGIN_THRESHOLD,
        "max_aspects": 4,
        "prb_users": q(w.prb_users),
        "train_users": q(w.train_users),
        **{f"prompts_personalized_{s}": q(u) for s, u in w.prompt_users.items()},
    }


def check_world_args(seed: int, difficulty: float) -> None:
    """A world's (seed, difficulty), or a one-line :class:`ConfigError`."""
    if not 0.0 <= float(difficulty) <= 1.0:
        raise ConfigError(f"sandbox.difficulty must be in [0, 1], got {difficulty}")
    if int(seed) < 0:
        raise ConfigError(f"sandbox.seed must be >= 0, got {seed}")


@contextmanager
def atomic_build(out_dir: Path) -> Iterator[Path]:
    """A temporary sibling of ``out_dir`` to write into; renamed into place when the block ends
    without error, removed when it fails, so a crash never leaves a half-written folder behind."""
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_builds(out_dir)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-{os.getpid()}-", dir=out_dir.parent))
    tmp.chmod(0o755)  # mkdtemp makes it private; a world is ordinary shared output
    try:
        yield tmp
        _replace_dir(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def materialise(out_dir: Path, seed: int = 0, difficulty: float = 0.5, progress: bool = True) -> dict[str, Any]:
    """Generate the sandbox world of ``seed`` and write it to ``out_dir``; return the manifest.

    ``out_dir`` is replaced as a whole if it exists. Raises :class:`ConfigError` for a difficulty
    outside [0, 1] or a negative seed.
    """
    check_world_args(seed, difficulty)
    bar = tqdm(total=len(_STAGES), desc="sandbox", disable=not progress, leave=False)

    def step(name: str) -> None:
        if bar.n or name != _STAGES[0]:
            bar.update(1)
        bar.set_postfix_str(name)

    with bar, atomic_build(out_dir) as tmp:
        world = build_world(int(seed), float(difficulty), step)
        step("writing files")
        rows = _write_world(world, tmp)
        step("baselines and planner")
        manifest = {
            "schema_version": SCHEMA_VERSION,
            "world_version": WORLD_VERSION,
            "generator": "rlexp.sandbox",
            "seed": int(seed),
            "difficulty": float(difficulty),
            "knobs": world.knobs.to_dict(),
            "counts": _counts(world),
            "files": {
                rel: {"sha256": _sha256(tmp / rel), "bytes": (tmp / rel).stat().st_size, "rows": n}
                for rel, n in sorted(rows.items())
            },
            "baselines": compute_baselines(world.rb2, world.prb, int(seed)),
            "planner": _planner(world),
            "formats": {
                "pretrain": "UTF-8 text, documents separated by one blank line",
                "prompts.hidden": "JSON object; personalized: aspects/rubric_aspects/narrative; general: verifier spec with 'task'",
                "rb2.additional_metadata.correct": "JSON verifier spec (sandbox convention, read by judges.judge_rb2_completion)",
            },
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        bar.update(1)
    return manifest


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, owned by someone else
    return True


def remove_stale_builds(out_dir: Path) -> list[Path]:
    """Delete the half-built worlds (``.<name>.tmp-<pid>-*``, ``.<name>.old-<pid>``) of builds whose
    process is gone (killed mid-build); a build still running, or of unknown owner, is left alone."""
    removed = []
    for path in Path(out_dir).parent.glob(f".{Path(out_dir).name}.*"):
        m = re.match(rf"^\.{re.escape(Path(out_dir).name)}\.(?:tmp|old)-(\d+)(?:-|$)", path.name)
        if m and path.is_dir() and not _pid_alive(int(m.group(1))):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _replace_dir(src: Path, dst: Path) -> None:
    """Move ``src`` to ``dst``; an existing ``dst`` is swapped out first and then deleted."""
    old = None
    if dst.exists():
        old = dst.with_name(f".{dst.name}.old-{os.getpid()}")
        os.replace(dst, old)
    os.replace(src, dst)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def read_manifest(out_dir: Path) -> dict[str, Any]:
    """The manifest of a materialised world."""
    return json.loads((Path(out_dir) / MANIFEST).read_text(encoding="utf-8"))
