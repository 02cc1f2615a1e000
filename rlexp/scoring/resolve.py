"""Turning a config's reward-model reference into a scorer.

A reference is a record id of the store (a trained RM), a local folder or a hub id. The
reference resolves to a stable input id for record hashing: the record id, or the path/hub id.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlexp.errors import ConfigError
from rlexp.store import Store


@dataclass(frozen=True)
class RMRef:
    """A resolved reward model: where its files are and what identifies it."""

    path: str
    input_id: str  # record id, or the path / hub id
    lineage: str | None  # the lineage it was trained from, when known
    record_id: str | None


def resolve_rm(ref: str, store: Store, task: str = "train_rm") -> RMRef:
    """Resolve a record id (or unique prefix), a local folder or a hub id."""
    from rlexp.models.loading import check_model_dir, is_local

    ref = str(ref)
    if not ref or ref == "???":
        raise ConfigError("rm is required: a train_rm record id, a local folder or a hub id")
    record = store.find(ref) if "/" not in ref else None
    if record is not None:
        if "model" not in record.artifacts:
            raise ConfigError(f"record {record.id} ({record.task}) has no model artifact")
        lineage = record.info.get("lineage", {}).get("lineage")
        return RMRef(str(store.resolve(record.artifacts["model"])), record.id, lineage, record.id)
    if is_local(ref):
        path = check_model_dir(Path(ref).expanduser())
        return RMRef(str(path.resolve()), str(path.resolve()), None, None)
    return RMRef(ref, ref, None, None)


def reward_scorer(rm: RMRef, scorer_cfg: Mapping[str, Any], profile_cfg: Mapping[str, Any], *, name: str | None = None) -> Any:
    """A sequence-classification scorer with the configured rendering and profile mode."""
    from rlexp.scoring.planner import make_planner
    from rlexp.scoring.reward_model import RewardModelScorer, ScorerSettings

    settings = ScorerSettings(
        max_length=int(scorer_cfg.get("max_length", 2048)),
        truncation_side=str(scorer_cfg.get("truncation_side", "right")),
        batch_size=int(scorer_cfg.get("batch_size", 32)),
        dtype=str(scorer_cfg.get("dtype", "auto")),
        device=str(scorer_cfg.get("device", "auto")),
        sort_by_length=bool(scorer_cfg.get("sort_by_length", True)),
        fallback_template=str(scorer_cfg.get("fallback_template", "tulu")),
        profile_mode=str(profile_cfg.get("mode", "none")),
        profile_k=int(profile_cfg.get("k", 10)),
        separator=str(profile_cfg.get("separator", "\n\n")),
        tokenizer=str(scorer_cfg.get("tokenizer", "auto")),
        tokenizer_check=str(scorer_cfg.get("tokenizer_check", "warn")),
    )
    planner = make_planner(settings.profile_mode, str(profile_cfg.get("planner", "sandbox")), k=settings.profile_k)
    return RewardModelScorer.from_pretrained(
        rm.path, settings, name=name or rm.input_id, planner=planner,
        trust_remote_code=bool(scorer_cfg.get("trust_remote_code", False)),
    )


def judge_name(judge_cfg: Mapping[str, Any], kind: str) -> str:
    """``auto`` picks the sandbox rubric judge for personalized prompts and the verifier otherwise."""
    name = str(judge_cfg.get("name", "auto"))
    if name == "auto":
        return "rubric" if kind == "personalized" else "verifier"
    if name not in ("rubric", "verifier", "rm", "llm"):
        raise ConfigError(f"judge={name!r} is not one of auto, rubric, verifier, rm, llm")
    # The schema's None default outlives the group's ??? (OmegaConf merges never apply MISSING),
    # so an unset judge model is caught here, before any sampling, instead of as a bad path later.
    if name == "rm" and not judge_cfg.get("rm"):
        raise ConfigError("judge=rm needs judge.rm=<train_rm record id | folder | hub id>")
    if name == "llm" and not judge_cfg.get("model"):
        raise ConfigError("judge=llm needs judge.model=<lineage name | folder | hub id>")
    return name


def judge_key(judge_cfg: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """What identifies a gold judge's scores (the cache key of its pool scores)."""
    name = judge_name(judge_cfg, kind)
    key: dict[str, Any] = {"judge": name}
    if name == "rm":
        key["rm"] = str(judge_cfg.get("rm"))
    if name == "llm":
        key["model"] = str(judge_cfg.get("model"))
        key["variant"] = str(judge_cfg.get("variant", "lampqa"))
    return key


def model_path(cfg: Any, ref: str) -> str:
    """A lineage name of conf/model/ (its instruct checkpoint), a folder or a hub id."""
    from omegaconf import OmegaConf

    from rlexp.config import CONF_DIR

    conf = CONF_DIR / "model" / f"{ref}.yaml"
    if conf.is_file():
        # Any task's config (which may have no `model` key) plus the lineage's model node.
        from rlexp.config import ModelConfig
        from rlexp.models.lineages import resolve_lineage

        # Through the schema, so the lineage hashes exactly as when `model=<name>` composes it.
        node = OmegaConf.merge(OmegaConf.structured(ModelConfig), OmegaConf.load(conf))
        sub = OmegaConf.merge(OmegaConf.create(OmegaConf.to_container(cfg, resolve=True)), {"model": node})
        return resolve_lineage(sub).instruct
    return ref


def gold_judge(cfg: Any, kind: str) -> Any:
    """The gold judge a BoN/PPO config names, as a scorer."""
    from rlexp.scoring.judges import AspectLLMJudge, PRBListJudge, RMGoldJudge, SandboxJudge

    name = judge_name(cfg.judge, kind)
    if name == "rubric":
        from rlexp.sandbox.judges import rubric_score

        return SandboxJudge(rubric_score, name="rubric")
    if name == "verifier":
        from rlexp.sandbox.judges import verifier_score

        return SandboxJudge(verifier_score, name="verifier")
    if name == "rm":
        rm = resolve_rm(str(cfg.judge.rm), Store(cfg.paths.store))
        return RMGoldJudge(reward_scorer(rm, cfg.scorer, {"mode": "none"}), name=f"rm-gold:{rm.input_id}")
    from rlexp.scoring.generative import ChatLM

    lm = ChatLM.from_pretrained(model_path(cfg, str(cfg.judge.model)))
    if str(cfg.judge.variant) == "prb":
        return PRBListJudge(lm)
    return AspectLLMJudge(lm)


def reward_for(cfg: Any) -> tuple[Any, str, str | None]:
    """The PPO reward: an RM reference or ``judge:<name>`` (a sandbox judge as an upper bound).

    Returns (scorer factory result, input id, lineage of the RM or None).
    """
    ref = str(cfg.rm)
    if ref.startswith("judge:"):
        from omegaconf import OmegaConf

        jcfg = OmegaConf.merge(cfg, {"judge": {"name": ref.split(":", 1)[1]}})
        return gold_judge(jcfg, str(cfg.prompts.name)), ref, None
    rm = resolve_rm(ref, Store(cfg.paths.store))
    return reward_scorer(rm, cfg.scorer, cfg.profile), rm.input_id, rm.lineage
