"""`rlexp probe RM [RM ...] [-o override] [--json FILE]`: what a sandbox RM knows beyond the cues.

Scores the minimal pairs of :mod:`rlexp.sandbox.probes` with each RM (as `rlexp evaluate` scores:
its scorer and profile settings, overridable) and prints one pairwise accuracy per probe family and
RM. Fast (a few thousand short texts) and read-only: it writes no record.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rlexp import inputs
from rlexp.commands import CommandParser
from rlexp.errors import ConfigError
from rlexp.runtime import compose_task, quote
from rlexp.sandbox.probes import ProbePair, probe_families
from rlexp.scorer import ScoreInput
from rlexp.scoring.factory import reward_scorer
from rlexp.store import Store


def accuracies(rm_ref: str, overrides: list[str], families: dict[str, list[ProbePair]]) -> dict[str, dict[str, float]]:
    """Pairwise accuracy and pair count per probe family for one RM (a record id, folder or hub id)."""
    cfg = compose_task("evaluate", [f"rm={quote(rm_ref)}", "logger=none", *overrides])
    scorer = reward_scorer(inputs.rm(rm_ref, Store(cfg.paths.store)), cfg.scorer, cfg.profile)
    flat = [pair for pairs in families.values() for pair in pairs]
    better = scorer.score([ScoreInput(p.prompt, p.better) for p in flat])
    worse = scorer.score([ScoreInput(p.prompt, p.worse) for p in flat])
    out, at = {}, 0
    for name, pairs in families.items():
        right = better[at:at + len(pairs)] > worse[at:at + len(pairs)]
        out[name] = {"accuracy": float(np.mean(right)) if len(pairs) else float("nan"), "pairs": len(pairs)}
        at += len(pairs)
    return out


def main(args: list[str]) -> int:
    """`rlexp probe`; returns the exit code."""
    parser = CommandParser(
        prog="rlexp probe",
        description="Pairwise accuracy of sandbox RMs on minimal pairs: facts and arithmetic without any tell, "
                    "and the general tasks with and without their hedge/bluff cues (0.5 = chance).")
    parser.add_argument("rms", nargs="+", help="train_rm record id (or unique prefix), local folder or hub id")
    parser.add_argument("--override", "-o", action="append", default=[],
                        help="hydra override of the evaluate config or the world, e.g. profile=planner, sandbox.seed=1")
    parser.add_argument("--pairs", type=int, default=150, help="pairs drawn per general task kind (default 150)")
    parser.add_argument("--json", type=Path, default=None, help="also write the accuracies to this JSON file")
    ns = parser.parse_args(args)
    if ns.pairs < 1:
        raise ConfigError(f"--pairs must be at least 1, got {ns.pairs}")
    world = compose_task("data", ["logger=none", *[o for o in ns.override if o.startswith("sandbox.")]]).sandbox
    families = probe_families(int(world.seed), float(world.difficulty), n=ns.pairs)  # the same pairs for every RM
    results = {ref: accuracies(ref, ns.override, families) for ref in ns.rms}
    names = list(next(iter(results.values())))
    width = max(len(r) for r in ns.rms)
    first = max(len("family"), *(len(n) for n in names))
    print(f"{'family':<{first}} {'pairs':>5}  " + "  ".join(f"{r:>{width}}" for r in ns.rms))
    for name in names:
        count = results[ns.rms[0]][name]["pairs"]
        print(f"{name:<{first}} {count:>5}  " + "  ".join(f"{results[r][name]['accuracy']:>{width}.3f}" for r in ns.rms))
    if ns.json is not None:
        ns.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0
