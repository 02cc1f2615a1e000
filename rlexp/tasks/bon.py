"""`rlexp bon`: Best-of-N with a reward model on a cached pool, measured by a gold judge.

pool (sampled once per policy × prompt set) × RM scores (cached per pool and RM) × gold scores
(cached per pool and judge) -> exact BoN@k over all k-subsets, the reference's first-k protocol,
oracle@k, gain@k and normalised gain@k with bootstrap CIs over prompts, and the proxy-vs-gold
over-optimisation view. An RM of another lineage scores the decoded text with its own tokenizer.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from omegaconf import DictConfig

from rlexp import inputs
from rlexp.analysis.bootstrap import bootstrap_ci
from rlexp.downstream.bon_math import bon_curve, default_ks, gold_varies, rank_agreement
from rlexp.downstream.pool_scoring import pool_matrix
from rlexp.downstream.prompt_groups import gains_by_group
from rlexp.errors import ConfigError
from rlexp.runtime import RunContext, execute, hydra_entry
from rlexp.scoring.factory import check_gold_judge, judge_cache_dir, judge_key, probe_served_judges, reward_scorer
from rlexp.store import Record, Store
from rlexp.suite import KIND as SUITE_KIND
from rlexp.suite import task as suite_task


def _gains_by_group(prompts: list[Any], gain: np.ndarray, oracle_gain: np.ndarray, differ: np.ndarray,
                    cfg: DictConfig) -> dict[str, Any]:
    """gain@n with its CI, oracle gain@n and the share of prompts whose samples differ in gold (``differ``), per
    prompt group (:mod:`rlexp.downstream.prompt_groups`): on a kind whose samples never differ no RM could
    gain. Empty when prompts carry no group."""
    return gains_by_group(prompts, gain, n_boot=cfg.n_boot, seed=cfg.seed,
                          means={"oracle_gain": oracle_gain, "samples_differ": differ}, weights=suite_weights(prompts))


def suite_weights(prompts: list[Any]) -> np.ndarray | None:
    """Per-prompt weights that make a suite's means the unweighted mean over its tasks (RewardBench 2's
    "downstream average"), each task aggregated over its subtasks as OLMES does (``SuiteTask.average``:
    MATH is the mean of its 7 subjects' means, BBH pools its rows); None for any other prompt set.
    Normalised to mean 1. Within one task the weights give that task's own score as a weighted mean."""
    if not prompts or prompts[0].kind != SUITE_KIND:
        return None
    tasks = [str(p.hidden["task"]) for p in prompts]
    counts = Counter(tasks)
    cells = Counter((t, str(p.hidden.get("group", ""))) for t, p in zip(tasks, prompts, strict=True))
    groups = {t: len({g for (u, g) in cells if u == t}) for t in counts}

    def weight(t: str, p: Any) -> float:
        if suite_task(t).average == "macro":
            return 1.0 / (groups[t] * cells[(t, str(p.hidden.get("group", "")))])
        return 1.0 / counts[t]

    w = np.array([weight(t, p) for t, p in zip(tasks, prompts, strict=True)])
    return w / w.mean()


def _alpaca_lc(cfg: DictConfig, pool: Record, prompts: list[Any], rm_scores: np.ndarray,
               gold: np.ndarray) -> dict[str, Any]:
    """AlpacaEval 2's length-controlled win rate of the first sample and of the RM's pick among all n
    (ties to the earliest), or why it could not be computed (its GLM needs AlpacaEval's hub files)."""
    from rlexp.suite.alpacaeval import lc_win_rate

    ix = [i for i, p in enumerate(prompts) if p.hidden["task"] == "alpacaeval"]
    every, _ = pool_matrix(str(Store(cfg.paths.store).resolve(pool.artifacts["pool"])), prompts)
    texts = [every[i] for i in ix]
    picks = {"first_sample": [0] * len(ix), "bon_at_n": [int(np.argmax(rm_scores[i])) for i in ix]}
    args = ([prompts[i].prompt for i in ix], [prompts[i].hidden["index"] for i in ix],
            [prompts[i].hidden["reference"] for i in ix])
    try:
        return {"lc_win_rate": {name: lc_win_rate(*args, [texts[r][j] for r, j in enumerate(pick)],
                                                  [gold[i, j] for i, j in zip(ix, pick, strict=True)])
                                for name, pick in picks.items()}}
    except Exception as exc:  # noqa: BLE001 - an optional extra: say why, keep the record
        return {"lc_win_rate": None, "lc_win_rate_note": "alpaca_eval's length-controlled GLM needs its hub files "
                f"(HF_HUB_OFFLINE=0 with hub access): {type(exc).__name__}: {str(exc).splitlines()[0][:120]}"}


def _bon(ctx: RunContext, cfg: DictConfig, pool: Record, prompts: list[Any], rm_scores: np.ndarray,
         gold: np.ndarray, ks: list[int], info: dict[str, Any]) -> dict[str, Any]:
    prompt_ids = [p.prompt_id for p in prompts]
    weights = suite_weights(prompts)
    curve = bon_curve(rm_scores, gold, ks, prompt_ids, prompt_weights=weights)
    per = curve["per_prompt"]
    base = gold.mean(axis=1)  # per-prompt BoN@1
    w = np.ones(len(prompts)) if weights is None else weights
    gain_ci, norm = {}, {}
    for c, k in enumerate(curve["ks"]):
        gain_ci[k] = bootstrap_ci((per["bon"][:, c] - base) * w, n_boot=cfg.n_boot, seed=cfg.seed)
        norm[k] = curve["normalised_gain"][k]
    n = curve["n"]
    metrics = {
        "n": n,
        "prompts": curve["num_prompts"],
        "bon_at_1": curve["bon_at_1"],
        "gold_within_prompt_std": float(gold.std(axis=1).mean()),
        "rm_gold_agreement": rank_agreement(rm_scores, gold),
        "gain_at_n": curve["gain"][curve["ks"][-1]],
        "gain_at_n_ci": list(gain_ci[curve["ks"][-1]]),
        "normalised_gain_at_n": norm[curve["ks"][-1]],
        "curve": {
            str(k): {
                "bon": curve["bon"][k],
                "first_k": curve["first_k"][k],
                "oracle": curve["oracle"][k],
                "proxy": curve["proxy"][k],
                "gain": curve["gain"][k],
                "gain_ci": list(gain_ci[k]),
                "normalised_gain": norm[k],
            }
            for k in curve["ks"]
        },
    }
    by_group = _gains_by_group(prompts, per["bon"][:, -1] - base, per["oracle"][:, -1] - base, gold_varies(gold), cfg)
    if by_group:
        metrics["by_group"] = by_group
    if weights is not None:
        # The curve is already the mean over tasks; this names it as the paper does and adds each
        # task's own BoN@1 and BoN@n (its metric on the first and the RM-selected sample).
        metrics["downstream_average"] = {"tasks": sorted(by_group) if by_group else [str(prompts[0].hidden["task"])],
                                         "bon_at_1": curve["bon_at_1"], "bon_at_n": curve["bon"][curve["ks"][-1]],
                                         "gain_at_n": metrics["gain_at_n"], "gain_at_n_ci": metrics["gain_at_n_ci"]}
        for name, group in (by_group or {}).items():
            ix = [i for i, p in enumerate(prompts) if p.hidden["task"] == name]
            group["bon_at_1"] = float(base[ix].mean())
            group["bon_at_n"] = float(per["bon"][ix, -1].mean())
        if by_group and "alpacaeval" in by_group:
            by_group["alpacaeval"].update(_alpaca_lc(cfg, pool, prompts, rm_scores, gold))
    # Per-prompt selections at every k, for prompt-level bootstraps downstream.
    rows = {"prompt_id": prompt_ids, "bon_at_1": base.tolist()}
    if weights is not None:
        rows["weight"] = weights.tolist()
    for c, k in enumerate(curve["ks"]):
        rows[f"bon@{k}"] = per["bon"][:, c].tolist()
        rows[f"oracle@{k}"] = per["oracle"][:, c].tolist()
        rows[f"first@{k}"] = per["first_k"][:, c].tolist()
    path = ctx.work_dir / "per_prompt.parquet"
    pq.write_table(pa.table(rows), path)
    ctx.add_artifact("per_prompt", path)
    for k in curve["ks"]:
        ctx.tracker.log({"bon/k": k, "bon/gold": curve["bon"][k], "bon/oracle": curve["oracle"][k],
                         "bon/proxy": curve["proxy"][k], "bon/first_k": curve["first_k"][k]})
    ctx.info.update(info)
    return metrics


def run(cfg: DictConfig) -> Record:
    """Best-of-N of ``cfg.rm`` on the pool of (policy, prompts); cached per (pool, rm, judge)."""
    if cfg.ks is not None:
        ks = [int(k) for k in cfg.ks]
        bad = [k for k in ks if k < 1 or k > cfg.sampling.n]
        if bad:
            raise ConfigError(f"ks contains k={bad[0]}, but the pool has n={cfg.sampling.n} samples per prompt")
    else:
        ks = default_ks(cfg.sampling.n)
    check_gold_judge(cfg.judge, cfg.prompts)  # a bad judge config fails before sampling
    probe_served_judges(cfg, judge_cache_dir(cfg))  # a served judge that is down fails before sampling
    rm = inputs.rm(cfg.rm, Store(cfg.paths.store), cfg.get("rm_lineage"))
    pool, prompts = inputs.pool(cfg)
    kind = prompts[0].kind if prompts else cfg.prompts.name
    gold_key = judge_key(cfg.judge, kind, cfg.prompts)
    rm_scores, rm_sid = inputs.pool_scores(cfg, pool_record=pool, prompts=prompts, scorer_key=inputs.rm_scores_key(rm.input_id, cfg),
                                           make_scorer=lambda: reward_scorer(rm, cfg.scorer, cfg.profile), role="rm")
    gold, gold_sid = inputs.pool_scores(cfg, pool_record=pool, prompts=prompts, scorer_key=gold_key,
                                        make_scorer=lambda: inputs.gold_judge(cfg, kind), role="gold")
    ids = {"pool": pool.id, "rm_scores": rm_sid, "gold_scores": gold_sid}
    info = {"rm": {"id": rm.input_id, "lineage": rm.lineage}, "policy_lineage": str(cfg.model.lineage),
            "prompts": cfg.prompts.name, "judge": gold_key}
    gold_stats = Store(cfg.paths.store).get(gold_sid).info.get("scorer_stats", {})
    failures = {k: v for k, v in gold_stats.items() if k.startswith("grader_")}
    if failures:
        info["gold_failures"] = failures
    if "served" in gold_stats:  # the served judge's requests and cache hits when the gold scores were made
        info["judge_served"] = gold_stats["served"]
    return execute("bon", cfg, lambda ctx: _bon(ctx, cfg, pool, prompts, rm_scores, gold, ks, info), ids)


main = hydra_entry("bon", run)

if __name__ == "__main__":
    main()
