"""Scorers from typed settings: a reward model's scorer, and what identifies a gold judge.

Finding a reward model (a store record, a folder, a hub id) happens in :mod:`rlexp.inputs`;
this module only turns a resolved reference and settings into a scorer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from rlexp.config.choices import JudgeName
from rlexp.config.nodes import JudgeConfig, ProfileConfig, ScorerConfig
from rlexp.data.schemas import PromptItem
from rlexp.errors import ConfigError, DataError
from rlexp.models.chat_lm import ChatModel
from rlexp.models.endpoint_lm import EndpointLM, check_endpoint
from rlexp.sandbox.judges import missing_hidden
from rlexp.scorer import Scorer
from rlexp.scoring.judges import AspectLLMJudge, PRBListJudge
from rlexp.scoring.planner import make_planner
from rlexp.scoring.reward_model import RewardModelScorer
from rlexp.suite import GRADER_VERSION
from rlexp.suite import KIND as SUITE_KIND
from rlexp.suite import task as suite_task
from rlexp.suite.loading import suite_metrics, task_settings


@dataclass(frozen=True)
class RMRef:
    """A resolved reward model: where its files are and what identifies it."""

    path: str
    input_id: str  # record id, or the path / hub id
    lineage: str | None  # the lineage it was trained from, when known
    record_id: str | None


def typed(node: Any, schema: type) -> Any:
    """A config node as its dataclass (``schema``): a composed node, a plain mapping or already typed."""
    if isinstance(node, schema):
        return node
    if isinstance(node, DictConfig):
        return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(schema), node))
    return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(schema), dict(node)))


def reward_scorer(rm: RMRef, scorer: Any, profile: Any, *, name: str | None = None) -> RewardModelScorer:
    """A sequence-classification scorer with the configured rendering and profile mode."""
    scorer_cfg: ScorerConfig = typed(scorer, ScorerConfig)
    profile_cfg: ProfileConfig = typed(profile, ProfileConfig)
    planner = make_planner(str(profile_cfg.mode), str(profile_cfg.planner), k=profile_cfg.k)
    return RewardModelScorer.from_pretrained(rm.path, scorer_cfg, profile_cfg, name=name or rm.input_id,
                                             planner=planner, trust_remote_code=scorer_cfg.trust_remote_code)


def judge_name(judge: Mapping[str, Any] | JudgeConfig, kind: str) -> str:
    """``auto`` picks the sandbox rubric judge for personalized prompts, the task graders for a suite
    and the verifier otherwise."""
    judge_cfg: JudgeConfig = typed(judge, JudgeConfig)
    name = judge_cfg.name
    if name == JudgeName.auto:
        return {"personalized": "rubric", SUITE_KIND: "grader"}.get(kind, "verifier")
    if name == JudgeName.grader and kind != SUITE_KIND:
        raise ConfigError(f"judge=grader grades the suite's tasks, not {kind} prompts (judge=auto picks a judge)")
    # The schema's None default outlives the group's ??? (OmegaConf merges never apply MISSING),
    # so an unset judge model is caught here, before any sampling, instead of as a bad path later.
    if name == JudgeName.rm and not judge_cfg.rm:
        raise ConfigError("judge=rm needs judge.rm=<train_rm record id | folder | hub id>")
    if name == JudgeName.llm and not judge_cfg.model:
        raise ConfigError("judge=llm needs judge.model=<lineage name | folder | hub id>")
    if name in (JudgeName.llm, JudgeName.grader) and judge_cfg.endpoint is not None:
        check_endpoint(judge_cfg.endpoint)
    return str(name)


def judge_key(judge: Mapping[str, Any] | JudgeConfig, kind: str, prompts: Mapping[str, Any] | None = None
              ) -> dict[str, Any]:
    """What identifies a gold judge's scores (the cache key of its pool scores); for the suite's graders,
    the metrics ``prompts.tasks`` sets away from the tasks' defaults are part of it."""
    judge_cfg: JudgeConfig = typed(judge, JudgeConfig)
    name = judge_name(judge_cfg, kind)
    key: dict[str, Any] = {"judge": name}
    if name == "rm":
        key["rm"] = str(judge_cfg.rm)
    if name == "llm":
        key["model"] = str(judge_cfg.model)
        key["variant"] = str(judge_cfg.variant)
        if judge_cfg.endpoint is not None:
            # Not the URL: the same model behind another URL gives the same scores. But a server
            # (another inference engine) is not the local model, so its scores are kept apart.
            key["served"] = True
    if name == "grader":
        # A grader library's release can change a grade, so the versions are part of the cache key.
        key["libraries"] = grader_versions()
        key["grader_version"] = GRADER_VERSION
        metrics = suite_metrics(prompts["tasks"]) if prompts and prompts.get("tasks") else {}
        if metrics:
            key["metrics"] = metrics
        key["timeout"] = judge_cfg.timeout
        if judge_cfg.rm:
            key["preference"] = str(judge_cfg.rm)
        elif judge_cfg.model:
            key["preference"] = {"model": str(judge_cfg.model), **({"served": True} if judge_cfg.endpoint else {})}
    return key


def judge_model(judge_cfg: JudgeConfig, local: Callable[[], ChatModel], cache_dir: Path) -> ChatModel:
    """The judge's chat model: served when ``judge.endpoint`` is set (answers cached under ``cache_dir``),
    otherwise the local model ``local()`` loads."""
    if judge_cfg.endpoint is None:
        return local()
    return EndpointLM(judge_cfg.endpoint, model=str(judge_cfg.model), cache_dir=cache_dir,
                      api_key_env=judge_cfg.api_key_env, concurrency=judge_cfg.concurrency,
                      max_retries=judge_cfg.max_retries, request_timeout=judge_cfg.request_timeout)


def served_judges(cfg: Any) -> list[JudgeConfig]:
    """The served judges (``judge.endpoint``) a BoN/PPO/sample config will call: the gold LLM judge, the
    suite's served preference judge, and PPO's ``rm=judge:llm`` reward. Empty for a config without one."""
    if "judge" not in cfg or cfg.judge is None:
        return []
    judge_cfg: JudgeConfig = typed(cfg.judge, JudgeConfig)
    if judge_cfg.endpoint is None or not judge_cfg.model:
        return []
    prompts = cfg.get("prompts") or {}
    name = judge_name(judge_cfg, prompt_kind(prompts))
    as_reward = str(cfg.get("rm") or "") == "judge:llm"
    if name == "llm" or as_reward or (name == "grader" and not judge_cfg.rm):
        return [judge_cfg]
    return []


def judge_cache_dir(cfg: Any) -> Path:
    """Where served judges' answers are cached: ``<store>/cache/judge``."""
    from rlexp.store import Store

    return Store(cfg.paths.store).root / "cache" / "judge"


def probe_served_judges(cfg: Any, cache_dir: Path) -> list[str]:
    """Ask every served judge ``cfg`` needs for its model list (``GET /models``) before the first expensive
    step (sampling a pool, scoring it, training): a judge that is down, or serves another model, fails
    in one line at once instead of after the pool is sampled and RM-scored. Returns the endpoints probed."""
    probed = []
    for judge_cfg in served_judges(cfg):
        lm = EndpointLM(judge_cfg.endpoint, model=str(judge_cfg.model), cache_dir=cache_dir,
                        api_key_env=judge_cfg.api_key_env, max_retries=0)
        lm.probe()
        probed.append(str(judge_cfg.endpoint))
    return probed


def llm_judge(judge: Mapping[str, Any] | JudgeConfig, local: Callable[[], ChatModel], cache_dir: Path) -> Scorer:
    """The ``name=llm`` gold judge on :func:`judge_model`'s chat model."""
    judge_cfg: JudgeConfig = typed(judge, JudgeConfig)
    lm = judge_model(judge_cfg, local, cache_dir)
    if str(judge_cfg.variant) == "prb":
        return PRBListJudge(lm)
    return AspectLLMJudge(lm)


def grader_versions() -> dict[str, str]:
    """The installed versions of the suite's grader libraries (``missing`` where absent)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for dist in ("lm-eval", "math-verify", "evalplus", "alpaca-eval"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "missing"
    return out


def prompt_kind(prompts: Mapping[str, Any]) -> str:
    """The kind of a prompt set's items, known from its config before loading it (picks the judge early)."""
    return SUITE_KIND if prompts.get("tasks") else str(prompts.get("name"))


def check_gold_judge(judge: Mapping[str, Any] | JudgeConfig, prompts: Mapping[str, Any]) -> None:
    """Fail before any sampling or training when ``judge`` cannot judge the ``prompts`` set."""
    kind = prompt_kind(prompts)
    judge_key(judge, kind)
    task_settings(prompts.get("tasks") or {})
    judge_cfg: JudgeConfig = typed(judge, JudgeConfig)
    if judge_name(judge_cfg, kind) == "grader" and not (judge_cfg.rm or judge_cfg.model):
        needs = [t for t in task_settings(prompts.get("tasks") or {}) if suite_task(t).grade is None]
        if needs:
            raise ConfigError(f"prompts={prompts.get('name')} includes {needs[0]}, graded by a preference judge "
                              "against its reference outputs: set judge.rm=<train_rm id | folder | hub id>")


def check_judged(judge: Mapping[str, Any] | JudgeConfig, prompts: Sequence[PromptItem], source: object) -> None:
    """Every prompt holds the hidden fields the gold judge reads (``judge`` for the set's kind, as BoN
    and PPO pick it): one line naming the prompt file, the prompt and the field, before any sampling,
    instead of a KeyError once the pool is sampled."""
    if not prompts:
        return
    name = judge_name(judge, prompts[0].kind)
    for item in prompts:
        problem = missing_hidden(item.hidden, name)
        if problem is not None:
            raise DataError(f"{source}: prompt {item.prompt_id!r}: {problem}; judge={name} reads it")
