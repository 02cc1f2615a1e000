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
