"""rlexp's RewardBench 2 scorer against rewardbench 0.1.4's own ``run_v2.py``, with the ~20M-parameter
sequence-classification RM of perf/scoring_speed.py, fp32, on a file of RewardBench 2's real size: the
sandbox RB2's rows repeated (ids made unique) until it holds ``--completions`` completions (default 7,500;
the real RB2 has about 7,500).

rewardbench pins transformers 4.51, so it runs in its own environment (``make rewardbench-env``, or
RLEXP_REWARDBENCH_PYTHON=<its python>) through perf/_rewardbench_driver.py, which times only its inference
calls. Two comparisons, each over ``--pairs`` alternating pairs, reported as the median and range of the
pairs' ratios (never a side's fastest pass):

* warm, in one process each: rlexp's scorer scores the file after a first, discarded pass; run_v2 runs
  twice in one process and its second pass counts. Both sides warm, only inference timed.
* whole processes, as a user runs them: ``rlexp evaluate`` (perf/_rlexp_driver.py, which also times its
  scoring calls) with shared prefixes and on the default path, against ``run_v2.py``; the wall time of each
  process (start-up, imports, loading included) and the scoring time inside it.

Also printed: that both sides scored the same texts, the largest score difference (target <= 1e-5), and the
token positions each side ran. run_v2 uses its defaults but fp32 (``--torch_dtype float32``): batches of 64
in file order, padded to the longest.

    make rewardbench-env && .venv/bin/python perf/scoring_vs_rewardbench.py [--pairs 8] [--completions 7500]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import sandbox_rb2_and_rm, use_root

ROOT = Path(__file__).resolve().parents[1]
DRIVER = Path(__file__).resolve().parent / "_rewardbench_driver.py"
RLEXP_DRIVER = Path(__file__).resolve().parent / "_rlexp_driver.py"


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


def _run_v2(python: Path, model: Path, dataset: Path, work: Path, passes: int = 1) -> tuple[dict, float]:
    """run_v2 in a process of its own: what it saw (texts, scores, inference seconds per pass) and the wall time."""
    out = work / "rewardbench.json"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled", "PYTHONPATH": ""}
    cmd = [str(python), str(DRIVER), str(out), "--passes", str(passes), "--", "--model", str(model),
           "--dataset", str(dataset), "--torch_dtype", "float32", "--do_not_save"]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"rewardbench run_v2 failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return json.loads(out.read_text()), wall


def _rlexp_evaluate(model: Path, dataset: Path, work: Path, share_prefix: bool) -> tuple[dict, float]:
    """`rlexp evaluate` in a process of its own (``force=true``: it scores every time): scoring seconds, wall time."""
    out = work / "rlexp.json"
    cmd = [sys.executable, str(RLEXP_DRIVER), str(out), "--", "evaluate", f"rm={model}", "benchmark=rb2",
           f"benchmark.rb2.source={dataset}", "scorer.dtype=float32", "scorer.device=cpu",
           f"scorer.share_prefix={str(share_prefix).lower()}", "force=true", "logger=none", "progress=false"]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env={**os.environ, "WANDB_MODE": "disabled"}, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"rlexp evaluate failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return json.loads(out.read_text()), wall


def _copy_id(item_id: str, copy: int) -> str:
    """A row's id in its ``copy``-th repetition. Ties ids keep their ``ref:N``/``tied:N`` form (the loader and
    run_v2 group a prompt's completions by N), so copies move N past the sandbox's own numbers."""
    from rlexp.data.schemas import RB2_TIES_ID

    if copy == 0:
        return item_id
    ties = RB2_TIES_ID.match(item_id)
    if ties:
        return f"{ties[1]}:{int(ties[2]) + copy * 1_000_000}"
    return f"{item_id}-r{copy}"


def real_size_file(folder: str, completions: int, out_dir: Path) -> Path:
    """The sandbox RB2's rows repeated, ids made unique, until the file holds ``completions`` completions
    (run_v2 and rlexp both read the folder's ``test.parquet``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(Path(folder) / "test.parquet")
    rows = table.to_pylist()
    out, total, copy = [], 0, 0
    while total < completions:
        for row in rows:
            if total >= completions:
                break
            out.append({**row, "id": _copy_id(str(row["id"]), copy)})
            total += len(row["chosen"]) + len(row["rejected"])
        copy += 1
    out_dir.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(out, schema=table.schema), out_dir / "test.parquet")
    return out_dir


def _progress(line: str) -> None:
    """One line per finished pair on stderr, so a long run shows where it is (the summary goes to stdout)."""
    print(line, file=sys.stderr, flush=True)


def _spread(ratios: list[float]) -> str:
    return f"median {np.median(ratios):.2f}x (range {min(ratios):.2f}-{max(ratios):.2f}x over {len(ratios)} pairs)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=8, help="alternating pairs per comparison")
    parser.add_argument("--completions", type=int, default=7500, help="completions in the file (RB2: ~7,500)")
    parser.add_argument("--only", choices=("warm", "process"), default=None, help="run one comparison only")
    args = parser.parse_args()
    use_root("scoring")
    import torch

    from rlexp.benchmarks.rewardbench2_math import unroll
    from rlexp.config.nodes import ScorerConfig
    from rlexp.data.loaders import load_rb2
    from rlexp.scorer import ScoreInput
    from rlexp.scoring.reward_model import RewardModelScorer

    python = _side_python()
    sandbox, _, tok, _, model = sandbox_rb2_and_rm()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        dataset = real_size_file(sandbox, args.completions, work / "rb2")
        items = load_rb2(str(dataset))
        texts, index = unroll(items)
        queries = [ScoreInput(items[i].prompt, t) for t, (i, _) in zip(texts, index, strict=True)]
        n = len(queries)
        folder = work / "rm"
        model.save_pretrained(folder)
        tok.save_pretrained(folder)
        _for_transformers_4(folder)
        print(f"completions: {n} ({len(items)} rows); torch threads: {torch.get_num_threads()}; "
              f"run_v2 with batches of 64, fp32; {args.pairs} alternating pairs")

        if args.only in (None, "warm"):
            scorer = RewardModelScorer.from_pretrained(str(folder), ScorerConfig(batch_size=32, max_length=2048,
                                                                                  share_prefix=True))
            scorer.score(queries)  # the warm-up pass, not counted (run_v2's first pass is not counted either)
            ours, theirs = [], []
            for pair in range(args.pairs):
                scorer.stats.extra["positions"] = 0
                t0 = time.perf_counter()
                scores = scorer.score(queries)
                ours.append(time.perf_counter() - t0)
                seen, _ = _run_v2(python, folder, dataset, work, passes=2)
                theirs.append(seen["pass_seconds"][-1])
                _progress(f"warm pair {pair + 1}/{args.pairs}: rlexp {ours[-1]:.1f} s, run_v2 {theirs[-1]:.1f} s")
            rendered = [scorer.render(q) for q in queries]
            ratios = [t / o for o, t in zip(ours, theirs, strict=True)]
            print("\nwarm, in one process each (shared prefixes; inference only):")
            print(f"  rlexp scorer       : {n / np.median(ours):8.1f} items/s  (median; passes "
                  f"{', '.join(f'{n / t:.1f}' for t in ours)})")
            print(f"  rewardbench run_v2 : {n / np.median(theirs):8.1f} items/s  (median; passes "
                  f"{', '.join(f'{n / t:.1f}' for t in theirs)})")
            print(f"  speed ratio        : {_spread(ratios)}")
            same_texts = rendered == seen["texts"]
            print(f"  same texts scored  : {same_texts}")
            if same_texts:
                print(f"  max |difference|   : {np.max(np.abs(scores - np.array(seen['scores']))):.2e} (target <= 1e-5)")
            ours_run, theirs_run = scorer.stats.extra["positions"], seen["positions"]
            print(f"  positions run      : rlexp {ours_run} against run_v2's {theirs_run} "
                  f"({theirs_run / ours_run:.2f}x fewer)")

        if args.only in (None, "process"):
            rows = {"shared prefixes": ([], []), "default path": ([], [])}
            for pair in range(args.pairs):  # alternating: rlexp (shared), rlexp (default), run_v2
                mine = {name: _rlexp_evaluate(folder, dataset, work, share_prefix=(name == "shared prefixes"))
                        for name in rows}
                seen, wall = _run_v2(python, folder, dataset, work)
                for name, (scoring, walls) in rows.items():
                    scoring.append(seen["seconds"] / mine[name][0]["seconds"])
                    walls.append(wall / mine[name][1])
                _progress(f"process pair {pair + 1}/{args.pairs}: " + ", ".join(
                    f"{name} {mine[name][0]['seconds']:.1f} s scoring / {mine[name][1]:.1f} s wall" for name in rows)
                    + f", run_v2 {seen['seconds']:.1f} s / {wall:.1f} s")
            print("\nwhole processes (`rlexp evaluate` against `run_v2.py`, as a user runs them):")
            for name, (scoring, walls) in rows.items():
                print(f"  {name:<16}: scoring time {_spread(scoring)}; wall time {_spread(walls)}")


if __name__ == "__main__":
    main()
