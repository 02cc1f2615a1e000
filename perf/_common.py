"""Shared set-up for the benchmark scripts: an isolated rlexp root and composed task configs."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def use_root(name: str) -> Path:
    """Benchmarks run in their own store (reused between runs, so builds are cached)."""
    root = Path(os.environ.get("RLEXP_BENCH_ROOT", Path(tempfile.gettempdir()) / "rlexp-bench")) / name
    os.environ["RLEXP_ROOT"] = str(root)
    os.environ.setdefault("WANDB_MODE", "disabled")
    return root


def compose(task: str, *overrides: str):
    from rlexp.runtime import compose_task

    return compose_task(task, ["logger=none", "progress=false", *overrides])


def tiny_policy_and_prompts(prompt_set: str, limit: int) -> tuple[Any, list[Any], Any, Any]:
    """The tiny_llama policy (built into the bench root if absent) and the first ``limit`` prompts of a
    sandbox prompt set, one thread (returns the composed sample config, prompts, tokenizer, model)."""
    import torch

    from rlexp import inputs
    from rlexp.models.loading import load_causal_lm, load_tokenizer

    torch.set_num_threads(1)
    cfg = compose("sample", "model=tiny_llama", f"prompts={prompt_set}", f"prompts.limit={limit}")
    path = inputs.lineage(cfg).checkpoint("instruct")
    prompts, _ = inputs.prompt_set(cfg)
    return cfg, prompts, load_tokenizer(path, padding_side="left"), load_causal_lm(path)


def sandbox_rb2_and_rm() -> tuple[str, list[Any], Any, Any, Any]:
    """What the scoring benchmarks time: the sandbox RewardBench 2 (its folder, and its completions
    unrolled as score inputs) and a ~20M-parameter random Llama sequence classifier on tiny_llama's
    tokenizer, seeded (returns folder, inputs, tokenizer, model config, model)."""
    import torch
    from transformers import AutoModelForSequenceClassification, LlamaConfig

    from rlexp import inputs
    from rlexp.benchmarks.rewardbench2_math import unroll
    from rlexp.data.loaders import load_rb2
    from rlexp.models.loading import load_tokenizer
    from rlexp.scorer import ScoreInput

    dataset = inputs.data_ref("sandbox:rb2", compose("evaluate", "rm=x"))[0]
    items = load_rb2(dataset)
    texts, index = unroll(items)
    queries = [ScoreInput(items[i].prompt, t) for t, (i, _) in zip(texts, index, strict=True)]
    tok = load_tokenizer(inputs.lineage(compose("train_rm", "model=tiny_llama")).base, padding_side="right")
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=512, intermediate_size=1376, num_hidden_layers=6,
                         num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=2048,
                         num_labels=1, pad_token_id=tok.pad_token_id)
    return dataset, queries, tok, config, AutoModelForSequenceClassification.from_config(config).eval()


def gold_scores_by_pool(store: Any) -> dict[str, Any]:
    """Every pool's gold scores a store holds: pool record id -> its scores frame (prompt_id, score, ...)."""
    import pyarrow.parquet as pq

    return {rec.inputs["pool"]: pq.read_table(store.resolve(rec.artifacts["scores"])).to_pandas()
            for rec in store.records("pool_scores") if rec.config.get("role") == "gold"}


def trainer_label(config: dict) -> str:
    """The PPO budget of a run's config: learning rate, episodes, rollouts per update."""
    t = config.get("trainer") or {}
    per_update = int(t.get("per_device_train_batch_size", 0)) * int(t.get("gradient_accumulation_steps", 1))
    return f"lr {float(t.get('learning_rate', 0)):g}, {t.get('total_episodes')} x{per_update}"


def rm_label(store: Any, rm: str) -> str:
    """``<lineage> <mix> e<epochs>`` of a study RM, from its train_rm record."""
    from rlexp.analysis.records import factors

    f = factors(store.get(rm, "train_rm"))
    return f"{f['lineage']} {f['mix']} e{float(f['epochs']):g}"


# Personalized prompts by what the sandbox planner says about length, the dimension every sandbox RM
# reads (docs/sandbox.md, "Where the personal RMs' Best-of-N gain comes from").
LENGTH_GROUPS = ("plan: brief", "plan: detailed, wanted", "plan: detailed, not wanted", "plan: no length")


def length_group(plan: list[Any], hidden: Any) -> str:
    """A personalized prompt's group in :data:`LENGTH_GROUPS`, from the planner's poles and its hidden dict."""
    from rlexp.sandbox.aspects import known_titles
    from rlexp.sandbox.judges import aspect_titles

    side = next((a.side for a in plan if a.dim == "length"), None)
    if side is None:
        return LENGTH_GROUPS[3]
    if side == 0:
        return LENGTH_GROUPS[0]
    wanted = any(a.dim == "length" and a.side == 1 for a in known_titles(aspect_titles(hidden)))
    return LENGTH_GROUPS[1 if wanted else 2]


def length_groups(prompts: list[Any], k: int) -> list[str]:
    """Each personalized prompt's :func:`length_group`: the planner's reading of its top ``k`` posts,
    against the user's hidden aspects."""
    from rlexp.data.formatting import top_posts
    from rlexp.sandbox.aspects import known_titles
    from rlexp.sandbox.planner import infer_aspects

    return [length_group(known_titles(infer_aspects(top_posts(p.profile, k, p.prompt))), p.hidden) for p in prompts]


def extra_training_users(world: Any, n: int, seed: int = 0) -> list[Any]:
    """``n`` training users beyond a sandbox world's own, drawn as the world draws its users but from a
    random stream of their own (``train-users-extra``), so the first ``n`` are the same for any ``n``."""
    from rlexp.sandbox.rng import make_rng
    from rlexp.sandbox.sites import SITES_BY_DOMAIN
    from rlexp.sandbox.users import PoleBalancer, make_user

    rng, balancer, domains = make_rng(seed, "train-users-extra"), PoleBalancer(), list(SITES_BY_DOMAIN)
    return [make_user(f"tx{i:05d}", domains[i % len(domains)], world.knobs, balancer, rng) for i in range(n)]


def held_out_questions(world: Any) -> set[str]:
    """Every question of a sandbox world's evaluation prompt sets and of its Personalized RewardBench:
    what no training data built beside the world may ask."""
    held = {p.prompt for (_, split), items in world.prompts.items() if split == "eval" for p in items}
    return held | {item.question for item in world.prb}
