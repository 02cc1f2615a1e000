"""`rlexp store ls [--task T] [--store DIR]` and `rlexp store show ID`."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os

from rlexp.config import data_root
from rlexp.errors import StoreError
from rlexp.store import Store

#: Every task that writes records: the Hydra tasks plus the inputs built on their behalf.
RECORD_TASKS: tuple[str, ...] = ("env", "data", "lineage", "train_rm", "evaluate", "sample", "pool_scores", "bon",
                                 "ppo", "correlate")


def _default_store() -> str:
    return os.path.join(data_root(), "runs")  # as paths.store: an empty RLEXP_ROOT is an error, ~ expanded


def main(args: list[str]) -> int:
    """`rlexp store ls|show`; returns the exit code."""
    parser = argparse.ArgumentParser(prog="rlexp store", description="Inspect the run store.")
    parser.add_argument("--store", default=_default_store(), help="store folder (default: <root>/runs)")
    sub = parser.add_subparsers(dest="cmd", required=True)
    ls = sub.add_parser("ls", help="one line per record")
    ls.add_argument("--task", default=None)
    show = sub.add_parser("show", help="print one record as JSON")
    show.add_argument("id", help="record id or unique prefix")
    ns = parser.parse_args(args)
    store = Store(ns.store)
    if ns.cmd == "ls":
        if ns.task is not None and ns.task not in RECORD_TASKS:
            raise StoreError(f"--task {ns.task!r} is not a task; record tasks: {', '.join(RECORD_TASKS)}")
        rows = list(store.records(ns.task))
        print(f"{'id':<18} {'task':<10} {'ended':<19} {'secs':>7}  metrics")
        for r in rows:
            ended = dt.datetime.fromtimestamp(r.ended).strftime("%Y-%m-%d %H:%M:%S")
            scalars = {k: v for k, v in r.metrics.items() if isinstance(v, (int, float))}
            shown = ", ".join(f"{k}={v:.4g}" for k, v in list(scalars.items())[:4])
            print(f"{r.id:<18} {r.task:<10} {ended:<19} {r.ended - r.started:7.1f}  {shown}")
        print(f"{len(rows)} record(s) in {store.root}")
        return 0
    record = store.find(ns.id)
    if record is None:
        raise StoreError(f"no unique record with id {ns.id!r} in {store.root}")
    print(json.dumps(json.loads(record.to_json()), indent=2))
    return 0
