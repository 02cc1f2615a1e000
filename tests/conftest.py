"""Shared fixtures: every test gets its own rlexp root (store, caches, outputs) and W&B disabled."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("WANDB_MODE", "disabled")
    monkeypatch.setenv("RLEXP_ROOT", str(tmp_path / "root"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "root"


def rlexp_cmd(*args: str) -> list[str]:
    """The CLI as a user runs it (a real subprocess)."""
    return [sys.executable, "-m", "rlexp.cli", *args]


def env_with(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    return env
