"""train_rm on a mix of short general and long profile-bearing pairs (the ``flipped`` control,
planner formatting): random batches, rlexp's length grouping (sorted within windows of 4 batches)
and transformers' own grouping (windows of up to 50 batches), side by side in one process, over a
few seeds. Prints the time inside RewardTrainer.train() and the held-out accuracy of each (grouping
must not cost accuracy beyond seed-to-seed noise), and the speed-ups.

    python perf/rm_length_grouping.py [rows=1600] [seeds=3]
"""

from __future__ import annotations

import statistics
import sys
import time

from _common import compose, use_root


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1600
    n_seeds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    use_root("train_rm")
    import torch

    from rlexp import inputs
    from rlexp.models import reward_training
    from rlexp.tasks import train_rm

    torch.set_num_threads(1)  # as in a study job
    inputs.lineage(compose("train_rm", "model=tiny_llama"))  # cached inputs, not part of the measurement
    base = int(time.time()) % 100000
    variants = {"random batches": (False, 4), "rlexp grouping (4)": (True, 4), "transformers' (<=50)": (True, None)}
    got: dict[str, list[tuple[float, float]]] = {v: [] for v in variants}
    for seed in range(base, base + n_seeds):
        for name, (grouped, window) in variants.items():
            reward_training.LENGTH_WINDOW_BATCHES = window  # None: transformers' default window
            cfg = compose("train_rm", "model=tiny_llama", "data=flipped", f"data.max_rows={rows}", "profile=planner",
                          f"seed={seed}", "force=true", "trainer.save_steps=100000",
                          f"trainer.length_grouping={str(grouped).lower()}")
            rec = train_rm.run(cfg)
            got[name].append((rec.metrics["train/runtime_s"], rec.metrics["heldout/accuracy"]))
    print(f"{rows} flipped pairs (general + personal, planner), 1 epoch, tiny_llama, one thread, {n_seeds} seeds")
    plain = statistics.mean(t for t, _ in got["random batches"])
    for name, runs in got.items():
        t = statistics.mean(r[0] for r in runs)
        accs = [r[1] for r in runs]
        print(f"{name:22s}: {t:5.1f}s in train() ({plain / t:.2f}x), held-out accuracy "
              f"{statistics.mean(accs):.3f} (seeds: {', '.join(f'{a:.3f}' for a in accs)})")


if __name__ == "__main__":
    main()
