"""`rlexp store ls [--task T] [--where KEY=VALUE] [--ids]`, `rlexp store show ID` and `rlexp store check [--fix]` (all with
`--store DIR` before the subcommand)."""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import sys
from pathlib import Path

from rlexp.commands import CommandParser
from rlexp.config import data_root
from rlexp.errors import DamagedRecord, StoreError
from rlexp.store import Store

#: Every task that writes records: the Hydra tasks plus the inputs built on their behalf.
RECORD_TASKS: tuple[str, ...] = ("env", "data", "lineage", "train_rm", "evaluate", "sample", "pool_scores", "bon",
                                 "ppo", "correlate")


def _default_store() -> str:
    return os.path.join(data_root(), "runs")  # as paths.store: an empty RLEXP_ROOT is an error, ~ expanded


def main(args: list[str]) -> int:
    """`rlexp store ls|show|check`; returns the exit code."""
    parser = CommandParser(prog="rlexp store", description="Inspect the run store.")
    parser.add_argument("--store", default=_default_store(), help="store folder (default: <root>/runs)")
    sub = parser.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("ls", help="one line per record")
    ls.add_argument("--task", default=None)
    ls.add_argument("--where", action="append", default=[], metavar="KEY=VALUE",
                    help="only records whose config has KEY (dotted, e.g. model.name) equal to VALUE; repeatable")
    ls.add_argument("--ids", action="store_true", help="print the matching ids only, comma-separated (for sweeps)")
    show = sub.add_parser("show", help="print one record as JSON")
    show.add_argument("id", help="record id or unique prefix")
    check = sub.add_parser("check", help="list damaged records (unreadable, artifacts missing or cut short) and "
                                         "artifact folders no record names")
    check.add_argument("--fix", action="store_true", help="set damaged records aside in <store>/damaged/")
    ns = parser.parse_args(args)
    store = Store(ns.store)
    if ns.command == "ls":
        return _ls(store, ns.task, ns.where, ns.ids)
    if ns.command == "check":
        return check_store(store, ns.fix)
    record = store.find(ns.id)  # an unreadable record file: one line naming it
    if record is None:
        raise StoreError(f"no unique record with id {ns.id!r} in {store.root}")
    print(json.dumps(json.loads(record.to_json()), indent=2))
    damaged = store.damage(record)
    if damaged:
        print(f"rlexp store: warning: {damaged[0]} is {damaged[1]}; `rlexp store check --fix` sets the record aside",
              file=sys.stderr)
    return 0


def _config_value(config: dict, dotted: str) -> str | None:
    node: object = config
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return str(node).lower() if isinstance(node, bool) else str(node)


def _matches(value: str | None, wanted: str) -> bool:
    """``value == wanted``, as numbers when both are (``trainer.num_train_epochs=1`` matches 1.0)."""
    if value is None:
        return False
    try:
        return float(value) == float(wanted)
    except ValueError:
        return value == wanted


def _ls(store: Store, task: str | None, where: list[str], ids: bool) -> int:
    if task is not None and task not in RECORD_TASKS:
        raise StoreError(f"--task {task!r} is not a task; record tasks: {', '.join(RECORD_TASKS)}")
    bad = next((w for w in where if "=" not in w or not w.split("=", 1)[0]), None)
    if bad is not None:
        raise StoreError(f"--where {bad!r}: expected KEY=VALUE, e.g. --where model.name=tiny_llama")
    tests = [w.split("=", 1) for w in where]
    skipped: list[DamagedRecord] = []
    rows = [r for r in store.records(task, skipped) if all(_matches(_config_value(r.config, k), v) for k, v in tests)]
    if ids:
        print(",".join(r.id for r in rows))
        return 0
    print(f"{'id':<18} {'task':<10} {'ended':<19} {'secs':>7}  metrics")
    for r in rows:
        ended = dt.datetime.fromtimestamp(float(r.ended)).strftime("%Y-%m-%d %H:%M:%S")
        scalars = {k: v for k, v in r.metrics.items() if isinstance(v, (int, float))}
        shown = ", ".join(f"{k}={v:.4g}" for k, v in list(scalars.items())[:4])
        print(f"{r.id:<18} {r.task:<10} {ended:<19} {float(r.ended) - float(r.started):7.1f}  {shown}")
    more = f"; {len(skipped)} damaged record file(s) skipped (`rlexp store check` lists them)" if skipped else ""
    print(f"{len(rows)} record(s) in {store.root}{more}")
    return 0


def _running(store: Store, task: str, rid: str) -> bool:
    """Whether a run holds the lock of record ``rid`` now (its artifact folder is in the making)."""
    lock = store.record_path(task, rid).with_name(f".{rid}.lock")
    if not lock.is_file():
        return False
    with open(lock) as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fh, fcntl.LOCK_UN)
    return False


def _damaged(store: Store) -> tuple[list[tuple[Path, str]], set[tuple[str, str]], set[Path]]:
    """(record file, problem) of every damaged record; (task, id) of every record file; the artifact
    folders the readable records name."""
    damaged, names, named = [], set(), set()
    for path in sorted((store.root / "records").glob("*/*.json")):
        names.add((path.parent.name, path.stem))
        try:
            record = store.read(path)
        except DamagedRecord as exc:
            damaged.append((path, exc.problem))
            continue
        except OSError:  # gone meanwhile
            continue
        for rel in record.artifacts.values():
            parts = Path(str(rel)).parts
            if len(parts) >= 3 and parts[0] == "artifacts":
                named.add(store.root.joinpath(*parts[:3]))
        found = store.damage(record)
        if found:
            damaged.append((path, f"{found[0]} is {found[1]}"))
    return damaged, names, named


def check_store(store: Store, fix: bool) -> int:
    """Print each damaged record (``--fix``: set it aside) and each artifact folder no record names;
    returns 1 when damaged records are left in place, else 0."""
    damaged, names, named = _damaged(store)
    for path, problem in damaged:
        task, rid = path.parent.name, path.stem
        if not fix:
            print(f"damaged   {path}: {problem}")
            continue
        with store.lock(task, rid):
            try:  # a run may have made it again meanwhile
                if store.intact(task, rid) is not None:
                    continue
            except DamagedRecord:
                pass
            print(f"set aside {path}: {problem} -> {store.set_aside(task, rid)}")
    orphans = [d for d in sorted((store.root / "artifacts").glob("*/*"))
               if d.is_dir() and (d.parent.name, d.name) not in names and d not in named]
    for folder in orphans:
        why = ("a run making it holds its lock" if _running(store, folder.parent.name, folder.name) else
               "left by a killed or failed run (train_rm and sample resume from it) or a deleted record; "
               "delete it when no run needs it")
        print(f"orphaned  {folder}: no record ({why})")
    aside = sorted((store.root / "damaged").glob("*/*"))
    print(f"{len(names)} record file(s) checked in {store.root}: {len(damaged)} damaged"
          f"{' (set aside)' if fix and damaged else ''}, {len(orphans)} orphaned artifact folder(s)"
          + (f", {len(aside)} set aside in {store.root / 'damaged'} (deletable)" if aside else ""))
    return 1 if damaged and not fix else 0
