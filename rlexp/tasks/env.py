"""`rlexp env`: record the machine and library facts (CPU, GPU, versions, cache folders).

The smallest task: it exercises the store, tracking, the CLI and multiruns before any model runs.
"""

from __future__ import annotations

import os
import platform
from typing import Any

from omegaconf import DictConfig

from rlexp.runtime import RunContext, execute, hydra_entry
from rlexp.store import Record, library_versions


def _facts(ctx: RunContext) -> dict[str, Any]:
    import torch

    facts: dict[str, Any] = {
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "cuda_available": torch.cuda.is_available(),
        "gpu_count": torch.cuda.device_count() if torch.cuda.is_available() else 0,
        "versions": library_versions(),
        "caches": {k: os.environ.get(k) for k in ("HF_HOME", "TORCH_EXTENSIONS_DIR")},
    }
    ctx.tracker.log({"env/cpu_count": facts["cpu_count"], "env/gpu_count": facts["gpu_count"]})
    (ctx.work_dir / "env.txt").write_text("\n".join(f"{k}: {v}" for k, v in facts.items()) + "\n")
    ctx.add_artifact("env", ctx.work_dir / "env.txt")
    return facts


def run(cfg: DictConfig) -> Record:
    """Write (or find) the record of this machine's facts."""
    return execute("env", cfg, _facts)


main = hydra_entry("env", run)

if __name__ == "__main__":
    main()
