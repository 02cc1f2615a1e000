"""Pool sampling: rlexp's sampler (each prompt encoded once, KV states copied into a static cache
for its n samples) against plain ``generate(num_return_sequences=n)``, on the same personalized
prompts with the same seed, side by side in one process. Prints both times, the ratio, and whether
the samples are identical (they must be).

    python perf/sampling_prefill.py [n_prompts=32] [n=16]
"""

from __future__ import annotations

import sys
import time

from _common import tiny_policy_and_prompts, use_root


def main() -> None:
    n_prompts = int(sys.argv[1]) if len(sys.argv) > 1 else 32
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    use_root("sampling")
    import torch

    from rlexp.config.nodes import SamplingConfig
    from rlexp.downstream.sampling import HFSampler, chat_messages

    cfg, prompts, tok, model = tiny_policy_and_prompts("personalized", n_prompts)
    s = SamplingConfig(n=n, top_k=cfg.sampling.top_k, profile_k=cfg.sampling.profile_k, max_new_tokens=cfg.sampling.max_new_tokens)
    convs = [chat_messages(p, s.profile_k) for p in prompts]
    sampler = HFSampler(model, tok)
    lengths = [len(tok.apply_chat_template(c, add_generation_prompt=True, tokenize=True, return_dict=False)) for c in convs]

    def plain(batch: list, seed: int) -> list[str]:
        texts = [tok.apply_chat_template(c, add_generation_prompt=True, tokenize=False) for c in batch]
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        torch.manual_seed(seed)
        with torch.inference_mode():
            out = model.generate(**enc, do_sample=True, temperature=s.temperature, top_p=s.top_p, top_k=s.top_k or 0,
                                 max_new_tokens=s.max_new_tokens, num_return_sequences=n,
                                 pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
        rows = []
        for ids in out[:, enc["input_ids"].shape[1]:].tolist():
            ids = ids[: ids.index(tok.eos_token_id)] if tok.eos_token_id in ids else [t for t in ids if t != tok.pad_token_id]
            rows.append(tok.decode(ids, skip_special_tokens=True).strip())
        return rows

    batches = [convs[i : i + s.batch_prompts] for i in range(0, len(convs), s.batch_prompts)]
    t0 = time.perf_counter()
    expected = [t for i, b in enumerate(batches) for t in plain(b, i)]
    t_plain = time.perf_counter() - t0
    t0 = time.perf_counter()
    got = [t for i, b in enumerate(batches) for row in sampler.generate(b, s, i) for t, _, _ in row]
    t_rlexp = time.perf_counter() - t0

    print(f"{len(convs)} personalized prompts (mean {sum(lengths) / len(lengths):.0f} tokens), n={n}, "
          f"{s.max_new_tokens} new tokens, batches of {s.batch_prompts} prompts, 1 thread")
    print(f"plain generate(num_return_sequences=n): {t_plain:7.1f} s")
    print(f"rlexp sampler (one prefill per prompt): {t_rlexp:7.1f} s   speed-up x{t_plain / t_rlexp:.1f}")
    print(f"identical samples: {sum(a == b for a, b in zip(expected, got, strict=True))}/{len(got)}")


if __name__ == "__main__":
    main()
