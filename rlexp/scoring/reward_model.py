"""Sequence-classification reward models as scorers.

Input rendering follows the RewardBench 2 / Personalized RewardBench pipelines: the conversation
[user: prompt (+ profile per mode), assistant: response] rendered with the RM tokenizer's chat
template (no system prompt, no generation prompt), a duplicated leading BOS masked out, the raw
logit as the score. Unlike the reference loop, batches are formed by sorted length so padding is
small; scores come back in input order and do not depend on batching (tested to 1e-5).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from rlexp.config.nodes import ProfileConfig, ScorerConfig
from rlexp.data.formatting import Planner, rm_user_turn
from rlexp.errors import ConfigError, DataError
from rlexp.models.loading import load_reward_model, load_tokenizer, pick_device, tokenizer_drift
from rlexp.scorer import ScoreInput, ScoreStats

log = logging.getLogger("rlexp")

# Used when a tokenizer has no chat template (RB2 0.1.4 falls back to a FastChat template).
FALLBACK_TEMPLATES: dict[str, str] = {
    "tulu": "<|user|>\n{prompt}\n<|assistant|>\n{response}",
    "plain": "User: {prompt}\nAssistant: {response}",
}


def _torch_dtype(name: str, device: str) -> Any:
    import torch

    if name == "auto":
        return torch.float32 if device == "cpu" else torch.bfloat16
    try:
        return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]
    except KeyError:
        raise ConfigError(f"dtype={name!r} is not one of auto, float32, bfloat16, float16") from None


def _earlier_turns(template: str, turns: Sequence[tuple[str, str]]) -> str:
    """A conversation's earlier messages in a fallback template: a system message as it is, then each
    (user, assistant) exchange as the template renders one, a newline after each."""
    out: list[str] = []
    pending: str | None = None
    for role, content in turns:
        if role == "system":
            out.append(content)
        elif role == "user":
            pending = content
        else:
            out.append(template.format(prompt=pending or "", response=content))
            pending = None
    return "".join(f"{part}\n" for part in out)


class RewardModelScorer:
    """A 1-label sequence classifier behind the :class:`~rlexp.scorer.Scorer` interface."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        settings: ScorerConfig | None = None,
        profile: ProfileConfig | None = None,
        *,
        name: str = "rm",
        planner: Planner | None = None,
    ) -> None:
        self.settings = settings or ScorerConfig()
        self.profile = profile or ProfileConfig()
        if model.config.num_labels != 1:
            raise ConfigError(f"reward model {name!r} has num_labels={model.config.num_labels}; a reward model needs 1")
        self.device = pick_device(self.settings.device)
        self.model = model.to(self.device, dtype=_torch_dtype(self.settings.dtype, self.device)).eval()
        self.tokenizer = tokenizer
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        if getattr(self.model.config, "pad_token_id", None) is None:
            self.model.config.pad_token_id = tokenizer.pad_token_id
        self.name = name
        self.planner = planner
        self.stats = ScoreStats()
        self._warned_template = False
        #: How the tokenizer was loaded and whether it drifts from tokenizer.json (set by from_pretrained).
        self.tokenizer_report: dict[str, Any] = {"class": type(tokenizer).__name__, "source": "given", "drift": None}

    @classmethod
    def from_pretrained(cls, ref: str, settings: ScorerConfig | None = None, profile: ProfileConfig | None = None,
                        **kw: Any) -> RewardModelScorer:
        """Load from a local folder or hub id (safetensors only)."""
        trust = bool(kw.pop("trust_remote_code", False))
        s = settings or ScorerConfig()
        tokenizer = load_tokenizer(ref, trust_remote_code=trust, literal=s.tokenizer == "file")
        drift = None if s.tokenizer == "file" or s.tokenizer_check == "off" else tokenizer_drift(tokenizer, ref)
        if drift and s.tokenizer_check == "error":
            raise ConfigError(f"{drift} (or scorer.tokenizer_check=warn to score anyway)")
        if drift:
            log.warning("%s", drift)
        model = load_reward_model(ref, trust_remote_code=trust)
        scorer = cls(model, tokenizer, s, profile, name=kw.pop("name", ref), **kw)
        scorer.tokenizer_report = {"class": type(tokenizer).__name__, "source": str(s.tokenizer), "drift": drift}
        return scorer

    # -- rendering -------------------------------------------------------------------------
    def user_turn(self, item: ScoreInput) -> str:
        p = self.profile
        return rm_user_turn(item.prompt, item.profile, str(p.mode), k=p.k, separator=p.separator, planner=self.planner,
                            ranked=item.profile_ranked)

    def render(self, item: ScoreInput) -> str:
        """The exact text the RM reads for ``item``."""
        user = self.user_turn(item)
        if getattr(self.tokenizer, "chat_template", None):
            messages = [*({"role": r, "content": c} for r, c in item.turns),
                        {"role": "user", "content": user}, {"role": "assistant", "content": item.response}]
            return self.tokenizer.apply_chat_template(messages, tokenize=False)
        if not self._warned_template:
            log.warning("%s: tokenizer has no chat template; using the %r fallback", self.name, self.settings.fallback_template)
            self._warned_template = True
        try:
            template = FALLBACK_TEMPLATES[self.settings.fallback_template]
        except KeyError:
            raise ConfigError(
                f"fallback_template={self.settings.fallback_template!r} is not one of {', '.join(FALLBACK_TEMPLATES)}"
            ) from None
        return _earlier_turns(template, item.turns) + template.format(prompt=user, response=item.response) + (
            self.tokenizer.eos_token or "")

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids per text, truncated to ``max_length`` on the configured side (counted)."""
        ids = self.tokenizer(list(texts), add_special_tokens=True, truncation=False)["input_ids"]
        out = []
        limit = self.settings.max_length
        for seq in ids:
            if len(seq) > limit:
                self.stats.truncated += 1
                seq = seq[:limit] if self.settings.truncation_side == "right" else seq[-limit:]
            out.append(list(seq))
        return out

    # -- scoring ---------------------------------------------------------------------------
    def score_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Scores of already-rendered texts, in input order."""
        import torch

        ids = self.encode(texts)
        order = np.argsort([len(s) for s in ids], kind="stable") if self.settings.sort_by_length else np.arange(len(ids))
        scores = np.empty(len(ids), dtype=np.float64)
        bos = self.tokenizer.bos_token_id
        pad = self.tokenizer.pad_token_id
        left = getattr(self.tokenizer, "padding_side", "right") == "left"
        bs = max(1, int(self.settings.batch_size))
        with torch.inference_mode():
            for start in range(0, len(order), bs):
                idx = order[start : start + bs]
                batch = [ids[i] for i in idx]
                width = max(len(s) for s in batch)
                input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
                mask = torch.zeros((len(batch), width), dtype=torch.long)
                for row, seq in enumerate(batch):
                    sl = slice(width - len(seq), width) if left else slice(0, len(seq))
                    input_ids[row, sl] = torch.tensor(seq, dtype=torch.long)
                    mask[row, sl] = 1
                    # A template BOS plus a tokenizer BOS: mask the first one (RB2 pipeline).
                    if bos is not None and len(seq) > 1 and seq[0] == bos and seq[1] == bos:
                        mask[row, sl.start] = 0
                logits = self._forward(input_ids, mask)
                scores[idx] = logits
        self.stats.items += len(texts)
        if np.isnan(scores).any():
            bad = int(np.flatnonzero(np.isnan(scores))[0])
            raise DataError(f"{self.name}: NaN score for input {bad}")
        return scores

    def _forward(self, input_ids: Any, mask: Any) -> np.ndarray:
        import torch

        input_ids = input_ids.to(self.device)
        mask = mask.to(self.device)
        # The HF head reads the last non-pad token, whatever the padding side.
        logits = self.model(input_ids=input_ids, attention_mask=mask).logits
        if logits.dim() == 2 and logits.shape[1] == 1:
            return logits[:, 0].float().cpu().numpy()
        return torch.as_tensor(logits).float().reshape(len(input_ids), -1)[:, -1].cpu().numpy()

    def score(self, items: Sequence[ScoreInput]) -> np.ndarray:
        return self.score_texts([self.render(it) for it in items])
