"""What a PPO gain's CI is made of, and what would narrow it (docs/sandbox.md, "What a PPO CI is made of").

A PPO gain is the mean over prompts of (trained policy's mean gold − initial policy's mean gold), and
its 95% CI resamples prompts. The per-prompt variance of that difference has two parts: sampling
noise (each side's within-prompt gold variance over its number of samples) and how differently the
training moved each prompt (what more samples cannot remove). This splits them for every PPO run in
a store, from the gold scores the store already holds, and prints the CI half-width the run would
have with more samples per prompt on the trained side, with noise-free sampling, and how many
prompts a gain of its size would need for its CI to exclude 0. Nothing is sampled or scored.

    RLEXP_ROOT=/path/to/store python experiments/ppo_ci_budget.py
"""

from __future__ import annotations

import os
import sys

import numpy as np
from _common import gold_scores_by_pool

Z = 1.96


def _within(frame) -> tuple:
    """Per prompt: mean gold, unbiased within-prompt variance, samples."""
    by = frame.groupby("prompt_id")["score"]
    return by.mean(), by.var(ddof=1), by.size()


def main() -> None:
    if len(sys.argv) != 1 or "RLEXP_ROOT" not in os.environ:
        sys.exit(__doc__)
    from rlexp.store import Store

    store = Store(os.path.join(os.environ["RLEXP_ROOT"], "runs"))
    gold = {pool: _within(frame) for pool, frame in gold_scores_by_pool(store).items()}
    head = (f"{'ppo record':<18}{'prompts':>8}{'gain':>8}{'hw now':>8}{'noise share':>12}"
            f"{'hw n=8':>8}{'hw n=16':>8}{'hw n=inf':>9}{'prompts to exclude 0':>21}")
    print(head)
    for rec in sorted(store.records("ppo"), key=lambda r: (r.config["prompts"]["name"], r.id)):
        after, before = gold.get(rec.info["eval_pool"]), gold.get(rec.info["baseline_pool"])
        if after is None or before is None:
            continue
        mean_a, var_a, n_a = after
        mean_b, var_b, n_b = (s.loc[mean_a.index] for s in before)
        gain = (mean_a - mean_b).to_numpy()
        p = len(gain)
        total = gain.var(ddof=1)
        noise_b = float((var_b / n_b).mean())
        noise_a = float((var_a / n_a).mean())
        moved = max(total - noise_a - noise_b, 0.0)  # the training's own prompt-to-prompt spread
        # The CI's half-width with 8 and 16 samples per prompt on the trained side, and with no sampling
        # noise on either side.
        widths = [Z * np.sqrt((moved + noise_b + float((var_a / n).mean())) / p) for n in (8, 16)]
        widths.append(Z * np.sqrt(moved / p))

        # Prompts for a gain of this size, sampled as now, to have a CI that excludes 0.
        need = Z ** 2 * total / gain.mean() ** 2 if gain.mean() else np.inf
        need_text = f"{int(np.ceil(need)):,}" if need < 1e6 else "> 1,000,000"
        print(f"{rec.id:<18}{p:>8}{gain.mean():>+8.3f}{Z * np.sqrt(total / p):>8.3f}"
              f"{(noise_a + noise_b) / total:>12.2f}{widths[0]:>8.3f}{widths[1]:>8.3f}"
              f"{widths[2]:>9.3f}{need_text:>21}   {rec.config['prompts']['name']} rm={str(rec.config['rm'])[:16]}")


if __name__ == "__main__":
    main()
