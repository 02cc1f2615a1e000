"""Both tiny lineages: build from scratch with padded and with packed batches
(``model.tiny.pack_batches``), side by side, and load from cache (target <= 2 s).

Packing keeps every step's examples, so the two builds' training losses must agree; the time is
what packing saves. Each lineage trains in its own process on one thread, as the study runs them.

    python perf/lineage_build.py
"""

from __future__ import annotations

import shutil
import time
from functools import partial

from _common import compose, use_root

LINEAGES = ("tiny_llama", "tiny_qwen")


def main() -> None:
    root = use_root("lineage")
    shutil.rmtree(root / "runs" / "records" / "lineage", ignore_errors=True)
    shutil.rmtree(root / "runs" / "artifacts" / "lineage", ignore_errors=True)
    from rlexp import inputs
    from rlexp.job_graph import Job, run_jobs
    from rlexp.store import Store
    from rlexp.tasks.study_plan import Step, run_step

    inputs.sandbox_world(compose("train_rm"))
    store = Store(root / "runs")
    for packed in (False, True):
        label = "packed" if packed else "padded"
        # As the study builds them: two worker processes of one thread each, one lineage per worker.
        overrides = {n: ["logger=none", "progress=false", f"model={n}", f"model.tiny.pack_batches={str(packed).lower()}"]
                     for n in LINEAGES}
        jobs = [Job(n, (), lambda _ids, n=n, o=o: Step("lineage", n, o, compose="train_rm")) for n, o in overrides.items()]
        t0 = time.perf_counter()
        results = run_jobs(jobs, partial(run_step, threads=1), 2)
        wall = time.perf_counter() - t0
        for name, (rid, err) in results.items():
            assert rid is not None, f"{name}: {err}"
            rec = store.get(rid, "lineage")
            m = rec.metrics
            print(f"{label} {name:<11} {rec.ended - rec.started:6.1f}s  pretrain loss {m['pretrain/loss']:.4f}  "
                  f"sft loss {m['sft/loss']:.4f}")
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
