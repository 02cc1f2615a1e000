"""How much a larger PPO baseline narrows the gain's CI (docs/sandbox.md, "The PPO baseline").

A PPO gain is, per prompt, the trained policy's mean gold minus the initial policy's. This reads a
store's PPO records and recomputes each gain twice: against the run's own baseline pool and against
another pool of the same initial policy (e.g. BoN's 16-sample pool, what ``baseline_samples=16``
makes the baseline), both with the gold scores the store already holds. It prints each run's gain
and 95% CI both ways, and the mean ratio of the CI widths. Nothing is sampled or scored.

    RLEXP_ROOT=/path/to/store python experiments/ppo_baseline_ci.py POOL_ID
"""

from __future__ import annotations

import os
import sys

import numpy as np
from _common import gold_scores_by_pool


def main() -> None:
    if len(sys.argv) != 2 or "RLEXP_ROOT" not in os.environ:
        sys.exit(__doc__)
    from rlexp.analysis.bootstrap import bootstrap_ci
    from rlexp.store import Store

    store = Store(os.path.join(os.environ["RLEXP_ROOT"], "runs"))
    gold = {pool: frame.groupby("prompt_id")["score"].mean() for pool, frame in gold_scores_by_pool(store).items()}
    other = gold.get(sys.argv[1])
    if other is None:
        sys.exit(f"pool {sys.argv[1]} has no gold scores in {store.root}")
    ratios = []
    print(f"{'ppo record':<18}{'rm':<18}{'seed':>5}  {'own baseline: gain [95% CI]':<34}{'pool ' + sys.argv[1] + ': gain [95% CI]'}")
    for rec in store.records("ppo"):
        after, own = gold.get(rec.info["eval_pool"]), gold.get(rec.info["baseline_pool"])
        if after is None or own is None or set(after.index) != set(other.index):
            continue  # evaluated on other prompts than the given pool holds
        cells = []
        for base in (own, other):
            gain = (after - base.loc[after.index]).to_numpy()
            lo, hi = bootstrap_ci(gain, n_boot=1000, seed=0)
            cells.append((gain.mean(), lo, hi))
        ratios.append((cells[1][2] - cells[1][1]) / (cells[0][2] - cells[0][1]))
        text = [f"{g:+.4f} [{lo:+.3f}, {hi:+.3f}]" for g, lo, hi in cells]
        print(f"{rec.id:<18}{str(rec.config['rm'])[:16]:<18}{rec.config['seed']:>5}  {text[0]:<34}{text[1]}")
    if not ratios:
        sys.exit("no PPO record evaluated on the given pool's prompts")
    print(f"{len(ratios)} runs: CI width with the given pool / with the run's own baseline = "
          f"{np.mean(ratios):.3f} on average ({min(ratios):.2f} to {max(ratios):.2f})")


if __name__ == "__main__":
    main()
