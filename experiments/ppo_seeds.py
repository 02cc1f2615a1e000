"""PPO gains pooled over training seeds (docs/sandbox.md, "PPO over three training seeds").

A store's PPO records that differ only in ``seed`` (the same RM or judge, prompt set, policy and
settings) are one PPO setting run several times: each seed trains its own policy and draws its own
evaluation samples and baseline pool. Per setting this prints each seed's gain, their mean and SD,
and the pooled gain (per prompt, the mean of the seeds' gains) with two 95% CIs: resampling prompts
with the seeds fixed (what one run's CI is, over more runs), and resampling seeds and then prompts
(a two-level bootstrap, which also counts how the seeds' policies differ as a whole). Per prompt set
it then asks whether the settings' pooled gains differ (Friedman over prompts). Nothing is trained,
sampled or scored.

    RLEXP_ROOT=/path/to/store python experiments/ppo_seeds.py
"""

from __future__ import annotations

import os
import sys
from collections import defaultdict

import numpy as np
from _common import rm_label, trainer_label

N_BOOT = 4000


def _two_level_ci(gains: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
    """95% CI of the pooled gain resampling seeds (rows), then prompts (columns), with replacement."""
    seeds, prompts = gains.shape
    means = np.empty(N_BOOT)
    for b in range(N_BOOT):
        rows = gains[rng.integers(0, seeds, size=seeds)]
        means[b] = rows[:, rng.integers(0, prompts, size=prompts)].mean()
    lo, hi = np.quantile(means, [0.025, 0.975])
    return float(lo), float(hi)


def main() -> None:
    if len(sys.argv) != 1 or "RLEXP_ROOT" not in os.environ:
        sys.exit(__doc__)
    import pandas as pd
    from scipy import stats

    from rlexp.analysis.bootstrap import bootstrap_ci
    from rlexp.analysis.replicates import per_prompt_gains, replicates, training_setting
    from rlexp.store import Store

    store = Store(os.path.join(os.environ["RLEXP_ROOT"], "runs"))
    settings: dict[str, list] = defaultdict(list)
    for rec in store.records("ppo"):
        settings[training_setting(rec)].append(rec)
    by_set: dict[str, dict[str, pd.Series]] = defaultdict(dict)
    print(f"{'prompts':<13}{'reward':<24}{'trainer':<22}{'seeds':>6}  {'gain per seed':<26}{'SD':>6}{'pooled':>8}"
          f"  {'CI, prompts':<18}  {'CI, seeds x prompts':<18}")
    for found in sorted(settings.values(), key=lambda rs: (rs[0].config["prompts"]["name"], str(rs[0].config["rm"]))):
        recs = replicates(sorted(found, key=lambda r: r.ended, reverse=True))[0]
        if not all(r.artifacts.get("per_prompt") for r in recs):
            continue
        files = [str(store.resolve(r.artifacts["per_prompt"])) for r in recs]
        pooled = per_prompt_gains(files)
        # Each seed's gains on the prompts every seed has: the rows of the two-level bootstrap.
        gains = np.stack([per_prompt_gains([f]).reindex(pooled.index).to_numpy() for f in files])
        lo, hi = bootstrap_ci(pooled.to_numpy(), n_boot=N_BOOT, seed=0)
        lo2, hi2 = _two_level_ci(gains, np.random.default_rng(0)) if len(recs) > 1 else (lo, hi)
        per_seed = " / ".join(f"{g:+.3f}" for g in gains.mean(axis=1))
        sd = gains.mean(axis=1).std(ddof=1) if len(recs) > 1 else float("nan")
        ps, rm = recs[0].config["prompts"]["name"], str(recs[0].config["rm"])
        label = rm if rm.startswith("judge:") else rm_label(store, rm)
        trainer = trainer_label(recs[0].config)
        print(f"{ps:<13}{label:<24}{trainer:<22}{len(recs):>6}  {per_seed:<26}{sd:>6.3f}{pooled.mean():>+8.3f}"
              f"  [{lo:+.3f}, {hi:+.3f}]  [{lo2:+.3f}, {hi2:+.3f}]")
        if not rm.startswith("judge:"):
            by_set[f"{ps}, {trainer}"][label] = pooled
    for ps, cols in sorted(by_set.items()):
        frame = pd.DataFrame(cols).dropna()
        if frame.shape[1] >= 3:
            stat, p = stats.friedmanchisquare(*(frame[c].to_numpy() for c in frame.columns))
            print(f"{ps}: do the {frame.shape[1]} RMs' pooled gains differ? Friedman chi2 {stat:.1f}, p = {p:.2g}")
        elif frame.shape[1] == 2:
            diff = frame.iloc[:, 0] - frame.iloc[:, 1]
            lo, hi = bootstrap_ci(diff.to_numpy(), n_boot=N_BOOT, seed=0)
            print(f"{ps}: {frame.columns[0]} - {frame.columns[1]}: {diff.mean():+.3f} [{lo:+.3f}, {hi:+.3f}] (paired over prompts)")


if __name__ == "__main__":
    main()
