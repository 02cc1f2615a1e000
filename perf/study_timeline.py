"""Where a finished study's time went, read off its records: each kind of step's count, step-seconds
and span, the seconds inside PPO steps (their evaluation pool and its scores), and how many
core-seconds the workers left idle, minute by minute.

    .venv/bin/python perf/study_timeline.py RUNS [--workers 2]   # RUNS: the store, e.g. runs/

Step-seconds compare runs of the same study across machines and hours (the README's figures come
from here): the wall time follows the host's speed, the sum of a kind's step-seconds shows which
kind it slowed.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

import numpy as np

from rlexp.store import Record, Store


def _nested(records: list[Record]) -> set[str]:
    """Ids of the steps a PPO step ran inside itself: its evaluation pool, and the scores of that pool
    and of its baseline pool computed while it ran (no other worker computes those then)."""
    out: set[str] = set()
    for ppo in (r for r in records if r.task == "ppo"):
        pools = {ppo.info.get("eval_pool"), ppo.info.get("baseline_pool")}
        for r in records:
            inside = ppo.started <= r.started and r.ended <= ppo.ended
            if inside and (r.id == ppo.info.get("eval_pool") or (r.task == "pool_scores" and r.inputs.get("pool") in pools)):
                out.add(r.id)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", type=Path, help="the study's store (its runs/ folder)")
    ap.add_argument("--workers", type=int, default=2, help="worker processes the study ran (study.n_jobs)")
    args = ap.parse_args()
    records = sorted(Store(args.runs).records(), key=lambda r: r.started)
    if not records:
        raise SystemExit(f"{args.runs}: no records")
    t0, t_end = records[0].started, max(r.ended for r in records)
    nested = _nested(records)
    top = [r for r in records if r.id not in nested]
    print(f"{args.runs}: {len(records)} records, {(t_end - t0) / 60:.1f} min from the first step's start to the last one's end")
    print(f"{'kind':12s} {'steps':>5s} {'step-s':>8s}  span (min)")
    seconds, count = Counter(), Counter()
    for r in top:
        seconds[r.task] += r.ended - r.started
        count[r.task] += 1
    for task in sorted(seconds, key=lambda t: min(r.started for r in top if r.task == t)):
        starts = [r.started for r in top if r.task == task]
        ends = [r.ended for r in top if r.task == task]
        print(f"{task:12s} {count[task]:5d} {seconds[task]:8.1f}  {(min(starts) - t0) / 60:4.1f}-{(max(ends) - t0) / 60:4.1f}")
    print(f"{'all':12s} {len(top):5d} {sum(seconds.values()):8.1f}")
    inner = Counter()
    for r in records:
        if r.id in nested:
            inner[r.task] += r.ended - r.started
    train = sum(float(r.metrics.get("time/train_s") or 0.0) for r in records if r.task == "ppo")
    parts = ", ".join(f"{t} {s:.1f} s" for t, s in sorted(inner.items()))
    print(f"inside the PPO steps: training {train:.1f} s, {parts}")
    # Busy workers per second of the run; a worker holds one top-level step at a time.
    grid = np.arange(t0, t_end, 1.0)
    busy = np.zeros(grid.size)
    for r in top:
        busy[(grid >= r.started) & (grid < r.ended)] += 1
    idle = args.workers - np.minimum(busy, args.workers)
    per_minute = [int(round(idle[m * 60:(m + 1) * 60].sum())) for m in range(int(np.ceil(grid.size / 60)))]
    print(f"idle core-seconds: {idle.sum():.0f} of {args.workers * grid.size}; by minute: {per_minute}")


if __name__ == "__main__":
    main()
