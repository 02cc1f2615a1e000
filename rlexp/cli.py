"""`rlexp <task> [hydra overrides]`: one console entry for every task.

Overrides are checked by composing the config before the task starts, so a misspelled key, a
wrong type or an unknown option is one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import importlib
import sys
import tempfile
from pathlib import Path
from typing import Any

from rlexp.config import CONF_DIR, check_config, checked_path
from rlexp.errors import ConfigError, RlexpError, rlexp_cause
from rlexp.runtime import one_line

# task -> one-line description (the order is the pipeline's).
TASKS: dict[str, str] = {
    "env": "record machine and library facts (checks store, tracking, multirun)",
    "data": "materialise the sandbox world (benchmarks, preference sources, prompts, corpora)",
    "train_rm": "train a reward model with TRL's RewardTrainer (epochs, data mix, lineage)",
    "evaluate": "score a reward model on RewardBench 2 and Personalized RewardBench",
    "sample": "sample a pool of n completions per prompt from a policy",
    "bon": "Best-of-N: pool x reward model x gold judge -> BoN@k, oracle@k, gains",
    "ppo": "PPO (TRL) of a policy against a reward model; gold gain before/after",
    "correlate": "rank correlations between benchmark scores and downstream gains, figures, report",
    "study": "the whole grid: train, evaluate, sample, bon, ppo, correlate (resumable)",
}
# Commands that are not Hydra apps.
COMMANDS: dict[str, str] = {
    "store": "inspect the run store: `rlexp store ls [--task T] [--where K=V] [--ids]`, `rlexp store show ID`, `rlexp store check [--fix]`",
    "lineage": "tiny model lineages: `rlexp lineage build [NAME]`, `rlexp lineage ls`",
    "judge": "serve an LLM judge for judge.endpoint: `rlexp judge serve MODEL [--host H] [--port P] [vllm args]`",
    "probe": "what sandbox RMs know beyond cues: `rlexp probe RM [RM ...]` (minimal-pair accuracies)",
}

USAGE = "usage: rlexp <task> [hydra overrides] [-m]   |   rlexp <command> ..."


def _help() -> str:
    lines = [USAGE, "", "tasks (Hydra apps; `rlexp <task> --help` shows their config groups):"]
    lines += [f"  {name:<10} {desc}" for name, desc in TASKS.items()]
    lines += ["", "commands:"]
    lines += [f"  {name:<10} {desc}" for name, desc in COMMANDS.items()]
    lines += ["", "Equivalent: python -m rlexp.tasks.<task> [overrides]"]
    return "\n".join(lines)


def _fail(msg: str, code: int = 2) -> int:
    print(f"rlexp: error: {msg}", file=sys.stderr)
    return code


def validate_overrides(task: str, args: list[str]) -> None:
    """Compose the task's config for every value of every sweep, or raise ConfigError.

    Each sweep value is composed once (the other sweeps at their first value), so a bad *second*
    value (``trainer.num_train_epochs=1,abc``) fails here, before the first job runs, without composing the
    whole cartesian product. The composed roots are checked to be writable directories before Hydra
    creates its job folder inside them, and every typed node's checks run (``check_config``).
    """
    from hydra import compose, initialize_config_dir
    from hydra.core.override_parser.overrides_parser import OverridesParser

    plain = [a for a in args if not a.startswith("-")]
    try:
        parsed = OverridesParser.create().parse_overrides(plain)
    except Exception as exc:  # Hydra's parser raises its own OverrideParseException
        raise ConfigError(one_line(exc)) from None
    overrides: list[str] = []
    sweeps: list[tuple[int, str, list[str]]] = []  # (position in overrides, key, every value)
    for ov in parsed:
        key = ov.get_key_element()
        if key.startswith("hydra") or key.startswith("+hydra"):
            continue
        if ov.is_sweep_override():
            values = list(ov.sweep_string_iterator())
            if not values:
                continue
            sweeps.append((len(overrides), key, values))
            overrides.append(f"{key}={values[0]}")
        else:
            overrides.append(ov.input_line)
    variants = [overrides]
    for pos, key, values in sweeps:
        variants += [[*overrides[:pos], f"{key}={v}", *overrides[pos + 1:]] for v in values[1:]]
    try:
        with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
            for variant in variants:
                cfg = compose(task, overrides=variant)
                check_roots(cfg)
                check_config(cfg)  # the typed nodes' own checks (seed range, devices, limits, lengths)
    except ConfigError:
        raise
    except Exception as exc:
        own = rlexp_cause(exc)
        if own is not None:  # raised by a resolver (an empty RLEXP_ROOT): its own line
            raise own from None
        cause = exc.__cause__
        detail = one_line(exc) + (f" ({one_line(cause)})" if cause is not None else "")
        raise ConfigError(detail) from None


def check_roots(cfg: Any) -> None:
    """Every folder rlexp writes under (store, outputs, caches) is a directory it can write, or can be
    created; checked before Hydra makes its job folder, so a bad ``RLEXP_ROOT`` is one line."""
    if "paths" not in cfg:
        return
    for name in ("root", "store", "output_root", "cache"):
        if name not in cfg.paths:
            continue
        # An empty one would mean the working directory (or, for the root, the filesystem root).
        path = Path(checked_path(cfg.paths[name], f"paths.{name}"))
        probe = path
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        if not probe.is_dir():
            raise ConfigError(f"paths.{name}: {path} is not writable ({probe} is a file, not a directory)")
        try:
            tempfile.TemporaryFile(dir=probe).close()
        except OSError as exc:
            raise ConfigError(f"paths.{name}: {path} is not writable ({exc.strerror or exc})") from None


def main(argv: list[str] | None = None) -> int:
    """The console entry: dispatch to a command, or check the overrides and run a task's Hydra app."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_help())
        return 0
    name, args = argv[0], argv[1:]
    if name in COMMANDS:
        module = importlib.import_module(f"rlexp.commands.{name}")
        try:
            return int(module.main(args) or 0)
        except RlexpError as exc:
            return _fail(str(exc), exc.exit_code)
    if name not in TASKS:
        return _fail(f"unknown task {name!r}; tasks: {', '.join(TASKS)}; commands: {', '.join(COMMANDS)}")
    wants_help = any(a in ("--help", "-h", "--hydra-help", "--info", "-i", "--cfg", "-c") for a in args)
    if not wants_help:
        try:
            module = importlib.import_module(f"rlexp.tasks.{name}")
            validate_overrides(name, args)
        except RlexpError as exc:
            print(f"rlexp {name}: error: {exc}", file=sys.stderr)
            return exc.exit_code
    module = importlib.import_module(f"rlexp.tasks.{name}")
    sys.argv = [f"rlexp {name}", *args]
    module.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
