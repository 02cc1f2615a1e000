"""MATH (``EleutherAI/hendrycks_math``, 7 subject configs, split ``test``): competition maths.

Regime: OLMES's ``minerva_math_<subject>::tulu`` (``oe_eval/configs/tasks.py``) over the MATH
task's own defaults (``oe_eval/tasks/oe_eval_tasks/minerva_math.py``, ``TASK_CONFIG_DEFAULTS``,
``chat_overrides`` applied since ``::tulu`` sets ``use_chat_format``); OLMES at commit 99cf8bb:

- shots: the 4 fixed Minerva exemplars, ``fewshot_source: Minerva:MATH`` (``shots/minerva_math.jsonl``),
  the same 4 for every subject and question, as earlier chat turns (``fewshot_as_multiturn``).
- user turn: ``Problem:\\n<problem>\\n\\nSolution:`` (``cot_style: minerva``); no prefill
  (``assistant_prefix: None``). A shot's assistant turn is the exemplar's solution, which ends
  "Final Answer: The final answer is $X$. I hope it is correct.".
- at most 1,024 new tokens and no stop sequence: ``::tulu`` sets ``stop_sequences: []`` over the
  task's chat default ``["Problem:", "<|eot_id|>"]`` ("we rely on the chat format").
- OLMES's metric (``metric: olmes``): ``exact_match`` of lm-eval's ``minerva_math`` rule (OLMES
  pins ``lm_eval==0.4.3``): the text of "Final Answer: The final answer is X. I hope it is
  correct.", normalised by Minerva's ``normalize_final_answer``, equal under ``is_equiv`` (sympy
  ``parse_latex`` of both, ``simplify(a - b) == 0``) to the normalised last ``\\boxed{}`` of the
  solution. A response without that sentence scores 0 however right its ``\\boxed{}`` is.
- rlexp's default (``metric: math_verify``), on purpose: math-verify's ``verify(parse(solution),
  parse(response))`` (gold first), which finds the answer wherever the response states it and
  compares it mathematically; exact match misses right answers in other formats (``\\boxed{0.5}``
  for ``\\frac{1}{2}``, a tuple, a chat answer without the Minerva sentence). It uses
  ``signal.alarm``, so grading runs in worker processes, never threads.
- aggregation: OLMES's MATH score is the macro average of the 7 subjects (``average="macro"``);
  every item's ``group`` is its subject (the row's ``type``).
"""

from __future__ import annotations

import functools
import json
import re
import signal
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from importlib import resources
from typing import Any

from rlexp.errors import ConfigError
from rlexp.suite.base import Row, Shot, SuiteTask, text

SUBJECTS = ("algebra", "counting_and_probability", "geometry", "intermediate_algebra", "number_theory",
            "prealgebra", "precalculus")
#: The metrics ``prompts.tasks.math.metric`` accepts (the first is the default).
METRICS = ("math_verify", "olmes")


@functools.cache
def exemplars() -> tuple[dict[str, str], ...]:
    """OLMES's ``Minerva:MATH`` exemplars (``shots/minerva_math.jsonl``), in OLMES's order."""
    lines = resources.files("rlexp.suite").joinpath("shots/minerva_math.jsonl").read_text(encoding="utf-8")
    return tuple(json.loads(line) for line in lines.splitlines() if line.strip())


def user_turn(problem: str) -> str:
    """OLMES's ``cot_style: minerva`` query."""
    return f"Problem:\n{problem}\n\nSolution:"


def _prompt(row: Row) -> tuple[str, dict[str, Any]]:
    solution = text(row, "solution")
    if "\\boxed" not in solution and "\\fbox" not in solution:
        raise row.at.error("solution", "has no \\boxed{} final answer")
    return user_turn(text(row, "problem")), {"solution": solution}


def _shots(row: Row, pool: Sequence[Row], k: int) -> list[Shot]:
    """The first ``k`` Minerva exemplars; a shot's answer is its solution as OLMES strips it."""
    if k > len(exemplars()):
        raise ConfigError(f"math: shots={k}, but OLMES's Minerva:MATH has {len(exemplars())} exemplars")
    return [(user_turn(ex["problem"]), ex["solution"].strip()) for ex in exemplars()[:k]]


def boxed_answer(solution: str) -> str | None:
    """The argument of the last ``\\boxed{...}`` (or ``\\fbox``) of a text, brace-matched; None if absent.

    As lm-eval's ``last_boxed_only_string`` + ``remove_boxed``: ``\\boxed 5`` (a space, no braces)
    is the text after the last ``\\boxed `` up to a ``$``; unbalanced braces give None.
    """
    if "\\boxed " in solution:
        return solution.split("\\boxed ")[-1].split("$")[0]
    start = solution.rfind("\\boxed")
    if start < 0:
        start = solution.rfind("\\fbox")
        if start < 0:
            return None
    depth = 0
    for i in range(start, len(solution)):
        depth += {"{": 1, "}": -1}.get(solution[i], 0)
        if solution[i] == "}" and depth == 0:
            return solution[solution.index("{", start) + 1 : i]
    return None


# Minerva's normalisation (Lewkowycz et al. 2022, appendix D) as lm-eval 0.4.3 has it
# (lm_eval/tasks/minerva_math/utils.py, the version OLMES pins). The lm-eval installed here (0.4.13)
# changed these rules and will not import without antlr4 4.11, so they are restated here.
_SUBSTITUTIONS = (("an ", ""), ("a ", ""), (".$", "$"), ("\\$", ""), ("\\ ", ""), (" ", ""), ("mbox", "text"),
                  (",\\text{and}", ","), ("\\text{and}", ","), ("\\text{m}", "\\text{}"))
_REMOVED = ("square", "ways", "integers", "dollars", "mph", "inches", "ft", "hours", "km", "units", "\\ldots", "sue",
            "points", "feet", "minutes", "digits", "cents", "degrees", "cm", "gm", "pounds", "meters", "meals",
            "edges", "students", "childrentickets", "multiples", "\\text{s}", "\\text{.}", "\\text{\ns}",
            "\\text{}^2", "\\text{}^3", "\\text{\n}", "\\text{}", "\\mathrm{th}", "^\\circ", "^{\\circ}", "\\;",
            ",\\!", "{,}", '"', "\\dots")
# In order: keep the first $...$ span of a line; unwrap \text{}, \textbf{}, \overline{} (shortest) and
# \boxed{} (longest); write \fracab as \frac{a}{b} and \sqrta as \sqrt{a}.
_REWRITES = ((r".*?\$(.*?)\$.*", r"$\1$"), (r"\\text\{(.*?)\}", r"\1"), (r"\\textbf\{(.*?)\}", r"\1"),
             (r"\\overline\{(.*?)\}", r"\1"), (r"\\boxed\{(.*)\}", r"\1"), (r"frac([^{])(.)", r"frac{\1}{\2}"),
             (r"sqrt([^{])", r"sqrt{\1}"))
_FINAL = re.compile(r"Final Answer: The final answer is(.*?). I hope it is correct.")


def normalize_final_answer(answer: str) -> str:
    """Minerva's ``normalize_final_answer``: the text after the last ``=``, units and TeX dressing removed."""
    answer = answer.split("=")[-1]
    for before, after in _SUBSTITUTIONS:
        answer = answer.replace(before, after)
    for expr in _REMOVED:
        answer = answer.replace(expr, "")
    for pattern, replacement in _REWRITES:
        answer = re.sub(pattern, replacement, answer)
    answer = answer.replace("$", "")
    return answer.replace(",", "") if answer.replace(",", "").isdigit() else answer


def minerva_answer(response: str) -> str | None:
    """The X of the response's first "Final Answer: The final answer is X. I hope it is correct."
    (lm-eval's ``get_unnormalized_answer``: the closing sentence may be cut off), or None."""
    found = _FINAL.search(response + "I hope it is correct.")
    return found.group(1).strip() if found else None


@contextmanager
def _time_limit(seconds: int) -> Iterator[None]:
    """``is_equiv``'s 5 s alarm; only a process's main thread can set one (the graders run there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise TimeoutError

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _parse_latex(expr: str) -> Any:
    """sympy's ``parse_latex``, as lm-eval's ``is_equiv`` calls it, when its ANTLR 4.11 runtime is
    installed (OLMES pins it). Otherwise math-verify's ANTLR grammar (latex2sympy2_extended) with
    its extras off: its sets, intervals and relations are refused, as sympy's parser refuses tuples
    and intervals, so only the rare expression one grammar reads and the other does not can differ."""
    import sympy

    try:
        from sympy.parsing.latex import parse_latex

        return parse_latex(expr)
    except ImportError:
        pass
    from latex2sympy2_extended import latex2sympy
    from latex2sympy2_extended.latex2sympy2 import ConversionConfig

    parsed = latex2sympy(expr, normalization_config=None, conversion_config=ConversionConfig(
        interpret_as_mixed_fractions=False, interpret_contains_as_eq=False, lowercase_symbols=False))
    if not isinstance(parsed, sympy.Expr):
        raise TypeError(f"not an expression: {type(parsed).__name__}")
    return parsed


def is_equiv(answer: str, gold: str) -> bool:
    """lm-eval's ``is_equiv``: both parse as LaTeX and their difference simplifies to 0; any failure
    (a parse error, a timeout after 5 s) is False, even for identical strings."""
    import sympy

    try:
        with _time_limit(5):
            return bool(sympy.simplify(_parse_latex(answer) - _parse_latex(gold)) == 0)
    except Exception:  # noqa: BLE001 - as lm-eval: whatever fails to parse or compare is not equal
        return False


def olmes_exact_match(response: str, solution: str) -> float:
    """OLMES's ``minerva_math`` ``exact_match`` of one response against a MATH solution."""
    found, gold = minerva_answer(response), boxed_answer(solution)
    if found is None or gold is None:
        return 0.0
    return float(is_equiv(normalize_final_answer(found), normalize_final_answer(gold)))


def grade(response: str, hidden: Mapping[str, Any]) -> float:
    """The item's metric (``hidden['metric']``, default math-verify) of one response."""
    if hidden.get("metric", METRICS[0]) == "olmes":
        return olmes_exact_match(response, str(hidden["solution"]))
    from math_verify import parse, verify

    return float(verify(parse(str(hidden["solution"])), parse(response)))


TASK = SuiteTask(
    name="math", hub_id="EleutherAI/hendrycks_math", split="test", required=("problem", "solution"),
    prompt=_prompt, grade=grade, shots=_shots, default_shots=4, configs=SUBJECTS, group_field="type",
    regime="4-shot Minerva CoT (OLMES's Minerva:MATH) as multiturn chat, 'Problem:/Solution:' turns",
    max_new_tokens=1024, stop=(), average="macro",  # Tulu 3's MATH: the mean of the 7 subjects' means
)
