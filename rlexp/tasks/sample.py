"""`rlexp sample`: a pool of n samples per prompt from a policy, generated once and cached.

Every reward model's Best-of-N reuses the same pool; PPO's evaluation samples the trained policy
through this task too (n = 1 is BoN@1). Chunks are written atomically, so a killed run resumes
from its last complete chunk and ends with the same pool as an uninterrupted run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from rlexp.config import SampleConfig  # noqa: F401  (schema registration)
from rlexp.data.loaders import load_prompts
from rlexp.downstream.sampling import HFSampler, SamplingSettings, vllm_available, write_pool
from rlexp.errors import ConfigError
from rlexp.models.loading import check_generation_length
from rlexp.runtime import RunContext, execute, hydra_entry
from rlexp.store import Record, Store


def settings(cfg: DictConfig) -> SamplingSettings:
    s = cfg.sampling
    out = SamplingSettings(
        n=s.n,
        temperature=s.temperature,
        top_p=s.top_p,
        max_new_tokens=s.max_new_tokens,
        batch_prompts=s.batch_prompts,
        chunk_prompts=s.chunk_prompts,
        profile_k=s.profile_k,
        seed=cfg.seed,
    )
    out.validate()
    return out


#: ``policy=store:<path relative to the store root>``: a policy folder inside the run store.
STORE_PREFIX = "store:"


def resolve_policy(cfg: DictConfig) -> tuple[str, str, str]:
    """(model path or hub id, input id, lineage) of the policy to sample."""
    from rlexp.models.lineages import resolve_lineage
    from rlexp.models.loading import check_model_dir, is_local

    if cfg.get("policy"):
        ref = str(cfg.policy)
        if ref.startswith(STORE_PREFIX):
            # A model inside the store (e.g. a PPO run's policy before its record exists): named by its
            # store-relative path, so the pool's id does not depend on where the store lives.
            path = Store(cfg.paths.store).resolve(ref[len(STORE_PREFIX):])
            check_model_dir(path)
            return str(path), ref, str(cfg.model.lineage)
        record = Store(cfg.paths.store).find(ref) if "/" not in ref else None
        if record is not None:
            if "policy" not in record.artifacts:
                raise ConfigError(f"record {record.id} ({record.task}) has no policy artifact")
            path = str(Store(cfg.paths.store).resolve(record.artifacts["policy"]))
            return path, record.id, str(record.info.get("policy_lineage", cfg.model.lineage))
        if is_local(ref):
            check_model_dir(Path(ref).expanduser())
            return str(Path(ref).expanduser().resolve()), str(Path(ref).expanduser().resolve()), str(cfg.model.lineage)
        return ref, ref, str(cfg.model.lineage)
    lineage = resolve_lineage(cfg)
    path = lineage.checkpoint(cfg.model.checkpoint)
    return path, f"{lineage.record_id or path}:{cfg.model.checkpoint}", lineage.name


def load_prompt_set(cfg: DictConfig, split: str | None = None) -> tuple[list[Any], str]:
    """The configured prompt split, and the id of where it came from."""
    from rlexp.tasks.data import resolve_ref

    path, data_id = resolve_ref(cfg.prompts.source, cfg)
    split = split or cfg.prompts.split
    return load_prompts(path, split=split, limit=cfg.prompts.limit), f"{data_id or path}:{split}"


def _sample(ctx: RunContext, cfg: DictConfig, policy_path: str, prompts: list[Any]) -> dict[str, Any]:
    import torch

    from rlexp.models.loading import load_causal_lm, load_tokenizer, quiet_libraries

    quiet_libraries()
    s = settings(cfg)
    if cfg.sampling.backend == "vllm":
        if not vllm_available():
            raise ConfigError("sampling.backend=vllm needs vllm installed and a GPU (pip install 'rlexp[vllm]')")
        raise ConfigError("sampling.backend=vllm is not wired yet; use sampling.backend=hf")
    device = "cuda" if torch.cuda.is_available() and cfg.runtime.device != "cpu" else "cpu"
    tokenizer = load_tokenizer(policy_path, padding_side="left")
    model = load_causal_lm(policy_path)
    sampler = HFSampler(model, tokenizer, device)
    pool, info = write_pool(sampler, prompts, s, ctx.work_dir, progress=ctx.cfg.progress)
    ctx.add_artifact("pool", pool)
    ctx.info.update(info)
    import pyarrow.parquet as pq

    table = pq.read_table(pool).to_pydict()
    counts = table["token_count"]
    return {
        "prompts": len(prompts),
        "samples": len(counts),
        "mean_tokens": sum(counts) / max(1, len(counts)),
        "eos_share": sum(r == "eos" for r in table["finish_reason"]) / max(1, len(counts)),
    }


def run(cfg: DictConfig) -> Record:
    """Sample (or find) the pool for (policy, prompt set, n, sampling settings, seed)."""
    settings(cfg)
    prompts, prompts_id = load_prompt_set(cfg)
    policy_path, policy_id, _ = resolve_policy(cfg)
    check_generation_length(policy_path, int(cfg.sampling.max_new_tokens), "sampling.max_new_tokens")
    inputs = {"policy": policy_id, "prompts": prompts_id}
    return execute("sample", cfg, lambda ctx: _sample(ctx, cfg, policy_path, prompts), inputs)


main = hydra_entry("sample", run)

if __name__ == "__main__":
    main()
