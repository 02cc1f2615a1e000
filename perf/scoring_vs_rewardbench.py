"""rlexp's RewardBench 2 scorer against rewardbench 0.1.4's own ``run_v2.py``, on the sandbox RB2
with the ~20M-parameter sequence-classification RM of perf/scoring_speed.py, fp32.

rewardbench pins transformers 4.51, so it runs in its own environment (``make rewardbench-env``,
or RLEXP_REWARDBENCH_PYTHON=<its python>) through perf/_rewardbench_driver.py, which times only
its inference calls (model loading and the dataset's preparation are left out on both sides) and
returns the texts it scored and their scores. Passes alternate (rlexp, rewardbench, rlexp, ...)
and each side keeps its fastest. Prints items/s, the ratio (target >= 2.0), that both sides
scored the same texts, the largest score difference (target <= 1e-5) and the token positions each
side ran. run_v2 uses its defaults but fp32 (``--torch_dtype float32``): batches of 64 in file
order, padded to the longest.

    make rewardbench-env && .venv/bin/python perf/scoring_vs_rewardbench.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import sandbox_rb2_and_rm, use_root

PASSES = 3
ROOT = Path(__file__).resolve().parents[1]
DRIVER = Path(__file__).resolve().parent / "_rewardbench_driver.py"


def _side_python() -> Path:
    path = Path(os.environ.get("RLEXP_REWARDBENCH_PYTHON", ROOT / ".venv-rewardbench" / "bin" / "python"))
    if not path.is_file():
        sys.exit(f"no rewardbench environment at {path}: run `make rewardbench-env` or set RLEXP_REWARDBENCH_PYTHON")
    return path


def _for_transformers_4(folder: Path) -> None:
    """Rewrite the saved tokenizer_config.json in the older library's terms (the same tokenizer.json):
    transformers 5 names its fast tokenizer class and the extra special tokens differently."""
    path = folder / "tokenizer_config.json"
    config = json.loads(path.read_text())
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    config["additional_special_tokens"] = list(config.pop("extra_special_tokens", []))
    for key in ("backend", "is_local", "local_files_only"):
        config.pop(key, None)
    path.write_text(json.dumps(config))


def _run_v2(python: Path, model: Path, dataset: str, work: Path) -> dict:
    out = work / "rewardbench.json"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled", "PYTHONPATH": ""}
    cmd = [str(python), str(DRIVER), str(out), "--", "--model", str(model), "--dataset", dataset,
           "--torch_dtype", "float32", "--do_not_save"]
    done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"rewardbench run_v2 failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return json.loads(out.read_text())


def main() -> None:
    use_root("scoring")
    import torch

    from rlexp.config.nodes import ScorerConfig
    from rlexp.scoring.reward_model import RewardModelScorer

    python = _side_python()
    dataset, queries, tok, _, model = sandbox_rb2_and_rm()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        folder = work / "rm"
        model.save_pretrained(folder)
        tok.save_pretrained(folder)
        _for_transformers_4(folder)
        scorer = RewardModelScorer.from_pretrained(str(folder), ScorerConfig(batch_size=32, max_length=2048,
                                                                              share_prefix=True))
        ours, theirs = [], []
        for _ in range(PASSES):
            scorer.stats.extra["positions"] = 0
            t0 = time.perf_counter()
            scores = scorer.score(queries)
            ours.append(time.perf_counter() - t0)
            seen = _run_v2(python, folder, dataset, work)
            theirs.append(seen["seconds"])
        rendered = [scorer.render(q) for q in queries]

    same_texts = rendered == seen["texts"]
    n = len(queries)
    print(f"completions: {n}; torch threads: {torch.get_num_threads()}; rewardbench run_v2 with batches of 64, fp32")
    print(f"rlexp scorer       : {n / min(ours):8.1f} items/s  (shared prefixes; passes "
          f"{', '.join(f'{n / t:.1f}' for t in ours)})")
    print(f"rewardbench run_v2 : {n / min(theirs):8.1f} items/s  (passes {', '.join(f'{n / t:.1f}' for t in theirs)})")
    print(f"speed ratio        : {min(theirs) / min(ours):.2f}x (target >= 2.0); per pass pair: "
          f"{', '.join(f'{r / f:.2f}' for f, r in zip(ours, theirs, strict=True))}")
    print(f"same texts scored  : {same_texts}")
    if same_texts:
        print(f"max |difference|   : {np.max(np.abs(scores - np.array(seen['scores']))):.2e} (target <= 1e-5)")
    # Both counted where the model runs, one pass each: rlexp's scorer and a hook inside run_v2's pipeline.
    ours_run, theirs_run = scorer.stats.extra["positions"], seen["positions"]
    print(f"positions run      : rlexp {ours_run} against run_v2's {theirs_run} ({theirs_run / ours_run:.2f}x fewer)")


if __name__ == "__main__":
    main()
