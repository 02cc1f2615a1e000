"""Sequence-classification reward models as scorers.

Input rendering follows the RewardBench 2 / Personalized RewardBench pipelines: the conversation
[user: prompt (+ profile per mode), assistant: response] rendered with the RM tokenizer's chat
template (no system prompt, no generation prompt), a duplicated leading BOS masked out, the raw
logit as the score. Unlike the reference loop, batches are formed by sorted length so padding is
small, and with ``share_prefix`` inputs that start with the same tokens (a prompt's completions)
are packed in one row that runs that start once; scores come back in input order and do not depend
on batching or sharing (tested to 1e-5).
"""

from __future__ import annotations

import contextlib
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


@contextlib.contextmanager
def _last_mlp_at(base: Any, flat: Any) -> Iterator[None]:
    """While active, the last decoder layer's MLP runs only at the flattened (row * width + column)
    positions the head reads, and adds zero elsewhere: nothing after it mixes positions, so only the
    scored positions' outputs are read. The MLP is about two thirds of a layer's matrix work, so a
    6-layer RM does ~11% less. No-op for a model without ``layers[-1].mlp`` (or ``h[-1].mlp``)."""
    layers = getattr(base, "layers", None) or getattr(base, "h", None)
    mlp = getattr(layers[-1], "mlp", None) if layers else None
    if mlp is None:
        yield
        return

    def gather(_module: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
        x = args[0]
        return (x.reshape(-1, x.shape[-1])[flat][None], *args[1:])

    shape: list[Any] = []

    def remember(_module: Any, args: tuple[Any, ...]) -> None:
        shape[:] = [args[0].shape]

    def scatter(_module: Any, _args: tuple[Any, ...], out: Any) -> Any:
        # A mixture-of-experts block returns (hidden states, router logits); only the first is read on.
        hidden, rest = (out[0], tuple(out[1:])) if isinstance(out, tuple) else (out, None)
        full = hidden.new_zeros(shape[0][:-1] + hidden.shape[-1:]).reshape(-1, hidden.shape[-1])
        full[flat] = hidden[0]
        full = full.reshape(*shape[0][:-1], hidden.shape[-1])
        return full if rest is None else (full, *rest)

    hooks = [mlp.register_forward_pre_hook(remember), mlp.register_forward_pre_hook(gather),
             mlp.register_forward_hook(scatter)]
    try:
        yield
    finally:
        for hook in hooks:
            hook.remove()


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
        # Packed shared prefixes are checked once against a whole-sequence score (see _score_groups).
        self._packing_checked = False
        self._packing_failed = False
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
        parts = self._packed_parts()
        with torch.inference_mode():
            if parts:
                pad = self.tokenizer.pad_token_id
                # The head reads the last non-pad token: it must stay in every member's own tail.
                keep = [next((j for j in range(len(seq) - 1, -1, -1) if seq[j] != pad), 0) for seq in ids]
                # A packed row is capped at the longest input the scorer reads whole, so it never
                # needs more memory than a batch of whole inputs.
                groups, rest = prefix_groups(ids, keep, max_members=bs, max_tokens=self.settings.max_length)
                rest = self._score_groups(ids, groups, keep, scores, parts) + list(rest)
            self._score_whole(ids, rest, scores)
        self.stats.items += len(texts)
        if np.isnan(scores).any():
            bad = int(np.flatnonzero(np.isnan(scores))[0])
            raise DataError(f"{self.name}: NaN score for input {bad}")
        return scores

    def _packed_parts(self) -> tuple[Any, Any] | None:
        """(base model, per-position head) when shared prefixes are on and the model is a decoder
        sequence classifier of the transformers kind (``<base_model_prefix>`` then ``score``), else None."""
        if not self.settings.share_prefix or self._packing_failed or getattr(self.model.config, "is_encoder_decoder", False):
            return None
        base = getattr(self.model, getattr(self.model, "base_model_prefix", ""), None)
        head = getattr(self.model, "score", None)
        return (base, head) if base is not None and head is not None else None

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
            self._count_positions(input_ids)

    @staticmethod
    def _chunks(groups: list[PrefixGroup], ids: list[list[int]], bs: int) -> Iterator[list[PrefixGroup]]:
        """Groups in runs of at most ``bs`` members (a larger group alone), ordered by packed length
        (the prefix once, then every member's tail), so rows of a batch are about as long."""
        def length(g: PrefixGroup) -> int:
            return g.prefix + sum(len(ids[m]) - g.prefix for m in g.members)

        chunk: list[PrefixGroup] = []
        members = 0
        for group in sorted(groups, key=length):
            if chunk and members + len(group.members) > bs:
                yield chunk
                chunk, members = [], 0
            chunk.append(group)
            members += len(group.members)
        if chunk:
            yield chunk

    def _score_groups(self, ids: list[list[int]], groups: list[PrefixGroup], keep: Sequence[int], scores: np.ndarray,
                      parts: tuple[Any, Any]) -> list[int]:
        """Each group packed in one row, its prefix once and then every member's tail; each tail sees
        the prefix and itself (a block mask) at the positions it has in its own sequence, so the
        model runs every shared token once and no key/value cache is copied. Returns the members
        left to score whole: all of them when the first packed batch disagrees with whole-sequence
        scores (a model that ignores a 4D mask or explicit positions)."""
        for chunk in self._chunks(groups, ids, max(1, int(self.settings.batch_size))):
            members, got = self._packed_forward(ids, chunk, keep, parts)
            if not self._packing_checked:
                probe = members[int(np.argmax([len(ids[m]) for m in members]))]
                input_ids, mask = self._padded([ids[probe]])
                mask[0, 0] = self._first_mask(ids[probe])
                whole = self._forward(input_ids, mask)[0]
                self._count_positions(input_ids)
                self._packing_checked = True
                if abs(whole - got[members.index(probe)]) > 1e-4 * max(1.0, abs(whole)):
                    self._packing_failed = True
                    log.warning("%s: packed shared-prefix scores differ from whole-sequence scores; scoring whole", self.name)
                    return [m for g in groups for m in g.members]
            scores[members] = got
            self.stats.extra["packed"] = self.stats.extra.get("packed", 0) + len(members)
        return []

    def _packed_forward(self, ids: list[list[int]], chunk: list[PrefixGroup], keep: Sequence[int],
                        parts: tuple[Any, Any]) -> tuple[list[int], np.ndarray]:
        """Scores of a chunk's members, one packed row per group."""
        import torch

        rows: list[list[int]] = []
        segments: list[list[int]] = []  # 0: the shared prefix; k: the k-th member's tail
        positions: list[list[int]] = []
        ends: list[tuple[int, int, int]] = []  # (row, packed index of the scored token, member)
        for row, g in enumerate(chunk):
            tokens, segs, pos = list(ids[g.members[0]][: g.prefix]), [0] * g.prefix, list(range(g.prefix))
            for k, m in enumerate(g.members, 1):
                tail = ids[m][g.prefix :]
                ends.append((row, len(tokens) + keep[m] - g.prefix, m))
                tokens += tail
                segs += [k] * len(tail)
                pos += range(g.prefix, len(ids[m]))
            rows.append(tokens)
            segments.append(segs)
            positions.append(pos)
        input_ids, _ = self._padded(rows)
        seg = torch.full(input_ids.shape, -1, dtype=torch.long)
        position_ids = torch.zeros(input_ids.shape, dtype=torch.long)
        for row, (segs, pos) in enumerate(zip(segments, positions, strict=True)):
            seg[row, : len(segs)] = torch.tensor(segs)
            position_ids[row, : len(pos)] = torch.tensor(pos)
        width = input_ids.shape[1]
        q, k = seg[:, :, None], seg[:, None, :]
        allowed = (k >= 0) & (q >= 0) & ((k == 0) | (k == q)) & torch.ones(width, width, dtype=torch.bool).tril()
        for row, g in enumerate(chunk):
            if not self._first_mask(ids[g.members[0]]):
                allowed[row, :, 0] = False
        # Every query keeps itself, so no row (padding, a masked BOS) has nothing to attend to.
        allowed |= torch.eye(width, dtype=torch.bool)
        dtype = next(self.model.parameters()).dtype
        mask = torch.zeros(allowed.shape, dtype=dtype).masked_fill(~allowed, torch.finfo(dtype).min)[:, None]
        base, head = parts
        at_rows = torch.tensor([r for r, _, _ in ends], device=self.device)
        at_cols = torch.tensor([c for _, c, _ in ends], device=self.device)
        with _last_mlp_at(base, at_rows * width + at_cols):
            hidden = base(input_ids=input_ids.to(self.device), attention_mask=mask.to(self.device),
                          position_ids=position_ids.to(self.device)).last_hidden_state
        self._count_positions(input_ids)
        return [m for _, _, m in ends], self._last_scores(head(hidden[at_rows, at_cols]), len(ends))

    def _count_positions(self, input_ids: Any) -> None:
        # Token positions the model ran, padding included: what the scoring cost scales with.
        self.stats.extra["positions"] = self.stats.extra.get("positions", 0) + int(input_ids.numel())

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
