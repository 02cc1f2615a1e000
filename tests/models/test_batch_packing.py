"""Packed tiny-lineage batches (``model.tiny.pack_batches``): each batch's examples packed into few
rows compute the same loss and gradients as the padded batch, for both architectures and both
training phases (plain text, and prompt-completion with the loss on the completion only)."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest
import torch

from rlexp.models import tiny
from rlexp.models.batch_packing import first_fit_decreasing
from tests._tiny_random import random_chat_model

SPECS = {
    "llama": tiny.TinySpec("llama", "llama", 400, 64, 2, 4, 128, 256, "a", 1.0, 1.0, 1e-3, 8, 64, 0),
    "qwen2": tiny.TinySpec("qwen2", "chatml", 400, 64, 2, 4, 128, 256, "a", 1.0, 1.0, 1e-3, 8, 64, 0),
}


def _rows(n: int) -> list[tuple[str, str, str]]:
    rng = random.Random(0)
    words = ["rice", "bread", "garden", "tomato", "bike", "paint", "judge", "answer", "user", "cook"]

    def say(k: int) -> str:
        return " ".join(rng.choice(words) for _ in range(k))

    return [(say(rng.randint(1, 12)), say(rng.randint(1, 30)), "be brief" if i % 3 == 0 else "") for i in range(n)]


def _first_batch_loss_and_grads(spec: tiny.TinySpec, phase: str, tmp: Path) -> tuple[float, torch.Tensor, int]:
    from datasets import Dataset
    from trl import SFTTrainer

    model, tok = random_chat_model(spec)
    rows = _rows(16)
    if phase == "pretrain":
        ds = Dataset.from_dict({"text": [f"{p} {r}" for p, r, _ in rows]})
        args = tiny._sft_args(tmp, spec, 1.0, dataset_text_field="text", packing=False)
    else:
        ds = Dataset.from_dict({
            "prompt": [([{"role": "system", "content": s}] if s else []) + [{"role": "user", "content": p}] for p, _, s in rows],
            "completion": [[{"role": "assistant", "content": r}] for _, r, _ in rows],
        })
        args = tiny._sft_args(tmp, spec, 1.0)
    trainer = SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=tok, data_collator=tiny._collator(spec, tok))
    batch = next(iter(trainer.get_train_dataloader()))
    model.train()
    loss = trainer.compute_loss(model, dict(batch))
    loss.backward()
    grads = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
    return float(loss.detach()), grads, int(batch["input_ids"].shape[0])


@pytest.mark.parametrize("arch", sorted(SPECS))
@pytest.mark.parametrize("phase", ["pretrain", "sft"])
def test_packed_batches_give_the_padded_loss_and_gradients(arch: str, phase: str, tmp_path: Path) -> None:
    padded = SPECS[arch]
    flat = dataclasses.replace(padded, pack_batches=True)
    loss_a, grads_a, rows_a = _first_batch_loss_and_grads(padded, phase, tmp_path / "a")
    loss_b, grads_b, rows_b = _first_batch_loss_and_grads(flat, phase, tmp_path / "b")
    assert rows_a == padded.batch_size and 1 < rows_b < rows_a  # the same examples in fewer rows
    assert loss_a == pytest.approx(loss_b, abs=1e-5)
    assert torch.allclose(grads_a, grads_b, atol=1e-5), (grads_a - grads_b).abs().max()


def test_first_fit_decreasing_fills_bins_within_capacity() -> None:
    rng = random.Random(0)
    for _ in range(50):
        lengths = [rng.randint(1, 80) for _ in range(rng.randint(1, 40))]
        bins = first_fit_decreasing(lengths, 64)
        assert sorted(i for b in bins for i in b) == list(range(len(lengths)))
        assert all(sum(lengths[i] for i in b) <= 64 or len(b) == 1 for b in bins)
        # first fit: no bin's items would all have fitted into an earlier bin's leftover room
        room = [64 - sum(lengths[i] for i in b) for b in bins]
        assert all(min(lengths[i] for i in b) > max(room[:k], default=-1) for k, b in enumerate(bins))
