"""Weights & Biases tracking, offline by default, never required.

One context manager per task run. Every metric also goes to ``metrics.jsonl`` in the run's output
folder, so nothing ever depends on reading W&B back (offline runs have no reader).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# The redaction rules live in rlexp.redaction (secrets found by key and value pattern); re-exported
# here, where records and W&B runs have always imported them from.
from rlexp.redaction import REDACTED, is_secret_key, redact  # noqa: F401


class Tracker:
    """Logs metrics to a local JSONL file and, when enabled, to a W&B run."""

    def __init__(self, out_dir: Path, run: Any | None) -> None:
        self.out_dir = out_dir
        self.run = run
        self._jsonl = out_dir / "metrics.jsonl"

    def log(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        row = {k: v for k, v in metrics.items()}
        if step is not None:
            row["_step"] = step
        with self._jsonl.open("a") as fh:
            fh.write(json.dumps(row, default=str) + "\n")
        if self.run is not None:
            self.run.log(dict(metrics), step=step)

    def summary(self, metrics: Mapping[str, Any]) -> None:
        """Final scalars: same keys as the record's metrics."""
        flat = flatten(metrics)
        (self.out_dir / "metrics.json").write_text(json.dumps(flat, indent=2, sort_keys=True, default=str))
        if self.run is not None:
            for k, v in flat.items():
                if isinstance(v, (int, float, str, bool)) or v is None:
                    self.run.summary[k] = v

    def table(self, name: str, columns: list[str], rows: list[list[Any]]) -> None:
        if self.run is not None:
            import wandb

            self.run.log({name: wandb.Table(columns=columns, data=rows)})

    def images(self, images: Mapping[str, Path]) -> None:
        """Log PNG files as W&B images under ``figures/<name>`` (shown in the run's media panel)."""
        if self.run is None or not images:
            return
        import wandb

        self.run.log({f"figures/{name}": wandb.Image(str(path)) for name, path in images.items()})

    def artifact(self, name: str, kind: str, path: Path, *, reference: bool = True) -> None:
        """Log files as a W&B artifact; large model files by reference (never uploaded from sweeps)."""
        if self.run is None:
            return
        import wandb

        art = wandb.Artifact(name=re.sub(r"[^A-Za-z0-9._-]", "-", name), type=kind)
        if reference:
            art.add_reference(Path(path).resolve().as_uri(), checksum=False)
        elif Path(path).is_dir():
            art.add_dir(str(path))
        else:
            art.add_file(str(path))
        self.run.log_artifact(art)


def flatten(metrics: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}} -> {"a/b": 1}``: W&B and CSV want flat, ``/``-namespaced keys."""
    out: dict[str, Any] = {}
    for k, v in metrics.items():
        key = f"{prefix}/{k}" if prefix else str(k)
        if isinstance(v, Mapping):
            out.update(flatten(v, key))
        else:
            out[key] = v
    return out


@contextmanager
def track(
    logger_cfg: Mapping[str, Any],
    *,
    out_dir: Path,
    job_type: str,
    name: str,
    group: str | None,
    tags: list[str],
    config: Mapping[str, Any],
) -> Iterator[Tracker]:
    """Open a W&B run for one task run (or none with ``logger=none``) and always finish it.

    The mode is always explicit (``offline`` unless configured): with no mode and no network,
    ``wandb.init`` would block for minutes. ``finish()`` runs in ``finally`` so a failed job of a
    multirun never leaks its run into the next job of the same process.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    kind = logger_cfg.get("kind", "none")
    if kind != "wandb":
        yield Tracker(out_dir, None)
        return
    mode = logger_cfg.get("mode") or "offline"
    wandb_dir = out_dir
    for var in ("WANDB_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR", "WANDB_DATA_DIR", "WANDB_ARTIFACT_DIR"):
        os.environ[var] = str(wandb_dir / ".wandb" if var != "WANDB_DIR" else wandb_dir)
    os.environ.setdefault("WANDB_SILENT", "true")
    import wandb

    run = wandb.init(
        project=logger_cfg.get("project", "rlexp"),
        entity=logger_cfg.get("entity") or None,
        group=group,
        job_type=job_type,
        name=name,
        tags=tags,
        dir=str(wandb_dir),
        mode=mode,
        config=redact(dict(config)),
        settings=wandb.Settings(silent=True, console="off", x_disable_stats=True),
    )
    try:
        yield Tracker(out_dir, run)
    finally:
        run.finish()
