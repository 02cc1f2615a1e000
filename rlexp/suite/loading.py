"""Suite tasks as prompt items: rows from a hub id or a local file/folder in the dataset's own
schema, checked, subsampled with a recorded seed, rendered in the task's Tulu 3 regime.

A local source is read like every rlexp source (a file, or a folder whose files name their split
as the hub does). Subtasks (MATH subjects, BBH tasks) come from a row column when the dataset has
one, else from the hub config or the file (or folder) name. Few-shot exchanges are the task's
fixed exemplars (``rlexp/suite/shots/``, as OLMES's ``::tulu`` regimes use them), or, for a task
with a ``shot_split``, rows of that split of the same source, the question's own row excluded.
A task's ``metric`` setting is the gold judge's (:func:`suite_metrics`): it never enters the items.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from rlexp.config.nodes import SuiteTaskConfig
from rlexp.data.loaders.sources import Chunk, one_line, read_hub, read_source, resolve_source
from rlexp.data.loaders.validation import At, UniqueIds, check_limit
from rlexp.data.schemas import PromptItem
from rlexp.errors import ConfigError, DataError
from rlexp.suite import KIND, bbh, gsm8k, minerva_math, popqa, task
from rlexp.suite.base import Row, SuiteTask

#: The metrics a task may be graded by (``prompts.tasks.<task>.metric``), its default first; a task
#: not named here has its grader's one metric and no setting.
METRICS: dict[str, tuple[str, ...]] = {m.TASK.name: m.METRICS for m in (gsm8k, minerva_math, bbh, popqa)}


def _chunks(spec: SuiteTask, source: str, split: str) -> list[tuple[Chunk, str | None]]:
    """(chunk, subtask named by its hub config or file) for every part of the source."""
    ref = resolve_source(source)
    if ref.kind == "hub":
        configs = spec.configs() if callable(spec.configs) else spec.configs
        return [(read_hub(ref.value, config=c, split=split, revision=None), c if len(configs) > 1 else None)
                for c in configs or [None]]
    if not callable(spec.configs) and len(spec.configs) <= 1:
        return [(chunk, None) for chunk in read_source(ref.path, split=split, config=None, revision=None)]
    out = []
    for chunk in read_source(ref.path, split=split, config=None, revision=None):
        path = Path(chunk.label)  # a subtask's file: <subtask>.jsonl, or <subtask>/<split>-....parquet
        out.append((chunk, path.parent.name if path.stem.lower().startswith(split.lower()) else path.stem))
    return out


def _rows(spec: SuiteTask, source: str, split: str) -> list[Row]:
    rows = []
    for chunk, named in _chunks(spec, source, split):
        missing = [c for c in spec.required if c not in chunk.columns]
        if missing:
            shown = ", ".join(sorted(chunk.columns)[:12])
            raise DataError(f"{chunk.label}: {spec.name} needs column {missing[0]!r} (columns: {shown})")
        for data, position in zip(chunk.rows, chunk.positions, strict=True):
            group = str(data.get(spec.group_field) or "") if spec.group_field else ""
            rows.append(Row(data, At(chunk.label, position), group or named or spec.name, len(rows)))
    if not rows:
        raise DataError(f"{source}: no {spec.name} rows in split {split!r}")
    return rows


def _subsample(rows: list[Row], limit: int | None, seed: int) -> list[Row]:
    """``limit`` rows drawn without replacement by ``seed``, kept in file order."""
    if limit is None or limit >= len(rows):
        return rows
    picked = np.sort(np.random.default_rng(seed).choice(len(rows), size=limit, replace=False))
    return [rows[i] for i in picked]


def _check_metric(name: str, cfg: SuiteTaskConfig) -> None:
    """A one-line error when ``cfg.metric`` is not one of the task's metrics."""
    known = METRICS.get(name, ())
    if cfg.metric is not None and cfg.metric not in known:
        choices = f"one of {', '.join(known)}" if known else "left unset (the task has one metric)"
        raise ConfigError(f"prompts.tasks.{name}.metric={cfg.metric!r} is unknown; {name}'s metric must be {choices}")


def suite_metrics(tasks: Mapping[str, Any]) -> dict[str, str]:
    """The metrics ``prompts.tasks`` sets away from the tasks' defaults, task -> metric (checked).

    A metric is how the gold judge grades, not what the policy is asked: it is part of the gold
    judge's cache key (:func:`rlexp.scoring.factory.judge_key`) and reaches the grader through the
    judge, never through the prompts, so choosing OLMES's metric re-grades a pool without re-sampling it.
    """
    out = {}
    for name, cfg in task_settings(tasks).items():
        _check_metric(name, cfg)
        if cfg.metric is not None and cfg.metric != METRICS[name][0]:
            out[name] = cfg.metric
    return dict(sorted(out.items()))


def load_task(name: str, cfg: SuiteTaskConfig) -> list[PromptItem]:
    """One task's prompt items (``hidden`` carries ``task``, ``group`` and the grader's fields)."""
    spec = task(name)
    check_limit(cfg.limit)
    source = cfg.source or spec.hub_id
    split = cfg.split or spec.split
    rows = _subsample(_rows(spec, source, split), cfg.limit, cfg.seed)
    k = spec.default_shots if cfg.shots is None else int(cfg.shots)
    if k < 0:
        raise ConfigError(f"prompts.tasks.{name}.shots={k} must be >= 0")
    if cfg.shot_split is not None and not spec.shot_split:
        raise ConfigError(f"prompts.tasks.{name}.shot_split={cfg.shot_split!r}: {name}'s shots are fixed "
                          "exemplars (rlexp/suite/shots), not rows of a split")
    _check_metric(name, cfg)
    shots_on = spec.shots is not None and k > 0
    pool: Sequence[Row] = _rows(spec, source, cfg.shot_split or spec.shot_split) if shots_on and spec.shot_split else ()
    ids = UniqueIds("prompt_id")
    items = []
    for index, row in enumerate(rows):
        native = row.data.get(spec.id_field) if spec.id_field else None
        row.at.row_id = str(native) if native is not None else None
        prompt, hidden = spec.prompt(row)
        prompt_id = f"{name}:{native}" if native is not None else f"{name}:{row.group}:{index:05d}"
        ids.add(prompt_id, row.at)
        shots = spec.shots(row, [r for r in pool if r.data is not row.data], k) if shots_on else []
        items.append(PromptItem(prompt_id, prompt, KIND, (), {"task": name, "group": row.group, **hidden},
                                tuple(shots), prefill=spec.prefill, stop=tuple(spec.stop),
                                max_new_tokens=spec.max_new_tokens))
    return items


def task_settings(tasks: Mapping[str, Any]) -> dict[str, SuiteTaskConfig]:
    """``prompts.tasks`` as typed settings; an unknown task or setting is a one-line ConfigError."""
    out = {}
    for name, node in tasks.items():
        task(str(name))
        try:
            out[str(name)] = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(SuiteTaskConfig), node or {}))
        except OmegaConfBaseException as exc:
            raise ConfigError(f"prompts.tasks.{name}: {one_line(exc)}") from None
    return out


def load_suite(tasks: Mapping[str, SuiteTaskConfig]) -> list[PromptItem]:
    """The prompt items of every task, task after task in the given order."""
    if not tasks:
        raise DataError("a suite prompt set names no tasks")
    return [item for name, cfg in tasks.items() for item in load_task(str(name), cfg)]
