"""A tiny *random* chat model (real tokenizer, chat template and generate()) for tests that need
a model's mechanics but not its quality."""

from __future__ import annotations

import torch

from rlexp.models import tiny

TOPICS = ("rice", "bread", "garden", "tomato", "bike", "knitting", "paint", "camera")


def corpus() -> list[str]:
    return [f"user {i} asks how to cook {TOPICS[i % 8]} and the judge rates answer {i % 11}" for i in range(300)]


def random_chat_model(spec: tiny.TinySpec) -> tuple[object, object]:
    """(model, tokenizer) built from ``spec`` with larger-than-default random weights.

    The default init (std 0.02) gives near-uniform logits and the same argmax after every prompt,
    which would hide padding and cache bugs; larger random weights make the garbage depend on the
    prompt.
    """
    tok = tiny.build_tokenizer(corpus(), spec)
    model = tiny.build_model(spec, tok)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for param in model.parameters():
            if param.dim() == 2:
                param.copy_(torch.randn(param.shape, generator=gen) * 0.3)
    return model, tok
