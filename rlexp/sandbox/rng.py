"""Deterministic randomness for the sandbox.

Every generator draws from its own ``random.Random`` whose seed is derived (SHA-256) from the world
seed and a path of names, e.g. ``make_rng(seed, "prb", "users")``. Adding or reordering one
generator therefore never shifts the draws of another, and nothing depends on Python's salted
``hash()`` (which differs between processes).
"""

from __future__ import annotations

import hashlib
import random


def derive_seed(seed: int, *names: object) -> int:
    """A 64-bit integer seed determined by ``seed`` and the ``names`` path."""
    key = "\x1f".join([str(int(seed)), *(str(n) for n in names)])
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big")


def make_rng(seed: int, *names: object) -> random.Random:
    """A fresh ``random.Random`` for one generator (see :func:`derive_seed`)."""
    return random.Random(derive_seed(seed, *names))


def stable_unit(*parts: object) -> float:
    """A deterministic pseudo-random float in [0, 1) from ``parts`` (no generator state)."""
    key = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") / 2**64
