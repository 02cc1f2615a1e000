"""The only module that touches TRL's RewardTrainer (a TRL upgrade is one file).

Pairs are pre-tokenised with the same rendering the scorers use (``RewardModelScorer.render``),
so a trained RM is scored on exactly the token layout it was trained on, and over-long pairs are
counted here instead of being dropped silently by TRL.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlexp.config.tasks import REWARD_TRAINER_OWN, RewardTrainerConfig
from rlexp.data.schemas import PreferencePair
from rlexp.errors import ConfigError
from rlexp.integrity import artifact_problem
from rlexp.models.loading import drop_log_printer
from rlexp.scorer import ScoreInput


@dataclass
class Tokenised:
    chosen_ids: list[list[int]]
    rejected_ids: list[list[int]]
    too_long: int


def pair_inputs(pair: PreferencePair) -> tuple[ScoreInput, ScoreInput]:
    """The (chosen, rejected) scorer inputs of a preference pair, with its user context."""
    profile = pair.context.profile if pair.context else ()
    return (
        ScoreInput(pair.prompt, pair.chosen, profile),
        ScoreInput(pair.prompt, pair.rejected, profile),
    )


def tokenise_pairs(pairs: Sequence[PreferencePair], render: Callable[[ScoreInput], str], tokenizer: Any, max_length: int) -> Tokenised:
    """Render and tokenise chosen/rejected; count pairs with either side over ``max_length``."""
    texts_c, texts_r = [], []
    for p in pairs:
        c, r = pair_inputs(p)
        texts_c.append(render(c))
        texts_r.append(render(r))
    ids_c = tokenizer(texts_c, add_special_tokens=True)["input_ids"]
    ids_r = tokenizer(texts_r, add_special_tokens=True)["input_ids"]
    too_long = sum(1 for a, b in zip(ids_c, ids_r, strict=False) if len(a) > max_length or len(b) > max_length)
    return Tokenised(ids_c, ids_r, too_long)


def deepspeed_env() -> None:
    """Single-process DeepSpeed needs a distributed environment (else: 'No module named mpi4py')."""
    for key, value in {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1"}.items():
        os.environ.setdefault(key, value)
    if "MASTER_PORT" not in os.environ:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(s.getsockname()[1])
    _skip_shm_comm_op()


def _skip_shm_comm_op() -> None:
    """One process on a CPU: DeepSpeed's shared-memory collectives op speeds up reductions between
    processes on one host, so with a single process it has nothing to do, yet its first use JIT-compiles
    it (~50 CPU-seconds of g++ and compiler probes). DeepSpeed consults ``deepspeed.ops.__compatible_ops__``
    before building it and falls back to gloo when the op is marked incompatible, as on a platform
    without it."""
    if os.environ.get("WORLD_SIZE") != "1":
        return
    import deepspeed.ops
    from deepspeed.accelerator import get_accelerator

    if get_accelerator().device_name() != "cpu":
        return
    compatible = deepspeed.ops.__compatible_ops__
    if "deepspeed_shm_comm" in compatible:
        compatible["deepspeed_shm_comm"] = False


def validate_deepspeed(ds_config: dict[str, Any], *, batch_size: int, grad_accum: int, lr: float, bf16: bool) -> None:
    """Resolve HF "auto" values, then let DeepSpeed's own config class check the result (seconds,
    no model loaded). Errors name the offending key."""
    import copy

    stage = ds_config.get("zero_optimization", {}).get("stage")
    if stage not in (0, 1, 2, 3):
        raise ConfigError(f"deepspeed.config.zero_optimization.stage={stage!r} is not one of 0, 1, 2, 3")
    resolved = copy.deepcopy(ds_config)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    autos = {
        "train_micro_batch_size_per_gpu": batch_size,
        "gradient_accumulation_steps": grad_accum,
        "train_batch_size": batch_size * grad_accum * world,
        "gradient_clipping": 1.0,
    }
    for key, value in autos.items():
        if resolved.get(key, "auto") == "auto":
            resolved[key] = value
    if isinstance(resolved.get("bf16"), dict) and resolved["bf16"].get("enabled") == "auto":
        resolved["bf16"]["enabled"] = bf16
    if isinstance(resolved.get("fp16"), dict) and resolved["fp16"].get("enabled") == "auto":
        resolved["fp16"]["enabled"] = False
    try:
        from deepspeed.runtime.config import DeepSpeedConfig

        DeepSpeedConfig(resolved)
    except Exception as exc:  # DeepSpeed raises assorted types (AssertionError, ValidationError, ...)
        first = " ".join(str(exc).split())[:300]
        raise ConfigError(f"invalid DeepSpeed config: {first}") from None


def reward_config(
    out: Path,
    trainer: RewardTrainerConfig,
    *,
    bf16: bool,
    seed: int,
    report_to: str,
    deepspeed: dict[str, Any] | None,
    use_cpu: bool,
) -> Any:
    """TRL's RewardConfig: the trainer node's TRL fields as they are, ``extra`` on top, and what the
    run decides (output folder, bf16, seed, tracking, DeepSpeed, device)."""
    from trl import RewardConfig

    fields = {k: v for k, v in dataclasses.asdict(trainer).items() if k not in REWARD_TRAINER_OWN}
    try:
        return RewardConfig(
            output_dir=str(out),
            **fields,
            save_strategy="steps",
            save_total_limit=2,
            bf16=bf16,
            seed=seed,
            report_to=report_to,
            deepspeed=deepspeed,
            use_cpu=use_cpu,
            disable_tqdm=True,
            dataloader_num_workers=0,
            **trainer.extra,
        )
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"invalid reward trainer settings: {' '.join(str(exc).split())[:300]}") from None


# Length grouping within windows of this many batches (transformers' own default is up to 50).
LENGTH_WINDOW_BATCHES = 4


def length_grouped_order(lengths: Sequence[int], batch_size: int, generator: Any = None) -> list[int]:
    """A random order of row indices in which each window of ``LENGTH_WINDOW_BATCHES`` batches is
    sorted by length, longest first (transformers' grouping with a short window; the overall
    longest row goes first, so an out-of-memory shows at once)."""
    from transformers.trainer_pt_utils import get_length_grouped_indices

    return get_length_grouped_indices(list(lengths), batch_size, LENGTH_WINDOW_BATCHES, generator)


def _length_grouped_trainer() -> type:
    """RewardTrainer whose batches hold pairs of similar length, drawn from short random windows.

    A mix of short general and long profile-bearing pairs otherwise pads every batch to its
    longest row. transformers' ``group_by_length`` sorts windows of up to 50 batches, which turns
    such a mix into long runs of one kind of pair (measured on the flipped control over 3 seeds:
    held-out accuracy 0.72 -> 0.65); sorting within 4 batches keeps the order random at that scale
    (0.71) and most of the speed (1.5x against 1.7x; ``perf/rm_length_grouping.py``).
    """
    import torch
    from transformers import TrainerCallback
    from transformers.trainer_pt_utils import LengthGroupedSampler
    from trl import RewardTrainer

    class WindowSampler(LengthGroupedSampler):
        """Draws each epoch's order from torch's global RNG (as transformers' samplers do) and
        remembers the RNG state it drew from, so that a resumed run can replay that epoch's order.

        Without the replay, a run killed mid-epoch drew a new order for the rest of that epoch on
        resume (the global RNG of a fresh process) and ended with other weights (held-out 0.76 vs
        0.77 uninterrupted)."""

        epoch = 0
        drawn_from: tuple[int, Any] | None = None  # (epoch, RNG state) of the current order
        replay: tuple[int, Any] | None = None  # the same, read from the checkpoint being resumed

        def set_epoch(self, epoch: int) -> None:
            self.epoch = int(epoch)

        def __iter__(self) -> Any:
            if self.replay is not None and self.replay[0] == self.epoch:
                generator = torch.Generator()
                generator.set_state(self.replay[1])  # the original draw; the global RNG is restored by Trainer
                return iter(length_grouped_order(self.lengths, self.batch_size, generator))
            self.drawn_from = (self.epoch, torch.get_rng_state())
            return iter(length_grouped_order(self.lengths, self.batch_size, None))

    class SaveOrder(TrainerCallback):
        """Store the current epoch's order state in every checkpoint."""

        def __init__(self, trainer: Any) -> None:
            self.trainer = trainer

        def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            sampler = self.trainer.window_sampler
            if sampler is not None and sampler.drawn_from is not None and state.is_world_process_zero:
                epoch, rng = sampler.drawn_from
                path = Path(args.output_dir) / f"checkpoint-{state.global_step}" / ORDER_STATE
                torch.save({"epoch": epoch, "rng_state": rng}, path)

    class LengthGroupedRewardTrainer(RewardTrainer):
        def __init__(self, *args: Any, resume_order: tuple[int, Any] | None = None, **kwargs: Any) -> None:
            self.window_sampler: WindowSampler | None = None
            self.resume_order = resume_order
            super().__init__(*args, **kwargs)
            self.add_callback(SaveOrder(self))

        def _get_train_sampler(self, train_dataset: Any = None) -> Any:
            ds = self.train_dataset if train_dataset is None else train_dataset
            lengths = [max(len(c), len(r)) for c, r in zip(ds["chosen_ids"], ds["rejected_ids"], strict=True)]
            sampler = WindowSampler(self.args.train_batch_size * self.args.gradient_accumulation_steps, lengths=lengths)
            sampler.replay = self.resume_order
            self.window_sampler = sampler
            return sampler

    return LengthGroupedRewardTrainer


#: File in each checkpoint with the RNG state the current epoch's length-grouped order was drawn from.
ORDER_STATE = "length_order.pt"


def _resume_order(resume: str | bool | None) -> tuple[int, Any] | None:
    if not isinstance(resume, str) or not (Path(resume) / ORDER_STATE).is_file():
        return None
    import torch

    saved = torch.load(Path(resume) / ORDER_STATE, weights_only=True)
    return int(saved["epoch"]), saved["rng_state"]


def train(
    model: Any,
    tokenizer: Any,
    data: Tokenised,
    args: Any,
    *,
    peft_config: Any = None,
    resume: str | bool | None = None,
    callbacks: list[Any] | None = None,
    group_by_length: bool = False,
) -> tuple[Any, dict[str, Any]]:
    """Run RewardTrainer on pre-tokenised pairs; returns (trained model, metrics).

    ``group_by_length`` batches pairs of similar length (see :func:`_length_grouped_trainer`).
    """
    from datasets import Dataset
    from trl import RewardTrainer

    ds = Dataset.from_dict({"chosen_ids": data.chosen_ids, "rejected_ids": data.rejected_ids})
    extra: dict[str, Any] = {"resume_order": _resume_order(resume)} if group_by_length else {}
    trainer = (_length_grouped_trainer() if group_by_length else RewardTrainer)(
        **extra,
        model=model,
        args=args,
        train_dataset=ds,
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=callbacks,
    )
    drop_log_printer(trainer)
    result = trainer.train(resume_from_checkpoint=resume)
    metrics = {
        "train/loss": whole_run_loss(trainer.state.log_history, resume, float(result.training_loss),
                                     int(result.global_step)),
        "train/steps": int(result.global_step),
        "train/runtime_s": float(result.metrics.get("train_runtime", 0.0)),
    }
    history = [h for h in trainer.state.log_history if "accuracy" in h or "loss" in h]
    if history:
        last = history[-1]
        for key in ("accuracy", "margin", "loss"):
            if key in last:
                metrics[f"train/last_{key}"] = float(last[key])
    return trainer.model, metrics


def whole_run_loss(log_history: list[dict[str, Any]], resume: str | bool | None, loss_since_start: float,
                   global_step: int) -> float:
    """The mean training loss over every step of the run, resumed or not.

    After ``resume_from_checkpoint``, transformers' ``training_loss`` averages only the steps run in
    this process (0.577 vs 0.619 uninterrupted). The checkpoint carries the log history, whose
    ``loss`` entries are the mean loss of each logging interval; with logging steps that divide the
    save steps they tile the steps before the resume point exactly, so the whole-run mean is their
    step-weighted sum plus this process's part (equal to the uninterrupted value up to the log's
    4-decimal rounding).
    """
    if not resume or global_step <= 0:
        return loss_since_start
    start = int(Path(str(resume)).name.rsplit("-", 1)[-1]) if isinstance(resume, str) else 0
    before, prev = 0.0, 0
    for entry in log_history:
        step = int(entry.get("step", 0))
        if "loss" in entry and prev < step <= start:
            before += float(entry["loss"]) * (step - prev)
            prev = step
    if prev != start:  # the log does not tile the resumed part: say only what this process saw
        return loss_since_start
    return (before + loss_since_start * (global_step - start)) / global_step


def last_complete_checkpoint(folder: Path) -> Path | None:
    """The newest ``checkpoint-<step>`` in ``folder`` that a resume can read, or None (train afresh).

    transformers writes ``trainer_state.json`` last, so a run killed while saving a checkpoint leaves
    a newer folder without it (or with it cut short), from which a resume fails: each such folder is
    removed (the trainer writes that step again) and the one before it is resumed from.
    """
    if not folder.is_dir():
        return None
    found = [p for p in folder.glob("checkpoint-*") if p.is_dir() and p.name.rsplit("-", 1)[-1].isdigit()]
    for ckpt in sorted(found, key=lambda p: int(p.name.rsplit("-", 1)[-1]), reverse=True):
        try:
            json.loads((ckpt / "trainer_state.json").read_text())
            damaged = artifact_problem(ckpt)
            problem = f"{damaged[0].name} is {damaged[1]}" if damaged else None
        except FileNotFoundError:
            problem = "no trainer_state.json"
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            problem = "trainer_state.json cut short"
        if problem is None:
            return ckpt
        logging.getLogger("rlexp").warning("train_rm: checkpoint %s is incomplete (%s: killed while saving); removed it",
                                           ckpt, problem)
        shutil.rmtree(ckpt, ignore_errors=True)
    return None


def lora_config(r: int, alpha: int, dropout: float, target_modules: list[str] | None) -> Any:
    """PEFT's LoRA config for a sequence-classification RM (the score head stays trainable)."""
    from peft import LoraConfig

    return LoraConfig(
        task_type="SEQ_CLS", r=r, lora_alpha=alpha, lora_dropout=dropout, target_modules=target_modules or "all-linear"
    )
