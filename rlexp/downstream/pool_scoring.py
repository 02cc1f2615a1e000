"""A pool's samples as a [prompt][sample] matrix, and their scores by one scorer.

:func:`rlexp.inputs.pool_scores` caches these scores per (pool, scorer) as a store record.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow.parquet as pq

from rlexp.benchmarks.runners import score_chunked
from rlexp.data.schemas import PromptItem
from rlexp.errors import DataError
from rlexp.scorer import ScoreInput, Scorer


def pool_matrix(pool_path: str, prompts: Sequence[PromptItem]) -> tuple[list[list[str]], int]:
    """The pool's texts as [prompt][sample] in prompt-set order; pool and prompts must match."""
    table = pq.read_table(pool_path).to_pydict()
    by_prompt: dict[str, dict[int, str]] = {}
    for pid, j, text in zip(table["prompt_id"], table["sample_index"], table["text"], strict=False):
        by_prompt.setdefault(pid, {})[int(j)] = text
    ids = [p.prompt_id for p in prompts]
    missing = [i for i in ids if i not in by_prompt]
    extra = set(by_prompt) - set(ids)
    if missing or extra:
        example = missing[0] if missing else sorted(extra)[0]
        raise DataError(
            f"pool {pool_path} does not match the prompt set: prompt {example!r} is "
            f"{'missing from the pool' if missing else 'not in the prompt set'}"
        )
    n = len(by_prompt[ids[0]])
    texts = []
    for pid in ids:
        row = by_prompt[pid]
        if sorted(row) != list(range(n)):
            raise DataError(f"pool {pool_path}: prompt {pid!r} has samples {sorted(row)[:5]}..., expected 0..{n - 1}")
        texts.append([row[j] for j in range(n)])
    return texts, n


def score_pool_texts(scorer: Scorer, prompts: Sequence[PromptItem], texts: list[list[str]], role: str,
                     progress: bool) -> np.ndarray:
    """Flat scores (prompt-major) of a pool's [prompt][sample] texts; a NaN score is an error."""
    n = len(texts[0]) if texts else 0
    items = [ScoreInput(p.prompt, t, p.profile, p.hidden, p.profile_ranked)
             for p, row in zip(prompts, texts, strict=False) for t in row]
    flat = score_chunked(scorer, items, f"scoring pool ({role})", progress)
    bad = np.flatnonzero(~np.isfinite(flat))
    if bad.size:
        p, j = divmod(int(bad[0]), n)
        raise DataError(f"{role} scorer {scorer.name}: NaN score for prompt {prompts[p].prompt_id!r}, sample {j}")
    return flat
