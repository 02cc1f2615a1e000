"""Preference-data mixes: named sources with target shares, sampled deterministically.

Semantics follow TRL's ``DatasetMixtureConfig``: weights are target shares normalised to sum to
1; the mixture is as large as it can be without oversampling any source
(``total = min_i len_i / share_i``, optionally capped by ``max_rows``); weights are given for all
sources or for none (none = every row of every source). Rows are drawn without replacement with
a seed derived from ``(seed, source name)``, so adding a source does not change what is drawn
from the others. A mix's identity (:func:`mix_id`) hashes its sources' *content*, not their
paths, the way open-instruct keys prepared mixes.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rlexp.data.schemas import PreferencePair
from rlexp.errors import ConfigError, DataError


@dataclass(frozen=True)
class MixSpec:
    """A data mix: ``sources`` maps a name to a local path, hub id or sandbox source name.

    ``weights`` (name -> positive number, for every source or ``None``) are target shares;
    ``formatting`` records how pairs are rendered for the RM (profile mode, k, separator) and is
    part of the mix's identity; ``max_rows`` caps the mixture size.
    """

    sources: dict[str, str]
    weights: dict[str, float] | None = None
    seed: int = 0
    formatting: dict[str, Any] = field(default_factory=dict)
    max_rows: int | None = None


def _canonical_json(obj: Any, what: str) -> str:
    try:
        return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{what} must be plain JSON data: {exc}") from exc


def validate_mix(spec: MixSpec) -> None:
    """Raise a one-line :class:`ConfigError` for anything invalid in ``spec``."""
    if not isinstance(spec.sources, Mapping) or not spec.sources:
        raise ConfigError("mix.sources must name at least one source")
    for name, src in spec.sources.items():
        if not isinstance(name, str) or not name:
            raise ConfigError(f"mix.sources: source names must be non-empty strings, got {name!r}")
        if not isinstance(src, str) or not src:
            raise ConfigError(f"mix.sources.{name} must be a path, hub id or sandbox source name, got {src!r}")
    if isinstance(spec.seed, bool) or not isinstance(spec.seed, int):
        raise ConfigError(f"mix.seed must be an integer, got {spec.seed!r}")
    if spec.max_rows is not None and (
        isinstance(spec.max_rows, bool) or not isinstance(spec.max_rows, int) or spec.max_rows < 1
    ):
        raise ConfigError(f"mix.max_rows must be a positive integer or null, got {spec.max_rows!r}")
    if not isinstance(spec.formatting, Mapping):
        raise ConfigError(f"mix.formatting must be a mapping, got {type(spec.formatting).__name__}")
    _canonical_json(dict(spec.formatting), "mix.formatting")
    normalized_weights(spec)


def normalized_weights(spec: MixSpec) -> dict[str, float] | None:
    """Target shares summing to 1, in ``spec.sources`` order; ``None`` when no weights are given."""
    if spec.weights is None:
        return None
    if not isinstance(spec.weights, Mapping):
        raise ConfigError(f"mix.weights must be a mapping of source name to weight, got {spec.weights!r}")
    unknown = [n for n in spec.weights if n not in spec.sources]
    if unknown:
        raise ConfigError(f"mix.weights.{unknown[0]}: unknown source; sources: {', '.join(spec.sources)}")
    missing = [n for n in spec.sources if n not in spec.weights]
    if missing:
        raise ConfigError(
            f"mix.weights: no weight for source(s) {', '.join(missing)}; give weights for all sources or for none"
        )
    for name, w in spec.weights.items():
        if isinstance(w, bool) or not isinstance(w, (int, float)):
            raise ConfigError(f"mix.weights.{name} must be a number, got {w!r}")
        if not math.isfinite(w) or w <= 0:
            raise ConfigError(f"mix.weights.{name} must be a finite number > 0, got {w!r}")
    total = math.fsum(float(spec.weights[n]) for n in spec.sources)
    return {n: float(spec.weights[n]) / total for n in spec.sources}


def mix_id(spec: MixSpec, content_hashes: Mapping[str, str]) -> str:
    """A 12-hex id of what determines a mix's rows: each source's content hash (by name), the
    normalised weights, seed, ``max_rows`` and formatting.

    Paths do not enter (moving a file keeps the id); weights are normalised and rounded to 12
    significant digits, so ``{a: 1, b: 1}`` and ``{a: 2, b: 2}`` share an id. Canonical JSON +
    sha256 keeps it stable across processes and machines.
    """
    validate_mix(spec)
    missing = [n for n in spec.sources if not isinstance(content_hashes.get(n), str) or not content_hashes.get(n)]
    if missing:
        raise ConfigError(f"mix_id: no content hash for source {missing[0]!r}")
    weights = normalized_weights(spec)
    payload = {
        "sources": {n: content_hashes[n] for n in spec.sources},
        "weights": None if weights is None else {n: format(w, ".12g") for n, w in weights.items()},
        "seed": spec.seed,
        "max_rows": spec.max_rows,
        "formatting": dict(spec.formatting),
    }
    return hashlib.sha256(_canonical_json(payload, "mix").encode("utf-8")).hexdigest()[:12]


def pairs_content_hash(rows: Sequence[PreferencePair]) -> str:
    """sha256 (hex) of a source's pairs, in order: a content hash to pass to :func:`mix_id`."""
    digest = hashlib.sha256()
    for p in rows:
        ctx = None
        if p.context is not None:
            ctx = [
                [[q.category, q.id, q.text] for q in p.context.profile],
                [[a.aspect, a.evidence, a.reason] for a in p.context.rubric_aspects],
                p.context.narrative,
            ]
        digest.update(_canonical_json([p.id, p.prompt, p.chosen, p.rejected, p.source, ctx], "pair").encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def _sub_seed(seed: int, name: str) -> int:
    """A per-source seed, independent of the other sources in the mix."""
    return int.from_bytes(hashlib.sha256(f"{seed}\x1f{name}".encode()).digest()[:8], "little")


def _apportion(total: int, shares: Mapping[str, float], sizes: Mapping[str, int]) -> dict[str, int]:
    """Integer row counts summing to ``total``, close to ``share * total`` and never above a source's size.

    Largest remainder, ties broken by source order, so the result is deterministic.
    """
    exact = {n: shares[n] * total for n in shares}
    # The 1e-9 absorbs float error such as 0.3 * 10 = 2.9999999999999996.
    counts = {n: min(sizes[n], math.floor(exact[n] + 1e-9)) for n in shares}
    left = total - sum(counts.values())
    order = sorted(shares, key=lambda n: (-(exact[n] - counts[n]), list(shares).index(n)))
    while left > 0:
        progressed = False
        for n in order:
            if left == 0:
                break
            if counts[n] < sizes[n]:
                counts[n] += 1
                left -= 1
                progressed = True
        if not progressed:  # cannot happen when total <= sum(sizes); guard against an endless loop
            break
    return counts


def build_mix(
    spec: MixSpec, loaded: Mapping[str, Sequence[PreferencePair]]
) -> tuple[list[PreferencePair], dict[str, Any]]:
    """Sample the mix from already-loaded sources (``loaded[name]`` for every source of ``spec``).

    Returns the rows (shuffled by ``seed``, so a prefix is itself a fair sample) and a summary:
    ``total``, ``rows`` / ``available`` / ``shares`` (realised) / ``target_shares`` per source, and
    ``limited_by`` (the source that caps the size, ``"max_rows"``, or ``None``). An empty source
    is an error; ids must be unique across the mix.
    """
    validate_mix(spec)
    names = list(spec.sources)
    missing = [n for n in names if n not in loaded]
    if missing:
        raise ConfigError(f"mix source {missing[0]!r} was not loaded (loaded: {', '.join(loaded) or 'none'})")
    sizes = {n: len(loaded[n]) for n in names}
    empty = [n for n in names if sizes[n] == 0]
    if empty:
        raise DataError(f"mix source {empty[0]!r} ({spec.sources[empty[0]]}) has no rows")

    weights = normalized_weights(spec)
    limited_by: str | None = None
    if weights is None:
        total = sum(sizes.values())
        shares = {n: sizes[n] / total for n in names}  # the natural proportions
    else:
        shares = weights
        # The largest mixture in which no source is oversampled; 1e-9 absorbs float error.
        caps = {n: math.floor(sizes[n] / shares[n] + 1e-9) for n in names}
        limited_by = min(names, key=lambda n: (caps[n], names.index(n)))
        total = caps[limited_by]
    if spec.max_rows is not None and spec.max_rows < total:
        total, limited_by = spec.max_rows, "max_rows"
    counts = _apportion(total, shares, sizes)

    rows: list[PreferencePair] = []
    seen: dict[str, str] = {}
    for n in names:
        pick = np.random.default_rng(_sub_seed(spec.seed, n)).permutation(sizes[n])[: counts[n]]
        for i in sorted(pick.tolist()):
            row = loaded[n][i]
            if row.id in seen:
                raise DataError(f"mix: pair id {row.id!r} occurs in source {seen[row.id]!r} and in {n!r}")
            seen[row.id] = n
            rows.append(row)
    order = np.random.default_rng(_sub_seed(spec.seed, "\x00shuffle")).permutation(len(rows))
    rows = [rows[i] for i in order.tolist()]

    summary = {
        "total": total,
        "rows": dict(counts),
        "available": sizes,
        "shares": {n: (counts[n] / total if total else 0.0) for n in names},
        "target_shares": weights,
        "limited_by": limited_by,
        "seed": spec.seed,
    }
    return rows, summary


def split_heldout(
    rows: Sequence[PreferencePair], frac: float, seed: int
) -> tuple[list[PreferencePair], list[PreferencePair]]:
    """Split ``rows`` into (train, heldout) with ``round(frac * len(rows))`` held out.

    Membership depends only on each row's id and ``seed`` (rows are ordered by
    ``sha256(seed, id)``), not on the order rows arrive in; both parts keep the input order.
    ``0 <= frac < 1``; a positive ``frac`` holds out at least one row when there are two or more.
    """
    if isinstance(frac, bool) or not isinstance(frac, (int, float)) or not (0 <= frac < 1):
        raise ConfigError(f"heldout fraction must be a number in [0, 1), got {frac!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"heldout seed must be an integer, got {seed!r}")
    ids = [r.id for r in rows]
    dups = [i for i, c in Counter(ids).items() if c > 1]
    if dups:
        raise DataError(f"split_heldout: duplicate pair id {dups[0]!r}; ids must be unique")
    n = len(rows)
    n_held = math.floor(frac * n + 0.5)
    if frac > 0 and n >= 2:
        n_held = min(max(n_held, 1), n - 1)
    keys = {r.id: hashlib.sha256(f"{seed}\x1f{r.id}".encode()).hexdigest() for r in rows}
    held_ids = set(sorted(ids, key=lambda i: keys[i])[:n_held])
    train = [r for r in rows if r.id not in held_ids]
    heldout = [r for r in rows if r.id in held_ids]
    return train, heldout


__all__ = [
    "MixSpec",
    "build_mix",
    "mix_id",
    "normalized_weights",
    "pairs_content_hash",
    "split_heldout",
    "validate_mix",
]
