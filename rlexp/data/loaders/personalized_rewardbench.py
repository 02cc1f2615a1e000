"""Loading Personalized RewardBench (``QiyaoMa/Personalized-RewardBench``, or the same layout on disk)."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rlexp.data.loaders.domains import hub_domain_chunks, local_domain_chunks
from rlexp.data.loaders.sources import Chunk, data_files, resolve_source
from rlexp.data.loaders.validation import (
    At,
    LoadedRows,
    UniqueIds,
    check_kind,
    check_limit,
    optional_string,
    profile_posts,
    row_id,
    rubric_aspects,
    string_field,
)
from rlexp.data.schemas import PRBItem


def question_fields(row: Mapping[str, Any], at: At, *, category_required: bool = True) -> dict[str, Any]:
    """The validated fields PRB and LaMP-QA rows share (a PRB row is a LaMP-QA test row plus chosen/rejected).

    ``profile`` is required (possibly empty); ``rubric_aspects``, ``narrative`` and ``category`` are optional;
    ``category_required=False`` accepts posts without a category (LaMP-QA's ranked files).
    """
    return {
        "id": row_id(row, at),
        "question": string_field(row, "question", at),
        "profile": profile_posts(row, at, required=True, category_required=category_required),
        "rubric_aspects": rubric_aspects(row, at),
        "narrative": optional_string(row, "narrative", at),
        "category": optional_string(row, "category", at),
    }


def _prb_item(row: Mapping[str, Any], at: At, domain: str, strict: bool, skipped: Counter[str]) -> PRBItem | None:
    """One validated PRB row of ``domain``; None (counted in ``skipped``) when its chosen and rejected
    answers are identical, which two tied scores could never rank, unless ``strict`` refuses it."""
    shared = question_fields(row, at)
    chosen = string_field(row, "chosen", at)
    rejected = string_field(row, "rejected", at)
    if chosen == rejected:
        if strict:
            raise at.error("rejected", "identical to chosen")
        skipped["chosen identical to rejected"] += 1
        return None
    return PRBItem(**shared, chosen=chosen, rejected=rejected, domain=domain)


def _prb_local(path: Path, split: str, domains: Sequence[str] | None) -> list[Chunk]:
    """PRB from disk: ``<root>/<Domain>/*.parquet`` (domain = first folder under root)."""
    by_domain: dict[str, list[Path]] = {}
    if path.is_file():
        by_domain[path.parent.name] = [path]
    else:
        for f in data_files(path, split):
            rel = f.relative_to(path).parts
            by_domain.setdefault(rel[0] if len(rel) > 1 else path.name, []).append(f)
    return local_domain_chunks(by_domain, domains, "Personalized RewardBench domain")


def load_prb(
    source: str | os.PathLike[str],
    *,
    domains: Sequence[str] | None = None,
    split: str = "test",
    limit: int | None = None,
    revision: str | None = None,
    strict: bool = False,
) -> LoadedRows:
    """Load Personalized RewardBench pairs (``QiyaoMa/Personalized-RewardBench`` or the same layout).

    The domain of an item is its hub config, or locally the first folder under ``source``
    (``<source>/<Domain>/test-*.parquet``; a single file takes its parent folder's name).
    ``domains`` selects configs/folders before reading (default: all of them); ``limit`` keeps
    the first rows overall, in domain order. Ids must be unique within a domain. A row whose chosen
    and rejected answers are identical cannot be scored: it is left out and counted in the result's
    ``skipped`` (``strict`` refuses it).
    """
    check_limit(limit)
    ref = resolve_source(source)
    if ref.kind == "hub":
        chunks = hub_domain_chunks(ref.value, split, domains, revision)
    else:
        chunks = _prb_local(ref.path, split, domains)

    ids = UniqueIds()
    items: list[PRBItem] = []
    skipped: Counter[str] = Counter()
    for chunk in chunks:
        check_kind(chunk, "prb")
        for row, position in zip(chunk.rows, chunk.positions, strict=True):
            at = At(chunk.label, position)
            item = _prb_item(row, at, chunk.group, strict, skipped)
            if item is None:
                continue
            ids.add((item.domain, item.id), at)
            items.append(item)
    out = LoadedRows(items, skipped)
    return out[:limit] if limit is not None else out
