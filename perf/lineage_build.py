"""Both tiny lineages: build from scratch with padded and with packed batches
(``model.tiny.pack_batches``), side by side, and load from cache (target <= 2 s).

Packing keeps every step's examples, so the two builds' training losses must agree; the time is
what packing saves. Each lineage trains in its own process on one thread, as the study runs them.

    python perf/lineage_build.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _common import compose, use_root

LINEAGES = ("tiny_llama", "tiny_qwen")
BUILD = """
import sys, time, torch
sys.path.insert(0, {perf!r})
from _common import compose
from rlexp import inputs
torch.set_num_threads(1)
t = time.perf_counter()
lin = inputs.lineage(compose("train_rm", "model={name}", "model.tiny.pack_batches={packed}"))
print(time.perf_counter() - t, lin.record_id)
"""


def _build(name: str, packed: bool) -> tuple[float, str]:
    """(seconds, record id) of one lineage built in a fresh one-thread process."""
    code = BUILD.format(perf=str(Path(__file__).resolve().parent), name=name, packed=str(packed).lower())
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    seconds, rid = out.stdout.split()[-2:]
    return float(seconds), rid


def main() -> None:
    root = use_root("lineage")
    shutil.rmtree(root / "runs" / "records" / "lineage", ignore_errors=True)
    shutil.rmtree(root / "runs" / "artifacts" / "lineage", ignore_errors=True)
    from rlexp import inputs
    from rlexp.store import Store

    inputs.sandbox_world(compose("train_rm"))
    store = Store(root / "runs")
    for packed in (False, True):
        t0 = time.perf_counter()
        with ThreadPoolExecutor(2) as pool:  # both lineages at once, one core each
            futures = {name: pool.submit(_build, name, packed) for name in LINEAGES}
            built = {name: future.result() for name, future in futures.items()}
        wall = time.perf_counter() - t0
        label = "packed" if packed else "padded"
        for name, (seconds, rid) in built.items():
            m = store.get(rid, "lineage").metrics
            print(f"{label} {name:<11} {seconds:6.1f}s  pretrain loss {m['pretrain/loss']:.4f}  sft loss {m['sft/loss']:.4f}")
        print(f"{label} both lineages (side by side): {wall:.1f}s")
    from rlexp.models.loading import load_causal_lm, load_tokenizer

    for name in LINEAGES:
        t = time.perf_counter()
        lin = inputs.lineage(compose("train_rm", f"model={name}"))
        load_tokenizer(lin.instruct)
        model = load_causal_lm(lin.instruct)
        n = sum(p.numel() for p in model.parameters())
        print(f"{name:<11} cached load {time.perf_counter() - t:5.2f}s (target <= 2s), {n / 1e6:.2f}M parameters")


if __name__ == "__main__":
    main()
