"""Loading LaMP-QA (``alireza7/LaMP-QA``, or the same schema on disk) as personalized policy prompts.

A LaMP-QA row is a user's question, their whole profile of past posts, and the hidden needs
(narrative, rubric aspects) only gold judges may read; a PRB row is the same plus chosen/rejected,
so rows are validated with PRB's helpers. Each row becomes a ``personalized``
:class:`~rlexp.data.schemas.PromptItem` whose profile is the top-k posts retrieved against the
**question only** (reference §4), kept as whole records (reference §10.1). The policy is prompted
as PRB's BoN samples LaMP-QA (``template="prb"``: PRB's ``prompts/sample.txt`` and system message,
:func:`rlexp.data.formatting.prb_policy_messages`), not with the sandbox's prompt. A file written by
LaMP-QA's own ``retrieval/rank_dataset.py`` (posts as ``{id, text}``, no category) is accepted.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rlexp.data import retrieval
from rlexp.data.formatting import PRB_TEMPLATE
from rlexp.data.loaders.domains import hub_domain_chunks, local_domain_chunks
from rlexp.data.loaders.personalized_rewardbench import question_fields
from rlexp.data.loaders.sources import DATA_SUFFIXES, Chunk, data_files, resolve_source, split_of
from rlexp.data.loaders.validation import At, UniqueIds, check_kind, check_limit, required_value
from rlexp.data.schemas import PromptItem
from rlexp.errors import ConfigError, DataError

LAMPQA_HUB_ID = "alireza7/LaMP-QA"
DEFAULT_PROFILE_K = 10  # the reference's k for BoN sampling, scoring and PPO training (§4)

# `Art_and_Entertainment_test.jsonl`: the ranked files the reference scripts write (`{config}_{split}`).
_SPLIT_SUFFIX = re.compile(r"^(?P<domain>.+?)[_-](?P<split>train|test|validation|valid|eval|dev)$", re.IGNORECASE)


def _file_domain(path: Path) -> tuple[str, str | None]:
    """(domain, split or None) a local file stands for, from its name or (hub layout) its folder."""
    named = split_of(path)
    if named is not None:  # `<Domain>/test-00000-of-00001.parquet`
        return path.parent.name, named
    match = _SPLIT_SUFFIX.match(path.stem)
    if match:
        return match["domain"], match["split"].lower()
    return path.stem, None


def _local_layout(root: Path, split: str) -> dict[str, list[Path]]:
    """Domain -> files of ``split``: ``<root>/<Domain>/<split>-*.parquet`` or ``<root>/<Domain>[_<split>].jsonl``."""
    if root.is_file():
        return {_file_domain(root)[0]: [root]}  # a file given by name is read whatever split it names
    by_domain: dict[str, list[Path]] = {}
    for entry in sorted(root.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            by_domain[entry.name] = data_files(entry, split)
        elif entry.suffix.lower() in DATA_SUFFIXES:
            domain, named = _file_domain(entry)
            if named is None or named == split.lower():
                by_domain.setdefault(domain, []).append(entry)
    if not by_domain:
        raise DataError(
            f"{root}: no LaMP-QA files for split {split!r} (expected <Domain>/{split}-*.parquet or <Domain>_{split}.jsonl)"
        )
    return by_domain


def _checked(row: Mapping[str, Any], at: At) -> dict[str, Any]:
    """PRB's shared question fields, plus what a policy prompt and its gold judge cannot do without."""
    # LaMP-QA's own ranked files (retrieval/rank_dataset.py) keep only {id, text} per post.
    fields = question_fields(row, at, category_required=False)
    if not fields["profile"]:
        raise at.error("profile", "has no posts: a LaMP-QA prompt is personalized from the user's profile")
    required_value(row, "rubric_aspects", at)  # the gold judges score against these
    if not fields["rubric_aspects"]:
        raise at.error("rubric_aspects", "is an empty list: the gold judges need at least one aspect")
    return fields


def _prompt_item(fields: Mapping[str, Any], domain: str, k: int, method: str, encoder: Any) -> PromptItem:
    """The personalized prompt of one validated row: top-``k`` posts for the question, hidden judge fields."""
    ranked = retrieval.rank_posts(fields["question"], fields["profile"], method=method, encoder=encoder)
    hidden = {
        "id": fields["id"],
        "rubric_aspects": [{"aspect": a.aspect, "evidence": a.evidence, "reason": a.reason} for a in fields["rubric_aspects"]],
        "narrative": fields["narrative"],
        "domain": domain,
        "category": fields["category"],
    }
    return PromptItem(f"{domain}:{fields['id']}", fields["question"], "personalized", tuple(ranked[:k]), hidden,
                      profile_ranked=True, template=PRB_TEMPLATE)


def load_lampqa(
    source: str | os.PathLike[str],
    *,
    split: str = "test",
    domains: Sequence[str] | None = None,
    limit: int | None = None,
    retriever: str = "bm25",
    retriever_model: str | os.PathLike[str] | None = None,
    profile_k: int = DEFAULT_PROFILE_K,
    revision: str | None = None,
) -> list[PromptItem]:
    """LaMP-QA rows as ``personalized`` prompts: the question, its top-``profile_k`` posts, the hidden rubric.

    ``source`` is a hub id (one config per domain) or a local export in the hub schema: one file,
    or a folder of ``<Domain>/<split>-*.parquet`` or ``<Domain>[_<split>].{parquet,jsonl,json}``.
    The domain is the hub config or the folder / file name. ``domains`` selects domains before
    reading (default: all); ``limit`` keeps the first rows overall, in domain order. Posts are
    ranked against the question only with ``retriever`` (``bm25``, or ``dense`` with a local
    encoder folder ``retriever_model``). ``hidden`` carries ``rubric_aspects`` (with evidence and
    reason), ``narrative``, ``domain``, ``category`` and the row ``id``; prompt ids are
    ``<domain>:<id>``. Every row is validated; only the kept rows are ranked.
    """
    check_limit(limit)
    if isinstance(profile_k, bool) or not isinstance(profile_k, int) or profile_k < 1:
        raise ConfigError(f"profile_k must be a positive integer, got {profile_k!r}")
    encoder = retrieval.retriever(retriever, retriever_model)  # a bad setting fails before any data is read
    ref = resolve_source(source)
    if ref.kind == "hub":
        chunks = hub_domain_chunks(ref.value, split, domains, revision)
    else:
        chunks = local_domain_chunks(_local_layout(ref.path, split), domains, "LaMP-QA domain")
    rows = _validated(chunks)
    kept = rows[:limit] if limit is not None else rows
    return [_prompt_item(fields, domain, profile_k, retriever, encoder) for fields, domain in kept]


def _validated(chunks: Sequence[Chunk]) -> list[tuple[dict[str, Any], str]]:
    """(fields, domain) of every row, in order; ids are unique within a domain."""
    ids = UniqueIds()
    out = []
    for chunk in chunks:
        check_kind(chunk, "lampqa")
        for row, position in zip(chunk.rows, chunk.positions, strict=True):
            at = At(chunk.label, position)
            fields = _checked(row, at)
            ids.add((chunk.group, fields["id"]), at)
            out.append((fields, chunk.group))
    return out
