"""A finished study run again: every step decided in the parent from the step ledger, against every
step dispatched to the workers (`study.step_ledger=false`, how rlexp ran before), side by side.

    python perf/study_cached.py [EXPERIMENT]   # default: quick (its first run takes a few minutes)

Both reruns are the `rlexp study` command a user types, in a subprocess, so the figure includes
Python start-up and imports. Target (issue "Speed"): a cached study in at most 5 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from _common import use_root


def _study(experiment: str, *extra: str, finished: bool = True) -> float:
    """Seconds of one `rlexp study` run; ``finished``: it must write no record (a pure rerun)."""
    start = time.time()
    out = subprocess.run([sys.executable, "-m", "rlexp.cli", "study", f"experiment={experiment}", "logger=none",
                          "progress=false", *extra], capture_output=True, text=True, env=os.environ.copy())
    if out.returncode != 0:
        raise SystemExit(f"rlexp study failed:\n{out.stderr[-3000:]}")
    if finished and "wrote record" in out.stdout + out.stderr:
        raise SystemExit("a rerun wrote a record: the study was not finished")
    return time.time() - start


def main() -> None:
    experiment = sys.argv[1] if len(sys.argv) > 1 else "quick"
    root = use_root(f"study_{experiment}")
    print(f"store: {root}")
    first = _study(experiment, finished=False)  # builds whatever is missing (minutes the first time), fills the ledger
    print(f"first run (builds what is missing): {first:.1f} s")
    dispatched = _study(experiment, "study.step_ledger=false")
    ledger = min(_study(experiment) for _ in range(3))
    print(f"finished study, every step dispatched to workers: {dispatched:.1f} s")
    print(f"finished study, steps decided in the parent:     {ledger:.1f} s (best of 3; target <= 5 s)")
    print(f"ratio: {dispatched / ledger:.1f}x")


if __name__ == "__main__":
    main()
