"""Best-of-N for 8 reward models on one pool, against (a) one generation plus 8 scorings done by
hand (target: within 10%) and (b) the naive plan that samples a fresh pool for every RM (ratio).

    python perf/bon_reuse.py [PROMPTS]   # default: all 300 general eval prompts, as the study

Each `bon` call has a fixed cost of about 0.5 s (config composition, record look-ups, prompt
loading) that the by-hand plan pays once; on a small pool (PROMPTS=48) that shows as overhead.
"""

from __future__ import annotations

import sys
import time

from _common import compose, use_root

N_RMS = 8


def main() -> None:
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else None
    limit_arg = f"prompts.limit={limit or 'null'}"
    pool_args = [limit_arg, "sampling.n=16", "n_boot=200"]
    use_root("bon")
    from rlexp.runtime import quote
    from rlexp.tasks import bon, sample, train_rm

    rms = [train_rm.run(compose("train_rm", "model=tiny_llama", "data=general", "data.max_rows=300", f"seed={s}")).id
           for s in range(N_RMS)]
    run_seed = int(time.time()) % 100000  # fresh pools and scores every run

    # rlexp: one pool, 8 RMs (pool sampled once, each RM scores it once).
    t0 = time.perf_counter()
    for rid in rms:
        bon.run(compose("bon", f"rm={quote(rid)}", "prompts=general", f"seed={run_seed}", *pool_args))
    t_rlexp = time.perf_counter() - t0

    # By hand: generate once, score 8 times (the lower bound of any plan).
    from rlexp import inputs
    from rlexp.scorer import ScoreInput
    from rlexp.scoring.factory import reward_scorer
    from rlexp.store import Store

    t0 = time.perf_counter()
    cfg = compose("sample", "prompts=general", f"seed={run_seed + 1}", limit_arg, "sampling.n=16")
    pool = sample.run(cfg)
    from rlexp.downstream.pool_scoring import pool_matrix

    store = Store(cfg.paths.store)
    # The same (question, sample) inputs bon scores, so only the plan differs.
    prompts, _ = inputs.prompt_set(cfg)
    texts, _ = pool_matrix(str(store.resolve(pool.artifacts["pool"])), prompts)
    inputs = [ScoreInput(p.prompt, t) for p, row in zip(prompts, texts, strict=True) for t in row]
    bcfg = compose("bon", "rm=x")
    for rid in rms:
        reward_scorer(inputs.rm(rid, store), bcfg.scorer, bcfg.profile).score(inputs)
    t_hand = time.perf_counter() - t0

    # Naive: a fresh pool for every RM.
    t0 = time.perf_counter()
    for i, rid in enumerate(rms):
        bon.run(compose("bon", f"rm={quote(rid)}", "prompts=general", f"seed={run_seed + 100 + i}", *pool_args))
    t_naive = time.perf_counter() - t0

    print(f"pool: {len(prompts)} prompts x 16 samples")
    print(f"bon, {N_RMS} RMs on one pool        : {t_rlexp:6.1f}s")
    print(f"generation once + {N_RMS} scorings   : {t_hand:6.1f}s  (rlexp / hand = {t_rlexp / t_hand:.2f}, target <= 1.10)")
    print(f"naive, a pool per RM              : {t_naive:6.1f}s  (naive / rlexp = {t_naive / t_rlexp:.2f}x)")


if __name__ == "__main__":
    main()
