"""train_rm wall time for 2,000 pairs, 1 epoch, on a tiny lineage, and the share of it spent
outside RewardTrainer.train() (target <= 10%). Lineage and sandbox are built (cached) first.

    python perf/train_rm_overhead.py
"""

from __future__ import annotations

import time

from _common import compose, use_root


def main() -> None:
    use_root("train_rm")
    from rlexp import inputs
    from rlexp.tasks import train_rm

    inputs.lineage(compose("train_rm", "model=tiny_llama"))  # cached inputs, not part of the measurement
    seed = int(time.time()) % 100000  # a fresh record every run
    cfg = compose("train_rm", "model=tiny_llama", "data=general", "data.max_rows=2222", f"seed={seed}",
                  "heldout_fraction=0.1", "trainer.save_steps=100000")
    t0 = time.perf_counter()
    rec = train_rm.run(cfg)
    total = time.perf_counter() - t0
    inside = rec.metrics["train/runtime_s"]
    print(f"pairs trained: {rec.metrics['train/pairs']}, epochs: 1, steps: {rec.metrics['train/steps']}")
    print(f"train_rm total   : {total:.1f}s")
    print(f"inside train()   : {inside:.1f}s")
    print(f"outside share    : {(total - inside) / total:.1%} (target <= 10%)")
    print(f"held-out accuracy: {rec.metrics['heldout/accuracy']:.3f} (untrained {rec.metrics['heldout/accuracy_init']:.3f})")


if __name__ == "__main__":
    main()
