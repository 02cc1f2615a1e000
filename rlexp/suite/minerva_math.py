"""MATH (``EleutherAI/hendrycks_math``, 7 subject configs, split ``test``): competition maths.

Regime (Tulu 3 ``minerva_math::tulu``): Minerva chain-of-thought few-shot exchanges (4 by
default, from the ``train`` split), each answer ending "Final Answer: The final answer is X. I
hope it is correct.". Grading is ``math-verify``: ``verify(parse(solution), parse(response))``,
the gold being the solution's last ``\\boxed{}`` (argument order matters: gold first). Its
timeouts use ``signal.alarm``, so it runs in worker processes, never threads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rlexp.suite.base import Row, Shot, SuiteTask, text

SUBJECTS = ("algebra", "counting_and_probability", "geometry", "intermediate_algebra", "number_theory",
            "prealgebra", "precalculus")


def _prompt(row: Row) -> tuple[str, dict[str, Any]]:
    solution = text(row, "solution")
    if "\\boxed" not in solution and "\\fbox" not in solution:
        raise row.at.error("solution", "has no \\boxed{} final answer")
    return "Problem:\n" + text(row, "problem"), {"solution": solution}


def boxed_answer(solution: str) -> str:
    """The argument of the last ``\\boxed{...}`` of a solution (brace-matched)."""
    start = solution.rfind("\\boxed")
    brace = solution.find("{", start)
    depth = 0
    for i in range(brace, len(solution)):
        depth += {"{": 1, "}": -1}.get(solution[i], 0)
        if depth == 0:
            return solution[brace + 1 : i]
    return solution[brace + 1 :]


def _shots(row: Row, pool: Sequence[Row], k: int) -> list[Shot]:
    return [("Problem:\n" + str(s.data["problem"]),
             f"Solution:\n{s.data['solution']}\nFinal Answer: The final answer is ${boxed_answer(str(s.data['solution']))}$. "
             "I hope it is correct.") for s in pool[:k]]


def grade(response: str, hidden: Mapping[str, Any]) -> float:
    """1.0 if math-verify finds the response's final answer equivalent to the solution's."""
    from math_verify import parse, verify

    return float(verify(parse(str(hidden["solution"])), parse(response)))


TASK = SuiteTask(
    name="math", hub_id="EleutherAI/hendrycks_math", split="test", required=("problem", "solution"),
    prompt=_prompt, grade=grade, shots=_shots, default_shots=4, shot_split="train", configs=SUBJECTS,
    group_field="type", regime="4-shot Minerva CoT as multiturn chat",
)
