"""`rlexp data`: materialise the sandbox world as parquet files + manifest in the store.

Other tasks get (or build, once) the world they read through :func:`rlexp.inputs.sandbox_world`.
"""

from __future__ import annotations

from omegaconf import DictConfig

from rlexp import inputs
from rlexp.runtime import hydra_entry
from rlexp.store import Record


def run(cfg: DictConfig) -> Record:
    """Materialise (or find) the sandbox world for ``cfg.sandbox``."""
    return inputs.sandbox_record(cfg)


main = hydra_entry("data", run)

if __name__ == "__main__":
    main()
