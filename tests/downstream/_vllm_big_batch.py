"""8 long prompts x 8 samples through rlexp's VLLMSampler on CPU: more than one engine step's 4,096 tokens
(run by tests/downstream/test_vllm_sampling.py in the vLLM environment: python _vllm_big_batch.py MODEL)."""
import sys
import time

from rlexp.config.nodes import SamplingConfig
from rlexp.downstream.vllm_sampler import VLLMSampler

if __name__ == "__main__":
    words = "rice bread garden tomato bike knitting paint camera".split()
    prompts = [[{"role": "user", "content": " ".join(words[(i + j) % 8] for j in range(120))}] for i in range(8)]
    s = SamplingConfig(n=8, max_new_tokens=8, temperature=1.0, top_p=1.0, top_k=None)
    t = time.time()
    sampler = VLLMSampler(sys.argv[1], seed=0, engine={"max_model_len": 1024, "enforce_eager": True})
    tok = sampler.llm.get_tokenizer()
    total = sum(len(tok(tok.apply_chat_template(p, add_generation_prompt=True, tokenize=False))["input_ids"]) for p in prompts) * s.n
    print("prompt tokens in one call:", total, "dtype:", sampler.dtype, flush=True)
    a = sampler.generate(prompts, s, seed=5)
    b = sampler.generate(prompts, s, seed=5)
    print("samples:", sum(len(x) for x in a), "same seed same pool:", a == b, "secs:", round(time.time() - t))
    counts = [c for row in a for (_, c, r) in row]
    print("token counts:", sorted(set(counts)), "reasons:", sorted({r for row in a for (_, _, r) in row}))
    sampler.close()
    sys.exit(0 if a == b and total > 4096 else 1)
