"""A causal LM used only to answer chat prompts: the model behind every LLM judge.

Prompts are rendered with the tokenizer's chat template, batched by sorted length and decoded
greedily or with a seeded sampler, so a judge's outputs do not depend on batching.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from rlexp.errors import ConfigError
from rlexp.models.loading import load_causal_lm, load_tokenizer, pick_device

log = logging.getLogger("rlexp")

Messages = list[dict[str, str]]


class ChatModel(Protocol):
    """What a judge needs of its model: a local :class:`ChatLM` or a served
    :class:`~rlexp.models.endpoint_lm.EndpointLM`."""

    name: str
    truncated: int

    def generate(
        self,
        prompts: Sequence[Messages],
        max_new_tokens: int = 512,
        temperature: float = 0.0,
        seed: int = 0,
        batch_size: int | None = None,
    ) -> list[str]: ...


class ChatLM:
    """A causal LM plus its tokenizer, used only to answer chat prompts.

    Prompts are rendered with the tokenizer's own chat template (with the generation prompt) and
    tokenized without adding special tokens, because templates already insert BOS where the model
    expects one. Batches are left-padded by hand, so the tokenizer's ``padding_side`` does not
    matter, and sorted by length so little compute goes to padding; outputs come back in input
    order.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        name: str = "judge",
        device: str = "auto",
        batch_size: int = 8,
        max_prompt_tokens: int | None = None,
    ) -> None:
        if not getattr(tokenizer, "chat_template", None):
            raise ConfigError(f"generative judge {name}: tokenizer has no chat template")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"generative judge {name}: batch_size must be a positive integer, got {batch_size!r}")
        if max_prompt_tokens is not None and (isinstance(max_prompt_tokens, bool) or max_prompt_tokens < 1):
            raise ConfigError(f"generative judge {name}: max_prompt_tokens must be positive, got {max_prompt_tokens!r}")
        if tokenizer.pad_token is None:
            # Same fallback as the RewardBench / PRB pipelines; padding is masked out anyway.
            tokenizer.pad_token = tokenizer.eos_token
        self.name = name
        self.device = pick_device(device)
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.max_prompt_tokens = max_prompt_tokens
        #: prompts cut to ``max_prompt_tokens`` so far (judges copy it into their stats).
        self.truncated = 0

    @classmethod
    def from_pretrained(
        cls,
        ref: str,
        *,
        name: str | None = None,
        dtype: Any = None,
        trust_remote_code: bool = False,
        **kw: Any,
    ) -> ChatLM:
        """Load a local folder or hub id (safetensors only), with a left-padding tokenizer."""
        tokenizer = load_tokenizer(ref, trust_remote_code=trust_remote_code, padding_side="left")
        if not getattr(tokenizer, "chat_template", None):
            # Check before loading the weights, which can take minutes for a real judge.
            raise ConfigError(f"generative judge {name or ref}: tokenizer has no chat template")
        model = load_causal_lm(ref, trust_remote_code=trust_remote_code, dtype=dtype)
        return cls(model, tokenizer, name=name or ref, **kw)

    def render(self, messages: Messages) -> str:
        """The exact prompt text the model continues."""
        return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)

    def _encode(self, text: str) -> list[int]:
        ids = list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        limit = self.max_prompt_tokens
        if limit is not None and len(ids) > limit:
            # Keep the end: it holds the generation prompt, without which the model would not answer.
            self.truncated += 1
            ids = ids[-limit:]
        return ids

    def _generation_config(self, max_new_tokens: int, temperature: float) -> Any:
        from transformers import GenerationConfig

        # A fresh config, so a checkpoint's shipped defaults (sampling, top-k, repetition penalty)
        # never leak into a judge that is asked for greedy decoding. Only the stop tokens are kept.
        eos = getattr(getattr(self.model, "generation_config", None), "eos_token_id", None)
        eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        if self.tokenizer.eos_token_id is not None:
            eos_ids.add(self.tokenizer.eos_token_id)
        kw: dict[str, Any] = {
            "max_new_tokens": max_new_tokens,
            "pad_token_id": self.tokenizer.pad_token_id,
            "eos_token_id": sorted(eos_ids) or None,
        }
        if temperature > 0:
            # Plain temperature sampling, as the vLLM reference runs (top_p 1, no top-k).
            kw.update(do_sample=True, temperature=float(temperature), top_p=1.0, top_k=0)
        else:
            kw.update(do_sample=False)
        return GenerationConfig(**kw)

    def generate(
        self,
        prompts: Sequence[Messages],
        max_new_tokens: int = 512,
        temperature: float = 0.0,
        seed: int = 0,
        batch_size: int | None = None,
    ) -> list[str]:
        """Answer each chat prompt; returns the new text (special tokens removed, stripped).

        ``temperature == 0`` decodes greedily. With ``temperature > 0`` the torch RNG is seeded
        with ``seed`` for this call only (the caller's RNG state is restored), so a call is
        reproducible given the same prompts and batch size.
        """
        import torch

        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise ConfigError(f"generative judge {self.name}: max_new_tokens must be a positive integer")
        if temperature < 0:
            raise ConfigError(f"generative judge {self.name}: temperature must be >= 0, got {temperature}")
        if not prompts:
            return []
        ids = [self._encode(self.render(list(m))) for m in prompts]
        config = self._generation_config(max_new_tokens, temperature)
        bs = batch_size or self.batch_size
        order = np.argsort([len(s) for s in ids], kind="stable")
        outputs: list[str] = [""] * len(ids)
        pad = self.tokenizer.pad_token_id
        devices = [self.model.device.index or 0] if self.model.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices), torch.inference_mode():
            torch.manual_seed(seed)
            for start in range(0, len(order), bs):
                idx = order[start : start + bs]
                width = max(len(ids[i]) for i in idx)
                input_ids = torch.full((len(idx), width), pad, dtype=torch.long)
                mask = torch.zeros((len(idx), width), dtype=torch.long)
                for row, i in enumerate(idx):
                    # Left padding: every prompt ends at column ``width``, where generation starts.
                    input_ids[row, width - len(ids[i]) :] = torch.tensor(ids[i], dtype=torch.long)
                    mask[row, width - len(ids[i]) :] = 1
                out = self.model.generate(
                    input_ids=input_ids.to(self.model.device),
                    attention_mask=mask.to(self.model.device),
                    generation_config=config,
                )
                for row, i in enumerate(idx):
                    outputs[i] = self.tokenizer.decode(out[row, width:], skip_special_tokens=True).strip()
        return outputs
