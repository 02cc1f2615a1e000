"""PPO with the policy's logits at the response positions only (`trainer.response_logits_only=true`)
against TRL's logits over every position, side by side in one process, at the study's personalized
settings: seconds per update, the positions each training forward pass computes logits for, and how far
the trained weights and the logged curves move (float noise: the output layer's weight gradient sums
fewer rows).

    python perf/ppo_response_logits.py [--episodes 64] [--rounds 2]

Builds the tiny_llama policy into the bench root if absent (RLEXP_BENCH_ROOT, perf/_common.py).
"""

from __future__ import annotations

import argparse
import copy
import time

from _common import compose, use_root


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=64, help="PPO episodes per run (8 per update)")
    ap.add_argument("--rounds", type=int, default=2, help="runs of each setting, alternated")
    args = ap.parse_args()
    use_root("ppo_logits")
    import numpy as np
    import torch
    from transformers import set_seed

    from rlexp import inputs
    from rlexp.downstream import ppo as adapter
    from rlexp.models.loading import load_causal_lm, load_reward_model, load_tokenizer
    from rlexp.tasks.ppo import _settings

    torch.set_num_threads(1)
    cfg = compose("ppo", "rm=judge:rubric", "model=tiny_llama", "prompts=personalized",
                  f"trainer.total_episodes={args.episodes}")
    policy_path, _, _ = inputs.policy(cfg)
    reward, _, _ = inputs.reward(cfg)
    prompts, _ = inputs.prompt_set(cfg, split="train")
    tok = load_tokenizer(policy_path, padding_side="left")
    view = (cfg.sampling.profile_k, cfg.sampling.policy_profile)
    dataset = adapter.tokenise_prompts(tok, prompts, *view)

    def run(tail: bool) -> tuple[float, dict, dict, int]:
        set_seed(int(cfg.seed))
        policy = load_causal_lm(policy_path)
        value = load_reward_model(policy_path, init_head=True)
        value.config.pad_token_id = tok.pad_token_id
        positions: list[int] = []  # sequence length of every output-layer call of more than one position
        policy.lm_head.register_forward_hook(lambda _m, inp, _o: positions.append(inp[0].shape[1]) if inp[0].shape[1] > 1 else None)
        module = adapter.reward_module(reward, tok, prompts, view[0], profile=view[1])
        ppo_args = adapter.ppo_config(f"/tmp/rlexp-bench-ppo-logits-{tail}", _settings(cfg, "none", bf16=False, use_cpu=True))
        t0 = time.perf_counter()
        trained, _, metrics, curves = adapter.train_ppo(
            args=ppo_args, tokenizer=tok, policy=policy, ref_policy=copy.deepcopy(policy), value_model=value,
            reward_model=module, dataset=dataset, response_logits_only=tail)
        per_update = (time.perf_counter() - t0) / metrics["steps"]
        weights = {k: v.detach().clone() for k, v in trained.state_dict().items()}
        return per_update, weights, curves, max(positions)

    times: dict[bool, list[float]] = {False: [], True: []}
    out: dict[bool, tuple] = {}
    for _ in range(args.rounds):
        for tail in (False, True):
            per_update, weights, curves, longest = run(tail)
            times[tail].append(per_update)
            out[tail] = (weights, curves, longest)
    full, tail = np.median(times[False]), np.median(times[True])
    print(f"logits over every position : {full:.3f} s/update (runs {', '.join(f'{t:.3f}' for t in times[False])}); "
          f"longest training forward: logits at {out[False][2]} positions")
    print(f"logits at the responses    : {tail:.3f} s/update (runs {', '.join(f'{t:.3f}' for t in times[True])}); "
          f"longest training forward: logits at {out[True][2]} positions")
    print(f"ratio: {full / tail:.2f}x faster per update")
    wa, wb = out[False][0], out[True][0]
    diff = max(float((wa[k] - wb[k]).abs().max()) for k in wa)
    print(f"trained weights: largest difference {diff:.2e}")
    for key in ("objective/scores", "objective/kl"):
        a, b = np.asarray(out[False][1][key]), np.asarray(out[True][1][key])
        print(f"{key}: largest difference over {len(a)} updates {np.max(np.abs(a - b)):.2e}")


if __name__ == "__main__":
    main()
