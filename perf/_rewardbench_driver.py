"""Runs rewardbench 0.1.4's ``scripts/run_v2.py`` unchanged in its own environment (it pins
transformers 4.51), timing its inference calls and keeping the texts and scores they saw.

Its pipeline moves every batch to "cuda"; on a machine without CUDA that one call is sent to the
CPU instead. Nothing else is altered: a forward pre-hook on its model counts the token positions each
batch runs (padding included), as rlexp's scorer counts its own. With ``--passes N`` run_v2 runs N times in
this one process (the first pass warms it up, as rlexp's scorer is warm after its first), and each pass's
seconds are kept in ``pass_seconds``. Usage (from perf/scoring_vs_rewardbench.py):

    <side python> _rewardbench_driver.py OUT.json [--passes N] -- <run_v2 arguments>
"""

import json
import sys
import time

import torch
import transformers
from rewardbench.models import pipeline as rb_pipeline

out_path, args = sys.argv[1], sys.argv[sys.argv.index("--") + 1 :]
passes = int(sys.argv[sys.argv.index("--passes") + 1]) if "--passes" in sys.argv[: sys.argv.index("--")] else 1
if not torch.cuda.is_available():
    to = transformers.BatchEncoding.to
    transformers.BatchEncoding.to = lambda self, device, **kw: to(self, "cpu" if device == "cuda" else device, **kw)

seen = {"seconds": 0.0, "texts": [], "scores": [], "positions": 0, "pass_seconds": []}
call = rb_pipeline.RewardBenchPipeline.__call__


def count_positions(_module, args, kwargs):
    ids = kwargs["input_ids"] if "input_ids" in kwargs else args[0]
    seen["positions"] += int(ids.numel())


def timed(self, samples, **kw):
    if not getattr(self, "_positions_hooked", False):
        self.model.register_forward_pre_hook(count_positions, with_kwargs=True)
        self._positions_hooked = True
    t0 = time.perf_counter()
    out = call(self, samples, **kw)
    seen["seconds"] += time.perf_counter() - t0
    seen["texts"] += list(samples)
    seen["scores"] += out.float().cpu().reshape(-1).numpy().tolist()
    return out


rb_pipeline.RewardBenchPipeline.__call__ = timed
from scripts import run_v2  # noqa: E402  (after the patches: it binds the pipeline class at import)

sys.argv = ["run_v2.py", *args]
for i in range(passes):
    before = seen["seconds"]
    if i:  # the texts, scores and positions of one pass
        seen.update(texts=[], scores=[], positions=0)
    run_v2.main()
    seen["pass_seconds"].append(seen["seconds"] - before)
with open(out_path, "w") as f:
    json.dump(seen, f)
