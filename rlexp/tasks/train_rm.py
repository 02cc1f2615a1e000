"""`rlexp train_rm`: a Bradley–Terry reward model with TRL's RewardTrainer.

Factors: ``model`` (lineage + checkpoint), ``data`` (a mix), ``trainer.*`` (TRL RewardConfig fields: epochs, lr, batch,
max_length), ``seed``, ``peft`` (LoRA), ``deepspeed`` and ``profile`` (how personalized pairs show
the user's profile, with the same formatting code the benchmarks use). Everything the result
depends on enters the record id; a killed run resumes from its last checkpoint.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf

from rlexp import inputs
from rlexp.config.nodes import ProfileConfig, ScorerConfig
from rlexp.data.loaders import load_pairs
from rlexp.data.mixes import MixSpec, build_mix, mix_id, pairs_content_hash, split_heldout, validate_mix
from rlexp.errors import ConfigError, DataError
from rlexp.models import reward_training as rt
from rlexp.models.lineages import Lineage
from rlexp.models.loading import check_model_dir, is_local, load_reward_model, load_tokenizer, quiet_libraries
from rlexp.runtime import RunContext, execute, hydra_entry
from rlexp.scoring.planner import make_planner
from rlexp.scoring.reward_model import RewardModelScorer
from rlexp.store import Record

log = logging.getLogger("rlexp")

#: The fewest pairs a mix may hold: split_heldout keeps one out of training whenever there are two.
MIN_PAIRS = 2


def _validate(cfg: DictConfig) -> None:
    """Everything checkable without loading a model: fail in seconds, before anything is written."""
    t = cfg.trainer
    if t.max_length < 8:
        raise ConfigError(f"trainer.max_length={t.max_length} is too small (>= 8)")
    if not (t.num_train_epochs > 0 and t.learning_rate > 0 and t.per_device_train_batch_size >= 1
            and t.gradient_accumulation_steps >= 1):
        raise ConfigError("trainer.num_train_epochs and learning_rate must be > 0, "
                          "per_device_train_batch_size and gradient_accumulation_steps >= 1")
    if not 0 < cfg.heldout_fraction < 1:
        raise ConfigError(f"heldout_fraction={cfg.heldout_fraction} must be in (0, 1)")
    weights = OmegaConf.to_container(cfg.data.weights) if cfg.data.weights is not None else None
    validate_mix(MixSpec(sources=dict(cfg.data.sources), weights=weights, seed=cfg.seed, max_rows=cfg.data.max_rows))
    if cfg.deepspeed.name != "none":
        rt.validate_deepspeed(
            OmegaConf.to_container(cfg.deepspeed.config, resolve=True),
            batch_size=t.per_device_train_batch_size,
            grad_accum=t.gradient_accumulation_steps,
            lr=t.learning_rate,
            bf16=_use_bf16(cfg),
        )
    if cfg.model.name_or_path and is_local(str(cfg.model.name_or_path)):
        check_model_dir(Path(str(cfg.model.name_or_path)).expanduser())


def _use_bf16(cfg: DictConfig) -> bool:
    import torch  # lazily, like every torch import in tasks: a bad override fails before paying for it

    if cfg.trainer.bf16 == "auto":
        return torch.cuda.is_available() and cfg.runtime.device != "cpu"
    return str(cfg.trainer.bf16).lower() == "true"


def _load_mix(cfg: DictConfig) -> tuple[list[Any], dict[str, Any], str]:
    """Load every source of the mix, sample it, and name it by content."""
    loaded, hashes, paths = {}, {}, {}
    for name, ref in cfg.data.sources.items():
        path, _ = inputs.data_ref(str(ref), cfg)
        rows = load_pairs(path, name=name)
        loaded[name], hashes[name], paths[name] = rows, pairs_content_hash(rows), str(ref)
    weights = OmegaConf.to_container(cfg.data.weights) if cfg.data.weights is not None else None
    formatting = {"profile": OmegaConf.to_container(cfg.profile, resolve=True)}
    spec = MixSpec(sources=paths, weights=weights, seed=cfg.seed, formatting=formatting, max_rows=cfg.data.max_rows)
    rows, summary = build_mix(spec, loaded)
    if len(rows) < MIN_PAIRS:  # before the lineage is built or any folder made
        raise DataError(f"{', '.join(paths.values())}: the mix holds {len(rows)} preference pair(s); train_rm needs at least {MIN_PAIRS} "
                        "(one to train on, one held out to measure it)")
    mid = mix_id(spec, hashes)
    summary.update({"id": mid, "name": cfg.data.name, "sources": paths, "content_hashes": hashes})
    return rows, summary, mid


def _pairwise_accuracy(scorer: Any, pairs: list[Any]) -> dict[str, float]:
    if not pairs:
        return {"accuracy": math.nan, "n": 0}
    scores = scorer.score([x for p in pairs for x in rt.pair_inputs(p)])
    chosen, rejected = scores[0::2], scores[1::2]
    return {
        "accuracy": float(np.mean(chosen > rejected)),
        "ties": int(np.sum(chosen == rejected)),
        "margin": float(np.mean(chosen - rejected)),
        "n": len(pairs),
    }


def _scorer_settings(cfg: DictConfig) -> tuple[ScorerConfig, ProfileConfig]:
    """How the RM reads a pair while training: the benchmarks' rendering at the trainer's length."""
    device = "cpu" if cfg.runtime.device == "cpu" else "auto"
    scorer = ScorerConfig(max_length=int(cfg.trainer.max_length), device=device)
    return scorer, OmegaConf.to_object(cfg.profile)


def _trainer_args(ctx: RunContext, cfg: DictConfig, ckpt_dir: Path) -> Any:
    """TRL's RewardConfig for this run (the DeepSpeed environment is set up when a config is given)."""
    import torch

    ds = OmegaConf.to_container(cfg.deepspeed.config, resolve=True) if cfg.deepspeed.name != "none" else None
    if ds is not None:
        rt.deepspeed_env()
    return rt.reward_config(
        ckpt_dir,
        OmegaConf.to_object(cfg.trainer),
        bf16=_use_bf16(cfg),
        seed=cfg.seed,
        report_to="wandb" if ctx.tracker.run is not None else "none",
        deepspeed=ds,
        use_cpu=not torch.cuda.is_available() or cfg.runtime.device == "cpu",
    )


def _check_dropped(cfg: DictConfig, too_long: int, pairs: int) -> None:
    max_length = cfg.trainer.max_length
    if too_long == pairs:
        raise ConfigError(f"trainer.max_length={max_length} drops all {pairs} training pairs")
    share = too_long / max(1, pairs)
    if share > cfg.max_dropped_share:
        raise ConfigError(
            f"{too_long}/{pairs} pairs ({share:.1%}) exceed trainer.max_length={max_length}, "
            f"more than max_dropped_share={cfg.max_dropped_share}; raise max_length or the share"
        )


def _fit(ctx: RunContext, cfg: DictConfig, model: Any, tokenizer: Any, data: Any) -> tuple[Any, dict[str, Any], str | None]:
    """Train (resuming from the last checkpoint of a killed run); returns the merged model."""
    ckpt_dir = ctx.work_dir / "checkpoints"
    last = rt.last_complete_checkpoint(ckpt_dir)  # skips a checkpoint whose save was cut short by a kill
    resume = str(last) if last else None
    if resume:
        log.info("train_rm: resuming from %s", resume)
    args = _trainer_args(ctx, cfg, ckpt_dir)
    peft = cfg.peft
    peft_config = rt.lora_config(peft.r, peft.alpha, peft.dropout, peft.target_modules) if peft.enabled else None
    trained, metrics = rt.train(model, tokenizer, data, args, peft_config=peft_config, resume=resume,
                                group_by_length=cfg.trainer.length_grouping)
    if peft.enabled:
        trained.save_pretrained(ctx.work_dir / "adapter")
        trained = trained.merge_and_unload()
    shutil.rmtree(ckpt_dir, ignore_errors=True)
    return trained, metrics, resume


def _lineage_info(cfg: DictConfig, lineage: Lineage, checkpoint: str, mix: dict[str, Any]) -> dict[str, Any]:
    return {
        "lineage": cfg.model.lineage,
        "model": cfg.model.name,
        "checkpoint": cfg.model.checkpoint,
        "checkpoint_path": checkpoint,
        "lineage_record": lineage.record_id,
        "mix": mix,
        "epochs": cfg.trainer.num_train_epochs,
        "trainer": OmegaConf.to_container(cfg.trainer, resolve=True),
        "peft": OmegaConf.to_container(cfg.peft, resolve=True),
        "deepspeed": cfg.deepspeed.name,
        "profile": OmegaConf.to_container(cfg.profile, resolve=True),
        "seed": cfg.seed,
    }


def _train(ctx: RunContext, cfg: DictConfig, lineage: Lineage, rows: list[Any], mix: dict[str, Any]) -> dict[str, Any]:
    import torch

    quiet_libraries()
    t0 = time.time()
    torch.manual_seed(cfg.seed)
    checkpoint = lineage.checkpoint(cfg.model.checkpoint)
    tokenizer = load_tokenizer(checkpoint, padding_side="right", trust_remote_code=lineage.trust_remote_code)
    model = load_reward_model(checkpoint, init_head=True, trust_remote_code=lineage.trust_remote_code)
    model.config.pad_token_id = tokenizer.pad_token_id
    settings, profile = _scorer_settings(cfg)
    planner = make_planner(str(profile.mode), str(profile.planner), k=profile.k)
    name = f"train_rm-{ctx.rid}"
    train_rows, heldout = split_heldout(rows, cfg.heldout_fraction, cfg.seed)
    scorer = RewardModelScorer(model, tokenizer, settings, profile, name=name, planner=planner)
    data = rt.tokenise_pairs(train_rows, scorer.render, tokenizer, cfg.trainer.max_length)
    _check_dropped(cfg, data.too_long, len(train_rows))
    before = _pairwise_accuracy(scorer, heldout)

    t_train = time.time()
    trained, train_metrics, resume = _fit(ctx, cfg, model, tokenizer, data)
    train_seconds = time.time() - t_train
    out = ctx.work_dir / "model"
    trained.config.pad_token_id = tokenizer.pad_token_id
    trained.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    after = _pairwise_accuracy(RewardModelScorer(trained, tokenizer, settings, profile, name=name, planner=planner), heldout)

    ctx.add_artifact("model", out)
    ctx.tracker.artifact(f"rm-{ctx.rid}", "model", out)
    ctx.info["lineage"] = _lineage_info(cfg, lineage, checkpoint, mix)
    ctx.info["resumed_from"] = resume
    ctx.info["scorer_settings"] = {"scorer": dataclasses.asdict(settings), "profile": dataclasses.asdict(profile)}
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
    rows, mix, mid = _load_mix(cfg)
    lineage = inputs.lineage(cfg)
    ids = {"lineage": lineage.record_id or lineage.base, "mix": mid}
    return execute("train_rm", cfg, lambda ctx: _train(ctx, cfg, lineage, rows, mix), ids)


main = hydra_entry("train_rm", run)

if __name__ == "__main__":
    main()
