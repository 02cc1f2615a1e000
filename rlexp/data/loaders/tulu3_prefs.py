"""Loading the Tulu 3 preference mixture's prompts (``allenai/llama-3.1-tulu-3-8b-preference-mixture``) as PPO prompts.

RewardBench 2 trains its PPO policies on the prompts of the Tulu 3 8B preference mixture (prompts
only: PPO samples its own answers). The schema, from the dataset card's ``dataset_info``
(https://huggingface.co/datasets/allenai/llama-3.1-tulu-3-8b-preference-mixture/raw/main/README.md):
one ``train`` split (271,409 rows) with the columns

* ``id`` (string),
* ``prompt`` (string: the first user message),
* ``chosen`` and ``rejected`` (lists of ``{content, role}`` messages: the whole conversation, ending
  with the assistant's answer; a multi-turn row has earlier user/assistant turns before it),
* ``source`` (string: the preference dataset the row came from, e.g. ``allenai/tulu-3-sft-reused-on-policy-8b``).

Each row becomes a ``general`` :class:`~rlexp.data.schemas.PromptItem`: the conversation before
``chosen``'s final answer, whose last user turn is the prompt and whose earlier (user, assistant)
exchanges are the policy's earlier chat turns (``shots``, rendered by
:func:`rlexp.downstream.sampling.chat_messages`); reward models and judges read the last user turn.
``hidden`` keeps ``source`` and the row ``id``. The answers are validated (they must be message lists
ending with the assistant, with the same turns before it in ``chosen`` and ``rejected``) but not kept.
A row whose conversation is not alternating user/assistant turns ending with the user (a system
message, two user turns in a row) is refused with a one-line error naming file, row and field:
loading never drops rows on its own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from rlexp.data.loaders.preference_pairs import _response_and_prefix
from rlexp.data.loaders.sources import read_source
from rlexp.data.loaders.validation import At, UniqueIds, check_limit, row_id, string_field, validated_rows
from rlexp.data.schemas import PromptItem
from rlexp.errors import DataError

TULU3_PREFS_HUB_ID = "allenai/llama-3.1-tulu-3-8b-preference-mixture"


def _turns(prefix: list[tuple[str, str]], at: At) -> tuple[str, tuple[tuple[str, str], ...]]:
    """(the last user turn, the earlier (user, assistant) exchanges) of the conversation before the answer."""
    if not prefix:
        raise at.error("chosen", "has no user turn before the answer")
    roles = [r for r, _ in prefix]
    expected = ["user" if i % 2 == 0 else "assistant" for i in range(len(prefix))]
    if roles != expected or roles[-1] != "user":
        raise at.error("chosen", f"expected alternating user/assistant turns ending with the user before the answer, "
                                 f"got roles {roles}")
    shots = tuple((prefix[i][1], prefix[i + 1][1]) for i in range(0, len(prefix) - 1, 2))
    prompt = prefix[-1][1]
    if not prompt.strip():
        raise at.error(f"chosen[{len(prefix) - 1}].content", "is an empty user turn")
    return prompt, shots


def _prompt_item(row: Mapping[str, Any], at: At) -> PromptItem:
    rid = row_id(row, at)
    string_field(row, "prompt", at)
    source = string_field(row, "source", at)
    for name in ("chosen", "rejected"):
        if not isinstance(row.get(name), list):
            raise at.error(name, f"expected a list of {{role, content}} messages, got "
                                 f"{'nothing' if row.get(name) is None else type(row.get(name)).__name__}")
    _, prefix = _response_and_prefix(row["chosen"], "chosen", at)
    _, prefix_r = _response_and_prefix(row["rejected"], "rejected", at)
    if prefix != prefix_r:
        raise at.error("rejected", "its turns before the final answer differ from chosen's")
    prompt, shots = _turns(prefix, at)
    return PromptItem(prompt_id=rid, prompt=prompt, kind="general", hidden={"source": source, "id": rid},
                      shots=shots)


def load_tulu3_prefs(
    source: str | os.PathLike[str],
    *,
    split: str = "train",
    limit: int | None = None,
    revision: str | None = None,
) -> list[PromptItem]:
    """The prompts of a Tulu 3 preference-mixture source: the hub id (:data:`TULU3_PREFS_HUB_ID`, split
    ``train``) or a local ``.parquet`` / ``.jsonl`` / ``.json`` file or folder in the hub schema.

    Every row is validated (one-line :class:`~rlexp.errors.DataError` naming file, row and field);
    ``id`` must be unique; ``limit`` keeps the first rows. An empty source is an error naming it.
    """
    check_limit(limit)
    ids = UniqueIds()

    def convert(row: dict[str, Any], at: At) -> PromptItem:
        item = _prompt_item(row, at)
        ids.add(item.prompt_id, at)
        return item

    items = validated_rows(read_source(source, split=split, config=None, revision=revision), "tulu3_prefs", convert)
    if not items:
        raise DataError(f"{os.fspath(source)}: holds no Tulu 3 preference rows (split {split!r})")
    return items[:limit] if limit is not None else items

