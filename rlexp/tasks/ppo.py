"""`rlexp ppo`: RL of a policy against a reward, gold-judged before and after.

The policy trains on the prompt set's ``train`` split; afterwards it is sampled on the held-out
``eval`` split exactly like a BoN pool (same sampling settings, through `rlexp sample`), and both
pools are judged by the gold judge. The initial policy's pool is the cached one BoN uses, so the
baseline is computed once per (policy, prompt set). ``rm`` is any reward: an RM of the policy's
lineage, an RM of another lineage, or ``judge:rubric`` / ``judge:verifier`` (an upper bound).

TRL 1.12's PPOTrainer cannot resume from a checkpoint: a killed run leaves no record and a rerun
restarts cleanly (its scratch folder is cleared). ``trainer.save_steps`` still writes periodic
policy checkpoints for inspection.
"""

from __future__ import annotations

import copy
import os
import shutil
import time
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from omegaconf import DictConfig, OmegaConf

from rlexp import inputs
from rlexp.analysis.bootstrap import bootstrap_ci
from rlexp.downstream import ppo as adapter
from rlexp.downstream.prompt_groups import gains_by_group
from rlexp.errors import ConfigError
from rlexp.models.loading import (
    check_generation_length,
    load_causal_lm,
    load_reward_model,
    load_tokenizer,
    quiet_libraries,
)
from rlexp.models.reward_training import deepspeed_env, lora_config
from rlexp.runtime import RunContext, execute, hydra_entry
from rlexp.scorer import Scorer
from rlexp.scoring.factory import check_gold_judge, judge_cache_dir, judge_key, probe_served_judges
from rlexp.store import Record


def _validate(cfg: DictConfig) -> None:
    t = cfg.trainer
    if t.response_length < 1:
        raise ConfigError(f"trainer.response_length={t.response_length} must be >= 1")
    if t.total_episodes < 1:
        raise ConfigError(f"trainer.total_episodes={t.total_episodes} must be >= 1")
    batch = t.per_device_train_batch_size * t.gradient_accumulation_steps
    if t.num_mini_batches < 1 or batch % t.num_mini_batches:
        raise ConfigError(
            f"batch size {batch} (per_device_train_batch_size x gradient_accumulation_steps) is not a multiple "
            f"of trainer.num_mini_batches={t.num_mini_batches}"
        )
    if t.total_episodes < batch:
        raise ConfigError(f"trainer.total_episodes={t.total_episodes} is smaller than one batch ({batch})")
    if cfg.baseline_samples is not None and cfg.baseline_samples < 1:
        raise ConfigError(f"baseline_samples={cfg.baseline_samples} must be >= 1 (or null: sampling.n)")


def _check_train_size(cfg: DictConfig, n_prompts: int) -> None:
    """Fail when the train split cannot fill one rollout batch.

    TRL's PPO reads prompts through a ``drop_last`` dataloader in an endless loop: with fewer
    prompts than one batch per rank the loader is empty and training spins forever at full CPU.
    """
    if cfg.algorithm != "ppo":
        return
    t = cfg.trainer
    world = int(os.environ.get("WORLD_SIZE", "1"))
    batch = t.per_device_train_batch_size * t.gradient_accumulation_steps * world
    if n_prompts < batch:
        raise ConfigError(
            f"prompts={cfg.prompts.name}: the {cfg.prompts.train_split!r} split has {n_prompts} prompts, fewer than "
            f"one PPO batch ({batch} = per_device_train_batch_size x gradient_accumulation_steps x {world} ranks); "
            "lower the batch or give more prompts"
        )


def _settings(cfg: DictConfig, report_to: str, bf16: bool, use_cpu: bool) -> dict[str, Any]:
    t = OmegaConf.to_container(cfg.trainer, resolve=True)
    extra = t.pop("extra") or {}
    t.pop("bf16")
    t.pop("response_logits_only")  # rlexp's, not TRL's: train_ppo applies it
    save_steps = t.pop("save_steps")
    out = {
        **t,
        "seed": cfg.seed,
        "report_to": report_to,
        "bf16": bf16,
        "use_cpu": use_cpu,
        "gradient_checkpointing": False,
        "stop_token": "eos",
        "num_sample_generations": 0,
        "save_strategy": "steps" if save_steps else "no",
        "disable_tqdm": True,
        **({"save_steps": save_steps} if save_steps else {}),
        **extra,
    }
    return out


def _grpo_settings(cfg: DictConfig, report_to: str, bf16: bool, use_cpu: bool) -> dict[str, Any]:
    t = cfg.trainer
    group = 4
    return {
        "learning_rate": t.learning_rate,
        "per_device_train_batch_size": max(group, t.per_device_train_batch_size // group * group),
        "num_generations": group,
        "max_completion_length": t.response_length,
        "max_steps": max(1, t.total_episodes // max(group, t.per_device_train_batch_size)),
        "temperature": t.temperature,
        "beta": t.kl_coef,
        "logging_steps": t.logging_steps,
        "report_to": report_to,
        "bf16": bf16,
        "use_cpu": use_cpu,
        "seed": cfg.seed,
        "save_strategy": "no",
        "disable_tqdm": True,
        **OmegaConf.to_container(t.extra, resolve=True),
    }


def _eval_pool(cfg: DictConfig, policy: str) -> tuple[Record, list[Any]]:
    """The trained policy's pool of the eval prompts, sampled like BoN's."""
    return inputs.pool(OmegaConf.merge(cfg, {"policy": policy, "logger": {"kind": "none"}}))


def _value_model(ctx: RunContext, cfg: DictConfig, policy_path: str, same_lineage: bool, tokenizer: Any) -> Any:
    """The critic: initialised from the RM when it reads the policy's tokens, else from the policy."""
    value_from = cfg.value_init
    if value_from == "auto":
        value_from = "rm" if same_lineage else "policy"
    if value_from == "rm":
        if not same_lineage:
            raise ConfigError("value_init=rm needs an RM of the policy's lineage (the value model reads policy tokens)")
        value = load_reward_model(inputs.rm(str(cfg.rm), ctx.store).path)
    else:
        value = load_reward_model(policy_path, init_head=True)
    value.config.pad_token_id = tokenizer.pad_token_id
    return value


def _train_ppo(ctx: RunContext, cfg: DictConfig, models: dict[str, Any], reward: Scorer, train_prompts: list[Any],
               flags: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """TRL's PPOTrainer on the train prompts; the reward curve and samples go to ``ctx.info``."""
    tokenizer, policy, peft = models["tokenizer"], models["policy"], models["peft"]
    ref_policy = None if peft is not None else copy.deepcopy(policy)
    value = _value_model(ctx, cfg, models["policy_path"], flags["same_lineage"], tokenizer)
    reward_model = adapter.reward_module(reward, tokenizer, train_prompts, cfg.sampling.profile_k, cfg.reward_scale,
                                         cfg.sampling.policy_profile)
    settings = _settings(cfg, flags["report_to"], flags["bf16"], flags["use_cpu"])
    if cfg.deepspeed.name != "none":
        settings["deepspeed"] = OmegaConf.to_container(cfg.deepspeed.config, resolve=True)
        # TRL's PPOConfig shadows TrainingArguments.world_size with a field that is None until the
        # trainer starts, but HF's DeepSpeed "auto" resolution reads it in __post_init__.
        settings["world_size"] = int(os.environ.get("WORLD_SIZE", "1"))
    args = adapter.ppo_config(str(ctx.work_dir / "trainer"), settings)
    dataset = adapter.tokenise_prompts(tokenizer, train_prompts, cfg.sampling.profile_k, cfg.sampling.policy_profile)
    trained, value_trained, train_metrics, ctx.info["train_curves"] = adapter.train_ppo(
        args=args, tokenizer=tokenizer, policy=policy, ref_policy=ref_policy, value_model=value,
        reward_model=reward_model, dataset=dataset, peft_config=peft,
        response_logits_only=bool(cfg.trainer.response_logits_only),
    )
    value_trained.save_pretrained(ctx.work_dir / "value", safe_serialization=True)
    ctx.add_artifact("value", ctx.work_dir / "value")
    log = reward_model.log
    ctx.info["reward_samples"] = [
        {"prompt": p, "response": r, "reward": s}
        for p, r, s in zip(log.prompts[-8:], log.responses[-8:], log.scores[-8:], strict=False)
    ]
    rewards = np.asarray(log.history)
    batch = cfg.trainer.per_device_train_batch_size * cfg.trainer.gradient_accumulation_steps
    # One batch is too noisy to tell whether the reward rose; the per-update means are the curve.
    curve = [float(rewards[i : i + batch].mean()) for i in range(0, len(rewards), batch)]
    ctx.info["reward_curve"] = curve
    train_metrics["reward/first_batch_mean"], train_metrics["reward/last_batch_mean"] = curve[0], curve[-1]
    return trained, train_metrics


def _train(ctx: RunContext, cfg: DictConfig, policy_path: str, reward: Scorer, train_prompts: list[Any],
           same_lineage: bool) -> tuple[Any, Any, dict[str, Any]]:
    """Load the policy and train it with the configured algorithm; returns (policy, tokenizer, metrics)."""
    import torch  # lazily, like every torch import in tasks: a bad override fails before paying for it
    from transformers import set_seed

    quiet_libraries()
    # torch, numpy and random: TRL's PPO draws each update's minibatch order from numpy's global RNG,
    # which left unseeded made the weights depend on what the process ran before.
    set_seed(int(cfg.seed))
    shutil.rmtree(ctx.work_dir / "trainer", ignore_errors=True)  # no resume in TRL's PPO: restart cleanly
    use_cpu = not torch.cuda.is_available() or cfg.runtime.device == "cpu"
    flags = {
        "use_cpu": use_cpu,
        "bf16": (not use_cpu) if cfg.trainer.bf16 == "auto" else str(cfg.trainer.bf16).lower() == "true",
        "report_to": "wandb" if ctx.tracker.run is not None else "none",
        "same_lineage": same_lineage,
    }
    tokenizer = load_tokenizer(policy_path, padding_side="left")
    if not getattr(tokenizer, "chat_template", None):
        raise ConfigError(f"policy {policy_path} has no chat template")
    policy = load_causal_lm(policy_path)
    peft = lora_config(cfg.peft.r, cfg.peft.alpha, cfg.peft.dropout, cfg.peft.target_modules) if cfg.peft.enabled else None
    if peft is not None:
        peft.task_type = "CAUSAL_LM"
    if cfg.deepspeed.name != "none":
        deepspeed_env()
    if cfg.algorithm == "ppo":
        models = {"tokenizer": tokenizer, "policy": policy, "peft": peft, "policy_path": policy_path}
        trained, metrics = _train_ppo(ctx, cfg, models, reward, train_prompts, flags)
        return trained, tokenizer, metrics
    trained, metrics, ctx.info["reward_curve"] = adapter.train_grpo_like(
        cfg.algorithm, out=str(ctx.work_dir / "trainer"),
        settings=_grpo_settings(cfg, flags["report_to"], flags["bf16"], use_cpu),
        tokenizer=tokenizer, policy=policy, scorer=reward, prompts=train_prompts,
        profile_k=cfg.sampling.profile_k, peft_config=peft, profile=cfg.sampling.policy_profile,
    )
    return trained, tokenizer, metrics


def _judge_pools(cfg: DictConfig, before: Record, after: Record, prompts: list[Any], reward: Scorer,
                 rm_id: str) -> dict[str, Any]:
    """Per-prompt mean gold and proxy scores of the initial and the trained policy's pools."""
    kind = prompts[0].kind if prompts else str(cfg.prompts.name)
    gkey = judge_key(cfg.judge, kind, cfg.prompts)
    rm_key = inputs.rm_scores_key(rm_id, cfg)

    def judged(pool: Record, key: dict[str, Any], factory: Any, role: str) -> np.ndarray:
        scores, _ = inputs.pool_scores(cfg, pool_record=pool, prompts=prompts, scorer_key=key,
                                       make_scorer=factory, role=role)
        return scores.mean(axis=1)

    return {
        "gold_before": judged(before, gkey, lambda: inputs.gold_judge(cfg, kind), "gold"),
        "gold_after": judged(after, gkey, lambda: inputs.gold_judge(cfg, kind), "gold"),
        "proxy_before": judged(before, rm_key, lambda: reward, "rm"),
        "proxy_after": judged(after, rm_key, lambda: reward, "rm"),
        "judge": gkey,
    }


def _ppo(ctx: RunContext, cfg: DictConfig, policy_path: str, policy_lineage: str, reward: Scorer, rm_id: str,
         rm_lineage: str | None, train_prompts: list[Any], before: Record) -> dict[str, Any]:
    t0 = time.time()
    same_lineage = rm_lineage is not None and rm_lineage == policy_lineage
    trained, tokenizer, train_metrics = _train(ctx, cfg, policy_path, reward, train_prompts, same_lineage)
    train_seconds = time.time() - t0
    out = ctx.work_dir / "policy"
    trained.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    shutil.rmtree(ctx.work_dir / "trainer", ignore_errors=True)
    ctx.add_artifact("policy", out)
    ctx.tracker.artifact(f"policy-{ctx.rid}", "model", out)

    # Evaluation: the trained policy's pool on the held-out prompts, judged like the baseline's.
    after, prompts = _eval_pool(cfg, f"{inputs.STORE_PREFIX}{ctx.store.relative(out)}")
    judged = _judge_pools(cfg, before, after, prompts, reward, rm_id)
    gain = judged["gold_after"] - judged["gold_before"]
    lo, hi = bootstrap_ci(gain, n_boot=cfg.n_boot, seed=cfg.seed)
    by_group = gains_by_group(prompts, gain, n_boot=cfg.n_boot, seed=cfg.seed)
    # Per prompt, so that correlate can compare RMs paired over the same prompts (and lineages).
    per_prompt = ctx.work_dir / "per_prompt.parquet"
    pq.write_table(pa.table({"prompt_id": [p.prompt_id for p in prompts], "gold_before": judged["gold_before"],
                             "gold_after": judged["gold_after"], "gain": gain}), per_prompt)
    ctx.add_artifact("per_prompt", per_prompt)
    ctx.info.update({"policy_lineage": policy_lineage, "rm": {"id": rm_id, "lineage": rm_lineage},
                     "lineage_match": same_lineage, "eval_pool": after.id, "baseline_pool": before.id,
                     "baseline_samples": int(before.config["sampling"]["n"]),
                     "judge": judged["judge"], "algorithm": cfg.algorithm})
    return {
        "gold_before": float(judged["gold_before"].mean()),
        "gold_after": float(judged["gold_after"].mean()),
        "gain": float(gain.mean()),
        "gain_ci": [lo, hi],
        **({"by_group": by_group} if by_group else {}),
        "proxy_before": float(judged["proxy_before"].mean()),
        "proxy_after": float(judged["proxy_after"].mean()),
        "final_kl": train_metrics.get("objective/kl"),
        "train": train_metrics,
        "time/train_s": train_seconds,
        "time/total_s": time.time() - t0,
    }


def run(cfg: DictConfig) -> Record:
    """Train (or find) the policy ``cfg`` describes and measure its gold gain."""
    _validate(cfg)
    check_gold_judge(cfg.judge, cfg.prompts)  # a bad judge config fails before any training
    probe_served_judges(cfg, judge_cache_dir(cfg))  # a served judge that is down fails before any sampling
    policy_path, policy_id, policy_lineage = inputs.policy(cfg)
    check_generation_length(policy_path, int(cfg.trainer.response_length), "trainer.response_length")
    check_generation_length(policy_path, int(cfg.sampling.max_new_tokens), "sampling.max_new_tokens")
    reward, rm_id, rm_lineage = inputs.reward(cfg)
    train_prompts, train_id = inputs.prompt_set(cfg, split=cfg.prompts.train_split)
    _check_train_size(cfg, len(train_prompts))
    # The initial policy's pool, shared by every PPO run of the same policy and prompt set; with
    # baseline_samples equal to BoN's n it is BoN's pool, already sampled and scored by every RM.
    before, _ = inputs.pool(inputs.first_pool_config(cfg))
    ids = {"policy": policy_id, "rm": rm_id, "train_prompts": train_id, "baseline_pool": before.id}
    return execute(
        "ppo", cfg,
        lambda ctx: _ppo(ctx, cfg, policy_path, policy_lineage, reward, rm_id, rm_lineage, train_prompts, before),
        ids,
    )


main = hydra_entry("ppo", run)

if __name__ == "__main__":
    main()
