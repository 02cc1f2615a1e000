"""Record ids: what of a task's config and inputs is hashed, and how (the run store's content addressing).

A record id is a hash of the task, its config minus keys that have no effect on the result (paths,
logging, progress bars, ...) and the ids of its inputs. Keys added after records existed are hashed
only when set away from their old behaviour (the tables below), so adding an option does not change
(and recompute) every record of an existing store. :mod:`rlexp.store` re-exports these names.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

# Top-level config keys that never change a result. Everything else is hashed.
NO_EFFECT_KEYS: frozenset[str] = frozenset(
    {"paths", "logger", "force", "tags", "experiment_name", "progress", "runtime", "hydra", "study"}
)


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace: the same value gives the same bytes everywhere."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)


def content_hash(obj: Any, length: int = 16) -> str:
    """Short sha256 of the canonical JSON of ``obj``."""
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()[:length]


# Nested keys added after records existed: hashed only when set away from this value, so adding an
# option does not change (and recompute) every record of an existing store. ``None`` as the value
# means the key never changes a result (a check's strictness, say) and is never hashed.
HASH_NEUTRAL: dict[tuple[str, str], Any] = {
    ("scorer", "tokenizer"): "auto",
    ("scorer", "tokenizer_check"): None,
    ("scorer", "share_prefix"): False,
    ("tiny", "pack_batches"): False,  # a tiny lineage trained on packed batches
    ("prompts", "tasks"): {},  # suite prompt sets; every older prompt set has none
    ("sampling", "vllm_engine"): {},  # the vllm backend's engine settings; the hf backend has none
    # Pools drawn before top_k was a setting came from the hf backend, which applied transformers'
    # default top_k=50; a vLLM pool then had no cut, so only hf's 50 is neutral (HASH_NEUTRAL_ONLY_IF).
    ("sampling", "top_k"): 50,
    ("sampling", "policy_profile"): "posts",  # every older pool showed the policy the posts
    ("sampling", "draw"): "full",  # every older pool drew from transformers' multinomial
    ("trainer", "response_logits_only"): False,  # every older PPO run computed the logits of every position
    # PPO evaluated at the end only, the final policy's gain the headline (every older PPO run).
    ("", "eval_every"): 0,
    ("", "headline_gain"): "final",
    # LaMP-QA prompt sets; every older prompt set is in rlexp's format. A None default drops the key
    # whatever its value: domains and retriever_model are in the prompt set's id (an input of the pool).
    ("prompts", "format"): "rlexp",
    ("prompts", "domains"): None,
    ("prompts", "retriever"): "bm25",
    ("prompts", "retriever_model"): None,
    ("prompts", "profile_k"): 10,
    ("judge", "workers"): None,  # how many processes grade changes no score
    ("judge", "timeout"): 60.0,
    # How a served judge is reached changes no score ("judge", "endpoint" is in HASH_PRESENCE).
    ("judge", "api_key_env"): None,
    ("judge", "concurrency"): None,
    ("judge", "max_retries"): None,
    ("judge", "request_timeout"): None,
    # A suite task's grading metric (prompts.tasks.<task>.metric) is the gold judge's: its pool-scores
    # record names it (rlexp.scoring.factory.judge_key), so a pool does not change with it.
    **{(t, "metric"): None for t in ("gsm8k", "math", "ifeval", "alpacaeval", "bbh", "popqa", "humanevalplus")},
    ("ndcg", "prb"): True,  # correlate: one more NDCG variant in the tables, the same records read
}

# HASH_NEUTRAL entries whose neutral value held only where their siblings pass this test: a vLLM
# pool stored before top_k was a setting had no cut, so its top_k: 50 must give it a new id.
HASH_NEUTRAL_ONLY_IF: dict[tuple[str, str], Callable[[Mapping[str, Any]], bool]] = {
    ("sampling", "top_k"): lambda sampling: sampling.get("backend", "hf") == "hf",
}

# Keys hashed only as "set" (True) or dropped when None: what the value points to is not part of a
# result, but whether it is set is. A served judge's URL is one: the same model behind another URL
# gives the same scores, while a served judge (another inference engine) is not the local one. So is an
# external results file: its content's hash is among the correlate record's inputs, not its path.
HASH_PRESENCE: frozenset[tuple[str, str]] = frozenset({("judge", "endpoint"), ("", "external")})

# Keys added after records existed whose null value is the old behaviour and whose every set value
# matters: dropped when null, hashed in full otherwise (the Chatbot Arena-/PRISM-Personalized
# benchmarks; an evaluation without them keeps its id).
# A key at the config's top level is named with the node "".
HASH_UNLESS_NULL: frozenset[tuple[str, str]] = frozenset({("benchmark", "arena"), ("benchmark", "prism"),
                                                          ("", "baseline_samples"),
                                                          # PPO: null is the held-out split of the training set
                                                          # (every older run) and one learning rate for both
                                                          ("", "eval_prompts"), ("trainer", "critic_learning_rate"),
                                                          ("", "rm_lineage")})


def _drop_neutral(obj: Any, parent: str | None = None) -> Any:
    """``obj`` without the :data:`HASH_NEUTRAL` keys at their neutral value and with the
    :data:`HASH_PRESENCE` keys as a flag, at any depth (a pool's scores record nests the scorer
    settings one level down)."""
    if isinstance(obj, Mapping):
        out = {}
        for k, v in obj.items():
            key = (str(parent), str(k))
            if key in HASH_PRESENCE:
                if v is not None:
                    out[k] = True
                continue
            if v is None and key in HASH_UNLESS_NULL:
                continue
            neutral = HASH_NEUTRAL.get(key, _KEEP)
            if neutral is not _KEEP and (neutral is None or v == neutral) and (
                    key not in HASH_NEUTRAL_ONLY_IF or HASH_NEUTRAL_ONLY_IF[key](obj)):
                continue
            out[k] = _drop_neutral(v, str(k))
        return out
    if isinstance(obj, list):
        return [_drop_neutral(v) for v in obj]
    return obj


_KEEP = object()

# Keys renamed after records existed, per task: (node, new name) -> the name hashed. A store
# written before the rename keeps its ids (train_rm's trainer took TRL's own field names).
HASH_RENAMED: dict[str, dict[tuple[str, str], str]] = {
    "train_rm": {
        ("trainer", "num_train_epochs"): "epochs",
        ("trainer", "per_device_train_batch_size"): "batch_size",
        ("trainer", "gradient_accumulation_steps"): "grad_accum",
        ("trainer", "lr_scheduler_type"): "lr_scheduler",
        ("trainer", "warmup_steps"): "warmup_ratio",
        ("trainer", "length_grouping"): "group_by_length",
    },
}


def _rename(config: dict[str, Any], renamed: Mapping[tuple[str, str], str]) -> dict[str, Any]:
    out = dict(config)
    for (node, new), old in renamed.items():
        if isinstance(out.get(node), Mapping) and new in out[node]:
            out[node] = {old if k == new else k: v for k, v in out[node].items()}
    return out


def result_config(config: Mapping[str, Any], task: str | None = None) -> dict[str, Any]:
    """The part of a resolved task config that determines its result, as it is hashed."""
    kept = {k: v for k, v in config.items() if k not in NO_EFFECT_KEYS}
    return _drop_neutral(_rename(kept, HASH_RENAMED.get(str(task), {})), "")


def record_id(task: str, config: Mapping[str, Any], inputs: Mapping[str, str] | None = None) -> str:
    """Content hash of task + result-bearing config + input record ids."""
    return content_hash({"task": task, "config": result_config(config, task), "inputs": dict(inputs or {})})
