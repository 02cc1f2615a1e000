"""PPO time per update on a tiny lineage: rlexp's adapter (reward through the scorer interface)
against a bare TRL script with the same settings in the same process (target: overhead <= 10%),
and the time for 128 episodes (target <= 2 min on 2 cores).

    python perf/ppo_overhead.py
"""

from __future__ import annotations

import copy
import time

from _common import compose, use_root

SETTINGS = {
    "per_device_train_batch_size": 8, "total_episodes": 128, "num_ppo_epochs": 4, "response_length": 48,
    "use_cpu": True, "bf16": False, "stop_token": "eos", "num_sample_generations": 0, "report_to": "none",
    "save_strategy": "no", "local_rollout_forward_batch_size": 8, "seed": 0, "learning_rate": 3e-5,
    "disable_tqdm": True,
}


def main() -> None:
    use_root("ppo")
    from rlexp import inputs
    from rlexp.downstream import ppo as adapter
    from rlexp.models.loading import load_causal_lm, load_reward_model, load_tokenizer
    from rlexp.runtime import quote
    from rlexp.scoring.factory import reward_scorer
    from rlexp.store import Store
    from rlexp.tasks import train_rm

    rid = train_rm.run(compose("train_rm", "model=tiny_llama", "data=general", "data.max_rows=400")).id
    cfg = compose("ppo", f"rm={quote(rid)}", "prompts=general", "profile=none")
    policy_path, _, _ = inputs.policy(cfg)
    prompts, _ = inputs.prompt_set(cfg, split="train")
    tok = load_tokenizer(policy_path, padding_side="left")
    rm = inputs.rm(rid, Store(cfg.paths.store))
    dataset = adapter.tokenise_prompts(tok, prompts, 10)

    def models():
        policy = load_causal_lm(policy_path)
        value = load_reward_model(policy_path, init_head=True)
        value.config.pad_token_id = tok.pad_token_id
        return policy, copy.deepcopy(policy), value

    def timed(reward_model, name: str) -> float:
        policy, ref, value = models()
        args = adapter.ppo_config(f"/tmp/rlexp-bench-ppo-{name}", dict(SETTINGS))
        t0 = time.perf_counter()
        _, _, metrics, _ = adapter.train_ppo(args=args, tokenizer=tok, policy=policy, ref_policy=ref, value_model=value,
                                          reward_model=reward_model, dataset=dataset)
        return (time.perf_counter() - t0) / metrics["steps"], time.perf_counter() - t0

    # Bare TRL: the RM is a same-tokenizer HF sequence classifier handed to PPOTrainer directly.
    bare_rm = load_reward_model(rm.path)
    bare_rm.config.pad_token_id = tok.pad_token_id
    bare, bare_total = timed(bare_rm, "bare")
    ours_rm = adapter.reward_module(reward_scorer(rm, cfg.scorer, cfg.profile), tok, prompts, 10)
    ours, ours_total = timed(ours_rm, "rlexp")
    print(f"bare TRL PPO     : {bare:.3f}s/update")
    print(f"rlexp PPO adapter: {ours:.3f}s/update  (overhead {ours / bare - 1:+.1%}, target <= 10%)")
    print(f"128 episodes     : {ours_total:.1f}s with rlexp, {bare_total:.1f}s bare (target <= 120s)")


if __name__ == "__main__":
    main()
