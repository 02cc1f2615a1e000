"""Shared-prefix scoring: the grouping saves the most tokens, and no score moves beyond float noise."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
import torch

from rlexp.config.nodes import ScorerConfig
from rlexp.models import tiny
from rlexp.scorer import ScoreInput
from rlexp.scoring.reward_model import RewardModelScorer
from rlexp.scoring.shared_prefix import MIN_PREFIX, prefix_groups
from tests._tiny_random import corpus


def _common(a: list[int], b: list[int]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _saving(ids: list[list[int]], keep: list[int], block: tuple[int, ...], cap: int, max_tokens: int | None) -> int:
    if len(block) < 2 or len(block) > cap:
        return 0 if len(block) <= cap else -10**9
    prefix = min([keep[i] for i in block] + [_common(ids[block[0]], ids[j]) for j in block[1:]])
    if max_tokens is not None and sum(len(ids[i]) for i in block) - (len(block) - 1) * prefix > max_tokens:
        return -10**9
    return (len(block) - 1) * prefix if prefix >= MIN_PREFIX else 0


def _runs(order: list[int]):
    """Every split of ``order`` into consecutive runs."""
    for cuts in itertools.product((False, True), repeat=len(order) - 1):
        runs, run = [], [order[0]]
        for item, cut in zip(order[1:], cuts, strict=True):
            if cut:
                runs.append(tuple(run))
                run = []
            run.append(item)
        yield [*runs, tuple(run)]


@pytest.mark.parametrize("seed", range(12))
def test_groups_share_exact_prefixes_and_save_the_most_of_any_split_in_token_order(seed: int) -> None:
    rng = random.Random(seed)
    stems = [[rng.randrange(5) for _ in range(rng.randrange(4, 20))] for _ in range(3)]
    ids = [rng.choice(stems) + [rng.randrange(3) for _ in range(rng.randrange(0, 6))] for _ in range(9)]
    keep = [max(0, len(s) - 1 - rng.randrange(2)) for s in ids]
    cap = rng.choice([2, 3, 7])
    max_tokens = rng.choice([None, 18, 24, 32])  # binds in 4 of the 12 seeds
    groups, alone = prefix_groups(ids, keep, max_members=cap, max_tokens=max_tokens)

    assert sorted([*alone, *(m for g in groups for m in g.members)]) == list(range(len(ids)))
    for g in groups:
        assert 2 <= len(g.members) <= cap and g.prefix >= MIN_PREFIX
        packed = g.prefix + sum(len(ids[m]) - g.prefix for m in g.members)
        assert max_tokens is None or packed <= max_tokens
        assert all(g.prefix <= keep[m] and ids[m][: g.prefix] == ids[g.members[0]][: g.prefix] for m in g.members)
    saved = sum((len(g.members) - 1) * g.prefix for g in groups)
    order = sorted(range(len(ids)), key=lambda i: ids[i])
    best = max(sum(_saving(ids, keep, b, cap, max_tokens) for b in runs) for runs in _runs(order))
    assert saved == best


def _reward_model(arch: str, chat_format: str) -> tuple[object, object]:
    from transformers import AutoModelForSequenceClassification, GPT2Config, MixtralConfig

    spec = tiny.TinySpec(arch=arch if arch in ("llama", "qwen2") else "llama", chat_format=chat_format, vocab_size=300, hidden_size=32, num_layers=2,
                         num_heads=2, intermediate_size=64, max_position=1024, corpus="a", pretrain_epochs=0,
                         sft_epochs=0, lr=1e-3, batch_size=8, max_length=128, seed=0)
    tok = tiny.build_tokenizer(corpus(), spec)
    config = tiny.build_model(spec, tok).config
    if arch == "gpt2":  # learned absolute positions instead of rotary ones
        config = GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=2, n_head=2, n_positions=1024,
                            pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    if arch == "mixtral":  # a mixture-of-experts last MLP (it returns router logits too)
        config = MixtralConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                               num_attention_heads=2, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2,
                               pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    config.num_labels = 1
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_config(config)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():  # larger weights than the default init, so a wrong position or mask shows
        for param in model.parameters():
            if param.dim() == 2:
                param.copy_(torch.randn(param.shape, generator=gen) * 0.3)
    return model, tok


@pytest.mark.parametrize(("arch", "chat_format"), [("llama", "llama"), ("qwen2", "chatml"), ("gpt2", "llama"),
                                                      ("mixtral", "llama")])
def test_shared_prefix_scores_equal_whole_sequence_scores(arch: str, chat_format: str) -> None:
    model, tok = _reward_model(arch, chat_format)
    history = "user 7 asks how to cook rice and the judge rates answer 3. " * 6
    items = [
        *(ScoreInput(f"{history} how to cook bread?", r) for r in
          ("in the garden", "in the garden", "in the garden with paint", "", "camera bike tomato " * 5)),
        *(ScoreInput(f"{history} and what about knitting, paint and a garden camera?", r) for r in ("slowly", "with a camera")),
        ScoreInput("rice", "bread"),
    ]
    whole = RewardModelScorer(model, tok, ScorerConfig(batch_size=1, sort_by_length=False, share_prefix=False))
    ref = whole.score(items)
    lengths = [len(s) for s in whole.encode([whole.render(x) for x in items])]
    assert whole.stats.extra["positions"] == sum(lengths)  # one row per batch: no padding
    for bs in (2, 3, 32):
        shared = RewardModelScorer(model, tok, ScorerConfig(batch_size=bs, share_prefix=True))
        ids = shared.encode([shared.render(x) for x in items])
        groups, _ = prefix_groups(ids, [len(s) - 1 for s in ids], max_members=bs)
        assert sum(len(g.members) for g in groups) >= min(bs, 5)  # sharing happened
        assert np.max(np.abs(shared.score(items) - ref)) <= 1e-5
        # ... in packed rows (not left to the whole-sequence fallback).
        assert shared.stats.extra["packed"] == sum(len(g.members) for g in groups)
        if bs == 32:  # one packed batch, each group's prefix once; one whole batch; the packing check's row
            _, alone = prefix_groups(ids, [len(s) - 1 for s in ids], max_members=bs)
            packed = [g.prefix + sum(len(ids[m]) - g.prefix for m in g.members) for g in groups]
            expected = len(groups) * max(packed) + len(alone) * max((len(ids[i]) for i in alone), default=0)
            got = shared.stats.extra["positions"]
            assert got - expected in {len(ids[m]) for g in groups for m in g.members}, (got, expected)
            assert got < sum(lengths) * 0.7
    # Texts ending in the pad token (the head reads the last non-pad token) and a doubled BOS.
    texts = [whole.render(x) + tok.pad_token for x in items[:4]]
    if tok.bos_token:
        texts += [tok.bos_token + whole.render(x) for x in items[4:]]
    ref = whole.score_texts(texts)
    got = RewardModelScorer(model, tok, ScorerConfig(batch_size=4, share_prefix=True)).score_texts(texts)
    assert np.max(np.abs(got - ref)) <= 1e-5


def test_packed_rows_stay_within_max_length() -> None:
    """One long history shared by many responses (a PPO batch of one user) is packed into rows of
    at most ``max_length`` tokens, never one row of all of them: memory stays that of a whole batch."""
    model, tok = _reward_model("llama", "llama")
    history = "user 7 asks how to cook rice and the judge rates answer 3. " * 6
    items = [ScoreInput(f"{history} how to cook bread?", f"answer {i} " + "with a camera " * (i % 4)) for i in range(12)]
    whole = RewardModelScorer(model, tok, ScorerConfig(batch_size=16, share_prefix=False))
    ids = whole.encode([whole.render(x) for x in items])
    keep = [len(s) - 1 for s in ids]
    uncapped, _ = prefix_groups(ids, keep, max_members=16)
    assert len(uncapped) == 1  # without a cap: one row of every response
    longest = max(len(s) for s in ids)
    limit = longest + 2 * (longest - uncapped[0].prefix)  # about three responses per row
    groups, alone = prefix_groups(ids, keep, max_members=16, max_tokens=limit)
    packed = [g.prefix + sum(len(ids[m]) - g.prefix for m in g.members) for g in groups]
    assert len(groups) >= 3 and max(packed) <= limit and not alone

    capped = RewardModelScorer(model, tok, ScorerConfig(batch_size=16, share_prefix=True, max_length=limit))
    assert np.max(np.abs(capped.score(items) - whole.score(items))) <= 1e-5
    assert capped.stats.extra["packed"] == len(items)
    # One padded batch of the capped rows, plus the packing check's one whole sequence.
    assert capped.stats.extra["positions"] - len(groups) * max(packed) in {len(s) for s in ids}
