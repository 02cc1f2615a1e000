"""Loaders: every record kind from a hub id or a local file / folder, validated row by row.

A *source* is either a local path (a ``.parquet``, ``.jsonl`` or ``.json`` file, or a folder of
them) or a Hugging Face hub id ``org/name`` (read with :func:`datasets.load_dataset`). The
sandbox writes files in the exact arrow schemas of the real datasets, so the same code reads
both.

Validation is strict and happens before anything is returned: a malformed row raises a
one-line :class:`~rlexp.errors.DataError` naming the file, the row (position and id) and the
field. Loading never drops rows on its own; the only selections are the explicit ``subsets``,
``domains``, ``split`` and ``limit`` arguments. Loaders never write anything.

This package's namespace is the public entry point; the modules behind it:

* :mod:`~rlexp.data.loaders.sources` - source resolution and raw file / hub reading;
* :mod:`~rlexp.data.loaders.validation` - row validation shared by every record kind;
* :mod:`~rlexp.data.loaders.rewardbench2`, :mod:`~rlexp.data.loaders.personalized_rewardbench`,
  :mod:`~rlexp.data.loaders.preference_pairs`, :mod:`~rlexp.data.loaders.prompt_sets`,
  :mod:`~rlexp.data.loaders.lampqa`, :mod:`~rlexp.data.loaders.tulu3_prefs` (the Tulu 3 preference mixture's
  prompts), :mod:`~rlexp.data.loaders.user_pairs` (Chatbot Arena- and
  PRISM-Personalized, PRISM's survey) - one loader per record kind;
* :mod:`~rlexp.data.loaders.domains` - datasets with one config per domain (PRB, LaMP-QA);
* :mod:`~rlexp.data.loaders.by_kind` - :func:`load_records`, the loader picked by kind name, and
  :func:`load_prompt_set`, a ``prompts`` config node's prompt set by its ``format``.
"""

from __future__ import annotations

from rlexp.data.loaders.by_kind import LOADERS, PROMPT_FORMATS, load_prompt_set, load_records
from rlexp.data.loaders.lampqa import LAMPQA_HUB_ID, load_lampqa
from rlexp.data.loaders.personalized_rewardbench import load_prb
from rlexp.data.loaders.preference_pairs import load_pairs
from rlexp.data.loaders.prompt_sets import PROMPT_KINDS, load_prompts
from rlexp.data.loaders.rewardbench2 import load_rb2
from rlexp.data.loaders.sources import DATA_SUFFIXES, SourceRef, resolve_source
from rlexp.data.loaders.tulu3_prefs import TULU3_PREFS_HUB_ID, load_tulu3_prefs
from rlexp.data.loaders.user_pairs import (
    ARENA_HUB_ID,
    PRISM_HUB_ID,
    PRISM_SURVEY_HUB_ID,
    load_prism_survey,
    load_user_pairs,
)

__all__ = [
    "ARENA_HUB_ID",
    "DATA_SUFFIXES",
    "LOADERS",
    "LAMPQA_HUB_ID",
    "PROMPT_FORMATS",
    "PRISM_HUB_ID",
    "PRISM_SURVEY_HUB_ID",
    "PROMPT_KINDS",
    "TULU3_PREFS_HUB_ID",
    "SourceRef",
    "load_lampqa",
    "load_pairs",
    "load_prb",
    "load_prism_survey",
    "load_prompt_set",
    "load_prompts",
    "load_rb2",
    "load_tulu3_prefs",
    "load_records",
    "load_user_pairs",
    "resolve_source",
]
