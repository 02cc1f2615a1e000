"""PPO episodes per second on personalized prompts: the policy shown the user's posts (world version
3's study: 3 posts, ~600 prompt tokens) against the planner's aspects (``sampling.policy_profile=plan``,
the default since version 4), same policy, same reward, same settings, side by side in one process.

    python perf/ppo_policy_profile.py          # target: plan >= 3x the episodes/s of posts
"""

from __future__ import annotations

import copy
import time

from _common import compose, use_root

SETTINGS = {
    "per_device_train_batch_size": 8, "total_episodes": 64, "num_ppo_epochs": 4, "response_length": 96,
    "use_cpu": True, "bf16": False, "stop_token": "eos", "num_sample_generations": 0, "report_to": "none",
    "save_strategy": "no", "local_rollout_forward_batch_size": 8, "seed": 0, "learning_rate": 5e-5,
    "disable_tqdm": True, "kl_coef": 0.0, "lam": 1.0, "gamma": 1.0, "vf_coef": 0.1,
}


def main() -> None:
    use_root("ppo")
    from rlexp import inputs
    from rlexp.downstream import ppo as adapter
    from rlexp.models.loading import load_causal_lm, load_reward_model, load_tokenizer

    cfg = compose("ppo", "rm=judge:rubric", "prompts=personalized")
    policy_path, _, _ = inputs.policy(cfg)
    prompts, _ = inputs.prompt_set(cfg, split="train")
    tok = load_tokenizer(policy_path, padding_side="left")
    judge = inputs.gold_judge(cfg, "personalized")

    def run(profile: str, k: int) -> tuple[float, float]:
        dataset = adapter.tokenise_prompts(tok, prompts, k, profile)
        tokens = sum(len(ids) for ids in dataset["input_ids"]) / len(dataset)
        policy = load_causal_lm(policy_path)
        value = load_reward_model(policy_path, init_head=True)
        value.config.pad_token_id = tok.pad_token_id
        args = adapter.ppo_config(f"/tmp/rlexp-bench-ppo-{profile}", dict(SETTINGS))
        reward = adapter.reward_module(judge, tok, prompts, k, profile=profile)
        t0 = time.perf_counter()
        adapter.train_ppo(args=args, tokenizer=tok, policy=policy, ref_policy=copy.deepcopy(policy), value_model=value,
                          reward_model=reward, dataset=dataset)
        return SETTINGS["total_episodes"] / (time.perf_counter() - t0), tokens

    posts, posts_tokens = run("posts", 3)
    plan, plan_tokens = run("plan", 10)
    print(f"posts (3 posts, {posts_tokens:.0f} prompt tokens): {posts:.2f} episodes/s")
    print(f"plan  (planner aspects, {plan_tokens:.0f} prompt tokens): {plan:.2f} episodes/s")
    print(f"ratio plan / posts: {plan / posts:.1f}x (target >= 3x)")


if __name__ == "__main__":
    main()
