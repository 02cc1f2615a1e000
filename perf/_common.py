"""Shared set-up for the benchmark scripts: an isolated rlexp root and composed task configs."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def use_root(name: str) -> Path:
    """Benchmarks run in their own store (reused between runs, so builds are cached)."""
    root = Path(os.environ.get("RLEXP_BENCH_ROOT", Path(tempfile.gettempdir()) / "rlexp-bench")) / name
    os.environ["RLEXP_ROOT"] = str(root)
    os.environ.setdefault("WANDB_MODE", "disabled")
    return root


def compose(task: str, *overrides: str):
    from rlexp.runtime import compose_task

    return compose_task(task, ["logger=none", "progress=false", *overrides])
