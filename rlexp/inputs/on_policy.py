"""Preference pairs of the policy's own kind: its samples on *train* prompts, labelled by the gold judges.

The data source ``policy:<model preset>`` (e.g. ``policy:tiny_llama``, usable in any mix), or
``policy:<model preset>/<prompt set>`` for one set's pairs only (``policy:tiny_llama/general``), is built
on first use: the preset's instruct policy samples :data:`SAMPLES` answers for every prompt of the
sandbox's personalized and general *train* splits (PPO's training prompts, disjoint from every eval
prompt by the world's registry), the gold judge of each set scores them, and each prompt gives up to
:data:`PAIRS_PER_PROMPT` pairs: its samples ranked by gold, the i-th best chosen against the i-th
worst while they differ by at least :data:`MIN_MARGIN` (each sample in one pair at most). With
probability :data:`LABEL_NOISE` (seeded per pair) the labels are swapped, as in real preference data,
where annotators disagree. Real RM training mixes on-policy samples in this
way, so that the RM learns to tell apart the policy's own texts rather than template pairs only.

The pairs are a store record (task ``on_policy``) whose inputs are the pools and their gold scores,
so the pools are shared with any BoN or PPO run that samples the same prompts.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from omegaconf import DictConfig, OmegaConf

from rlexp import inputs
from rlexp.data.schemas import PAIRS_ARROW_SCHEMA, PromptItem
from rlexp.downstream.pool_scoring import pool_matrix
from rlexp.errors import ConfigError
from rlexp.runtime import RunContext, compose_task, execute
from rlexp.scoring.factory import judge_key
from rlexp.store import Record, Store

PREFIX = "policy:"
SAMPLES = 16
PAIRS_PER_PROMPT = 4
MIN_MARGIN = 0.25
LABEL_NOISE = 0.1
PROMPT_SETS = ("personalized", "general")
# Every train prompt of each set; a number keeps the first that many (a smaller pool for tests). It
# reaches the pools' configs as prompts.limit, so their ids, and the pairs' record id, say so.
PROMPT_LIMIT: int | None = None


def is_on_policy_ref(ref: str) -> bool:
    """True for a ``policy:<model preset>`` data source."""
    return str(ref).startswith(PREFIX)


def _pool_cfg(cfg: DictConfig, preset: str, prompt_set: str) -> DictConfig:
    """A Best-of-N config naming the source's pool (the train split) and gold judge, in the caller's
    store and world; its ``rm`` is never used."""
    keep = [f"paths.{k}={v}" for k, v in OmegaConf.to_container(cfg.paths, resolve=True).items()]
    world = [f"sandbox.{k}={cfg.sandbox[k]}" for k in ("seed", "difficulty")] if "sandbox" in cfg else []
    return compose_task("bon", ["logger=none", f"progress={str(bool(cfg.get('progress', False))).lower()}",
                                f"runtime.threads={cfg.runtime.threads}", *keep, *world, f"model={preset}",
                                f"prompts={prompt_set}", "prompts.split=train", f"sampling.n={SAMPLES}",
                                *([f"prompts.limit={PROMPT_LIMIT}"] if PROMPT_LIMIT else []), inputs.UNUSED_RM])


def judged_pool(cfg: DictConfig, prompt_set: str) -> tuple[Record, list[PromptItem], list[list[str]], np.ndarray, str]:
    """A Best-of-N config's pool (sampled on first use), its texts per prompt, and their gold scores by the
    judge of ``prompt_set`` (cached in the store): (pool record, prompts, texts, gold, gold scores' id)."""
    pool, prompts = inputs.pool(cfg)
    gold, gold_id = inputs.pool_scores(cfg, pool_record=pool, prompts=prompts, scorer_key=judge_key(cfg.judge, prompt_set),
                                       make_scorer=lambda: inputs.gold_judge(cfg, prompt_set), role="gold")
    texts, _ = pool_matrix(str(Store(cfg.paths.store).resolve(pool.artifacts["pool"])), prompts)
    return pool, prompts, texts, gold, gold_id


def gold_pairs(prompts: list[PromptItem], texts: list[list[str]], gold: np.ndarray, source: str, *,
               margin: float = MIN_MARGIN, noise: float = LABEL_NOISE) -> list[dict[str, Any]]:
    """Up to PAIRS_PER_PROMPT (better, worse) pairs per prompt from its non-empty samples, the two at least
    ``margin`` apart in gold, with probability ``noise`` the labels swapped (pair rows, PAIRS_ARROW_SCHEMA)."""
    rows = []
    for item, row, scores in zip(prompts, texts, gold, strict=True):
        # An empty sample is no answer to prefer; ties in gold keep sample order (stable sort).
        ranked = sorted((j for j, text in enumerate(row) if text.strip()), key=lambda j: -scores[j])
        for i in range(min(PAIRS_PER_PROMPT, len(ranked) // 2)):
            best, worst = ranked[i], ranked[-1 - i]
            if scores[best] - scores[worst] < margin:
                break
            chosen, rejected = row[best], row[worst]
            if random.Random(f"{source}:{item.prompt_id}:{i}").random() < noise:
                chosen, rejected = rejected, chosen
            rows.append({"id": f"{source}/{item.prompt_id}/{i}", "prompt": item.prompt, "chosen": chosen,
                         "rejected": rejected, "source": source,
                         "profile": [dataclasses.asdict(p) for p in item.profile], "rubric_aspects": [],
                         "narrative": ""})
    return rows


def on_policy_pairs(ref: str, cfg: DictConfig) -> tuple[str, str]:
    """The pairs file of ``policy:<model preset>[/<prompt set>]`` and its record id, built on first use."""
    preset, _, only = str(ref)[len(PREFIX):].partition("/")
    if not preset:
        raise ConfigError(f"data source {ref!r}: name a model preset, e.g. policy:tiny_llama")
    if only and only not in PROMPT_SETS:
        raise ConfigError(f"data source {ref!r}: the prompt set after '/' must be one of {', '.join(PROMPT_SETS)}")
    parts, ids = [], {}
    for name in (only,) if only else PROMPT_SETS:
        scfg = _pool_cfg(cfg, preset, name)
        if not str(scfg.prompts.source).startswith("sandbox:"):
            raise ConfigError(f"data source {ref!r}: on-policy pairs need the sandbox's {name} prompts and gold judges")
        pool, prompts, texts, gold, gold_id = judged_pool(scfg, name)
        parts.append((name, prompts, texts, gold))
        ids.update({f"pool/{name}": pool.id, f"gold/{name}": gold_id})

    def body(ctx: RunContext) -> dict[str, Any]:
        rows, counts = [], {}
        for name, prompts, texts, gold in parts:
            got = gold_pairs(prompts, texts, gold, f"on_policy_{name}")
            rows += got
            counts[name] = {"prompts": len(prompts), "pairs": len(got)}
        path = ctx.work_dir / "pairs.parquet"
        pq.write_table(pa.Table.from_pylist(rows, schema=PAIRS_ARROW_SCHEMA), path)
        ctx.add_artifact("pairs", path)
        ctx.info["counts"] = counts
        return {"pairs": len(rows), "label_noise": LABEL_NOISE, "min_margin": MIN_MARGIN, "samples": SAMPLES,
                "pairs_per_prompt": PAIRS_PER_PROMPT}

    sub = OmegaConf.create({"paths": OmegaConf.to_container(cfg.paths, resolve=True), "logger": {"kind": "none"},
                            "runtime": OmegaConf.to_container(cfg.runtime, resolve=True),
                            "progress": cfg.get("progress", True), "source": str(ref),
                            "settings": {"samples": SAMPLES, "min_margin": MIN_MARGIN, "label_noise": LABEL_NOISE,
                                         "pairs_per_prompt": PAIRS_PER_PROMPT}})
    record = execute("on_policy", sub, body, inputs=ids)
    return str(Store(cfg.paths.store).resolve(record.artifacts["pairs"])), record.id
