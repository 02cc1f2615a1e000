"""The materialised files: exact real schemas, layout, counts, determinism and atomic writes."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rlexp.data.schemas import (
    PAIRS_ARROW_SCHEMA,
    PRB_ARROW_SCHEMA,
    PRB_DOMAINS,
    PROMPTS_ARROW_SCHEMA,
    RB2_ARROW_SCHEMA,
    RB2_SUBSETS,
    SFT_ARROW_SCHEMA,
)
from rlexp.errors import ConfigError
from rlexp.sandbox import materialise
from rlexp.sandbox.kb import build_kb
from rlexp.sandbox.knobs import knobs_for
from rlexp.sandbox.materialise import WORLD_VERSION
from rlexp.sandbox.prb import build_prb
from rlexp.sandbox.rb2 import build_rb2
from rlexp.sandbox.rng import make_rng
from rlexp.sandbox.splits import PromptRegistry
from rlexp.sandbox.text import normalise_prompt

from .conftest import Loaded


def test_rb2_and_prb_files_have_the_real_field_names_and_types(world_dir: Path) -> None:
    rb2 = pq.read_schema(world_dir / "rb2/test.parquet")
    assert rb2.names == RB2_ARROW_SCHEMA.names
    assert rb2.remove_metadata().equals(RB2_ARROW_SCHEMA)
    for domain in PRB_DOMAINS:
        prb = pq.read_schema(world_dir / f"prb/{domain}/test-00000-of-00001.parquet")
        assert prb.names == [
            "id",
            "question",
            "profile",
            "rubric_aspects",
            "narrative",
            "category",
            "chosen",
            "rejected",
        ]
        assert prb.remove_metadata().equals(PRB_ARROW_SCHEMA)


def test_rlexp_formats_have_their_schemas(world_dir: Path) -> None:
    for source in ("general", "personal", "length_bias", "flipped"):
        assert pq.read_schema(world_dir / f"pairs/{source}.parquet").remove_metadata().equals(PAIRS_ARROW_SCHEMA)
    for kind in ("personalized", "general"):
        for split in ("train", "eval"):
            assert (
                pq.read_schema(world_dir / f"prompts/{kind}/{split}.parquet")
                .remove_metadata()
                .equals(PROMPTS_ARROW_SCHEMA)
            )
    assert pq.read_schema(world_dir / "corpus/sft.parquet").remove_metadata().equals(SFT_ARROW_SCHEMA)
    for v in ("a", "b"):
        docs = (world_dir / f"corpus/pretrain_{v}.txt").read_text(encoding="utf-8").split("\n\n")
        assert len(docs) >= 2000


def test_rb2_rows_follow_the_real_conventions(world: Loaded) -> None:
    by_subset: dict[str, list[dict]] = {s: [] for s in RB2_SUBSETS}
    for r in world.rb2_rows:
        by_subset[r["subset"]].append(r)
        assert r["num_correct"] == len(r["chosen"]) and r["num_incorrect"] == len(r["rejected"])
        assert r["total_completions"] == r["num_correct"] + r["num_incorrect"]
        meta = r["additional_metadata"]
        assert set(meta) == {
            "category",
            "correct",
            "index",
            "instruction_id_list",
            "label",
            "method",
            "models",
            "prompt_norm",
            "subcategory",
            "valid",
        }
        assert meta["prompt_norm"] is None and meta["valid"] is None  # unused fields stay null
        if r["subset"] != "Precise IF":
            assert meta["instruction_id_list"] is None
    for subset, rows in by_subset.items():
        if subset == "Ties":
            continue
        assert len(rows) >= 60, subset
        assert all(r["num_correct"] == 1 and r["num_incorrect"] == 3 for r in rows)
    ties = by_subset["Ties"]
    refs = {r["id"].split(":")[1] for r in ties if r["id"].startswith("ref:")}
    tieds = {r["id"].split(":")[1] for r in ties if r["id"].startswith("tied:")}
    assert len(refs) >= 60 and refs == tieds  # every prompt number has both a ref and a tied row
    assert all(r["num_correct"] == 1 for r in ties if r["id"].startswith("ref:"))
    assert all(r["num_correct"] >= 2 for r in ties if r["id"].startswith("tied:"))
    assert len({r["id"] for r in world.rb2_rows}) == len(world.rb2_rows)


def test_counts_meet_the_minimums_and_match_the_manifest(world: Loaded) -> None:
    counts = world.manifest["counts"]
    assert sum(len(v) for v in world.prb_rows.values()) == counts["prb"]["rows"] >= 600
    for domain, rows in world.prb_rows.items():
        assert counts["prb"]["domains"][domain] == len(rows) > 0
        assert len({r["id"] for r in rows}) == len(rows)
    for source, rows in world.pairs.items():
        assert counts["pairs"][source] == len(rows) >= 2000
    for key, rows in world.prompts.items():
        assert counts["prompts"][key] == len(rows)
    assert len(world.prompts["personalized/eval"]) >= 100 and len(world.prompts["general/eval"]) >= 100
    assert len(world.prompts["personalized/train"]) > 0 and len(world.prompts["general/train"]) > 0
    assert world.manifest["seed"] == 0 and world.manifest["difficulty"] == 0.5
    assert isinstance(world.manifest["schema_version"], int)
    for rel, info in world.manifest["files"].items():
        assert (world.root / rel).stat().st_size == info["bytes"]


def test_personal_rows_carry_context_and_general_rows_do_not(world: Loaded) -> None:
    assert all(r["profile"] and r["rubric_aspects"] and r["narrative"] for r in world.pairs["personal"])
    assert all(not r["profile"] and not r["rubric_aspects"] and r["narrative"] == "" for r in world.pairs["general"])
    flipped = {r["id"].split("-", 1)[1]: r for r in world.pairs["flipped"]}
    assert len(flipped) == len(world.pairs["flipped"]) == len(world.pairs["general"]) + len(world.pairs["personal"])
    for g in (*world.pairs["general"], *world.pairs["personal"]):
        f = flipped[g["id"].split("-", 1)[1]]
        assert (f["chosen"], f["rejected"]) == (g["rejected"], g["chosen"])
        assert (f["prompt"], f["profile"], f["rubric_aspects"]) == (g["prompt"], g["profile"], g["rubric_aspects"])
    for r in world.prompts["personalized/eval"]:
        hidden = json.loads(r["hidden"])
        assert r["profile"] and 2 <= len(hidden["aspects"]) <= 4 and hidden["narrative"]
        assert 10 <= len(r["profile"]) <= 40


def test_same_seed_gives_the_same_bytes(world: Loaded, tmp_path: Path) -> None:
    """Regenerate in a fresh process with another hash seed: nothing may depend on set order."""
    again = tmp_path / "again"
    code = "import sys; from pathlib import Path; from rlexp.sandbox import materialise; materialise(Path(sys.argv[1]), progress=False)"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run([sys.executable, "-c", code, str(again)], check=True, env=env, timeout=300)
    assert (again / "manifest.json").read_bytes() == (world.root / "manifest.json").read_bytes()
    for rel in world.manifest["files"]:
        assert (again / rel).read_bytes() == (world.root / rel).read_bytes(), rel


# The content digest of the seed-0 world of each WORLD_VERSION. A failure here means the
# generator's output changed: bump WORLD_VERSION (so stored worlds are not reused) and pin the new
# digest. Content, not bytes, so that a pyarrow upgrade alone does not trip it.
WORLD_DIGESTS = {
    3: "d01cc9b961d59f697bd3ff5a076bb7f47ca7741f2b5b678365f937b43b0592f4",
    4: "bab877f986c1ce06f432beceec508cd0ddf960429ded5287fd4c05023ff23d7c",  # planned SFT rows
}


def content_digest(root: Path, files: list[str]) -> str:
    h = hashlib.sha256()
    for rel in sorted(files):
        path = root / rel
        if rel.endswith(".parquet"):
            body = json.dumps(pq.read_table(path).to_pylist(), sort_keys=True, default=str).encode()
        else:
            body = path.read_bytes()
        h.update(f"{rel}\n".encode() + hashlib.sha256(body).digest())
    return h.hexdigest()


def test_generator_changes_bump_the_world_version(world: Loaded) -> None:
    digest = content_digest(world.root, list(world.manifest["files"]))
    assert WORLD_DIGESTS.get(WORLD_VERSION) == digest, (
        f"the sandbox's output changed (digest {digest}): bump WORLD_VERSION and pin the digest"
    )


def test_another_seed_gives_other_items(world: Loaded) -> None:
    knobs = knobs_for(0.5)
    kb = build_kb(1)
    rb2 = build_rb2(kb, knobs, make_rng(1, "rb2"), PromptRegistry())
    prb, _ = build_prb(knobs, make_rng(1, "prb"), PromptRegistry())
    ours = {normalise_prompt(r["prompt"]) for r in world.rb2_rows}
    theirs = {normalise_prompt(i.prompt) for i in rb2}
    assert len(ours & theirs) < 0.2 * len(ours)  # a few generic prompts ("What is 3 + 4 × 5?") may recur
    assert [i.chosen for i in prb[:50]] != [r["chosen"] for r in world.prb_rows[PRB_DOMAINS[0]][:50]]
    names0 = {e.name for e in build_kb(0).entities}
    assert len(names0 & {e.name for e in kb.entities}) < 0.05 * len(names0)


def test_a_failed_run_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "world"
    out.mkdir()
    (out / "keep.txt").write_text("old world")

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("generator crashed")

    # The package re-exports the function under the module's name, so fetch the module itself.
    monkeypatch.setattr(importlib.import_module("rlexp.sandbox.materialise"), "build_world", boom)
    with pytest.raises(RuntimeError, match="generator crashed"):
        materialise(out, seed=0, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["world"]  # no temp dir left
    assert (out / "keep.txt").read_text() == "old world"  # the previous world is untouched


def test_bad_settings_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="difficulty"):
        materialise(tmp_path / "w", difficulty=1.5, progress=False)
    with pytest.raises(ConfigError, match="seed"):
        materialise(tmp_path / "w", seed=-1, progress=False)
