"""The evaluation side of `rlexp ppo`: which prompts evaluate the policy, and how it is gold-judged.

``eval_config`` turns the run's config into the evaluation set's (``eval_prompts``);
``disjoint_train_prompts`` keeps the training prompts apart from it; ``CheckpointEvaluator`` samples and
gold-judges the policy every ``eval_every`` updates; ``checkpoint_metrics`` turns the points into the
record's curve, best-checkpoint gain and headline gain. The task itself is `rlexp/tasks/ppo.py`.
"""

from __future__ import annotations

import copy
import json
import random
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf

from rlexp import inputs
from rlexp.analysis.bootstrap import bootstrap_ci
from rlexp.config import CONF_DIR
from rlexp.config.nodes import PromptsConfig
from rlexp.downstream import ppo as adapter
from rlexp.errors import ConfigError
from rlexp.models.loading import load_tokenizer
from rlexp.runtime import RunContext
from rlexp.scorer import Scorer
from rlexp.scoring.factory import judge_key
from rlexp.store import Record, content_hash


def eval_config(cfg: DictConfig) -> DictConfig:
    """``cfg`` with ``prompts`` replaced by the evaluation prompt set (``cfg`` itself when ``eval_prompts`` is null).

    ``eval_prompts`` is a name of conf/prompts/ or a prompts node (a mapping; its ``preset`` key, if any,
    names the conf/prompts/ file merged under the rest). Everything that samples or judges the evaluation
    set (the baseline pool, the trained policy's pools, the gold judge) reads the returned config, so a
    baseline with BoN's settings on that set is BoN's pool.
    """
    ref = cfg.get("eval_prompts")
    if ref is None:
        return cfg
    if isinstance(ref, str):
        preset, rest = ref, {}
    elif isinstance(ref, (Mapping, DictConfig)):
        rest = OmegaConf.to_container(ref, resolve=False) if isinstance(ref, DictConfig) else dict(ref)
        preset = rest.pop("preset", None)
    else:
        raise ConfigError(f"eval_prompts={ref!r}: give a name of conf/prompts/ or a prompts node (or null)")
    node = OmegaConf.structured(PromptsConfig)
    if preset is not None:
        path = CONF_DIR / "prompts" / f"{preset}.yaml"
        if not path.is_file():
            names = ", ".join(sorted(p.stem for p in (CONF_DIR / "prompts").glob("*.yaml")))
            raise ConfigError(f"eval_prompts={preset!r} is not a prompt set of conf/prompts/; valid: {names}")
        node = OmegaConf.merge(node, OmegaConf.load(path))
    try:
        node = OmegaConf.merge(node, rest)
    except Exception as exc:  # noqa: BLE001 - an unknown key or a bad type: one line naming the setting
        raise ConfigError(f"eval_prompts: {' '.join(str(exc).split())[:300]}") from None
    out = copy.deepcopy(cfg)
    out.prompts = node
    return out


def _prompt_key(p: Any) -> tuple[str, tuple[str, ...]]:
    """What makes two prompts the same prompt whatever their ids: the normalised text and the user's posts."""
    norm = lambda text: " ".join(str(text).split()).lower()  # noqa: E731
    return norm(p.prompt), tuple(norm(post.text) for post in p.profile)


def disjoint_train_prompts(cfg: DictConfig, train: list[Any], train_id: str, evals: list[Any]
                           ) -> tuple[list[Any], str, dict[str, Any]]:
    """The training prompts, disjoint from the evaluation prompts, and their id.

    Evaluating on the training set's own held-out split (``eval_prompts`` null), that split must be another
    split and share no prompt id with it (a shared one is a leak in the data: an error). Evaluating on
    another prompt set, training prompts whose text (and user posts) equal an evaluation prompt's are left
    out of training (exact matches only, after collapsing whitespace and case: no n-gram decontamination),
    counted in the returned info; the id then names what was left out.
    """
    if cfg.get("eval_prompts") is None:
        if cfg.prompts.split == cfg.prompts.train_split:
            raise ConfigError(f"prompts={cfg.prompts.name}: the evaluation split {cfg.prompts.split!r} is the training "
                              "split; evaluate on another prompt set (eval_prompts=<name of conf/prompts/>)")
        ids = {p.prompt_id for p in evals}
        shared = [p.prompt_id for p in train if p.prompt_id in ids]
        if shared:
            raise ConfigError(f"prompts={cfg.prompts.name}: {len(shared)} prompt(s) are in both the "
                              f"{cfg.prompts.train_split!r} and the {cfg.prompts.split!r} split (first: {shared[0]!r})")
        return train, train_id, {}
    keys = {_prompt_key(p) for p in evals}
    kept = [p for p in train if _prompt_key(p) not in keys]
    dropped = [p.prompt_id for p in train if _prompt_key(p) in keys]
    assert not {_prompt_key(p) for p in kept} & keys  # noqa: S101 - the invariant the records rely on
    if not dropped:
        return train, train_id, {"train_prompts_excluded": 0}
    return kept, f"{train_id}-minus-{content_hash(sorted(dropped))}", {
        "train_prompts_excluded": len(dropped), "train_prompts_excluded_ids": dropped[:20]}


def eval_pool(cfg: DictConfig, policy: str) -> tuple[Record, list[Any]]:
    """The trained policy's pool of the eval prompts, sampled like BoN's."""
    return inputs.pool(OmegaConf.merge(cfg, {"policy": policy, "logger": {"kind": "none"}}))


def judge_pools(cfg: DictConfig, before: Record, after: Record, prompts: list[Any], reward: Scorer,
                 rm_id: str) -> dict[str, Any]:
    """Per-prompt mean gold and proxy scores of the initial and the trained policy's pools."""
    kind = prompts[0].kind if prompts else str(cfg.prompts.name)
    gkey = judge_key(cfg.judge, kind, cfg.prompts)
    rm_key = inputs.rm_scores_key(rm_id, cfg)

    def judged(pool: Record, key: dict[str, Any], factory: Any, role: str) -> np.ndarray:
        scores, _ = inputs.pool_scores(cfg, pool_record=pool, prompts=prompts, scorer_key=key,
                                       make_scorer=factory, role=role)
        return scores.mean(axis=1)

    return {
        "gold_before": judged(before, gkey, lambda: inputs.gold_judge(cfg, kind), "gold"),
        "gold_after": judged(after, gkey, lambda: inputs.gold_judge(cfg, kind), "gold"),
        "proxy_before": judged(before, rm_key, lambda: reward, "rm"),
        "proxy_after": judged(after, rm_key, lambda: reward, "rm"),
        "judge": gkey,
    }


class CheckpointEvaluator:
    """Evaluates the policy every ``cfg.eval_every`` PPO updates on the evaluation set (``ecfg.prompts``).

    At each such update the policy is saved under ``checkpoints/step-<n>`` in the run's folder, sampled
    exactly like the final policy (a pool record named by that store path) and gold-judged (a pool-scores
    record); the point goes to ``checkpoints.jsonl`` at once, so a killed run keeps its finished
    evaluations. The random states (torch, CUDA, numpy, random) are restored after each evaluation: the
    training draws what it would have drawn without it. Only the best checkpoint's weights are kept
    (``best_checkpoint``); the others are deleted once judged. Under several ranks the main process
    evaluates while the others wait at a barrier.
    """

    def __init__(self, ctx: RunContext, ecfg: DictConfig, gold_before: np.ndarray, weights: np.ndarray | None,
                 tokenizer_path: str) -> None:
        self.ctx, self.ecfg, self.gold_before, self.weights = ctx, ecfg, gold_before, weights
        self.tokenizer_path = tokenizer_path
        self.points: list[dict[str, Any]] = []
        self.best: tuple[float, Path] | None = None
        self.log = ctx.work_dir / "checkpoints.jsonl"
        self.log.unlink(missing_ok=True)
        shutil.rmtree(ctx.work_dir / "checkpoints", ignore_errors=True)

    def __call__(self, step: int, trainer: Any) -> None:
        every = int(self.ecfg.eval_every)
        if step % every or step >= int(trainer.state.max_steps):  # the last update: the final evaluation's
            return
        accelerator = trainer.accelerator
        if accelerator.is_main_process:
            self._evaluate(step, adapter.unwrapped_policy(trainer))
        accelerator.wait_for_everyone()

    def _evaluate(self, step: int, policy: Any) -> None:
        import torch

        states = (torch.random.get_rng_state(), torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
                  np.random.get_state(), random.getstate())
        folder = self.ctx.work_dir / "checkpoints" / f"step-{step:06d}"
        try:
            policy.save_pretrained(folder, safe_serialization=True)
            load_tokenizer(self.tokenizer_path, padding_side="left").save_pretrained(folder)
            pool, prompts = eval_pool(self.ecfg, f"{inputs.STORE_PREFIX}{self.ctx.store.relative(folder)}")
            gold = gold_means(self.ecfg, pool, prompts)
            self.add(step, gold, pool.id)
        finally:
            torch.random.set_rng_state(states[0])
            if states[1] is not None:
                torch.cuda.set_rng_state_all(states[1])
            np.random.set_state(states[2])
            random.setstate(states[3])
        if self.best is None or self.points[-1]["gold"] > self.best[0]:
            if self.best is not None:
                shutil.rmtree(self.best[1], ignore_errors=True)
            self.best = (self.points[-1]["gold"], folder)
        else:
            shutil.rmtree(folder, ignore_errors=True)

    def add(self, step: int, gold: np.ndarray, pool_id: str) -> dict[str, Any]:
        point = curve_point(step, gold, self.gold_before, self.weights, self.ecfg, pool_id)
        self.points.append(point)
        with self.log.open("a") as f:
            f.write(json.dumps(point) + "\n")
        return point


def curve_point(step: int, gold: np.ndarray, gold_before: np.ndarray, weights: np.ndarray | None, cfg: DictConfig,
                pool_id: str) -> dict[str, Any]:
    """One point of the gold curve: the policy's mean gold on the evaluation set and its gain over the initial
    policy, each with its bootstrap 95% CI over prompts (a suite: weighted to the mean over tasks)."""
    w = np.ones(len(gold)) if weights is None else weights
    g, d = gold * w, (gold - gold_before) * w
    return {"step": int(step), "gold": float(g.mean()), "gold_ci": list(bootstrap_ci(g, n_boot=cfg.n_boot, seed=cfg.seed)),
            "gain": float(d.mean()), "gain_ci": list(bootstrap_ci(d, n_boot=cfg.n_boot, seed=cfg.seed)), "pool": pool_id}


def gold_means(cfg: DictConfig, pool: Record, prompts: list[Any]) -> np.ndarray:
    """Per-prompt mean gold of a pool of the evaluation prompts (cached pool-scores record, as the baseline's)."""
    kind = prompts[0].kind if prompts else str(cfg.prompts.name)
    scores, _ = inputs.pool_scores(cfg, pool_record=pool, prompts=prompts, scorer_key=judge_key(cfg.judge, kind, cfg.prompts),
                                   make_scorer=lambda: inputs.gold_judge(cfg, kind), role="gold")
    return scores.mean(axis=1)


def checkpoint_metrics(cfg: DictConfig, points: list[dict[str, Any]], final: dict[str, Any]) -> dict[str, Any]:
    """The curve, the best checkpoint's gain (optimistic: chosen on the evaluation set) and the headline gain."""
    trained = [p for p in points if p["step"] > 0]
    best = max(trained, key=lambda p: p["gold"])  # the first of equals: the earliest
    out = {"checkpoints": points, "eval_every": int(cfg.eval_every), "best_checkpoint_step": best["step"],
           "gain_best_checkpoint": best["gain"], "gain_best_checkpoint_ci": best["gain_ci"],
           "gold_best_checkpoint": best["gold"]}
    pick = best if cfg.headline_gain == "best_checkpoint" else final
    out["headline_gain"] = {"which": str(cfg.headline_gain), "step": pick["step"], "gain": pick["gain"],
                            "gain_ci": pick["gain_ci"],
                            "note": "best checkpoint: picked on the evaluation set, optimistic"
                            if cfg.headline_gain == "best_checkpoint" else "the final policy"}
    return out
