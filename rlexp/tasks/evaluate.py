"""`rlexp evaluate`: a reward model on RewardBench 2, Personalized RewardBench, and PRB's comparison
benchmarks Chatbot Arena- and PRISM-Personalized (any of them).

``rm`` is a train_rm record id, a local folder or a hub id; benchmarks come from the sandbox or
the real datasets (hub id or local file) through the same loaders. The record carries per-subset
and per-domain scores; per-example scores go to parquet so anyone can recompute them.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from omegaconf import DictConfig, OmegaConf

from rlexp import inputs
from rlexp.benchmarks.rewardbench2_math import score_rewardbench2
from rlexp.benchmarks.runners import run_personalized, run_rewardbench2, run_user_pairs
from rlexp.benchmarks.user_pairs import UserPairCase
from rlexp.config import CONF_DIR
from rlexp.config.nodes import ProfileConfig, ScorerConfig
from rlexp.data.loaders import load_prb, load_rb2
from rlexp.data.schemas import USER_PAIR_SETS
from rlexp.errors import ConfigError, DataError
from rlexp.models.chat_lm import ChatLM
from rlexp.models.loading import quiet_libraries
from rlexp.runtime import RunContext, execute, hydra_entry
from rlexp.scoring.factory import RMRef, reward_scorer
from rlexp.scoring.generative import GenerativeJudge, JudgeSettings, judge_prb_pairs
from rlexp.scoring.planner import make_planner
from rlexp.store import Record, Store


def _write(ctx: RunContext, name: str, rows: list[dict[str, Any]]) -> None:
    path = ctx.work_dir / f"{name}.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    ctx.add_artifact(name, path)
    ctx.tracker.table(f"{name}/examples", list(rows[0]), [list(r.values()) for r in rows[:2000]])


def _rb2_metrics(summary: dict[str, Any]) -> dict[str, Any]:
    return {"overall": summary["overall"], **summary["subsets"], "counts": summary["counts"],
            "complete": summary["complete"], "ties_components": summary["ties"]}


def _evaluate_scalar(ctx: RunContext, cfg: DictConfig, rm: RMRef, rb2: list[Any] | None,
                     prb: list[Any] | None, users: dict[str, list[UserPairCase]] | None = None) -> dict[str, Any]:
    scorer = reward_scorer(rm, cfg.scorer, cfg.profile)
    metrics: dict[str, Any] = {}
    if rb2 is not None:
        summary, rows = run_rewardbench2(scorer, rb2, ties_version=cfg.benchmark.rb2.ties_version,
                                         progress=ctx.cfg.progress)
        metrics["rb2"] = _rb2_metrics(summary)
        _write(ctx, "rb2_scores", rows)
    if prb is not None:
        summary, rows = run_personalized(scorer, prb, progress=ctx.cfg.progress)
        metrics["prb"] = {
            "accuracy": summary["accuracy"],
            **{d: v["accuracy"] for d, v in summary["per_domain"].items()},
            "ties": summary["ties"],
            "mean_gap": summary["mean_gap"],
            "n": summary["n"],
        }
        if getattr(prb, "skipped", None):  # rows left out of a published set, by reason
            metrics["prb"]["skipped"] = dict(prb.skipped)
        _write(ctx, "prb_scores", rows)
    for name, cases in (users or {}).items():
        b = cfg.benchmark[name]
        summary, rows = run_user_pairs(scorer, cases, mode=str(b.user_context), k=int(b.k),
                                       separator=str(cfg.profile.separator), name=USER_PAIR_SETS[name],
                                       progress=ctx.cfg.progress)
        per_user = summary.pop("per_user")
        metrics[name] = {**summary, "user_context": str(b.user_context), "k": int(b.k)}
        _write(ctx, f"{name}_scores", rows)
        ctx.info[f"{name}_per_user"] = per_user
    metrics["scoring"] = {"items": scorer.stats.items, "truncated": scorer.stats.truncated}
    ctx.info["scorer_settings"] = {"scorer": dataclasses.asdict(scorer.settings),
                                   "profile": dataclasses.asdict(scorer.profile)}
    ctx.info["tokenizer"] = scorer.tokenizer_report
    return metrics


def _rb2_rankings(judge: GenerativeJudge, tie_judge: GenerativeJudge, normal: list[Any], ties: list[Any],
                  ties_version: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """RB2 in rankings mode: one 4-way call per normal item; Ties is always rated (reference §2.4)."""
    rows = []
    for it in normal:
        credit, verdict = judge.rank_rb2(it.prompt, list(it.chosen + it.rejected), item_id=it.id)
        rows.append({"id": it.id, "subset": it.subset, "credit": credit, "verdict": verdict})
    per_subset: dict[str, list[float]] = {}
    for r in rows:
        per_subset.setdefault(r["subset"], []).append(r["credit"])
    subsets = {k: sum(v) / len(v) for k, v in per_subset.items()}
    if ties:
        tsum, trows = run_rewardbench2(tie_judge, ties, ties_version=ties_version)
        subsets["Ties"] = tsum["subsets"]["Ties"]
        rows += trows
    return {"overall": sum(subsets.values()) / len(subsets), **subsets, "complete": len(subsets) == 6}, rows


def _rb2_ratings(judge: GenerativeJudge, tie_judge: GenerativeJudge, normal: list[Any], ties: list[Any],
                 ties_version: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """RB2 in ratings mode. Ratings as scores: the best-of-4 rule over ratings with -1 for failures
    equals the reference's argmax over valid ratings (0.25 when none is valid)."""
    _, rows = run_rewardbench2(judge, normal, ties_version=ties_version) if normal else ({}, [])
    if ties:
        _, trows = run_rewardbench2(tie_judge, ties, ties_version=ties_version)
        rows += trows
    grouped: dict[str, dict[str, Any]] = {}
    for r in rows:
        g = grouped.setdefault(r["id"], {"id": r["id"], "subset": r["subset"], "scores": [], "num_correct": r["num_correct"]})
        g["scores"].append(r["score"])
    return _rb2_metrics(score_rewardbench2(list(grouped.values()), ties_version)), rows


def _evaluate_generative(ctx: RunContext, cfg: DictConfig, rm: RMRef, rb2: list[Any] | None,
                         prb: list[Any] | None) -> dict[str, Any]:
    """A causal LM as judge: RB2 ratings (or rankings) mode, PRB pairwise with seeded positions."""
    scorer: ScorerConfig = OmegaConf.to_object(cfg.scorer)
    profile: ProfileConfig = OmegaConf.to_object(cfg.profile)
    lm = ChatLM.from_pretrained(rm.path, trust_remote_code=scorer.trust_remote_code)
    settings = JudgeSettings(max_new_tokens=scorer.max_new_tokens, seed=int(cfg.seed))
    planner = make_planner(str(profile.mode), str(profile.planner), k=profile.k)
    judge = GenerativeJudge(lm, settings, profile, name=rm.input_id, planner=planner)
    metrics: dict[str, Any] = {"judge_mode": cfg.scorer.judge_mode}
    if rb2 is not None:
        # Ties is always rated, with the prompt variant that ignores depth and detail (§2.4).
        tie_judge = GenerativeJudge(lm, dataclasses.replace(settings, ties_prompt=True), profile,
                                    name=rm.input_id, planner=planner)
        ties = [it for it in rb2 if it.subset == "Ties"]
        normal = [it for it in rb2 if it.subset != "Ties"]
        by_mode = _rb2_rankings if scorer.judge_mode == "rankings" else _rb2_ratings
        metrics["rb2"], rows = by_mode(judge, tie_judge, normal, ties, cfg.benchmark.rb2.ties_version)
        _write(ctx, "rb2_scores", rows)
    if prb is not None:
        result = judge_prb_pairs(judge, prb, seed=42)
        ref = result["reference"]
        metrics["prb"] = {"accuracy": ref["accuracy"], "accuracy_excluding_failures": result["exclude"]["accuracy"],
                          "parse_failures": result["parse_failures"], "summary": ref, "n": result["n"]}
        _write(ctx, "prb_scores", result["per_item"])
    metrics["scoring"] = {"parse_failures": judge.stats.parse_failures, "items": judge.stats.items}
    ctx.info["judge_settings"] = {"judge": dataclasses.asdict(settings), "profile": dataclasses.asdict(profile)}
    return metrics


def _evaluate(ctx: RunContext, cfg: DictConfig, rm: RMRef, rb2: list[Any] | None, prb: list[Any] | None,
              users: dict[str, list[UserPairCase]]) -> dict[str, Any]:
    quiet_libraries()
    ctx.info["rm"] = {"path": rm.path, "lineage": rm.lineage, "record": rm.record_id}
    if cfg.scorer.kind == "generative":
        return _evaluate_generative(ctx, cfg, rm, rb2, prb)
    return _evaluate_scalar(ctx, cfg, rm, rb2, prb, users)


def _judge_ref(cfg: DictConfig) -> RMRef | None:
    """A generative judge may be named by lineage (``rm=tiny_qwen``): its instruct checkpoint."""
    if not (CONF_DIR / "model" / f"{cfg.rm}.yaml").is_file():
        return None
    path = inputs.model_path(cfg, str(cfg.rm))
    return RMRef(path, f"lineage:{cfg.rm}:{Path(path).parent.name}", str(cfg.rm), None)


def run(cfg: DictConfig) -> Record:
    """Evaluate (or find the evaluation of) ``cfg.rm`` on ``cfg.benchmark``."""
    named = [b for b in ("rb2", "prb", *USER_PAIR_SETS) if cfg.benchmark.get(b) is not None]
    if not named:
        raise ConfigError(f"benchmark {cfg.benchmark.name!r} names none of rb2, prb, {', '.join(USER_PAIR_SETS)}")
    if cfg.scorer.kind == "generative" and set(named) & set(USER_PAIR_SETS):
        raise ConfigError("Chatbot Arena-/PRISM-Personalized are scored with scalar reward models only (scorer.kind=seq_cls)")
    store = Store(cfg.paths.store)
    rm = _judge_ref(cfg) if cfg.scorer.kind == "generative" else None
    rm = rm or inputs.rm(cfg.rm, store, cfg.get("rm_lineage"))
    ids = {"rm": rm.input_id}
    rb2 = prb = None
    if cfg.benchmark.rb2 is not None:
        b = cfg.benchmark.rb2
        path, data_id = inputs.data_ref(b.source, cfg)
        subsets = OmegaConf.to_container(b.subsets) if b.subsets is not None else None
        rb2 = load_rb2(path, subsets=subsets, limit=b.limit)
        if not rb2:  # before any model is loaded, and naming what was empty
            raise DataError(f"RewardBench 2 source {path}: no rows to score (subsets={subsets}, limit={b.limit})")
        ids["rb2"] = inputs.read_id(data_id, path, rb2)
    if cfg.benchmark.prb is not None:
        b = cfg.benchmark.prb
        path, data_id = inputs.data_ref(b.source, cfg)
        domains = OmegaConf.to_container(b.domains) if b.domains is not None else None
        prb = load_prb(path, domains=domains, limit=b.limit)
        if not prb:
            raise DataError(f"Personalized RewardBench source {path}: no rows to score (domains={domains}, limit={b.limit})")
        ids["prb"] = inputs.read_id(data_id, path, prb)
    users = {name: inputs.user_pair_benchmark(cfg, name, ids) for name in USER_PAIR_SETS if cfg.benchmark.get(name) is not None}
    return execute("evaluate", cfg, lambda ctx: _evaluate(ctx, cfg, rm, rb2, prb, users), ids)


main = hydra_entry("evaluate", run)

if __name__ == "__main__":
    main()
