"""Loading RewardBench 2 (``allenai/reward-bench-2``, or a local file/folder of the same schema)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from rlexp.data.loaders.sources import read_source
from rlexp.data.loaders.validation import (
    At,
    UniqueIds,
    check_count,
    check_limit,
    check_selection,
    required_value,
    row_id,
    string_field,
    string_list,
    type_name,
    validated_rows,
)
from rlexp.data.schemas import RB2_SUBSETS, RB2_TIES_ID, RB2Item


def _rb2_item(row: Mapping[str, Any], at: At) -> RB2Item:
    """One validated RB2 row: counts agree with the lists, the subset exists, Ties ids pair up."""
    item_id = row_id(row, at)
    prompt = string_field(row, "prompt", at)
    chosen = string_list(required_value(row, "chosen", at), "chosen", at, nonempty=True)
    rejected = string_list(required_value(row, "rejected", at), "rejected", at, nonempty=True)
    subset = string_field(row, "subset", at)
    if subset not in RB2_SUBSETS:
        raise at.error("subset", f"unknown subset {subset!r}; valid: {', '.join(RB2_SUBSETS)}")
    if subset == "Ties" and not RB2_TIES_ID.match(item_id):
        raise at.error("id", f"Ties ids must look like 'ref:N' or 'tied:N', got {item_id!r}")
    check_count(row, "num_correct", at, len(chosen), "len(chosen)")
    check_count(row, "num_incorrect", at, len(rejected), "len(rejected)")
    check_count(row, "total_completions", at, len(chosen) + len(rejected), "len(chosen) + len(rejected)")
    models = row.get("models")
    models = () if models is None else string_list(models, "models", at, nonempty=False)
    meta = row.get("additional_metadata")
    if meta is not None and not isinstance(meta, Mapping):
        raise at.error("additional_metadata", f"expected an object, got {type_name(meta)}")
    return RB2Item(
        id=item_id,
        prompt=prompt,
        chosen=chosen,
        rejected=rejected,
        subset=subset,
        models=models,
        additional_metadata=dict(meta or {}),
    )


def load_rb2(
    source: str | os.PathLike[str],
    *,
    split: str = "test",
    subsets: Sequence[str] | None = None,
    limit: int | None = None,
    config: str | None = None,
    revision: str | None = None,
) -> list[RB2Item]:
    """Load RewardBench 2 items (``allenai/reward-bench-2`` or a file/folder of the same schema).

    Every row is validated (counts match the lists, subset names, ``ref:N``/``tied:N`` ids in
    Ties, unique ids) before ``subsets`` (exact names from ``RB2_SUBSETS``) and then ``limit``
    (the first rows in file order) select from them. ``config``/``revision`` apply to hub ids.
    """
    check_limit(limit)
    wanted = check_selection(subsets, RB2_SUBSETS, "RewardBench 2 subset")
    ids = UniqueIds()

    def convert(row: dict[str, Any], at: At) -> RB2Item:
        item = _rb2_item(row, at)
        ids.add(item.id, at)
        return item

    items = validated_rows(read_source(source, split=split, config=config, revision=revision), "rb2", convert)
    if wanted is not None:
        items = [it for it in items if it.subset in wanted]
    return items[:limit] if limit is not None else items
