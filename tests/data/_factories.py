"""Valid rows of every record kind (exact arrow schemas) and small file writers for the data tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from rlexp.data.schemas import PAIRS_ARROW_SCHEMA, PRB_ARROW_SCHEMA, PROMPTS_ARROW_SCHEMA, RB2_ARROW_SCHEMA

_META_KEYS = [f.name for f in RB2_ARROW_SCHEMA.field("additional_metadata").type]


def rb2_row(item_id: str, subset: str = "Factuality", n_chosen: int = 1, n_rejected: int = 3) -> dict[str, Any]:
    chosen = [f"{item_id} good {i}" for i in range(n_chosen)]
    rejected = [f"{item_id} bad {i}" for i in range(n_rejected)]
    meta: dict[str, Any] = dict.fromkeys(_META_KEYS)
    meta.update(category="cat", index=3.0, instruction_id_list=["a:b"], models=["m1"])
    return {
        "id": item_id,
        "prompt": f"prompt of {item_id}",
        "chosen": chosen,
        "rejected": rejected,
        "num_correct": n_chosen,
        "num_incorrect": n_rejected,
        "total_completions": n_chosen + n_rejected,
        "models": ["m1", "m2"],
        "subset": subset,
        "additional_metadata": meta,
    }


def post(pid: str, category: str, text: str) -> dict[str, str]:
    return {"category": category, "id": pid, "text": text}


def prb_row(item_id: str, n_posts: int = 3) -> dict[str, Any]:
    return {
        "id": item_id,
        "question": f"question {item_id}?",
        "profile": [post(f"{item_id}-p{j}", f"site{j}", f"past post {j} of {item_id}") for j in range(n_posts)],
        "rubric_aspects": [{"aspect": "brevity", "evidence": "says so", "reason": "wants short"}],
        "narrative": "I want short answers.",
        "category": "cooking",
        "chosen": f"short answer {item_id}",
        "rejected": f"long rambling answer {item_id}",
    }


def pair_row(pair_id: str, personalized: bool = False) -> dict[str, Any]:
    return {
        "id": pair_id,
        "prompt": f"prompt {pair_id}",
        "chosen": f"good {pair_id}",
        "rejected": f"bad {pair_id}",
        "source": "general",
        "profile": [post("p0", "diy", "how do I fix a hinge")] if personalized else [],
        "rubric_aspects": [{"aspect": "steps", "evidence": "e", "reason": "r"}] if personalized else [],
        "narrative": "narr" if personalized else "",
    }


def prompt_row(prompt_id: str, kind: str = "general") -> dict[str, Any]:
    return {
        "prompt_id": prompt_id,
        "prompt": f"prompt {prompt_id}",
        "kind": kind,
        "profile": [post("p0", "diy", "an old post")] if kind == "personalized" else [],
        "hidden": json.dumps({"answer": 42}),
    }


SCHEMAS = {
    "rb2": RB2_ARROW_SCHEMA,
    "prb": PRB_ARROW_SCHEMA,
    "pairs": PAIRS_ARROW_SCHEMA,
    "prompts": PROMPTS_ARROW_SCHEMA,
}


def write_parquet(path: Path, rows: list[dict[str, Any]], schema: pa.Schema | None = None) -> Path:
    """Write rows with ``schema`` (exact), or with an inferred schema when ``None`` (for wrong types)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return path


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_rows(path: Path, rows: list[dict[str, Any]], kind: str, *, exact_schema: bool = True) -> Path:
    if path.suffix == ".parquet":
        return write_parquet(path, rows, SCHEMAS[kind] if exact_schema else None)
    return write_jsonl(path, rows)


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
