"""Runs `rlexp evaluate` as the user types it, in its own process, timing only the reward model's scoring
calls (as perf/_rewardbench_driver.py times run_v2's), and writes {"seconds", "items"} to OUT.json.
Usage (from perf/scoring_vs_rewardbench.py):

    .venv/bin/python _rlexp_driver.py OUT.json -- evaluate rm=<folder> benchmark=rb2 ...
"""

import json
import sys
import time

from rlexp.scoring.reward_model import RewardModelScorer

out_path, args = sys.argv[1], sys.argv[sys.argv.index("--") + 1 :]
seen = {"seconds": 0.0, "items": 0}
score = RewardModelScorer.score


def timed(self, items, *a, **kw):
    t0 = time.perf_counter()
    out = score(self, items, *a, **kw)
    seen["seconds"] += time.perf_counter() - t0
    seen["items"] += len(items)
    return out


RewardModelScorer.score = timed
from rlexp.cli import main  # noqa: E402

code = main(args)
with open(out_path, "w") as f:
    json.dump(seen, f)
sys.exit(code)
