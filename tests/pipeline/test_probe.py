"""`rlexp probe`: minimal-pair accuracies of the test world's RMs, and its errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import env_with, rlexp_cmd

pytestmark = pytest.mark.slow


def _probe(world: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(rlexp_cmd("probe", *args), capture_output=True, text=True, timeout=600,
                          env=env_with(RLEXP_ROOT=str(world)))


def test_probe_prints_and_writes_every_family_for_each_rm(world: Path, rms: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "probe.json"
    general, flipped = rms["llama_general"], rms["llama_flipped"]
    done = _probe(world, general, flipped[:10], "--pairs", "60", "--json", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert set(result) == {general, flipped[:10]}
    families = list(result[general])
    assert families[:3] == ["fact/train", "fact/ds_eval", "arithmetic"] and "safety/no cues" in families
    assert families[-5:] == [f"{kind}/train phrasings" for kind in ("fact", "focus", "math", "constraints", "safety")]
    for name in families:
        assert f"\n{name} " in "\n" + done.stdout, name  # one printed row per family
        assert result[general][name]["pairs"] == result[flipped[:10]][name]["pairs"] > 0
    # The hedge/bluff cues of the template pairs are what these RMs read: the general RM orders
    # cued fact pairs right, the RM trained on flipped labels orders them wrong.
    assert result[general]["fact/cues"]["accuracy"] > 0.5 > result[flipped[:10]]["fact/cues"]["accuracy"]


def test_probe_errors_are_one_line(world: Path) -> None:
    missing = _probe(world, "0123456789abcdef")
    assert missing.returncode != 0 and missing.stderr.strip().count("\n") == 0, missing.stderr
    assert "0123456789abcdef" in missing.stderr
    bad = _probe(world, "x", "--pairs", "0")
    assert bad.returncode != 0 and "--pairs must be at least 1" in bad.stderr and bad.stderr.strip().count("\n") == 0
