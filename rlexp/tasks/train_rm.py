"""`rlexp train_rm`: a Bradley–Terry reward model with TRL's RewardTrainer.

Factors: ``model`` (lineage + checkpoint), ``data`` (a mix), ``trainer.*`` (epochs, lr, batch,
max_length), ``seed``, ``peft`` (LoRA), ``deepspeed`` and ``profile`` (how personalized pairs show
the user's profile, with the same formatting code the benchmarks use). Everything the result
depends on enters the record id; a killed run resumes from its last checkpoint.
"""

from __future__ import annotations

import logging
import math
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf

from rlexp.config import TrainRMConfig  # noqa: F401  (schema registration)
from rlexp.data.formatting import PROFILE_MODES
from rlexp.data.loaders import load_pairs
from rlexp.data.mixes import MixSpec, build_mix, mix_id, pairs_content_hash, split_heldout, validate_mix
from rlexp.errors import ConfigError
from rlexp.runtime import RunContext, execute, hydra_entry
from rlexp.store import Record

log = logging.getLogger("rlexp")


def _validate(cfg: DictConfig) -> None:
    """Everything checkable without loading a model: fail in seconds, before anything is written."""
    t = cfg.trainer
    if cfg.profile.mode not in PROFILE_MODES:
        raise ConfigError(f"profile.mode={cfg.profile.mode!r} is not one of {', '.join(PROFILE_MODES)}")
    if t.max_length < 8:
        raise ConfigError(f"trainer.max_length={t.max_length} is too small (>= 8)")
    if not (t.epochs > 0 and t.learning_rate > 0 and t.batch_size >= 1 and t.grad_accum >= 1):
        raise ConfigError("trainer.epochs, learning_rate must be > 0 and batch_size, grad_accum >= 1")
    if not 0 < cfg.heldout_fraction < 1:
        raise ConfigError(f"heldout_fraction={cfg.heldout_fraction} must be in (0, 1)")
    if cfg.model.checkpoint not in ("base", "instruct"):
        raise ConfigError(f"model.checkpoint={cfg.model.checkpoint!r} is not one of base, instruct")
    weights = OmegaConf.to_container(cfg.data.weights) if cfg.data.weights is not None else None
    validate_mix(MixSpec(sources=dict(cfg.data.sources), weights=weights, seed=cfg.seed, max_rows=cfg.data.max_rows))
    if cfg.deepspeed.name != "none":
        from rlexp.models.reward_training import validate_deepspeed

        validate_deepspeed(
            OmegaConf.to_container(cfg.deepspeed.config, resolve=True),
            batch_size=t.batch_size,
            grad_accum=t.grad_accum,
            lr=t.learning_rate,
            bf16=_use_bf16(cfg),
        )
    if cfg.model.name_or_path:
        from rlexp.models.loading import check_model_dir, is_local

        if is_local(str(cfg.model.name_or_path)):
            check_model_dir(Path(str(cfg.model.name_or_path)).expanduser())


def _use_bf16(cfg: DictConfig) -> bool:
    import torch

    if cfg.trainer.bf16 == "auto":
        return torch.cuda.is_available() and cfg.runtime.device != "cpu"
    return str(cfg.trainer.bf16).lower() == "true"


def _load_mix(cfg: DictConfig) -> tuple[list[Any], dict[str, Any], str]:
    """Load every source of the mix, sample it, and name it by content."""
    from rlexp.tasks.data import resolve_ref

    loaded, hashes, paths = {}, {}, {}
    for name, ref in cfg.data.sources.items():
        path, _ = resolve_ref(str(ref), cfg)
        rows = load_pairs(path, name=name)
        loaded[name], hashes[name], paths[name] = rows, pairs_content_hash(rows), str(ref)
    weights = OmegaConf.to_container(cfg.data.weights) if cfg.data.weights is not None else None
    formatting = {"profile": OmegaConf.to_container(cfg.profile, resolve=True)}
    spec = MixSpec(sources=paths, weights=weights, seed=cfg.seed, formatting=formatting, max_rows=cfg.data.max_rows)
    rows, summary = build_mix(spec, loaded)
    mid = mix_id(spec, hashes)
    summary.update({"id": mid, "name": cfg.data.name, "sources": paths, "content_hashes": hashes})
    return rows, summary, mid


def _pairwise_accuracy(scorer: Any, pairs: list[Any]) -> dict[str, float]:
    from rlexp.models.reward_training import pair_inputs

    if not pairs:
        return {"accuracy": math.nan, "n": 0}
    inputs = [x for p in pairs for x in pair_inputs(p)]
    s = scorer.score(inputs)
    chosen, rejected = s[0::2], s[1::2]
    return {
        "accuracy": float(np.mean(chosen > rejected)),
        "ties": int(np.sum(chosen == rejected)),
        "margin": float(np.mean(chosen - rejected)),
        "n": len(pairs),
    }


def _train(ctx: RunContext, cfg: DictConfig, lineage: Any, rows: list[Any], mix: dict[str, Any]) -> dict[str, Any]:
    import torch

    from rlexp.models import reward_training as rt
    from rlexp.models.loading import load_reward_model, load_tokenizer, quiet_libraries
    from rlexp.scoring.planner import make_planner
    from rlexp.scoring.reward_model import RewardModelScorer, ScorerSettings

    quiet_libraries()
    t0 = time.time()
    t = cfg.trainer
    torch.manual_seed(cfg.seed)
    checkpoint = lineage.checkpoint(cfg.model.checkpoint)
    tokenizer = load_tokenizer(checkpoint, padding_side="right", trust_remote_code=lineage.trust_remote_code)
    model = load_reward_model(checkpoint, init_head=True, trust_remote_code=lineage.trust_remote_code)
    model.config.pad_token_id = tokenizer.pad_token_id
    settings = ScorerSettings(
        max_length=t.max_length,
        profile_mode=cfg.profile.mode,
        profile_k=cfg.profile.k,
        separator=cfg.profile.separator,
        device="cpu" if cfg.runtime.device == "cpu" else "auto",
    )
    planner = make_planner(cfg.profile.mode, cfg.profile.planner, k=cfg.profile.k)
    scorer = RewardModelScorer(model, tokenizer, settings, name=f"train_rm-{ctx.rid}", planner=planner)

    train_rows, heldout = split_heldout(rows, cfg.heldout_fraction, cfg.seed)
    data = rt.tokenise_pairs(train_rows, scorer.render, tokenizer, t.max_length)
    share = data.too_long / max(1, len(train_rows))
    if data.too_long == len(train_rows):
        raise ConfigError(f"trainer.max_length={t.max_length} drops all {len(train_rows)} training pairs")
    if share > cfg.max_dropped_share:
        raise ConfigError(
            f"{data.too_long}/{len(train_rows)} pairs ({share:.1%}) exceed trainer.max_length={t.max_length}, "
            f"more than max_dropped_share={cfg.max_dropped_share}; raise max_length or the share"
        )
    before = _pairwise_accuracy(scorer, heldout)

    ckpt_dir = ctx.work_dir / "checkpoints"
    existing = sorted(ckpt_dir.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[-1])) if ckpt_dir.exists() else []
    resume = str(existing[-1]) if existing else None
    if resume:
        log.info("train_rm: resuming from %s", resume)
    ds = OmegaConf.to_container(cfg.deepspeed.config, resolve=True) if cfg.deepspeed.name != "none" else None
    if ds is not None:
        rt.deepspeed_env()
    bf16 = _use_bf16(cfg)
    args = rt.reward_config(
        ckpt_dir,
        epochs=t.epochs,
        lr=t.learning_rate,
        batch_size=t.batch_size,
        grad_accum=t.grad_accum,
        max_length=t.max_length,
        scheduler=t.lr_scheduler,
        warmup_ratio=t.warmup_ratio,
        weight_decay=t.weight_decay,
        save_steps=t.save_steps,
        logging_steps=t.logging_steps,
        bf16=bf16,
        gradient_checkpointing=t.gradient_checkpointing,
        seed=cfg.seed,
        report_to="wandb" if ctx.tracker.run is not None else "none",
        deepspeed=ds,
        use_cpu=not torch.cuda.is_available() or cfg.runtime.device == "cpu",
        extra=OmegaConf.to_container(t.extra, resolve=True),
    )
    peft_config = rt.lora_config(cfg.peft.r, cfg.peft.alpha, cfg.peft.dropout, cfg.peft.target_modules) if cfg.peft.enabled else None
    t_train = time.time()
    trained, train_metrics = rt.train(model, tokenizer, data, args, peft_config=peft_config, resume=resume,
                                         group_by_length=t.group_by_length)
    train_seconds = time.time() - t_train
    if cfg.peft.enabled:
        trained.save_pretrained(ctx.work_dir / "adapter")
        trained = trained.merge_and_unload()
    out = ctx.work_dir / "model"
    trained.config.pad_token_id = tokenizer.pad_token_id
    trained.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    scorer = RewardModelScorer(trained, tokenizer, settings, name=f"train_rm-{ctx.rid}", planner=planner)
    after = _pairwise_accuracy(scorer, heldout)
    shutil.rmtree(ckpt_dir, ignore_errors=True)

    ctx.add_artifact("model", out)
    ctx.tracker.artifact(f"rm-{ctx.rid}", "model", out)
    ctx.info["lineage"] = {
        "lineage": cfg.model.lineage,
        "model": cfg.model.name,
        "checkpoint": cfg.model.checkpoint,
        "checkpoint_path": checkpoint,
        "lineage_record": lineage.record_id,
        "mix": mix,
        "epochs": t.epochs,
        "trainer": OmegaConf.to_container(t, resolve=True),
        "peft": OmegaConf.to_container(cfg.peft, resolve=True),
        "deepspeed": cfg.deepspeed.name,
        "profile": OmegaConf.to_container(cfg.profile, resolve=True),
        "seed": cfg.seed,
    }
    ctx.info["resumed_from"] = resume
    ctx.info["scorer_settings"] = vars(settings)
    total = time.time() - t0
    metrics = {
        **train_metrics,
        "train/pairs": len(train_rows),
        "train/dropped_too_long": data.too_long,
        "heldout/accuracy": after["accuracy"],
        "heldout/margin": after["margin"],
        "heldout/ties": after["ties"],
        "heldout/n": after["n"],
        "heldout/accuracy_init": before["accuracy"],
        "time/total_s": total,
        "time/train_s": train_seconds,
        "time/outside_train_share": (total - train_seconds) / total if total else 0.0,
    }
    ctx.tracker.log({k: v for k, v in metrics.items() if isinstance(v, (int, float))})
    return metrics


def run(cfg: DictConfig) -> Record:
    """Train (or find) the reward model ``cfg`` describes."""
    _validate(cfg)
    from rlexp.models.lineages import resolve_lineage

    rows, mix, mid = _load_mix(cfg)
    lineage = resolve_lineage(cfg)
    inputs = {"lineage": lineage.record_id or lineage.base, "mix": mid}
    return execute("train_rm", cfg, lambda ctx: _train(ctx, cfg, lineage, rows, mix), inputs)


main = hydra_entry("train_rm", run)

if __name__ == "__main__":
    main()
