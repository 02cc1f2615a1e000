"""`personal` preference pairs at a larger scale than the world holds, for RM-training experiments
(docs/sandbox.md, "More training users"). Not a speed figure.

Builds the world of ``--seed``, keeps its 2,400 `personal` pairs (600 training users x 4) and adds
pairs of extra training users drawn from random streams of their own (``train-users-extra``,
``pairs/personal-extra``), through the world's prompt registry, so no question is one a benchmark or
a downstream prompt set owns. Writes the first N pairs (the world's first) for each N asked, as
``pairs/personal.parquet`` is written, for ``rlexp train_rm data=local data.sources.local=FILE
data.max_rows=null``.

    python experiments/personal_pairs_at_scale.py OUT_DIR N [N ...] [--seed 0]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from _common import extra_training_users, held_out_questions


def main() -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rlexp.data.schemas import PAIRS_ARROW_SCHEMA
    from rlexp.sandbox import pairs
    from rlexp.sandbox.materialise import pair_row
    from rlexp.sandbox.rng import make_rng
    from rlexp.sandbox.world import build_world

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("sizes", type=int, nargs="+")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    world = build_world(args.seed)
    base = world.pairs["personal"]
    need = max(args.sizes) - len(base)
    per_user = len(base) // len(world.train_users)
    n_users = max(0, -(-need // per_user))
    users = extra_training_users(world, n_users, args.seed)
    extra = pairs.build_personal(users, world.knobs, make_rng(args.seed, "pairs", "personal-extra"), world.registry)
    held_out = held_out_questions(world)
    leaked = [p.id for p in extra if p.prompt in held_out]
    if leaked:
        raise SystemExit(f"{leaked[0]}: asks an evaluation prompt")
    every = base + extra
    args.out.mkdir(parents=True, exist_ok=True)
    for n in args.sizes:
        path = args.out / f"personal-{n}.parquet"
        pq.write_table(pa.Table.from_pylist([pair_row(p) for p in every[:n]], schema=PAIRS_ARROW_SCHEMA), path)
        print(f"{path}: {min(n, len(every))} pairs from {len({p.id.rsplit('-', 1)[0] for p in every[:n]})} users")


if __name__ == "__main__":
    main()
