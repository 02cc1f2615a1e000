"""How far personalized Best-of-N could go on what a planner-mode RM is shown (docs/sandbox.md,
"How far personalized Best-of-N could go").

The stand-in RM reads only the sandbox planner's aspects of the user's top-k posts (the user turn a
`profile=planner` RM gets) and scores each sample with the gold rubric applied to *those* aspects
instead of the user's hidden ones. Its normalised gain@n is the ceiling of what an RM could learn
from its input; the same with the planner reading every post shows what the top-k cut costs. Also
printed: the oracle gain and the planner's precision/recall against the hidden aspects.

    python experiments/personal_ceiling.py                      # its own store (builds the policy lineage)
    RLEXP_ROOT=/path/to/store python experiments/personal_ceiling.py   # reuse a store's lineage and pool
"""

from __future__ import annotations

import os
import sys

import numpy as np
from _common import compose, use_root

K = 10  # posts the planner reads, as profile.k and sampling.profile_k default to


def _scores(samples: list[str], titles: list[str]) -> list[float]:
    """The rubric over the planned aspects; a user the planner reads nothing into leaves every sample
    tied (Best-of-N then picks at random, as an RM with nothing to go on would)."""
    from rlexp.sandbox.judges import rubric_score

    return [rubric_score(t, {"aspects": titles}) if titles else 0.5 for t in samples]


def main() -> None:
    if "RLEXP_ROOT" not in os.environ:
        use_root("personal_ceiling")
    from rlexp import inputs
    from rlexp.analysis.bootstrap import bootstrap_ci
    from rlexp.data.formatting import top_posts
    from rlexp.downstream.bon_math import bon_curve
    from rlexp.downstream.pool_scoring import pool_matrix
    from rlexp.sandbox.judges import aspect_titles, gold_score
    from rlexp.sandbox.planner import infer_aspects, planner_quality
    from rlexp.store import Store

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 16
    cfg = compose("bon", "rm=unused", "model=tiny_llama", "prompts=personalized", f"sampling.n={n}")
    pool, prompts = inputs.pool(cfg)  # the policy's pool, sampled here unless the store has it
    texts, n = pool_matrix(str(Store(cfg.paths.store).resolve(pool.artifacts["pool"])), prompts)
    gold = np.array([[gold_score(t, p.hidden) for t in row] for row, p in zip(texts, prompts, strict=True)])
    print(f"pool {pool.id}: {len(prompts)} personalized prompts x {n} samples")

    views = {f"planner, top-{K} posts": lambda p: top_posts(p.profile, K, p.prompt), "planner, all posts": lambda p: p.profile}
    for label, posts in views.items():
        proxy = np.array([_scores(row, infer_aspects(posts(p))) for row, p in zip(texts, prompts, strict=True)])
        curve = bon_curve(proxy, gold, [n])
        gain = curve["per_prompt"]["bon"][:, 0] - gold.mean(axis=1)
        lo, hi = bootstrap_ci(gain, n_boot=1000)
        oracle = curve["oracle"][n] - curve["bon_at_1"]
        quality = planner_quality((posts(p), aspect_titles(p.hidden)) for p in prompts)
        print(f"{label:24s} gain@{n} {curve['gain'][n]:+.3f} [{lo:+.3f}, {hi:+.3f}]  oracle gain {oracle:+.3f}  "
              f"normalised {curve['normalised_gain'][n]:.2f}  planner precision {quality.precision:.3f} "
              f"recall {quality.recall:.3f}")


if __name__ == "__main__":
    main()
