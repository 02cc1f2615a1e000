"""Both tiny lineages: build from scratch (target <= 3 min on 2 cores) and load from cache (<= 2 s).

    python perf/lineage_build.py
"""

from __future__ import annotations

import shutil
import time

from _common import compose, use_root


def main() -> None:
    root = use_root("lineage")
    shutil.rmtree(root / "runs" / "records" / "lineage", ignore_errors=True)
    from rlexp import inputs

    inputs.sandbox_world(compose("train_rm"))
    t0 = time.perf_counter()
    for name in ("tiny_llama", "tiny_qwen"):
        t = time.perf_counter()
        lin = inputs.lineage(compose("train_rm", f"model={name}"))
        print(f"{name:<11} built in {time.perf_counter() - t:6.1f}s -> {lin.base}")
    print(f"both built in {time.perf_counter() - t0:.1f}s (target <= 180s)")
    from rlexp.models.loading import load_causal_lm, load_tokenizer

    for name in ("tiny_llama", "tiny_qwen"):
        t = time.perf_counter()
        lin = inputs.lineage(compose("train_rm", f"model={name}"))
        load_tokenizer(lin.instruct)
        model = load_causal_lm(lin.instruct)
        n = sum(p.numel() for p in model.parameters())
        print(f"{name:<11} cached load {time.perf_counter() - t:5.2f}s (target <= 2s), {n / 1e6:.2f}M parameters")


if __name__ == "__main__":
    main()
