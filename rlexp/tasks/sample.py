"""`rlexp sample`: a pool of n samples per prompt from a policy, generated once and cached.

Every reward model's Best-of-N reuses the same pool; PPO's evaluation samples the trained policy
the same way (n = 1 is BoN@1). Chunks are written atomically, so a killed run resumes from its
last complete chunk and ends with the same pool as an uninterrupted run. The work is done by
:func:`rlexp.inputs.sample`, which BoN and PPO call for the pools they need.
"""

from __future__ import annotations

from omegaconf import DictConfig

from rlexp import inputs
from rlexp.runtime import hydra_entry
from rlexp.scoring.factory import judge_cache_dir, probe_served_judges
from rlexp.store import Record


def run(cfg: DictConfig) -> Record:
    """Sample (or find) the pool for (policy, prompt set, n, sampling settings, seed)."""
    # A sample config names no judge; one composed with a served judge probes it before sampling.
    probe_served_judges(cfg, judge_cache_dir(cfg))
    return inputs.sample(cfg)


main = hydra_entry("sample", run)

if __name__ == "__main__":
    main()
