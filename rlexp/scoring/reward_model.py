"""Sequence-classification reward models as scorers.

Input rendering follows the RewardBench 2 / Personalized RewardBench pipelines: the conversation
[user: prompt (+ profile per mode), assistant: response] rendered with the RM tokenizer's chat
template (no system prompt, no generation prompt), a duplicated leading BOS masked out, the raw
logit as the score. Unlike the reference loop, batches are formed by sorted length so padding is
small, and with ``share_prefix`` inputs that start with the same tokens (a prompt's completions)
share one pass over that start; scores come back in input order and do not depend on batching or
sharing (tested to 1e-5).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from rlexp.config.nodes import ProfileConfig, ScorerConfig
from rlexp.data.formatting import Planner, rm_user_turn
from rlexp.errors import ConfigError, DataError
from rlexp.models.loading import load_reward_model, load_tokenizer, pick_device, tokenizer_drift
from rlexp.scorer import ScoreInput, ScoreStats
from rlexp.scoring.shared_prefix import PrefixGroup, prefix_groups

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
        scores = np.full(len(ids), np.nan, dtype=np.float64)
        bs = max(1, int(self.settings.batch_size))
        rest: Sequence[int] = range(len(ids))
        cache_arg = self._cache_argument()
        with torch.inference_mode():
            if cache_arg:
                pad = self.tokenizer.pad_token_id
                # The head reads the last non-pad token: it must stay in every member's own tail.
                keep = [next((j for j in range(len(seq) - 1, -1, -1) if seq[j] != pad), 0) for seq in ids]
                groups, rest = prefix_groups(ids, keep, max_members=bs)
                self._score_groups(ids, groups, scores, cache_arg)
            self._score_whole(ids, rest, scores)
        self.stats.items += len(texts)
        if np.isnan(scores).any():
            bad = int(np.flatnonzero(np.isnan(scores))[0])
            raise DataError(f"{self.name}: NaN score for input {bad}")
        return scores

    def _cache_argument(self) -> str | None:
        """The forward argument that takes a key/value cache (``cache`` in transformers 5, else
        ``past_key_values``), when shared prefixes are on and the model is a decoder that takes one."""
        if not self.settings.share_prefix or getattr(self.model.config, "is_encoder_decoder", False):
            return None
        params = inspect.signature(self.model.forward).parameters
        return next((name for name in ("cache", "past_key_values") if name in params), None)

    def _first_mask(self, seq: Sequence[int]) -> int:
        """0 for a template BOS followed by a tokenizer BOS (the RB2 pipeline masks the first), else 1."""
        bos = self.tokenizer.bos_token_id
        return 0 if bos is not None and len(seq) > 1 and seq[0] == bos and seq[1] == bos else 1

    def _padded(self, seqs: Sequence[Sequence[int]], left: bool = False) -> tuple[Any, Any]:
        """(input ids, attention mask) of ``seqs`` padded to the longest, on the given side."""
        import torch

        width = max(len(s) for s in seqs)
        input_ids = torch.full((len(seqs), width), self.tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for row, seq in enumerate(seqs):
            sl = slice(width - len(seq), width) if left else slice(0, len(seq))
            input_ids[row, sl] = torch.tensor(seq, dtype=torch.long)
            mask[row, sl] = 1
        return input_ids, mask

    def _score_whole(self, ids: list[list[int]], rest: Sequence[int], scores: np.ndarray) -> None:
        rest = np.asarray(rest, dtype=np.int64)
        if self.settings.sort_by_length:
            rest = rest[np.argsort([len(ids[i]) for i in rest], kind="stable")]
        left = getattr(self.tokenizer, "padding_side", "right") == "left"
        bs = max(1, int(self.settings.batch_size))
        for start in range(0, len(rest), bs):
            idx = rest[start : start + bs]
            batch = [ids[i] for i in idx]
            input_ids, mask = self._padded(batch, left)
            for row, seq in enumerate(batch):
                mask[row, mask.shape[1] - len(seq) if left else 0] = self._first_mask(seq)
            scores[idx] = self._forward(input_ids, mask)

    @staticmethod
    def _chunks(groups: list[PrefixGroup], ids: list[list[int]], bs: int) -> Iterator[list[PrefixGroup]]:
        """Groups in runs of at most ``bs`` members (a larger group alone), ordered by their longest
        tail: tails are most of the rows, so that is where padding would cost."""
        chunk: list[PrefixGroup] = []
        members = 0
        for group in sorted(groups, key=lambda g: (max(len(ids[m]) for m in g.members) - g.prefix, g.prefix)):
            if chunk and members + len(group.members) > bs:
                yield chunk
                chunk, members = [], 0
            chunk.append(group)
            members += len(group.members)
        if chunk:
            yield chunk

    def _score_groups(self, ids: list[list[int]], groups: list[PrefixGroup], scores: np.ndarray, cache_arg: str) -> None:
        """Each group's prefix once (batched, its cache kept), then every member's tail against it.
        Positions are explicit, so a short prefix padded inside the batch changes no score."""
        import torch

        for chunk in self._chunks(groups, ids, max(1, int(self.settings.batch_size))):
            head, head_mask = self._padded([ids[g.members[0]][: g.prefix] for g in chunk])
            for row, g in enumerate(chunk):
                head_mask[row, 0] = self._first_mask(ids[g.members[0]])
            width = head.shape[1]
            cache = self.model(input_ids=head.to(self.device), attention_mask=head_mask.to(self.device),
                               position_ids=torch.arange(width).expand(len(chunk), -1).to(self.device), use_cache=True)[cache_arg]
            rows = [(row, m) for row, g in enumerate(chunk) for m in g.members]
            of_group = torch.tensor([row for row, _ in rows], dtype=torch.long)
            starts = torch.tensor([chunk[row].prefix for row, _ in rows], dtype=torch.long)
            tail, tail_mask = self._padded([ids[m][chunk[row].prefix :] for row, m in rows])
            cache.reorder_cache(of_group.to(self.device))
            mask = torch.cat([head_mask[of_group], tail_mask], dim=1)
            logits = self.model(input_ids=tail.to(self.device), attention_mask=mask.to(self.device),
                                position_ids=(starts[:, None] + torch.arange(tail.shape[1])).to(self.device),
                                **{cache_arg: cache}).logits
            scores[[m for _, m in rows]] = self._last_scores(logits, len(rows))

    def _forward(self, input_ids: Any, mask: Any) -> np.ndarray:
        input_ids = input_ids.to(self.device)
        mask = mask.to(self.device)
        # The HF head reads the last non-pad token, whatever the padding side.
        return self._last_scores(self.model(input_ids=input_ids, attention_mask=mask).logits, len(input_ids))

    @staticmethod
    def _last_scores(logits: Any, rows: int) -> np.ndarray:
        import torch

        if logits.dim() == 2 and logits.shape[1] == 1:
            return logits[:, 0].float().cpu().numpy()
        return torch.as_tensor(logits).float().reshape(rows, -1)[:, -1].cpu().numpy()

    def score(self, items: Sequence[ScoreInput]) -> np.ndarray:
        return self.score_texts([self.render(it) for it in items])
