"""The suite's GSM8K, BBH, MATH (metric=olmes) and PopQA graders score responses as OLMES's ``::tulu``
regimes do (OLMES at commit 99cf8bb; it is not installable here).

Every expected score below was derived by hand from OLMES's code, the function named in each
block's comment, and is what that code gives for the response (its quirks included); the graders
are rlexp's own restatement of that code, so these cases are the evidence they agree."""

from __future__ import annotations

import pytest

from rlexp.suite import bbh, gsm8k, minerva_math, popqa

# BBH: oe_eval/tasks/oe_eval_tasks/bbh.py ``GenericBBH._extract_answer_regex`` (cot-v1's
# ``answer_extract_fn: answer_regex``) then ``ExactMatch`` (``ignore_case``; ``ignore_punctuation``
# except on dyck_languages). The patterns are tried in order ("So the answer is", "answer is",
# "answer:", "answer", the bare answer, [a never-matching "\b" letter pattern], the bare answer
# case-insensitively); the first that matches at all gives its *last* match.
# (subtask, response, target, OLMES's score)
BBH_CASES = [
    # multiple choice
    ("date_understanding", "Tomorrow is 12/25/1937. So the answer is (B).", "(B)", 1),
    ("date_understanding", "So the answer is (B)", "(B)", 1),  # no final period
    ("date_understanding", "The answer is (B).", "(B)", 1),  # capital T
    ("date_understanding", "So the answer is: (B).", "(B)", 1),  # "answer\b.*?" after the colon
    ("date_understanding", "**(B)**", "(B)", 1),  # the bare pattern, anywhere
    ("date_understanding", "So the answer is (b).", "(B)", 1),  # (?i), parentheses put back, ignore_case
    ("date_understanding", "(c)", "(C)", 1),  # only the case-insensitive last resort finds it
    ("date_understanding", "I first thought (A), but it is (B).", "(B)", 1),  # last bare match
    ("date_understanding", "So the answer is (A). Hmm, actually the answer is (B).", "(B)", 0),  # first pattern wins
    ("date_understanding", "The answer is (A). Wait, the answer is (B).", "(B)", 1),  # last "answer is" match
    ("date_understanding", "Answer: (B)", "(B)", 1),
    ("date_understanding", "(B)", "(B)", 1),
    ("date_understanding", "The correct option is (B) 12/25/1937", "(B)", 1),
    ("date_understanding", "So the answer is (C).", "(B)", 0),
    ("date_understanding", "So the answer is B.", "(B)", 0),  # a bare letter: OLMES's "\b" fallback is dead
    ("date_understanding", "So the answer is $(B)$.", "(B)", 1),
    ("date_understanding", r"The final answer is $\boxed{(B)}$", "(B)", 1),  # a chat answer, boxed
    ("date_understanding", "So the answer is (A) or (B).", "(B)", 0),
    ("date_understanding", "Step 1: (A) is wrong.\nStep 2: (C) is wrong.\nSo the answer is (B).", "(B)", 1),
    ("date_understanding", "So the answer is (B).\n\nWhy not (A)? It is a month off.", "(B)", 1),
    ("logical_deduction_three_objects", "**Answer: (C)**", "(C)", 1),
    ("hyperbaton", "So the answer is (A).", "(A)", 1),
    ("snarks", "Sentence (A) is sincere; the sarcastic one is (B)", "(B)", 1),
    # True / False
    ("boolean_expressions", "not True is False. So the answer is False.", "False", 1),
    ("boolean_expressions", "So the answer is True", "True", 1),
    ("boolean_expressions", "The answer is False.", "False", 1),
    ("boolean_expressions", "so the answer is false.", "False", 1),
    ("boolean_expressions", "**False**", "False", 1),
    ("boolean_expressions", "So the answer is **True**.", "True", 1),
    ("boolean_expressions", "not True is False, so the whole thing is True.", "True", 1),  # last bare match
    ("boolean_expressions", "FALSE", "False", 1),  # case-insensitive last resort
    ("boolean_expressions", "So the answer is True.", "False", 0),
    ("boolean_expressions", "False", "True", 0),
    # Yes / No
    ("web_of_lies", "So the answer is Yes.", "Yes", 1),
    ("web_of_lies", "So the answer is yes", "Yes", 1),
    ("sports_understanding", "The answer is: no.", "no", 1),
    ("causal_judgement", "Answer: No", "No", 1),
    ("navigate", "We end up at the start. So the answer is No.", "No", 1),
    ("causal_judgement", "I know the answer is not obvious. Yes.", "Yes", 0),  # "answer is no(t)" matches first
    # valid / invalid
    ("formal_fallacies", "So the answer is invalid.", "invalid", 1),
    ("formal_fallacies", "So the answer is valid", "valid", 1),
    ("formal_fallacies", "The argument is Invalid.", "invalid", 1),
    ("formal_fallacies", "So the answer is invalid.", "valid", 0),
    # numbers
    ("multistep_arithmetic_two", "So the answer is -42.", "-42", 1),
    ("multistep_arithmetic_two", "So the answer is 42.", "-42", 1),  # ignore_punctuation drops the sign
    ("multistep_arithmetic_two", "The answer is \u221242.", "-42", 1),  # unicode minus: "answer\b.*?" finds 42
    ("object_counting", "So the answer is 7", "7", 1),
    ("object_counting", "I count 3 + 4 = 7 objects. So the answer is 7.", "7", 1),
    ("object_counting", "There are 7 items in total, answer: 7", "7", 1),
    ("object_counting", "So the answer is 12.", "7", 0),
    ("object_counting", "So the answer is seven.", "7", 0),
    # free text: dyck_languages (punctuation kept), word_sorting
    ("dyck_languages", "So the answer is ] }.", "] }", 1),
    ("dyck_languages", "So the answer is ] }", "] }", 1),
    ("dyck_languages", "**Answer:** ] }", "] }", 1),
    ("dyck_languages", "The answer is: ] }", "] }", 0),  # "answer\b.*?" takes the space after "answer"
    ("dyck_languages", "So the answer is ) ].", ") ]", 1),
    ("dyck_languages", "So the answer is ] ].", "] }", 0),
    ("word_sorting", "So the answer is apple banana cherry.", "apple banana cherry", 1),
    ("word_sorting", "So the answer is apple banana cherry", "apple banana cherry", 1),
    ("word_sorting", "So the answer is Apple Banana Cherry.", "apple banana cherry", 1),
    ("word_sorting", "Sorted: apple banana cherry", "apple banana cherry", 1),  # last bare lower-case run
    ("word_sorting", "The answer is: apple, banana, cherry.", "apple banana cherry", 0),  # "answer\b" takes " is"
]


@pytest.mark.parametrize(("subtask", "response", "target", "expected"), BBH_CASES)
def test_bbh_scores_as_olmes_answer_regex(subtask: str, response: str, target: str, expected: int) -> None:
    assert bbh.grade(response, {"group": subtask, "target": target}) == expected


def test_bbh_extraction_details() -> None:
    # _extract_answer_regex: single letters get their parentheses back; wrappers around the whole
    # answer go; dyck_languages answers keep their brackets; nothing found is "".
    assert bbh.extract("so the answer is (c).", "date_understanding") == "(c)"
    assert bbh.extract("So the answer is '(A)'.", "date_understanding") == "(A)"
    assert bbh.extract("So the answer is ) ] }.", "dyck_languages") == ") ] }"
    assert bbh.extract("I cannot tell.", "date_understanding") == ""
    assert bbh.extract("So the answer is -7.", "multistep_arithmetic_two") == "-7"
    assert len(bbh.SUBTASKS) == 27 and set(bbh.ANSWER) <= set(bbh.SUBTASKS)
    # The label: OLMES's _process_doc keeps a plain target as it is.
    assert bbh.gold_answer("(B)") == "(B)" and bbh.gold_answer("So the answer is False.") == "False"


# GSM8K: oe_eval/tasks/oe_eval_tasks/gsm8k.py ``GSM8K._extract_answer`` (no ``answer_regexes`` in
# gsm8k::tulu: commas between digits removed, last ``[-+]?\d*\.\d+|\d+``, else the whole text) against
# ``_clean_short_answer`` of the gold, ``ExactMatch`` with ``ignore_case`` and regexes_to_ignore
# [",", "\\$", "(?s).*#### ", "\\.$"]. (response, gold after ####, OLMES's score)
GSM8K_CASES = [
    (r"The final answer is $\boxed{15}$.", "15", 1),
    ("So the answer is 19...", "19", 1),
    ("23. Hope this helps...", "23", 1),
    ("Natalia sold 48 + 24 = 72 clips. So the answer is 72.", "72", 1),
    ("#### 72", "72", 1),
    ("Answer: Betty has 3 + 1,200 = 1,203 apples. So the answer is 1,203.", "1,203", 1),
    ("In total: 1,000,000 dollars.", "1000000", 1),
    (r"Thus, the answer is $\boxed{1,080}$.", "1080", 1),
    (r"The answer is \(\boxed{8}\).", "8", 1),
    ("**Final answer: 15**", "15", 1),
    ("**Answer:** 42", "42", 1),
    ("Janet makes 9 * 2 = $18 every day.", "18", 1),
    ("She earns $18.00 a day.", "18", 0),  # "18.00" is not "18"
    ("So the answer is 3.5.", "3.5", 1),
    ("So the answer is .5", "0.5", 0),  # ".5" is not "0.5"
    ("The answer is -5.", "5", 1),  # an integer's sign is never part of the number
    ("The answer is \u22123.", "3", 1),  # unicode minus
    ("The answer is 42, not 41.", "42", 0),  # the last number
    ("0.5 of 10 is 5. So the answer is 5", "5", 1),
    ("I'm not sure.", "8", 0),
    ("The answer is 6 \u2014 six trees.", "6", 1),
    ("The answer is 15!", "15", 1),
    ("Answer: 2 + 3 = 5 pens", "5", 1),
]


@pytest.mark.parametrize(("response", "gold", "expected"), GSM8K_CASES)
def test_gsm8k_scores_as_olmes_extract_answer(response: str, gold: str, expected: int) -> None:
    assert gsm8k.grade(response, {"answer": gold}) == expected


def test_gsm8k_extraction_details() -> None:
    assert gsm8k.extract("1,234,567 and 1,2,3") == "3"
    assert gsm8k.extract("It is 1,234,567.") == "1234567"
    assert gsm8k.extract("no number") == "no number"  # the whole text, which matches no gold
    assert gsm8k.extract("-2.5 and -7") == "7" and gsm8k.extract("x = -2.5") == "-2.5"


# MATH, metric=olmes: oe_eval/tasks/oe_eval_tasks/minerva_math.py ``process_results`` (cot_style
# minerva) -> lm-eval 0.4.3 ``minerva_math/utils.py`` ``process_results``: ``get_unnormalized_answer``
# + ``normalize_final_answer`` + ``is_equiv`` against the normalised last \boxed{} of the solution.
MATH_CASES = [
    (r"Final Answer: The final answer is $\frac{1}{2}$. I hope it is correct.", r"\boxed{\frac{1}{2}}", 1),
    (r"Final Answer: The final answer is $0.5$. I hope it is correct.", r"\boxed{\frac{1}{2}}", 1),
    (r"Final Answer: The final answer is $\frac12$. I hope it is correct.", r"\boxed{\frac{1}{2}}", 1),
    (r"so the answer is $\boxed{\frac{1}{2}}$.", r"\boxed{\frac{1}{2}}", 0),  # no Minerva sentence
    ("Final Answer: The final answer is 5 inches. I hope it is correct.", r"\boxed{5}", 1),  # units dropped
    ("Final Answer: The final answer is $x = 4$. I hope it is correct.", r"$x = \boxed{4}$", 1),
    ("Final Answer: The final answer is $3$. I hope it is correct.", r"\boxed{4}", 0),
    ("Final Answer: The final answer is $1,000$. I hope it is correct.", r"\boxed{1000}", 1),
    (r"Final Answer: The final answer is \text{Evelyn}. I hope it is correct.", r"\boxed{\text{Evelyn}}", 1),
    # parse_latex cannot read a tuple, so lm-eval 0.4.3 scores even the identical answer 0.
    ("Final Answer: The final answer is $(1,2)$. I hope it is correct.", r"\boxed{(1,2)}", 0),
    # the first Minerva sentence is the answer
    ("Final Answer: The final answer is $2$. I hope it is correct.\nFinal Answer: The final answer is $4$. "
     "I hope it is correct.", r"\boxed{4}", 0),
    ("Final Answer: The final answer is $24$. I hope it is correct.", r"so it is \boxed 24$.", 1),  # "\boxed 24"
]


@pytest.mark.parametrize(("response", "solution", "expected"), MATH_CASES)
def test_math_olmes_metric_scores_as_minerva_exact_match(response: str, solution: str, expected: int) -> None:
    assert minerva_math.grade(response, {"solution": solution, "metric": "olmes"}) == expected


def test_math_default_metric_is_math_verify() -> None:
    boxed_only = r"so the answer is $\boxed{\frac{1}{2}}$."
    assert minerva_math.grade(boxed_only, {"solution": r"\boxed{\frac{1}{2}}"}) == 1.0
    assert minerva_math.grade(boxed_only, {"solution": r"\boxed{\frac{1}{2}}", "metric": "math_verify"}) == 1.0
    assert minerva_math.grade("$(1,2)$", {"solution": r"\boxed{(1,2)}"}) == 1.0  # where exact match fails


def test_minerva_normalisation() -> None:
    # lm-eval 0.4.3 normalize_final_answer (Lewkowycz et al. 2022, appendix D), case by case.
    norm = minerva_math.normalize_final_answer
    assert norm(r"\frac12") == r"\frac{1}{2}"
    assert norm(r"\sqrt2") == r"\sqrt{2}"
    assert norm("x = 4") == "4"
    assert norm("100,000") == "100000" and norm("1,2") == "12"  # commas go whenever only digits remain
    assert norm(r"\text{(C)}") == "(C)"
    assert norm(r"10^\circ") == "10"
    assert norm(r"\$5.00") == "5.00"
    assert norm(r"$\boxed{7}$ dollars") == "7"
    assert norm(r"\left( 3, 4 \right)") == r"\le(3,4\right)"  # "ft" is a unit, even inside \left
    assert minerva_math.minerva_answer("Final Answer: The final answer is $7$. I hope it is correct.") == "$7$"
    assert minerva_math.minerva_answer("The answer is 7.") is None
    assert minerva_math.boxed_answer(r"a \boxed{\frac{1}{2}} b \boxed{3}") == "3"
    assert minerva_math.boxed_answer(r"\boxed{\frac{1}{2") is None


# PopQA: oe_eval/tasks/oe_eval_tasks/popqa.py ``PopQA.process_results``: some alias ``a`` with
# ``a in pred or a.lower() in pred or a.capitalize() in pred``; the prediction keeps its case.
POPQA_CASES = [
    ("politician", ["politician", "political leader"], 1),
    ("He was a Politician.", ["politician", "political leader"], 1),  # a.capitalize()
    ("POLITICIAN", ["politician"], 0),  # the prediction is not lower-cased
    ("a political leader", ["politician", "political leader"], 1),
    ("Peru", ["Peru", "Republic of Peru"], 1),
    ("peru", ["Peru"], 1),  # a.lower()
    ("It is in Chile", ["Peru"], 0),
    ("New York City", ["New York"], 1),  # containment, not equality
    ("the republic of peru", ["Republic of Peru"], 1),
    ("The Republic Of Peru", ["Republic of Peru"], 0),
]


@pytest.mark.parametrize(("response", "answers", "expected"), POPQA_CASES)
def test_popqa_alias_rule(response: str, answers: list[str], expected: int) -> None:
    assert popqa.grade(response, {"answers": answers}) == expected
