"""The policy's own gold-labelled `personal` pairs at a larger scale than the world's train prompts give,
for RM-training experiments (docs/sandbox.md, "More training users"). Not a speed figure.

Extra training users (the stream of ``personal_pairs_at_scale.py``, so its first users are the users of
its files) each get one question of the template pairs' group through the world's prompt registry (never
a question an evaluation prompt set or PRB owns). The study's policy samples 16 answers to each, the gold
rubric scores them, and the pairs are made as the ``policy:`` source makes them
(``rlexp.inputs.on_policy.gold_pairs``: i-th best against i-th worst), with the label noise and gold margin
asked. Pools and gold scores are records of the store, so another ``--noise``/``--margin`` reruns in
seconds. Writes ``OUT/own-<N>-from<skip>-noise<x>-margin<y>.parquet`` for ``rlexp train_rm data=local
data.sources.local=FILE data.max_rows=null``.

    RLEXP_ROOT=<study store> python experiments/on_policy_pairs_at_scale.py OUT N [--skip 0] [--noise 0] [--margin 0.25]
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from _common import compose, extra_training_users, held_out_questions

STUDY = ("experiment=sandbox_study", "model=tiny_llama", "prompts=personalized", "prompts.split=train",
         "sampling.n=16", "sampling.draw=kept", "runtime.threads=1")


def write_prompts(out: Path, n: int, skip: int, parts: int) -> list[Path]:
    """Users ``skip .. skip+n`` of the extra stream, one train question each, split into ``parts`` folders."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rlexp.data.schemas import PROMPTS_ARROW_SCHEMA
    from rlexp.sandbox import pairs
    from rlexp.sandbox.prompts import personalized_item, prompt_row
    from rlexp.sandbox.rng import make_rng
    from rlexp.sandbox.sites import SITES
    from rlexp.sandbox.splits import draw_question
    from rlexp.sandbox.world import build_world

    world = build_world(0)
    qrng = make_rng(0, "onpolicy-extra-prompts", str(skip))
    held_out = held_out_questions(world)
    items = []
    for u in extra_training_users(world, skip + n)[skip:]:
        q = draw_question(SITES[u.category], "train", qrng, world.registry, pairs.OWNER)
        if q in held_out:
            raise SystemExit(f"{u.user_id}: asks an evaluation prompt")
        items.append(personalized_item(f"pers-xtrain-{u.user_id}", q, u, qrng))
    folders = []
    for k in range(parts):
        folder = out / f"part{k}"
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist([prompt_row(i) for i in items[k::parts]], schema=PROMPTS_ARROW_SCHEMA),
                       folder / "train.parquet")
        folders.append(folder)
    return folders


def sampled_and_judged(folder: Path) -> tuple[list, list[list[str]], object]:
    """The policy's 16 samples per prompt of one folder and their gold scores (store records, reused)."""
    from rlexp import inputs
    from rlexp.inputs.on_policy import judged_pool

    _, prompts, texts, gold, _ = judged_pool(compose("bon", *STUDY, f"prompts.source={folder}", inputs.UNUSED_RM),
                                             "personalized")
    return prompts, texts, gold


def main() -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rlexp.data.schemas import PAIRS_ARROW_SCHEMA
    from rlexp.inputs.on_policy import gold_pairs

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("n", type=int, help="extra training users (one prompt each)")
    ap.add_argument("--skip", type=int, default=0, help="start this far into the extra users' stream")
    ap.add_argument("--noise", type=float, default=0.0, help="share of pairs with labels swapped (the source's: 0.1)")
    ap.add_argument("--margin", type=float, default=0.25, help="least gold difference within a pair")
    ap.add_argument("--workers", type=int, default=2, help="processes sampling at once (one thread each)")
    args = ap.parse_args()

    folders = write_prompts(args.out / ("prompts" if args.skip == 0 else f"prompts-from-{args.skip}"), args.n,
                            args.skip, args.workers)
    with ProcessPoolExecutor(args.workers) as pool:
        parts = list(pool.map(sampled_and_judged, folders))
    rows = [row for prompts, texts, gold in parts
            for row in gold_pairs(prompts, texts, gold, "on_policy_personalized", margin=args.margin, noise=args.noise)]
    path = args.out / f"own-{args.n}-from{args.skip}-noise{args.noise:g}-margin{args.margin:g}.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=PAIRS_ARROW_SCHEMA), path)
    print(f"{path}: {len(rows)} pairs from {args.n} prompts")


if __name__ == "__main__":
    main()
