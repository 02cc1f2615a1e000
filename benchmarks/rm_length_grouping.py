"""train_rm on a mix of short general and long profile-bearing pairs (the ``flipped`` control,
planner formatting), with and without ``trainer.group_by_length``, side by side in one process.
Prints the time inside RewardTrainer.train() of each, the ratio, and both held-out accuracies
(grouping must not cost accuracy beyond run-to-run noise).

    python benchmarks/rm_length_grouping.py [rows=1600]
"""

from __future__ import annotations

import sys
import time

from _common import compose, use_root


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1600
    use_root("train_rm")
    import torch

    from rlexp.models.lineages import resolve_lineage
    from rlexp.tasks import train_rm

    torch.set_num_threads(1)  # as in a study job
    resolve_lineage(compose("train_rm", "model=tiny_llama"))  # cached inputs, not part of the measurement
    seed = int(time.time()) % 100000  # fresh records every run
    got = {}
    for grouped in (False, True):
        cfg = compose("train_rm", "model=tiny_llama", "data=flipped", f"data.max_rows={rows}", "profile=planner",
                      f"seed={seed}", "trainer.save_steps=100000", f"trainer.group_by_length={str(grouped).lower()}")
        rec = train_rm.run(cfg)
        got[grouped] = (rec.metrics["train/runtime_s"], rec.metrics["heldout/accuracy"])
    (t_plain, a_plain), (t_grouped, a_grouped) = got[False], got[True]
    print(f"{rows} flipped pairs (general + personal, planner), 1 epoch, tiny_llama, one thread")
    print(f"random batches    : {t_plain:.1f}s in train(), held-out accuracy {a_plain:.3f}")
    print(f"grouped by length : {t_grouped:.1f}s in train(), held-out accuracy {a_grouped:.3f}")
    print(f"speed-up          : {t_plain / t_grouped:.2f}x")


if __name__ == "__main__":
    main()
