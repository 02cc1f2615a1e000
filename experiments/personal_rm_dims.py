"""Which of the user's aspects a personalized RM reads in the policy's own samples (docs/sandbox.md,
"What the personal RM reads in the policy's samples"). Not a speed figure.

For the study's personalized pool (the policy's 16 samples per prompt) and one RM read with the
planner profile, prints within-prompt Spearman correlations (the plan match with the gold, the RM
with the plan match and with the gold) and, per style dimension, the RM's mean within-prompt score of
samples that meet a planned aspect minus those showing its opposite pole, beside the same difference
between the dimension's two poles over every sample (a taste that ignores the user). Last, the RM's
Best-of-N gain@16 (and normalised gain) by what the plan says about length, the one dimension every
sandbox RM reads: where the plan asks for brevity, asks for detail the user wants, asks for detail the
user never asked for (the planner reads long posts as a taste for detail), or says nothing of length.

    RLEXP_ROOT=/path/to/store python experiments/personal_rm_dims.py RM_ID [RM_ID ...]

The RM's scores of the pool are read from the store's cache (scored here when missing).
"""

from __future__ import annotations

import os
import sys

import numpy as np
from _common import LENGTH_GROUPS, compose, length_group


def within_prompt_spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Mean Spearman correlation of two [P, n] matrices over the prompts where both vary (the report's RM–gold ρ)."""
    from rlexp.downstream.bon_math import rank_agreement

    return float(rank_agreement(a, b)["mean_spearman"])


def main() -> None:
    if "RLEXP_ROOT" not in os.environ or len(sys.argv) < 2:
        sys.exit("usage: RLEXP_ROOT=<store> python experiments/personal_rm_dims.py RM_ID [RM_ID ...]")
    from rlexp import inputs
    from rlexp.data.formatting import top_posts
    from rlexp.downstream.pool_scoring import pool_matrix
    from rlexp.sandbox.aspects import DIMENSIONS, dimension_state, known_titles
    from rlexp.sandbox.judges import gold_score
    from rlexp.sandbox.planner import infer_aspects
    from rlexp.scoring.factory import reward_scorer
    from rlexp.store import Store

    # The study's Best-of-N settings, so the RM's scores of the pool come from its cache.
    study = ("model=tiny_llama", "prompts=personalized", "sampling.n=16", "profile=planner", "scorer.share_prefix=true",
             "sampling.draw=kept")
    base = compose("bon", "rm=unused", *study)
    pool, prompts = inputs.pool(base)
    texts, n = pool_matrix(str(Store(base.paths.store).resolve(pool.artifacts["pool"])), prompts)
    k = int(base.sampling.profile_k)
    plans = [known_titles(infer_aspects(top_posts(p.profile, k, p.prompt))) for p in prompts]
    states = {d.name: [[dimension_state(d.name, t) for t in row] for row in texts] for d in DIMENSIONS}
    gold = np.array([[gold_score(t, p.hidden) for t in row] for row, p in zip(texts, prompts, strict=True)])
    match = np.array([[sum(1 if states[a.dim][i][j] == a.side else -1 if states[a.dim][i][j] is not None else 0
                           for a in plan) for j in range(n)] for i, plan in enumerate(plans)], dtype=float)
    groups = [length_group(plan, p.hidden) for plan, p in zip(plans, prompts, strict=True)]
    print(f"pool {pool.id}: {len(prompts)} personalized prompts x {n}; plan match vs gold "
          f"{within_prompt_spearman(match, gold):.2f} (within-prompt Spearman)")

    for rm_id in sys.argv[1:]:
        cfg = compose("bon", f"rm={rm_id}", *study)
        rm = inputs.rm(cfg.rm, Store(cfg.paths.store))
        scores, _ = inputs.pool_scores(cfg, pool_record=pool, prompts=prompts, scorer_key=inputs.rm_scores_key(rm.input_id, cfg),
                                       make_scorer=lambda rm=rm, cfg=cfg: reward_scorer(rm, cfg.scorer, cfg.profile), role="rm")
        centred = scores - scores.mean(axis=1, keepdims=True)
        print(f"\nRM {rm_id}: within-prompt SD {scores.std(axis=1, ddof=1).mean():.2f}; vs plan match "
              f"{within_prompt_spearman(scores, match):.2f}, vs gold {within_prompt_spearman(scores, gold):.2f}")
        print(f"{'dimension':14s} {'meet / opposite':>16s} {'meet - opposite':>16s} {'pole 0 - pole 1':>16s}")
        for d in DIMENSIONS:
            st = states[d.name]
            meet, opposite, poles = [], [], ([], [])
            for i, plan in enumerate(plans):
                side = next((a.side for a in plan if a.dim == d.name), None)
                for j in range(n):
                    if st[i][j] is not None:
                        poles[st[i][j]].append(centred[i, j])
                        if side is not None:
                            (meet if st[i][j] == side else opposite).append(centred[i, j])
            diff = np.mean(meet) - np.mean(opposite) if meet and opposite else float("nan")
            taste = np.mean(poles[0]) - np.mean(poles[1]) if poles[0] and poles[1] else float("nan")
            print(f"{d.name:14s} {f'{len(meet)} / {len(opposite)}':>16s} {diff:+16.2f} {taste:+16.2f}")
        _gain_by_group(scores, gold, groups)


def _gain_by_group(scores: np.ndarray, gold: np.ndarray, groups: list[str]) -> None:
    """Best-of-N gain@16 of the RM's pick over the mean sample, and its share of the oracle's gain."""
    picked = gold[np.arange(len(gold)), scores.argmax(axis=1)]
    gain, oracle = picked - gold.mean(axis=1), gold.max(axis=1) - gold.mean(axis=1)
    print(f"{'users':28s} {'prompts':>8s} {'gain@16':>8s} {'normalised':>11s}")
    for g in (*LENGTH_GROUPS, "all"):
        rows = np.array([g in ("all", x) for x in groups])
        if rows.any():
            print(f"{g:28s} {rows.sum():8d} {gain[rows].mean():+8.3f} {gain[rows].mean() / oracle[rows].mean():+11.2f}")


if __name__ == "__main__":
    main()
