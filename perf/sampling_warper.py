"""Pool sampling with rlexp's fused temperature/top-k/top-p warper against transformers' three
warpers (the sampling settings of every sandbox pool: temperature 1, top-k 50, top-p 0.9), side by
side in one process: one warper step on a batch of logits, then whole pools of the tiny_llama policy
on general prompts, alternating. Prints the times, the ratios and whether the samples are identical
(they must be); then the opt-in ``sampling.draw=kept`` (a draw among the kept tokens, so other
samples), timed in the same rounds.

    python perf/sampling_warper.py [n_prompts=48] [n=16] [rounds=3]
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
import time

from _common import tiny_policy_and_prompts, use_root


def main() -> None:
    n_prompts = int(sys.argv[1]) if len(sys.argv) > 1 else 48
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    use_root("sampling")
    import torch

    from rlexp.config.nodes import SamplingConfig
    from rlexp.downstream import sampling
    from rlexp.downstream.sampling import HFSampler, chat_messages
    from rlexp.downstream.top_k_top_p import TopKTopPWarper

    cfg, prompts, tok, model = tiny_policy_and_prompts("general", n_prompts)
    s = SamplingConfig(n=n, top_k=cfg.sampling.top_k, top_p=cfg.sampling.top_p, temperature=cfg.sampling.temperature,
                       max_new_tokens=cfg.sampling.max_new_tokens, batch_prompts=cfg.sampling.batch_prompts)
    rows = s.batch_prompts * n

    # One warper step on logits of the policy's shape.
    warper = TopKTopPWarper(s.temperature, s.top_k, s.top_p)
    logits = torch.randn(rows, len(tok), generator=torch.Generator().manual_seed(0)) * 3
    ids = torch.zeros(rows, 1, dtype=torch.long)

    def per_call(fn) -> float:
        fn(ids, logits)
        start = time.perf_counter()
        for _ in range(200):
            fn(ids, logits)
        return (time.perf_counter() - start) / 200 * 1e3

    t_ref, t_fused = per_call(warper.reference), per_call(warper)

    # Whole pools, the two warpers alternating so that both see the same machine load.
    fused_args = sampling._warping
    transformers_args = lambda s: {"do_sample": True, "temperature": s.temperature, "top_p": s.top_p,  # noqa: E731
                                   "top_k": s.top_k}
    sampler = HFSampler(model, tok)
    convs = [chat_messages(p, s.profile_k, s.policy_profile) for p in prompts]
    kept = dataclasses.replace(s, draw="kept")
    runs = (("transformers", transformers_args, s), ("rlexp", fused_args, s), ("rlexp draw=kept", fused_args, kept))
    times: dict[str, list[float]] = {name: [] for name, _, _ in runs}
    samples: dict[str, list[str]] = {}
    for _ in range(rounds):
        for name, args, settings in runs:
            sampling._warping = args
            start = time.perf_counter()
            texts = [t for b in range(0, len(convs), s.batch_prompts)
                     for row in sampler.generate(convs[b : b + s.batch_prompts], settings, b) for t, _, _ in row]
            times[name].append(time.perf_counter() - start)
            samples.setdefault(name, texts)
    sampling._warping = fused_args

    print(f"{len(convs)} general prompts x {n} samples, {s.max_new_tokens} new tokens, batches of {rows} rows, "
          f"vocabulary {len(tok)}, temperature {s.temperature}, top-k {s.top_k}, top-p {s.top_p}, 1 thread")
    print(f"one warper step ({rows} x {len(tok)} logits): transformers {t_ref:.2f} ms, rlexp {t_fused:.2f} ms, "
          f"x{t_ref / t_fused:.2f}")
    ref, fused = statistics.median(times["transformers"]), statistics.median(times["rlexp"])
    print(f"pool, median of {rounds}: transformers' warpers {ref:.1f} s, rlexp's {fused:.1f} s, x{ref / fused:.2f} "
          f"({len(convs) * n / ref:.0f} -> {len(convs) * n / fused:.0f} samples/s)")
    same = sum(a == b for a, b in zip(samples["transformers"], samples["rlexp"], strict=True))
    print(f"identical samples: {same}/{len(samples['rlexp'])}")
    drawn = statistics.median(times["rlexp draw=kept"])
    print(f"opt-in sampling.draw=kept (the token drawn among the kept ones, other samples): {drawn:.1f} s, "
          f"x{ref / drawn:.2f} transformers' warpers ({len(convs) * n / drawn:.0f} samples/s)")


if __name__ == "__main__":
    main()
