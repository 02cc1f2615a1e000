"""Length-grouped RM batches: less padding than random batches, without long runs of one kind."""

from __future__ import annotations

import random

import pytest
import torch

from rlexp.models import reward_training as rt


def _mixed_lengths(n: int, seed: int) -> list[int]:
    """Short general pairs and long profile-bearing pairs, shuffled (the flipped control's shape)."""
    rng = random.Random(seed)
    return [rng.randint(20, 60) if rng.random() < 0.5 else rng.randint(250, 400) for _ in range(n)]


def _padding(order: list[int], lengths: list[int], batch: int) -> int:
    batches = [order[i : i + batch] for i in range(0, len(order), batch)]
    return sum(max(lengths[i] for i in b) * len(b) - sum(lengths[i] for i in b) for b in batches)


def _longest_run_of_long_rows(order: list[int], lengths: list[int]) -> int:
    best = run = 0
    for i in order:
        run = run + 1 if lengths[i] >= 250 else 0
        best = max(best, run)
    return best


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_grouped_order_pads_less_and_keeps_kinds_interleaved(seed: int) -> None:
    lengths, batch = _mixed_lengths(1600, seed), 16
    order = rt.length_grouped_order(lengths, batch, torch.Generator().manual_seed(seed))
    assert sorted(order) == list(range(len(lengths)))
    assert lengths[order[0]] == max(lengths)
    window = rt.LENGTH_WINDOW_BATCHES * batch
    for start in range(0, len(order), window):
        # sorted longest first, but for one window's head: the overall longest row swapped places
        # with the first window's head
        chunk = [lengths[i] for i in order[start + 1 : start + window]]
        assert chunk == sorted(chunk, reverse=True)
    shuffled = list(range(len(lengths)))
    random.Random(seed).shuffle(shuffled)
    assert _padding(order, lengths, batch) < 0.6 * _padding(shuffled, lengths, batch)
    # transformers' default window (up to 50 batches) strings hundreds of long pairs together
    from transformers.trainer_pt_utils import get_length_grouped_indices

    assert _longest_run_of_long_rows(order, lengths) <= 2 * window
    wide = get_length_grouped_indices(lengths, batch, None, torch.Generator().manual_seed(seed))
    assert _longest_run_of_long_rows(wide, lengths) > 2 * window
