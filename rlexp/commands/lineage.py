"""`rlexp lineage build [NAME ...] [overrides]` and `rlexp lineage ls`."""

from __future__ import annotations

import time

from omegaconf import DictConfig, OmegaConf

from rlexp import inputs
from rlexp.commands import CommandParser
from rlexp.config import CONF_DIR
from rlexp.errors import ConfigError
from rlexp.runtime import compose_task
from rlexp.store import Store


def _compose(name: str, overrides: list[str]) -> DictConfig:
    return compose_task("train_rm", [f"model={name}", "logger=none", *overrides])


def main(args: list[str]) -> int:
    """`rlexp lineage build|ls`; returns the exit code."""
    parser = CommandParser(prog="rlexp lineage", description="Build or list model lineages.")
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="build tiny lineages (cached by content hash)")
    build.add_argument("names", nargs="*", default=["tiny_llama", "tiny_qwen"])
    build.add_argument("--override", "-o", action="append", default=[], help="hydra override, e.g. paths.root=/x")
    sub.add_parser("ls", help="list the lineages in conf/model/ and the built ones")
    ns = parser.parse_args(args)
    if ns.command == "build":
        known = sorted(p.stem for p in (CONF_DIR / "model").glob("*.yaml"))
        unknown = [n for n in ns.names if n not in known]
        if unknown:
            raise ConfigError(f"unknown lineage {unknown[0]!r}; lineages (conf/model/): {', '.join(known)}")
        for name in ns.names:
            start = time.time()
            lineage = inputs.lineage(_compose(name, ns.override))
            print(f"{name}: record {lineage.record_id}  base={lineage.base}  ({time.time() - start:.1f}s)")
        return 0
    cfg = _compose("tiny_llama", [])
    built = {r.config.get("lineage"): r for r in Store(cfg.paths.store).records("lineage")}
    print(f"{'name':<24} {'lineage':<12} {'source':<45} built")
    for path in sorted((CONF_DIR / "model").glob("*.yaml")):
        node = OmegaConf.load(path)
        source = node.get("name_or_path") or f"tiny ({node.tiny.arch}, vocab {node.tiny.vocab_size})"
        rec = built.get(node.get("lineage"))
        print(f"{path.stem:<24} {node.get('lineage'):<12} {source:<45} {rec.id if rec and not node.get('name_or_path') else '-'}")
    return 0
