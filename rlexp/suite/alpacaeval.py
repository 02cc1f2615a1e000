"""AlpacaEval 2 (``tatsu-lab/alpaca_eval``, config ``alpaca_eval_gpt4_baseline``, split ``eval``).

Regime (Tulu 3 ``alpaca_eval_v2::tulu``): zero-shot, the ``instruction`` as the user turn. The
reference ``output`` (GPT-4 Turbo's) is what a response is compared with. A sample's gold is the
configured preference judge's probability that it beats the reference (the per-item preference
AlpacaEval annotates); its mean over prompts is the raw win rate, and the Best-of-N record adds
AlpacaEval's own length-controlled win rate (``alpaca_eval.metrics.glm_winrate``) of the selected
responses. The judge is not a function of the text alone, so ``grade`` is None here and the gold
judge (:mod:`rlexp.scoring.suite_grader`) asks its preference judge instead.
"""

from __future__ import annotations

from typing import Any

from rlexp.suite.base import Row, SuiteTask, text


def _prompt(row: Row) -> tuple[str, dict[str, Any]]:
    return text(row, "instruction"), {"reference": text(row, "output"),
                                      "reference_generator": str(row.data.get("generator") or "reference")}


TASK = SuiteTask(
    name="alpacaeval", hub_id="tatsu-lab/alpaca_eval", split="eval", required=("instruction", "output"),
    prompt=_prompt, grade=None, configs=("alpaca_eval_gpt4_baseline",), regime="0-shot",
)
