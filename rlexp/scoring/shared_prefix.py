"""Groups of token sequences that start the same way, so a reward model reads each common start once.

A benchmark or a Best-of-N pool scores many responses to one prompt: RewardBench 2 four or more
per prompt, a pool sixteen, Personalized RewardBench's comparison sets a long user history before
each response. The scorer packs a group into one row, its common prefix once and then each member's
own tail, with a block mask and positions that let every tail see only the prefix and itself. The
grouping is by token ids, after tokenisation, so it is exact whatever the chat template or
tokenizer merges at the boundary.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

# A shorter common start saves less than the longer rows and masks cost.
MIN_PREFIX = 8


@dataclass(frozen=True)
class PrefixGroup:
    """Sequences (by index) whose first ``prefix`` tokens are equal."""

    members: tuple[int, ...]
    prefix: int


def _common(a: Sequence[int], b: Sequence[int], limit: int) -> int:
    n = min(limit, len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def prefix_groups(ids: Sequence[Sequence[int]], keep: Sequence[int], max_members: int,
                  max_tokens: int | None = None) -> tuple[list[PrefixGroup], list[int]]:
    """Split sequences into shared-prefix groups and the rest, running the fewest tokens.

    ``keep[i]`` is how many leading tokens of sequence ``i`` may be shared: the scorer reads the
    last non-pad token, so that token must stay in every member's own tail. In token order, the
    common prefix of a run of sequences is the smallest common prefix of neighbours, and a group of
    ``k`` saves ``(k - 1) * prefix`` tokens; the split into runs that saves most is found by dynamic
    programming. Groups have at most ``max_members`` members, a prefix of at least
    :data:`MIN_PREFIX` tokens and, with ``max_tokens``, a packed row (the prefix once, then every
    member's tail) of at most that many tokens: attention and its mask grow with the square of a
    row's length, so one user's long history shared by a whole PPO batch would otherwise make a
    row of thousands of tokens and take gigabytes. The second list holds the sequences left to
    score whole.
    """
    order = sorted(range(len(ids)), key=lambda i: ids[i])
    # neighbour[k]: what order[k - 1] and order[k] may share.
    neighbour = [0] + [min(_common(ids[a], ids[b], len(ids[a])), keep[a], keep[b]) for a, b in itertools.pairwise(order)]
    saved = [0] * (len(order) + 1)  # saved[e]: the most tokens saved among the first e sequences
    start = [0] * (len(order) + 1)  # where the last run of that best split starts
    for end in range(1, len(order) + 1):
        saved[end], start[end] = saved[end - 1], end - 1
        prefix = keep[order[end - 1]]
        total = len(ids[order[end - 1]])
        for first in range(end - 2, max(-1, end - 1 - max_members), -1):
            prefix = min(prefix, neighbour[first + 1])
            total += len(ids[order[first]])
            # The packed row only grows as members join (a shorter prefix lengthens every tail).
            if prefix < MIN_PREFIX or (max_tokens is not None and total - (end - 1 - first) * prefix > max_tokens):
                break
            if saved[first] + (end - 1 - first) * prefix > saved[end]:
                saved[end], start[end] = saved[first] + (end - 1 - first) * prefix, first
    groups: list[PrefixGroup] = []
    alone: list[int] = []
    end = len(order)
    while end > 0:
        first = start[end]
        run = order[first:end]
        if len(run) == 1:
            alone.append(run[0])
        else:
            groups.append(PrefixGroup(tuple(run), min(min(keep[i] for i in run), *neighbour[first + 1 : end])))
        end = first
    return groups[::-1], alone[::-1]
