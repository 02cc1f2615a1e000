"""Personalized PPO gains by what the plan says about length (docs/sandbox.md, "What PPO moves on
personalized prompts"). Not a speed figure.

Every personalized PPO setting of a store (its seeds pooled per prompt, as the report pools them),
with its mean gain over each group of users in ``_common.LENGTH_GROUPS``: where the planner reads
"brief", reads "detailed" for a user who wants it, reads "detailed" for a user with no length aspect,
or reads nothing on length. Nothing is trained, sampled or scored.

    RLEXP_ROOT=/path/to/store python experiments/ppo_by_length.py
"""

from __future__ import annotations

import os
import sys
from collections import defaultdict

from _common import LENGTH_GROUPS, compose, length_groups, rm_label, trainer_label


def main() -> None:
    if len(sys.argv) != 1 or "RLEXP_ROOT" not in os.environ:
        sys.exit(__doc__)
    from rlexp import inputs
    from rlexp.analysis.replicates import per_prompt_gains, replicates, training_setting
    from rlexp.store import Store

    cfg = compose("ppo", "rm=unused", "prompts=personalized")
    prompts, _ = inputs.prompt_set(cfg)
    group = dict(zip((p.prompt_id for p in prompts), length_groups(prompts, int(cfg.sampling.profile_k)), strict=True))
    store = Store(os.path.join(os.environ["RLEXP_ROOT"], "runs"))
    settings: dict[str, list] = defaultdict(list)
    for rec in store.records("ppo"):
        if rec.config["prompts"]["name"] == "personalized" and rec.artifacts.get("per_prompt"):
            settings[training_setting(rec)].append(rec)
    counts = {g: sum(v == g for v in group.values()) for g in LENGTH_GROUPS}
    print(f"{'reward':<24}{'trainer':<22}{'seeds':>6}" + "".join(f"{g.split(': ')[1]:>28}" for g in LENGTH_GROUPS))
    print(f"{'(prompts)':<52}" + "".join(f"{counts[g]:>28}" for g in LENGTH_GROUPS))
    for found in sorted(settings.values(), key=lambda rs: (str(rs[0].config["rm"]), trainer_label(rs[0].config))):
        recs = replicates(sorted(found, key=lambda r: r.ended, reverse=True))[0]
        gains = per_prompt_gains([str(store.resolve(r.artifacts["per_prompt"])) for r in recs])
        by = gains.groupby(gains.index.map(group)).mean()
        rm = str(recs[0].config["rm"])
        label = rm if rm.startswith("judge:") else rm_label(store, rm)
        print(f"{label:<24}{trainer_label(recs[0].config):<22}{len(recs):>6}"
              + "".join(f"{by.get(g, float('nan')):>+28.3f}" for g in LENGTH_GROUPS))


if __name__ == "__main__":
    main()
