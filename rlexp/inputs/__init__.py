"""The one place that builds what a task needs on first use.

A task asks here for its inputs: the sandbox world, a data file, a lineage, a policy, a prompt
set, a sample pool, a pool's scores, a reward model, the gold judge. Whatever is missing is
produced as a store record through :func:`rlexp.runtime.execute` (so it is built once and found
by every later run). Library code below this module never runs a producing step, never writes
to the store and never imports a task; the one library package that opens the store is
``analysis``, which reads finished records for `correlate`.

The `data` and `sample` tasks are thin entries over :func:`sandbox_record` and :func:`sample`:
those steps are inputs of every other task, so their bodies live here.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from omegaconf import DictConfig, OmegaConf

from rlexp.benchmarks.user_pairs import HISTORY_FORMAT, UserPairCase, user_pair_cases
from rlexp.config import CONF_DIR
from rlexp.config.choices import JudgeName, SamplingBackend
from rlexp.config.nodes import JudgeConfig, ModelConfig, SamplingConfig
from rlexp.config.tasks import SampleConfig
from rlexp.data.loaders import load_prism_survey, load_prompt_set, load_user_pairs
from rlexp.data.schemas import PromptItem
from rlexp.downstream.pool_scoring import pool_matrix, score_pool_texts
from rlexp.downstream.sampling import HFSampler, Sampler, write_pool
from rlexp.downstream.vllm_sampler import VLLMSampler
from rlexp.errors import ConfigError, misread_as_number

# The sandbox worlds and data references live in worlds.py; tasks reach them through this package.
from rlexp.inputs import worlds
from rlexp.inputs.worlds import comparison_world as comparison_world
from rlexp.inputs.worlds import is_sandbox_ref as is_sandbox_ref
from rlexp.inputs.worlds import read_id as read_id
from rlexp.inputs.worlds import sandbox_record as sandbox_record
from rlexp.inputs.worlds import sandbox_world as sandbox_world
from rlexp.models.chat_lm import ChatLM
from rlexp.models.lineages import Lineage, build_tiny_lineage, tiny_spec
from rlexp.models.loading import (
    check_generation_length,
    check_model_dir,
    is_local,
    load_causal_lm,
    load_tokenizer,
    quiet_libraries,
)
from rlexp.runtime import RunContext, execute
from rlexp.sandbox.judges import rubric_score, verifier_score
from rlexp.scorer import Scorer
from rlexp.scoring.factory import RMRef, check_judged, judge_model, judge_name, llm_judge, reward_scorer, typed
from rlexp.scoring.judges import PairwiseJudge, RMGoldJudge, SandboxJudge
from rlexp.scoring.suite_grader import PreferenceJudge, RMPreference, SuiteGraderJudge
from rlexp.store import Record, Store, content_hash
from rlexp.suite.loading import load_suite, suite_metrics, task_settings


def data_ref(ref: str, cfg: DictConfig) -> tuple[str, str | None]:
    """A data reference as a loadable path/hub id, plus the record id it came from: ``sandbox:<name>``
    (a file of the sandbox world), ``policy:<model preset>`` (on-policy pairs, :mod:`.on_policy`), or
    a local path / hub id (returned unchanged, no record)."""
    from rlexp.inputs import on_policy  # it builds on sample() and pool_scores() below

    if on_policy.is_on_policy_ref(ref):
        return on_policy.on_policy_pairs(ref, cfg)
    return worlds.data_ref(ref, cfg)


def user_pair_benchmark(cfg: DictConfig, name: str, ids: dict[str, str]) -> list[UserPairCase]:
    """The scored votes of Chatbot Arena- or PRISM-Personalized (``cfg.benchmark[name]``) with their
    users' context; records the data it read in ``ids`` (the evaluation's inputs)."""
    b = cfg.benchmark[name]
    persona = str(b.user_context) == "persona"
    if persona and b.survey is None:
        raise ConfigError(f"benchmark.{name}.user_context=persona needs benchmark.{name}.survey (PRISM's survey)")
    path, data_id = data_ref(b.source, cfg)
    items = load_user_pairs(path, split=str(b.split))
    ids[name] = read_id(data_id, path, items)
    surveys = None
    if persona:
        survey_path, survey_id = data_ref(b.survey, cfg)
        surveys = load_prism_survey(survey_path)
        ids[f"{name}_survey"] = read_id(survey_id, survey_path, surveys)
    if str(b.user_context) == "history":
        ids[f"{name}_history_format"] = str(HISTORY_FORMAT)
    cases = user_pair_cases(items, str(b.eval_split), surveys)
    return cases[: b.limit] if b.limit is not None else cases


# --- lineages and policies ----------------------------------------------------------------------


def lineage(cfg: DictConfig) -> Lineage:
    """The lineage ``cfg.model`` names, building a tiny one (once) if needed."""
    model_cfg = cfg.model
    if model_cfg.get("name_or_path"):
        ref = str(model_cfg.name_or_path)
        return Lineage(model_cfg.lineage, ref, ref, None, bool(model_cfg.get("trust_remote_code", False)))
    if not model_cfg.get("tiny"):
        raise ConfigError(f"model {model_cfg.get('name')!r} has neither name_or_path nor a tiny spec")
    sandbox_dir, data_id = sandbox_world(cfg)
    spec = tiny_spec(model_cfg)
    lineage_cfg = OmegaConf.create(
        {
            "paths": OmegaConf.to_container(cfg.paths, resolve=True),
            "logger": OmegaConf.to_container(cfg.logger, resolve=True),
            "runtime": OmegaConf.to_container(cfg.runtime, resolve=True),
            "experiment_name": cfg.get("experiment_name", "default"),
            "progress": cfg.get("progress", True),
            "lineage": model_cfg.lineage,
            "tiny": OmegaConf.to_container(model_cfg.tiny, resolve=True),
        }
    )

    def body(ctx: RunContext) -> dict[str, Any]:
        metrics = build_tiny_lineage(spec, sandbox_dir, ctx.work_dir)
        ctx.add_artifact("base", ctx.work_dir / "base")
        ctx.add_artifact("instruct", ctx.work_dir / "instruct")
        ctx.tracker.artifact(f"base-{ctx.rid}", "model", ctx.work_dir / "base")
        return metrics

    record = execute("lineage", lineage_cfg, body, inputs={"data": data_id})
    store = Store(cfg.paths.store)
    return Lineage(
        name=str(model_cfg.lineage),
        base=str(store.resolve(record.artifacts["base"])),
        instruct=str(store.resolve(record.artifacts["instruct"])),
        record_id=record.id,
    )


def model_path(cfg: Any, ref: str) -> str:
    """A lineage name of conf/model/ (its instruct checkpoint), a folder or a hub id."""
    conf = CONF_DIR / "model" / f"{ref}.yaml"
    if not conf.is_file():
        return ref
    # Any task's config (which may have no `model` key) plus the lineage's model node, through
    # the schema, so the lineage hashes exactly as when `model=<name>` composes it.
    node = OmegaConf.merge(OmegaConf.structured(ModelConfig), OmegaConf.load(conf))
    sub = OmegaConf.merge(OmegaConf.create(OmegaConf.to_container(cfg, resolve=True)), {"model": node})
    return lineage(sub).instruct


#: ``policy=store:<path relative to the store root>``: a policy folder inside the run store.
STORE_PREFIX = "store:"


def policy(cfg: DictConfig) -> tuple[str, str, str]:
    """(model path or hub id, input id, lineage) of the policy a sample/BoN/PPO config names."""
    if not cfg.get("policy"):
        built = lineage(cfg)
        path = built.checkpoint(cfg.model.checkpoint)
        return path, f"{built.record_id or path}:{cfg.model.checkpoint}", built.name
    ref = str(cfg.policy)
    store = Store(cfg.paths.store)
    if ref.startswith(STORE_PREFIX):
        # A model inside the store (e.g. a PPO run's policy before its record exists): named by its
        # store-relative path, so the pool's id does not depend on where the store lives.
        path = store.resolve(ref[len(STORE_PREFIX):])
        check_model_dir(path)
        return str(path), ref, str(cfg.model.lineage)
    record = store.find(ref) if "/" not in ref else None
    if record is not None:
        store.checked(record)  # a policy folder cut short: one line naming the record to delete
        if "policy" not in record.artifacts:
            raise ConfigError(f"record {record.id} ({record.task}) has no policy artifact")
        path = str(store.resolve(record.artifacts["policy"]))
        return path, record.id, str(record.info.get("policy_lineage", cfg.model.lineage))
    if is_local(ref):
        local = Path(ref).expanduser()
        check_model_dir(local)
        return str(local.resolve()), str(local.resolve()), str(cfg.model.lineage)
    return ref, ref, str(cfg.model.lineage)


# --- prompts and pools --------------------------------------------------------------------------


def prompt_set(cfg: DictConfig, split: str | None = None) -> tuple[list[PromptItem], str]:
    """The configured prompt split, and the id of where it came from.

    A suite prompt set (``prompts.tasks``) reads each task's own dataset; its id is the tasks'
    settings (sources, splits, limits, seeds) and a hash of the prompts read. Any other reads
    ``prompts.source`` in its ``prompts.format`` (rlexp's prompt files or LaMP-QA): a sandbox prompt
    set is named by its world's record, any other by where it was read and a hash of what was read.
    """
    if cfg.prompts.get("tasks"):
        if split not in (None, cfg.prompts.split):
            raise ConfigError(f"prompts={cfg.prompts.name} is a suite of evaluation tasks with no {split!r} split; "
                              "train PPO on another prompt set")
        tasks = task_settings(cfg.prompts.tasks)
        items = load_suite(tasks)
        # A task's metric is the gold judge's (suite_metrics), not the prompts': it never names a prompt set.
        settings = content_hash({k: {f: x for f, x in dataclasses.asdict(v).items() if f != "metric"}
                                 for k, v in tasks.items()})
        return items, f"suite:{settings}#{worlds.rows_hash(items)}"  # the rows: a task export edited in place
    if not cfg.prompts.source:
        raise ConfigError(f"prompts={cfg.prompts.name} names neither a source nor suite tasks")
    path, data_id = data_ref(cfg.prompts.source, cfg)
    items, prompts_id = load_prompt_set(cfg.prompts, path, split or cfg.prompts.split, data_id)
    # A sandbox prompt set is named by its world's record; any other by what was read from it.
    return items, prompts_id if data_id is not None else f"{prompts_id}#{worlds.rows_hash(items)}"


# The `rm` override of a BoN/PPO config composed only for its pool: sample_config drops the RM.
UNUSED_RM = "rm=unused"


def sample_config(cfg: DictConfig) -> DictConfig:
    """The `sample` task config a BoN/PPO config implies (same keys -> same pool record)."""
    keys = [k for k in SampleConfig.__dataclass_fields__ if k != "task_name"]
    return OmegaConf.merge(OmegaConf.structured(SampleConfig), {k: cfg[k] for k in keys if k in cfg})


def _sample(ctx: RunContext, cfg: DictConfig, policy_path: str, prompts: list[PromptItem]) -> dict[str, Any]:
    import torch  # heavy: only a run that samples pays for it

    quiet_libraries()
    settings: SamplingConfig = OmegaConf.to_object(cfg.sampling)
    if settings.backend == SamplingBackend.vllm:
        sampler: Sampler = VLLMSampler(policy_path, seed=int(cfg.seed), engine=settings.vllm_engine)
    else:
        device = "cuda" if torch.cuda.is_available() and cfg.runtime.device != "cpu" else "cpu"
        sampler = HFSampler(load_causal_lm(policy_path), load_tokenizer(policy_path, padding_side="left"), device)
    ctx.info["backend"] = str(settings.backend)
    pool, info = write_pool(sampler, prompts, settings, ctx.work_dir, seed=int(cfg.seed), progress=ctx.cfg.progress)
    ctx.add_artifact("pool", pool)
    ctx.info.update(info)
    table = pq.read_table(pool).to_pydict()
    counts = table["token_count"]
    return {
        "prompts": len(prompts),
        "samples": len(counts),
        "mean_tokens": sum(counts) / max(1, len(counts)),
        "eos_share": sum(r == "eos" for r in table["finish_reason"]) / max(1, len(counts)),
    }


def sample(cfg: DictConfig, loaded: tuple[list[PromptItem], str] | None = None) -> Record:
    """The pool record of a `sample` config: (policy, prompt set, n, sampling settings, seed).
    ``loaded``: the config's prompt set and its id when the caller has read them already."""
    OmegaConf.to_object(cfg.sampling)  # its checks run here: bad settings fail before any model loads
    prompts, prompts_id = loaded or prompt_set(cfg)
    policy_path, policy_id, _ = policy(cfg)
    check_generation_length(policy_path, int(cfg.sampling.max_new_tokens), "sampling.max_new_tokens")
    ids = {"policy": policy_id, "prompts": prompts_id}
    return execute("sample", cfg, lambda ctx: _sample(ctx, cfg, policy_path, prompts), ids)


def pool(cfg: DictConfig) -> tuple[Record, list[PromptItem]]:
    """The pool record for a BoN/PPO config's (policy, prompts, sampling, seed), sampled on first use."""
    scfg = sample_config(cfg)
    loaded = prompt_set(scfg)  # read (and, outside the sandbox, hashed) once for the record and the caller
    if "judge" in cfg:  # a BoN/PPO config: its gold judge can judge these prompts, checked before sampling
        check_judged(cfg.judge, loaded[0], cfg.prompts.source)
    return sample(scfg, loaded), loaded[0]


def first_pool_config(cfg: DictConfig) -> DictConfig:
    """The config of the pool a BoN/PPO run reads before anything else: BoN's pool, or PPO's baseline
    (the initial policy's pool). A PPO config's ``baseline_samples`` sets that baseline's samples per
    prompt; unset, it has ``sampling.n`` like the trained policy's pool."""
    n = cfg.get("baseline_samples")
    return cfg if n is None else OmegaConf.merge(cfg, {"sampling": {"n": int(n)}})


def rm_scores_key(rm_id: str, cfg: DictConfig) -> dict[str, Any]:
    """What identifies an RM's scores of a pool; BoN and PPO use the same key, so they share the cache."""
    return {"rm": rm_id, "scorer": OmegaConf.to_container(cfg.scorer, resolve=True),
            "profile": OmegaConf.to_container(cfg.profile, resolve=True)}


def pool_scores(
    cfg: DictConfig,
    *,
    pool_record: Record,
    prompts: Sequence[PromptItem],
    scorer_key: Mapping[str, Any],
    make_scorer: Callable[[], Scorer],
    role: str,
) -> tuple[np.ndarray, str]:
    """[P, n] scores of the pool by the scorer ``scorer_key`` identifies (cached), and the record id.

    Another RM, another k or another judge never regenerates the pool, and a second run with the
    same scorer never re-scores it.
    """
    store = Store(cfg.paths.store)
    texts, n = pool_matrix(str(store.resolve(pool_record.artifacts["pool"])), prompts)

    def body(ctx: RunContext) -> dict[str, Any]:
        scorer = make_scorer()
        flat = score_pool_texts(scorer, prompts, texts, role, bool(ctx.cfg.progress))
        rows = {
            "prompt_id": [p.prompt_id for p in prompts for _ in range(n)],
            "sample_index": [j for _ in prompts for j in range(n)],
            "score": flat.tolist(),
        }
        path = ctx.work_dir / "scores.parquet"
        pq.write_table(pa.table(rows), path)
        ctx.add_artifact("scores", path)
        ctx.info["scorer_stats"] = {"items": scorer.stats.items, "truncated": scorer.stats.truncated,
                                    "parse_failures": scorer.stats.parse_failures, **scorer.stats.extra}
        if getattr(scorer, "tokenizer_report", None):
            ctx.info["tokenizer"] = scorer.tokenizer_report
        return {"mean": float(flat.mean()), "std": float(flat.std()), "n": int(flat.size)}

    sub = OmegaConf.create(
        {
            "paths": OmegaConf.to_container(cfg.paths, resolve=True),
            "logger": {"kind": "none"},
            "runtime": OmegaConf.to_container(cfg.runtime, resolve=True),
            "progress": cfg.get("progress", True),
            "scorer": json.loads(json.dumps(dict(scorer_key), default=str)),
            "role": role,
        }
    )
    record = execute("pool_scores", sub, body, inputs={"pool": pool_record.id})
    table = pq.read_table(store.resolve(record.artifacts["scores"])).to_pydict()
    scores = np.asarray(table["score"], dtype=np.float64).reshape(len(prompts), n)
    return scores, record.id


# --- reward models and judges -------------------------------------------------------------------


def rm(ref: str, store: Store, lineage: str | None = None) -> RMRef:
    """A reward model: a train_rm record id (or unique prefix), a local folder or a hub id. The lineage of
    a folder or hub id is ``lineage`` (``rm_lineage``), else a folder's config.json ``model_type``."""
    ref = str(ref)
    if not ref or ref == "???":
        raise ConfigError("rm is required: a train_rm record id, a local folder or a hub id")
    record = store.find(ref) if "/" not in ref else None
    if record is not None:
        store.checked(record)  # weights cut short: one line naming the record to delete
        if "model" not in record.artifacts:
            raise ConfigError(f"record {record.id} ({record.task}) has no model artifact")
        lineage_name = record.info.get("lineage", {}).get("lineage")
        return RMRef(str(store.resolve(record.artifacts["model"])), record.id, lineage_name, record.id)
    if (hint := misread_as_number(ref)) and not Path(ref).exists():
        raise ConfigError(f"rm={ref!r} is no record, folder or hub id{hint}")
    if is_local(ref):
        path = check_model_dir(Path(ref).expanduser())
        try:  # a PEFT adapter folder has no config.json
            model_type = json.loads((path / "config.json").read_text()).get("model_type")
        except (OSError, ValueError):
            model_type = None
        return RMRef(str(path.resolve()), str(path.resolve()), lineage or model_type, None)
    return RMRef(ref, ref, lineage, None)


def gold_judge(cfg: Any, kind: str) -> Scorer:
    """The gold judge a BoN/PPO config names, as a scorer."""
    name = judge_name(cfg.judge, kind)
    if name == "rubric":
        return SandboxJudge(rubric_score, name="rubric")
    if name == "verifier":
        return SandboxJudge(verifier_score, name="verifier")
    if name == "rm":
        ref = rm(str(cfg.judge.rm), Store(cfg.paths.store))
        return RMGoldJudge(reward_scorer(ref, cfg.scorer, {"mode": "none"}), name=f"rm-gold:{ref.input_id}")
    def local() -> ChatLM:
        return ChatLM.from_pretrained(model_path(cfg, str(cfg.judge.model)))

    cache = Store(cfg.paths.store).root / "cache" / "judge"
    if name == "grader":
        preference: PreferenceJudge | None = None
        if cfg.judge.get("rm"):
            ref = rm(str(cfg.judge.rm), Store(cfg.paths.store))
            preference = RMPreference(reward_scorer(ref, cfg.scorer, {"mode": "none"}, name=f"preference:{ref.input_id}"))
        elif cfg.judge.get("model"):
            preference = PairwiseJudge(judge_model(typed(cfg.judge, JudgeConfig), local, cache))
        metrics = suite_metrics(cfg.prompts.tasks) if cfg.prompts.get("tasks") else {}
        return SuiteGraderJudge(preference, workers=int(cfg.judge.workers), timeout=float(cfg.judge.timeout),
                                metrics=metrics)
    return llm_judge(cfg.judge, local, cache)


def reward(cfg: Any) -> tuple[Scorer, str, str | None]:
    """The PPO reward: an RM reference or ``judge:<name>`` (a sandbox judge as an upper bound).

    Returns (scorer, input id, lineage of the RM or None).
    """
    ref = str(cfg.rm)
    if ref.startswith("judge:"):
        name = ref.split(":", 1)[1]
        if name not in tuple(JudgeName):
            raise ConfigError(f"rm=judge:<name>: judge={name!r} is not one of {', '.join(JudgeName)}")
        jcfg = OmegaConf.merge(cfg, {"judge": {"name": name}})
        return gold_judge(jcfg, str(cfg.prompts.name)), ref, None
    found = rm(ref, Store(cfg.paths.store), cfg.get("rm_lineage"))
    return reward_scorer(found, cfg.scorer, cfg.profile), found.input_id, found.lineage
