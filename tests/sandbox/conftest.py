"""Shared fixtures: one materialised sandbox world (seed 0) per test session, read back from disk."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from rlexp.data.schemas import PRB_DOMAINS, PRBItem, ProfilePost, RB2Item, RubricAspect
from rlexp.sandbox import materialise, read_manifest


@dataclass
class Loaded:
    """A materialised world read back with pyarrow only (what any consumer would see)."""

    root: Path
    manifest: dict[str, Any]
    rb2_rows: list[dict[str, Any]]
    prb_rows: dict[str, list[dict[str, Any]]]
    pairs: dict[str, list[dict[str, Any]]]
    prompts: dict[str, list[dict[str, Any]]]
    sft: list[dict[str, Any]]

    @property
    def rb2_items(self) -> list[RB2Item]:
        return [
            RB2Item(
                r["id"],
                r["prompt"],
                tuple(r["chosen"]),
                tuple(r["rejected"]),
                r["subset"],
                tuple(r["models"]),
                r["additional_metadata"],
            )
            for r in self.rb2_rows
        ]

    @property
    def prb_items(self) -> list[PRBItem]:
        return [
            PRBItem(
                r["id"],
                r["question"],
                tuple(ProfilePost(**p) for p in r["profile"]),
                tuple(RubricAspect(**a) for a in r["rubric_aspects"]),
                r["narrative"],
                r["category"],
                r["chosen"],
                r["rejected"],
                domain,
            )
            for domain, rows in self.prb_rows.items()
            for r in rows
        ]


def load(root: Path) -> Loaded:
    return Loaded(
        root=root,
        manifest=read_manifest(root),
        rb2_rows=pq.read_table(root / "rb2/test.parquet").to_pylist(),
        prb_rows={d: pq.read_table(root / f"prb/{d}/test-00000-of-00001.parquet").to_pylist() for d in PRB_DOMAINS},
        pairs={
            s: pq.read_table(root / f"pairs/{s}.parquet").to_pylist()
            for s in ("general", "personal", "length_bias", "flipped")
        },
        prompts={
            f"{k}/{s}": pq.read_table(root / f"prompts/{k}/{s}.parquet").to_pylist()
            for k in ("personalized", "general")
            for s in ("train", "eval")
        },
        sft=pq.read_table(root / "corpus/sft.parquet").to_pylist(),
    )


@pytest.fixture(scope="session")
def world_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sandbox") / "world"
    materialise(out, seed=0, difficulty=0.5, progress=False)
    return out


@pytest.fixture(scope="session")
def world(world_dir: Path) -> Loaded:
    return load(world_dir)
