"""A build killed half-way leaves nothing behind for good: the next build removes it, never another
live build's folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from rlexp.sandbox.materialise import remove_stale_builds


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_sandbox_builds_are_removed(tmp_path: Path) -> None:
    out = tmp_path / "sandbox"
    dead, alive = _dead_pid(), os.getpid()
    stale = [tmp_path / f".sandbox.tmp-{dead}-abc123", tmp_path / f".sandbox.old-{dead}"]
    live = tmp_path / f".sandbox.tmp-{alive}-def456"
    other = tmp_path / ".other.tmp-1-x"  # another world's build: not ours to judge
    for d in [*stale, live, other]:
        (d / "rb2").mkdir(parents=True)
        (d / "rb2" / "test.parquet").write_bytes(b"x" * 100)
    removed = remove_stale_builds(out)
    assert sorted(removed) == sorted(stale)
    assert live.exists() and other.exists() and not any(p.exists() for p in stale)
