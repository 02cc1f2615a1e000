"""AlpacaEval 2 (``tatsu-lab/alpaca_eval``, config ``alpaca_eval_gpt4_baseline``, split ``eval``).

Regime (Tulu 3 ``alpaca_eval_v2::tulu``): zero-shot, the ``instruction`` as the user turn. The
reference ``output`` (GPT-4 Turbo's) is what a response is compared with. A sample's gold is the
configured preference judge's probability that it beats the reference (the per-item preference
AlpacaEval annotates); its mean over prompts is the raw win rate, and the Best-of-N record adds
AlpacaEval's own length-controlled win rate (``alpaca_eval.metrics.glm_winrate``) of the selected
responses (it needs AlpacaEval's hub files for the 805 instructions; without them the record says
why it is missing). The judge is not a function of the text alone, so ``grade`` is None here and the gold
judge (:mod:`rlexp.scoring.suite_grader`) asks its preference judge instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rlexp.suite.base import Row, SuiteTask, text


def _prompt(row: Row) -> tuple[str, dict[str, Any]]:
    # ``index``: the row's place in the full set, which AlpacaEval's length-controlled GLM keys its
    # per-instruction difficulty by.
    return text(row, "instruction"), {"reference": text(row, "output"), "index": row.index,
                                      "reference_generator": str(row.data.get("generator") or "reference")}


TASK = SuiteTask(
    name="alpacaeval", hub_id="tatsu-lab/alpaca_eval", split="eval", required=("instruction", "output"),
    prompt=_prompt, grade=None, configs=("alpaca_eval_gpt4_baseline",), regime="0-shot",
    max_new_tokens=8192,  # OLMES alpaca_eval.py TASK_CONFIG_DEFAULTS max_gen_toks; no stop sequence
)


def lc_win_rate(instructions: Sequence[str], indices: Sequence[int], references: Sequence[str],
                outputs: Sequence[str], preferences: Sequence[float]) -> float:
    """AlpacaEval 2's length-controlled win rate (in [0, 1]) of ``outputs`` against the references,
    from per-item preferences P(output beats reference), by ``alpaca_eval``'s own GLM."""
    import pandas as pd
    from alpaca_eval.metrics.glm_winrate import get_length_controlled_winrate

    # The frame's index is the instructions' place in the full set: the GLM resets it into the
    # "index" column that its per-instruction difficulty is looked up by.
    annotations = pd.DataFrame({
        "instruction": list(instructions), "output_1": list(references), "output_2": list(outputs),
        "generator_1": "reference", "generator_2": "policy",
        "preference": [1.0 + float(p) for p in preferences],  # AlpacaEval's scale: 1 = output_1, 2 = output_2
        "annotator": "rlexp",
    }, index=list(indices))
    return float(get_length_controlled_winrate(annotations)["length_controlled_winrate"]) / 100.0
