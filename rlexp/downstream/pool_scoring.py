"""Scores of a pool's samples by one scorer, cached per (pool, scorer) as a store record.

Another RM, another k or another judge never regenerates the pool, and a second BoN run with the
same RM never re-scores it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from omegaconf import DictConfig, OmegaConf

from rlexp.data.schemas import PromptItem
from rlexp.errors import DataError
from rlexp.scorer import ScoreInput, Scorer
from rlexp.store import Store


def pool_matrix(pool_path: str, prompts: Sequence[PromptItem]) -> tuple[list[list[str]], int]:
    """The pool's texts as [prompt][sample] in prompt-set order; pool and prompts must match."""
    table = pq.read_table(pool_path).to_pydict()
    by_prompt: dict[str, dict[int, str]] = {}
    for pid, j, text in zip(table["prompt_id"], table["sample_index"], table["text"], strict=False):
        by_prompt.setdefault(pid, {})[int(j)] = text
    ids = [p.prompt_id for p in prompts]
    missing = [i for i in ids if i not in by_prompt]
    extra = set(by_prompt) - set(ids)
    if missing or extra:
        example = missing[0] if missing else sorted(extra)[0]
        raise DataError(
            f"pool {pool_path} does not match the prompt set: prompt {example!r} is "
            f"{'missing from the pool' if missing else 'not in the prompt set'}"
        )
    n = len(by_prompt[ids[0]])
    texts = []
    for pid in ids:
        row = by_prompt[pid]
        if sorted(row) != list(range(n)):
            raise DataError(f"pool {pool_path}: prompt {pid!r} has samples {sorted(row)[:5]}..., expected 0..{n - 1}")
        texts.append([row[j] for j in range(n)])
    return texts, n


def rm_scores_key(rm_id: str, cfg: DictConfig) -> dict[str, Any]:
    """What identifies an RM's scores of a pool; BoN and PPO use the same key, so they share the cache."""
    return {"rm": rm_id, "scorer": OmegaConf.to_container(cfg.scorer, resolve=True),
            "profile": OmegaConf.to_container(cfg.profile, resolve=True)}


def score_pool(
    cfg: DictConfig,
    *,
    pool_id: str,
    pool_path: str,
    prompts: Sequence[PromptItem],
    scorer_key: Mapping[str, Any],
    make_scorer: Callable[[], Scorer],
    role: str,
) -> tuple[np.ndarray, str]:
    """[P, n] scores of the pool by the scorer ``scorer_key`` identifies (cached), and the record id."""
    from rlexp.runtime import execute

    texts, n = pool_matrix(pool_path, prompts)

    def body(ctx: Any) -> dict[str, Any]:
        scorer = make_scorer()
        inputs = [
            ScoreInput(p.prompt, t, p.profile, p.hidden) for p, row in zip(prompts, texts, strict=False) for t in row
        ]
        from rlexp.benchmarks.runners import score_chunked

        flat = score_chunked(scorer, inputs, f"scoring pool ({role})", bool(ctx.cfg.progress))
        bad = np.flatnonzero(~np.isfinite(flat))
        if bad.size:
            p, j = divmod(int(bad[0]), n)
            raise DataError(f"{role} scorer {scorer.name}: NaN score for prompt {prompts[p].prompt_id!r}, sample {j}")
        rows = {
            "prompt_id": [p.prompt_id for p in prompts for _ in range(n)],
            "sample_index": [j for _ in prompts for j in range(n)],
            "score": flat.tolist(),
        }
        path = ctx.work_dir / "scores.parquet"
        pq.write_table(pa.table(rows), path)
        ctx.add_artifact("scores", path)
        ctx.info["scorer_stats"] = {"items": scorer.stats.items, "truncated": scorer.stats.truncated,
                                    "parse_failures": scorer.stats.parse_failures}
        if getattr(scorer, "tokenizer_report", None):
            ctx.info["tokenizer"] = scorer.tokenizer_report
        return {"mean": float(flat.mean()), "std": float(flat.std()), "n": int(flat.size)}

    sub = OmegaConf.create(
        {
            "paths": OmegaConf.to_container(cfg.paths, resolve=True),
            "logger": {"kind": "none"},
            "runtime": OmegaConf.to_container(cfg.runtime, resolve=True),
            "progress": cfg.get("progress", True),
            "scorer": json.loads(json.dumps(dict(scorer_key), default=str)),
            "role": role,
        }
    )
    record = execute("pool_scores", sub, body, inputs={"pool": pool_id})
    table = pq.read_table(Store(cfg.paths.store).resolve(record.artifacts["scores"])).to_pydict()
    scores = np.asarray(table["score"], dtype=np.float64).reshape(len(prompts), n)
    return scores, record.id
