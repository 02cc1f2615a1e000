"""Data mixes: TRL DatasetMixtureConfig semantics, determinism, mix ids, held-out splits."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rlexp.data.mixes import MixSpec, build_mix, mix_id, normalized_weights, pairs_content_hash, split_heldout
from rlexp.data.schemas import PreferencePair
from rlexp.errors import ConfigError, DataError

REPO = Path(__file__).resolve().parents[2]


def _pairs(prefix: str, n: int) -> list[PreferencePair]:
    return [PreferencePair(f"{prefix}{i}", f"p{i}", f"c{i}", f"r{i}", prefix) for i in range(n)]


LOADED = {"general": _pairs("g", 100), "personal": _pairs("u", 30)}
SOURCES = {"general": "data/general.parquet", "personal": "sandbox:personal"}
HASHES = {"general": "aaaa", "personal": "bbbb"}


def _spec(**kw: Any) -> MixSpec:
    return MixSpec(sources=dict(SOURCES), **kw)


def test_weights_are_normalised_target_shares() -> None:
    assert normalized_weights(_spec(weights={"general": 3, "personal": 1})) == {"general": 0.75, "personal": 0.25}
    assert normalized_weights(_spec()) is None
    _, summary = build_mix(_spec(weights={"general": 2, "personal": 2}), LOADED)
    assert summary["target_shares"] == {"general": 0.5, "personal": 0.5}


def test_mixture_is_capped_so_no_source_is_oversampled() -> None:
    rows, summary = build_mix(_spec(weights={"general": 1, "personal": 1}), LOADED)
    # personal has 30 rows at share 0.5 -> total = 30 / 0.5 = 60, not 200
    assert summary["total"] == 60 and summary["rows"] == {"general": 30, "personal": 30}
    assert summary["limited_by"] == "personal"
    assert len(rows) == 60 and len({r.id for r in rows}) == 60  # no row drawn twice
    assert sum(r.id.startswith("u") for r in rows) == 30

    rows, summary = build_mix(_spec(weights={"general": 0.7, "personal": 0.3}), LOADED)
    assert summary["total"] == 100 and summary["rows"] == {"general": 70, "personal": 30}
    assert summary["shares"] == {"general": 0.7, "personal": 0.3}

    rows, summary = build_mix(_spec(weights={"general": 0.9, "personal": 0.1}), LOADED)
    assert summary["total"] == 111 and summary["rows"] == {"general": 100, "personal": 11}  # 100/0.9 caps it
    assert summary["limited_by"] == "general"


def test_max_rows_caps_the_mixture_and_keeps_shares() -> None:
    rows, summary = build_mix(_spec(weights={"general": 1, "personal": 1}, max_rows=10), LOADED)
    assert summary["rows"] == {"general": 5, "personal": 5} and summary["limited_by"] == "max_rows"
    rows, summary = build_mix(_spec(weights={"general": 1, "personal": 2}, max_rows=10), LOADED)
    assert summary["rows"] == {"general": 3, "personal": 7} and len(rows) == 10  # largest remainder


def test_no_weights_uses_every_row_of_every_source() -> None:
    rows, summary = build_mix(_spec(), LOADED)
    assert sorted(r.id for r in rows) == sorted(r.id for src in LOADED.values() for r in src)
    assert summary["rows"] == {"general": 100, "personal": 30} and summary["target_shares"] is None


def test_sampling_is_deterministic_by_seed() -> None:
    spec = _spec(weights={"general": 1, "personal": 1}, seed=7)
    first, _ = build_mix(spec, LOADED)
    again, _ = build_mix(spec, LOADED)
    assert [r.id for r in first] == [r.id for r in again]
    other, _ = build_mix(_spec(weights={"general": 1, "personal": 1}, seed=8), LOADED)
    assert {r.id for r in other} != {r.id for r in first}


@pytest.mark.parametrize(
    ("weights", "says"),
    [
        ({"general": 0, "personal": 1}, "mix.weights.general must be a finite number > 0"),
        ({"general": -1, "personal": 1}, "mix.weights.general"),
        ({"general": math.nan, "personal": 1}, "mix.weights.general"),
        ({"general": math.inf, "personal": 1}, "mix.weights.general"),
        ({"general": "1", "personal": 1}, "mix.weights.general must be a number"),
        ({"general": True, "personal": 1}, "mix.weights.general must be a number"),
        ({"general": 1}, "no weight for source(s) personal"),
        ({"general": 1, "personal": 1, "extra": 1}, "mix.weights.extra: unknown source"),
    ],
)
def test_invalid_weights_are_one_line_config_errors(weights: dict, says: str) -> None:
    with pytest.raises(ConfigError) as info:
        build_mix(_spec(weights=weights), LOADED)
    assert says in str(info.value) and "\n" not in str(info.value)


def test_missing_or_empty_sources_are_errors() -> None:
    with pytest.raises(ConfigError, match="'personal' was not loaded"):
        build_mix(_spec(), {"general": LOADED["general"]})
    with pytest.raises(DataError, match="'personal'.*has no rows"):
        build_mix(_spec(), {"general": LOADED["general"], "personal": []})
    with pytest.raises(DataError, match="pair id 'g0' occurs in source 'general' and in 'personal'"):
        build_mix(_spec(), {"general": LOADED["general"], "personal": _pairs("g", 3)})
    with pytest.raises(ConfigError, match="max_rows"):
        build_mix(_spec(max_rows=0), LOADED)


def test_mix_id_is_a_short_content_hash() -> None:
    base = mix_id(_spec(weights={"general": 1, "personal": 1}), HASHES)
    assert 10 <= len(base) <= 16 and all(c in "0123456789abcdef" for c in base)
    # normalised weights, not raw numbers; paths do not count, contents do
    assert mix_id(_spec(weights={"general": 5, "personal": 5}), HASHES) == base
    moved = MixSpec(sources={"general": "/elsewhere/g.jsonl", "personal": "x"}, weights={"general": 1, "personal": 1})
    assert mix_id(moved, HASHES) == base
    variants = [
        mix_id(_spec(weights={"general": 2, "personal": 1}), HASHES),
        mix_id(_spec(weights={"general": 1, "personal": 1}, seed=1), HASHES),
        mix_id(_spec(weights={"general": 1, "personal": 1}, formatting={"profile": "raw", "k": 10}), HASHES),
        mix_id(_spec(weights={"general": 1, "personal": 1}, max_rows=50), HASHES),
        mix_id(_spec(weights={"general": 1, "personal": 1}), {**HASHES, "personal": "cccc"}),
        mix_id(_spec(), HASHES),
    ]
    assert len({base, *variants}) == len(variants) + 1
    with pytest.raises(ConfigError, match="no content hash for source 'personal'"):
        mix_id(_spec(), {"general": "aaaa"})


def test_mix_id_is_stable_across_processes() -> None:
    code = (
        "from rlexp.data.mixes import MixSpec, mix_id;"
        "print(mix_id(MixSpec(sources={'personal': 's', 'general': 'g'}, weights={'personal': 1, 'general': 2},"
        " seed=3, formatting={'k': 10, 'profile': 'raw'}), {'general': 'aaaa', 'personal': 'bbbb'}))"
    )
    out = {
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": s},
        ).stdout.strip()
        for s in ("1", "2")
    }
    # dict order of sources / weights / formatting does not matter either
    here = mix_id(
        MixSpec(
            sources={"general": "g", "personal": "s"},
            weights={"general": 2, "personal": 1},
            seed=3,
            formatting={"profile": "raw", "k": 10},
        ),
        HASHES,
    )
    assert out == {here}


def test_pairs_content_hash_sees_every_field() -> None:
    rows = _pairs("g", 3)
    assert pairs_content_hash(rows) == pairs_content_hash(list(rows))
    changed = [rows[0], rows[1], PreferencePair("g2", "p2", "c2", "r2!", "g")]
    assert pairs_content_hash(changed) != pairs_content_hash(rows)


def test_split_heldout_is_deterministic_and_order_independent() -> None:
    rows = _pairs("g", 50)
    train, held = split_heldout(rows, 0.2, seed=0)
    assert len(held) == 10 and len(train) == 40
    assert {r.id for r in train}.isdisjoint({r.id for r in held})
    assert [r.id for r in train + held if r in train] == [r.id for r in rows if r in train]  # keeps input order
    again_train, again_held = split_heldout(list(reversed(rows)), 0.2, seed=0)
    assert {r.id for r in again_held} == {r.id for r in held}
    assert {r.id for r in split_heldout(rows, 0.2, seed=1)[1]} != {r.id for r in held}
    assert len(split_heldout(rows[:3], 0.01, seed=0)[1]) == 1  # a positive fraction holds out something
    assert split_heldout(rows, 0.0, seed=0) == (rows, [])
    for bad in (1.0, -0.1, math.nan):
        with pytest.raises(ConfigError, match="heldout fraction"):
            split_heldout(rows, bad, seed=0)
