"""Building the tiny lineages: a byte-level BPE tokenizer with a chat template, a causal LM
pretrained on a sandbox corpus, and an instruct policy tuned with TRL's SFTTrainer.

Two chat formats keep the two lineages' tokenizations genuinely different (special tokens,
vocabulary, corpus), which is what the lineage-mismatch experiments need.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlexp.errors import ConfigError
from rlexp.models.loading import drop_log_printer

# Chat formats: special tokens + a Jinja chat template the tokenizer saves with itself.
CHAT_FORMATS: dict[str, dict[str, Any]] = {
    "llama": {
        "pad": "<|pad|>",
        "eos": "<|eot|>",
        "bos": "<|begin|>",
        "extra": ["<|user|>", "<|assistant|>", "<|system|>"],
        "template": (
            "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}<|eot|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
        ),
    },
    "chatml": {
        "pad": "<|endoftext|>",
        "eos": "<|im_end|>",
        "bos": None,
        "extra": ["<|im_start|>"],
        "template": (
            "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
        ),
    },
}


@dataclass(frozen=True)
class TinySpec:
    """Architecture and training of one tiny lineage (all of it goes into the lineage hash)."""

    arch: str  # llama | qwen2
    chat_format: str  # llama | chatml
    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    max_position: int
    corpus: str  # which sandbox corpus sample: a | b
    pretrain_epochs: float
    sft_epochs: float
    lr: float
    batch_size: int
    max_length: int
    seed: int
    pack_batches: bool = False  # see TinyConfig.pack_batches


def build_tokenizer(lines: Sequence[str], spec: TinySpec) -> Any:
    """Train a byte-level BPE on ``lines`` and wrap it as a transformers fast tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    fmt = CHAT_FORMATS[spec.chat_format]
    specials = [fmt["pad"], fmt["eos"], *([fmt["bos"]] if fmt["bos"] else []), *fmt["extra"]]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=spec.vocab_size,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(lines, trainer)
    kwargs: dict[str, Any] = {
        "tokenizer_object": tok,
        "pad_token": fmt["pad"],
        "eos_token": fmt["eos"],
        "padding_side": "right",
        "model_input_names": ["input_ids", "attention_mask"],
        "additional_special_tokens": fmt["extra"],
    }
    if fmt["bos"]:
        kwargs["bos_token"] = fmt["bos"]
    fast = PreTrainedTokenizerFast(**kwargs)
    fast.chat_template = fmt["template"]
    return fast


def build_model(spec: TinySpec, tokenizer: Any) -> Any:
    """A freshly initialised causal LM of the spec's architecture."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

    torch.manual_seed(spec.seed)
    common = {
        "vocab_size": len(tokenizer),
        "hidden_size": spec.hidden_size,
        "intermediate_size": spec.intermediate_size,
        "num_hidden_layers": spec.num_layers,
        "num_attention_heads": spec.num_heads,
        "num_key_value_heads": spec.num_heads,
        "max_position_embeddings": spec.max_position,
        "tie_word_embeddings": True,
        "pad_token_id": tokenizer.pad_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "bos_token_id": tokenizer.bos_token_id,
    }
    if spec.arch == "llama":
        config = LlamaConfig(**common)
    elif spec.arch == "qwen2":
        config = Qwen2Config(**common, use_sliding_window=False)
    else:
        raise ConfigError(f"model.tiny.arch={spec.arch!r} is not one of llama, qwen2")
    return AutoModelForCausalLM.from_config(config)


def _sft_args(out: Path, spec: TinySpec, epochs: float, **extra: Any) -> Any:
    from trl import SFTConfig

    return SFTConfig(
        output_dir=str(out),
        num_train_epochs=epochs,
        learning_rate=spec.lr,
        per_device_train_batch_size=spec.batch_size,
        max_length=spec.max_length,
        lr_scheduler_type="cosine",
        warmup_steps=10,
        logging_steps=25,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        bf16=False,
        gradient_checkpointing=False,
        seed=spec.seed,
        dataloader_num_workers=0,
        disable_tqdm=True,
        **extra,
    )


def _collator(spec: TinySpec, tokenizer: Any) -> Any:
    """A collator packing each batch into few rows when ``spec.pack_batches`` (see
    :mod:`rlexp.models.batch_packing`), else None: the trainer's own, padded."""
    if not spec.pack_batches:
        return None
    from rlexp.models.batch_packing import PackedBatchCollator

    return PackedBatchCollator(pad_token_id=tokenizer.pad_token_id, max_length=spec.max_length)


def pretrain(model: Any, tokenizer: Any, lines: Sequence[str], spec: TinySpec, out: Path) -> dict[str, float]:
    """Language-model pretraining on plain text with TRL's SFTTrainer (text field)."""
    from datasets import Dataset
    from trl import SFTTrainer

    ds = Dataset.from_dict({"text": list(lines)})
    args = _sft_args(out / "_pretrain", spec, spec.pretrain_epochs, dataset_text_field="text", packing=False)
    trainer = drop_log_printer(
        SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=tokenizer, data_collator=_collator(spec, tokenizer))
    )
    result = trainer.train()
    return {"pretrain/loss": float(result.training_loss), "pretrain/steps": int(result.global_step)}


def instruct_tune(
    model: Any, tokenizer: Any, rows: Sequence[tuple[str, str] | tuple[str, str, str]], spec: TinySpec, out: Path
) -> dict[str, float]:
    """SFT on (prompt, response[, system]) rows in the chat format; loss on the response only."""
    from datasets import Dataset
    from trl import SFTTrainer

    def conversation(row: tuple[str, ...]) -> list[dict[str, str]]:
        system = row[2] if len(row) > 2 else ""
        return ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": row[0]}]

    ds = Dataset.from_dict(
        {
            "prompt": [conversation(r) for r in rows],
            "completion": [[{"role": "assistant", "content": r[1]}] for r in rows],
        }
    )
    args = _sft_args(out / "_sft", spec, spec.sft_epochs)
    trainer = drop_log_printer(
        SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=tokenizer, data_collator=_collator(spec, tokenizer))
    )
    result = trainer.train()
    return {"sft/loss": float(result.training_loss), "sft/steps": int(result.global_step)}


def save(model: Any, tokenizer: Any, out: Path, padding_side: str = "left") -> None:
    """Save model + tokenizer (safetensors). Policies generate with left padding."""
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.padding_side = padding_side
    tokenizer.save_pretrained(out)
