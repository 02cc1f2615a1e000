"""Summarise a test-suite timeline: `RLEXP_TEST_TIMELINE=FILE make test`, then
`.venv/bin/python perf/test_timeline.py FILE [--top N]`.

Prints the suite's wall time, each xdist worker's busy time and when it finished (a worker that
ends early idles while the other runs the last test), the longest tests with their start time, and
the seconds per test file: where the suite's time goes, to decide what to trim. Timelines that carry
CPU seconds (``cpu``: the test's process and the subprocesses it waited for) also list the tests
that cost the most CPU, which is what two workers on two cores share.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("timeline", type=Path, help="the JSON-lines file RLEXP_TEST_TIMELINE wrote")
    ap.add_argument("--top", type=int, default=20, help="how many of the longest tests and files to list")
    args = ap.parse_args()
    rows = [json.loads(line) for line in args.timeline.read_text().splitlines() if line.strip()]
    if not rows:
        raise SystemExit(f"{args.timeline}: no tests recorded")
    t0 = min(r["start"] for r in rows)
    wall = max(r["end"] for r in rows) - t0
    print(f"{len(rows)} tests, {wall:.0f} s from the first test's start to the last test's end")
    workers: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        workers[r["worker"]].append(r)
    for name, rs in sorted(workers.items()):
        busy = sum(r["end"] - r["start"] for r in rs)
        end = max(r["end"] for r in rs) - t0
        print(f"  {name}: {len(rs)} tests, busy {busy:.0f} s, done at {end:.0f} s (idle {wall - end:.0f} s at the end)")
    print(f"\nlongest {args.top} tests (worker, start s, seconds):")
    for r in sorted(rows, key=lambda r: r["start"] - r["end"])[: args.top]:
        print(f"  {r['worker']:>4} {r['start'] - t0:6.0f} {r['end'] - r['start']:6.1f}  {r['test']}")
    if all("cpu" in r for r in rows):
        print(f"\nCPU seconds: {sum(r['cpu'] for r in rows):.0f} in all; the {args.top} costliest tests (CPU s, wall s):")
        for r in sorted(rows, key=lambda r: -r["cpu"])[: args.top]:
            print(f"  {r['cpu']:7.1f} {r['end'] - r['start']:6.1f}  {r['test']}")
    per_file: dict[str, float] = defaultdict(float)
    for r in rows:
        per_file[r["test"].split("::")[0]] += r["end"] - r["start"]
    print(f"\nseconds per file (top {args.top}):")
    for path, secs in sorted(per_file.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"  {secs:7.1f}  {path}")


if __name__ == "__main__":
    main()
