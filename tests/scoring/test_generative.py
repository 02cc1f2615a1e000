"""Generative judges and gold judges.

Two kinds of model stand behind the judges here:

* a tiny *random* chat model (rlexp.models.tiny): it writes garbage, which is exactly what
  exercises the parse-failure paths end to end (real tokenizer, chat template, generate());
* a scripted ChatLM subclass that returns fixed text for a prompt: it stands in for a model's
  words so the prompt construction, answer placement, parsing and scoring under test are real.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
import torch

from rlexp.benchmarks.personalized_math import seeded_positions
from rlexp.benchmarks.rewardbench2_math import parse_rating
from rlexp.config.nodes import ProfileConfig
from rlexp.data.schemas import ProfilePost, RubricAspect
from rlexp.errors import ConfigError, DataError
from rlexp.models import tiny
from rlexp.models.chat_lm import ChatLM
from rlexp.scorer import ScoreInput, Scorer
from rlexp.scoring.generative import (
    RANKING_LETTERS,
    TIES_CLAUSE,
    GenerativeJudge,
    JudgeSettings,
    judge_prb_pairs,
    seeded_slot,
)
from rlexp.scoring.judge_parsing import parse_match_score, parse_score_list
from rlexp.scoring.judges import (
    AspectLLMJudge,
    PRBListJudge,
    RMGoldJudge,
    SandboxJudge,
)
from tests._tiny_random import corpus, random_chat_model

SPEC = tiny.TinySpec(
    arch="llama",
    chat_format="llama",
    vocab_size=300,
    hidden_size=32,
    num_layers=1,
    num_heads=2,
    intermediate_size=64,
    max_position=512,
    corpus="a",
    pretrain_epochs=0,
    sft_epochs=0,
    lr=1e-3,
    batch_size=8,
    max_length=128,
    seed=0,
)


@pytest.fixture(scope="module")
def tiny_parts() -> tuple[object, object]:
    return random_chat_model(SPEC)


@pytest.fixture(scope="module")
def tiny_lm(tiny_parts: tuple[object, object]) -> ChatLM:
    model, tok = tiny_parts
    return ChatLM(model, tok, name="tiny", device="cpu", batch_size=4)


class ScriptedLM(ChatLM):
    """Stands in for a model's text: ``reply(messages, temperature)`` -> output. Records each call."""

    def __init__(self, reply: Callable[[list[dict[str, str]], float], str], name: str = "scripted") -> None:
        self.reply = reply
        self.name = name
        self.truncated = 0
        self.calls: list[tuple[int, float, int]] = []
        self.seen: list[list[dict[str, str]]] = []

    def generate(
        self,
        prompts: Sequence[list[dict[str, str]]],
        max_new_tokens: int = 512,
        temperature: float = 0.0,
        seed: int = 0,
        batch_size: int | None = None,
    ) -> list[str]:
        self.calls.append((len(prompts), temperature, seed))
        self.seen.extend(list(m) for m in prompts)
        return [self.reply(list(m), temperature) for m in prompts]


def user_text(messages: list[dict[str, str]]) -> str:
    return next(m["content"] for m in messages if m["role"] == "user")


POSTS = (
    ProfilePost(category="cooking", id="p1", text="I only cook vegan dinners"),
    ProfilePost(category="diy", id="p2", text="my kitchen shelf keeps falling"),
)


# --------------------------------------------------------------------------------------------
# ChatLM with the tiny random model
# --------------------------------------------------------------------------------------------


def test_chat_lm_batches_like_single_calls_and_seeds_sampling(tiny_lm: ChatLM) -> None:
    prompts = [
        [{"role": "user", "content": "rice"}],
        [{"role": "system", "content": "be brief"}, {"role": "user", "content": "how to cook bread in the garden"}],
        [{"role": "user", "content": "camera paint knitting bike tomato rice bread garden " * 3}],
    ]
    batched = tiny_lm.generate(prompts, max_new_tokens=6, batch_size=3)
    single = [tiny_lm.generate([p], max_new_tokens=6)[0] for p in prompts]
    # Left padding + attention mask: a prompt's greedy output does not depend on its batch mates.
    assert batched == single
    assert len(set(batched)) == 3  # the outputs depend on the prompt, so the comparison means something
    assert all(isinstance(o, str) for o in batched)

    torch.manual_seed(123)
    expected_next = torch.rand(3)
    torch.manual_seed(123)
    s1 = tiny_lm.generate(prompts, max_new_tokens=6, temperature=1.0, seed=7)
    assert torch.equal(torch.rand(3), expected_next)  # the caller's RNG stream is untouched
    s2 = tiny_lm.generate(prompts, max_new_tokens=6, temperature=1.0, seed=7)
    assert s1 == s2
    assert s1 != batched  # sampling really happened (fixed seed, so this is deterministic)
    assert tiny_lm.generate([], max_new_tokens=4) == []


def test_chat_lm_truncates_long_prompts_from_the_left(tiny_parts: tuple[object, object]) -> None:
    model, tok = tiny_parts
    lm = ChatLM(model, tok, name="tiny", device="cpu", max_prompt_tokens=16)
    lm.generate([[{"role": "user", "content": "rice " * 40}], [{"role": "user", "content": "x"}]], max_new_tokens=2)
    assert lm.truncated == 1


def test_missing_chat_template_is_a_config_error(tiny_parts: tuple[object, object]) -> None:
    model, _ = tiny_parts
    tok = tiny.build_tokenizer(corpus()[:50], SPEC)
    tok.chat_template = None
    with pytest.raises(ConfigError, match=r"^generative judge my-judge: tokenizer has no chat template$"):
        ChatLM(model, tok, name="my-judge")


def test_from_pretrained_loads_left_padding_and_checks_template(
    tmp_path: Path, tiny_parts: tuple[object, object]
) -> None:
    model, _ = tiny_parts
    tok = tiny.build_tokenizer(corpus()[:50], SPEC)
    tiny.save(model, tok, tmp_path / "ok", padding_side="right")
    lm = ChatLM.from_pretrained(str(tmp_path / "ok"), device="cpu")
    assert lm.tokenizer.padding_side == "left"
    assert lm.name == str(tmp_path / "ok")
    assert len(lm.generate([[{"role": "user", "content": "rice"}]], max_new_tokens=2)) == 1

    tok.chat_template = None
    tiny.save(model, tok, tmp_path / "bare")
    with pytest.raises(ConfigError, match="tokenizer has no chat template"):
        ChatLM.from_pretrained(str(tmp_path / "bare"), name="bare")


# --------------------------------------------------------------------------------------------
# garbage from the random model: every mode counts its parse failures
# --------------------------------------------------------------------------------------------


def test_ratings_on_garbage_are_minus_one_and_counted(tiny_lm: ChatLM) -> None:
    judge = GenerativeJudge(tiny_lm, JudgeSettings(max_new_tokens=6))
    items = [ScoreInput(prompt=f"how to cook rice {i}?", response=f"boil it {i} minutes") for i in range(3)]
    raw = tiny_lm.generate([judge.rating_messages(it) for it in items], max_new_tokens=6)
    ratings = judge.score(items)
    # Each rating is what the RB2 parser reads in that output (garbage can contain a stray digit).
    assert ratings.tolist() == [float(parse_rating(o)) for o in raw]
    failures = int((ratings == -1).sum())
    assert failures >= 1
    assert judge.stats.parse_failures == failures
    assert judge.stats.items == 3
    assert judge.stats.extra["calls"] == 3
    assert isinstance(judge, Scorer)


def test_rankings_on_garbage_get_quarter_credit(tiny_lm: ChatLM) -> None:
    judge = GenerativeJudge(tiny_lm, JudgeSettings(max_new_tokens=6))
    credit, verdict = judge.rank_rb2("best rice?", ["good", "bad 1", "bad 2", "bad 3"], item_id="r1")
    assert (credit, verdict) == (0.25, None)
    assert judge.stats.parse_failures == 1


def test_pairwise_on_garbage_reports_failures_and_bias_keys(tiny_lm: ChatLM) -> None:
    judge = GenerativeJudge(tiny_lm, JudgeSettings(max_new_tokens=6))
    items = [
        {"id": f"q{i}", "question": f"bread {i}?", "profile": [], "chosen": "short", "rejected": "long long"}
        for i in range(4)
    ]
    report = judge_prb_pairs(judge, items, seed=42)
    positions = seeded_positions(4, 42)
    assert report["parse_failures"] == 4 == judge.stats.parse_failures
    ref, exc = report["reference"], report["exclude"]
    for key in ("position_bias", "accuracy_chosen_in_a", "accuracy_chosen_in_b", "pred_a", "pred_b"):
        assert key in ref and key in exc
    # Reference policy: every failure becomes a vote for A, so accuracy = share of chosen-in-A.
    assert ref["accuracy"] == sum(positions) / 4
    assert ref["pred_a"] == 4
    assert exc["accuracy"] is None and exc["pred_a"] == 0
    assert [p["verdict"] for p in report["per_item"]] == [None] * 4
    assert [p["chosen_in_a"] for p in report["per_item"]] == positions


def test_aspect_judge_on_garbage_retries_then_scores_zero(tiny_lm: ChatLM) -> None:
    judge = AspectLLMJudge(tiny_lm, max_new_tokens=4)
    aspects = [
        {"aspect": "brevity", "reason": "busy", "evidence": "says so"},
        {"aspect": "vegan", "reason": "", "evidence": ""},
    ]
    item = ScoreInput(prompt="dinner idea?", response="pasta", hidden={"rubric_aspects": aspects, "narrative": "vegan"})
    assert judge.score([item]).tolist() == [0.0]
    assert judge.stats.parse_failures == 2
    assert judge.stats.extra["calls"] == 6 and judge.stats.extra["retries"] == 4


# --------------------------------------------------------------------------------------------
# RB2 rankings mode with scripted outputs
# --------------------------------------------------------------------------------------------


def _letter_of(text: str, marker: str) -> str | None:
    """Which assistant's block in a rankings prompt contains ``marker``."""
    for letter in RANKING_LETTERS:
        block = re.search(rf"\[The Start of Assistant {letter}'s Answer\]\n(.*?)\n\[The End", text, re.S)
        if block and marker in block.group(1):
            return letter
    return None


def test_rankings_placement_is_seeded_reproducible_and_spread() -> None:
    judge = GenerativeJudge(ScriptedLM(lambda m, t: ""))
    completions = ["CORRECT", "w1", "w2", "w3"]
    ids = [f"item-{i}" for i in range(40)]
    letters = [judge.place_rb2(completions, seed=3, item_id=i)[1] for i in ids]
    assert letters == [judge.place_rb2(completions, seed=3, item_id=i)[1] for i in ids]
    # Keyed by item id, not by call order.
    assert letters[::-1] == [judge.place_rb2(completions, seed=3, item_id=i)[1] for i in reversed(ids)]
    assert set(letters) == set(RANKING_LETTERS)
    assert letters != [judge.place_rb2(completions, seed=4, item_id=i)[1] for i in ids]
    shown, letter = judge.place_rb2(completions, seed=3, item_id="item-0")
    assert shown[RANKING_LETTERS.index(letter)] == "CORRECT"
    assert [c for c in shown if c != "CORRECT"] == ["w1", "w2", "w3"]  # the others keep their order
    assert seeded_slot(3, "item-0") == RANKING_LETTERS.index(letter)
    # correct_index picks which completion is the correct one.
    shown, letter = judge.place_rb2(["w1", "CORRECT", "w2", "w3"], correct_index=1, seed=3, item_id="item-0")
    assert shown[RANKING_LETTERS.index(letter)] == "CORRECT"


def test_rank_rb2_credit_follows_the_placed_answer() -> None:
    completions = ["CORRECT", "w1", "w2", "w3"]
    knows = ScriptedLM(lambda m, t: f"The best is clear. [[{_letter_of(user_text(m), 'CORRECT')}]]")
    judge = GenerativeJudge(knows)
    results = [judge.rank_rb2("q?", completions, seed=1, item_id=i) for i in range(12)]
    assert all(credit == 1.0 for credit, _ in results)
    assert {v for _, v in results} == {judge.place_rb2(completions, seed=1, item_id=i)[1] for i in range(12)}

    always_a = GenerativeJudge(ScriptedLM(lambda m, t: "[[A]]"))
    credits = [always_a.rank_rb2("q?", completions, seed=1, item_id=i)[0] for i in range(12)]
    in_a = [judge.place_rb2(completions, seed=1, item_id=i)[1] == "A" for i in range(12)]
    assert credits == [1.0 if a else 0.0 for a in in_a]
    assert always_a.stats.parse_failures == 0

    with pytest.raises(DataError, match="exactly 4"):
        judge.rank_rb2("q?", completions[:3])


# --------------------------------------------------------------------------------------------
# RB2 ratings mode with scripted outputs
# --------------------------------------------------------------------------------------------


def test_ratings_credit_with_tied_top_ratings_and_failures() -> None:
    table = {"good": "Solid answer.\nRating: 8", "bad1": "Also fine. 8", "bad2": "Weak. Rating: 3", "bad3": "no idea"}

    def reply(m: list[dict[str, str]], t: float) -> str:
        answer = re.search(r"answer\]\n(.*?)\n\[End", user_text(m), re.S)
        assert answer is not None
        return table[answer.group(1)]

    judge = GenerativeJudge(ScriptedLM(reply))
    credit, ratings = judge.rate_rb2("q?", ["good", "bad1", "bad2", "bad3"])
    assert ratings == [8, 8, 3, -1]
    assert credit == 0.5  # two-way tie at the top
    assert judge.stats.parse_failures == 1

    credit, ratings = judge.rate_rb2("q?", ["bad2", "good", "bad1"])
    assert (credit, ratings) == (0.0, [3, 8, 8])
    credit, ratings = judge.rate_rb2("q?", ["bad3", "bad3"])
    assert (credit, ratings) == (0.25, [-1, -1])


def test_ties_prompt_flag_and_profile_modes_change_the_prompt() -> None:
    lm = ScriptedLM(lambda m, t: "")
    item = ScoreInput(prompt="vegan dinner?", response="tofu", profile=POSTS)
    plain = GenerativeJudge(lm).rating_messages(item)
    ties = GenerativeJudge(lm, JudgeSettings(ties_prompt=True)).rating_messages(item)
    assert TIES_CLAUSE not in plain[0]["content"] and TIES_CLAUSE in ties[0]["content"]
    assert "vegan dinners" not in user_text(plain)
    raw = GenerativeJudge(lm, profile=ProfileConfig(mode="raw", separator="\n--\n")).rating_messages(item)
    assert "vegan dinner?\n--\nPost 1 (Category: " in user_text(raw) and "I only cook vegan dinners" in user_text(raw)
    planned = GenerativeJudge(lm, profile=ProfileConfig(mode="planner"), planner=lambda q, p: "- wants vegan")
    assert "- wants vegan" in user_text(planned.rating_messages(item))
    with pytest.raises(ConfigError, match="needs a planner"):
        GenerativeJudge(lm, profile=ProfileConfig(mode="planner"))
    with pytest.raises(ConfigError, match=r"profile.mode='profile' is not one of none, raw, planner"):
        GenerativeJudge(lm, profile=ProfileConfig(mode="profile"))


# --------------------------------------------------------------------------------------------
# PRB pairwise mode with scripted outputs
# --------------------------------------------------------------------------------------------


def _slot_of(text: str, marker: str) -> str:
    a_part, b_part = text.split("Response B:")
    return "A" if marker in a_part.split("Response A:")[1] else "B" if marker in b_part else "?"


def _prb_items(n: int) -> list[dict[str, object]]:
    return [
        {
            "id": f"p{i}",
            "question": f"question {i}?",
            "profile": [{"category": "cooking", "id": "x", "text": "I only cook vegan dinners"}],
            "chosen": f"CHOSEN answer {i}",
            "rejected": f"other answer {i}",
        }
        for i in range(n)
    ]


def test_prb_pairwise_accuracy_with_chosen_in_a_and_b() -> None:
    items = _prb_items(20)
    positions = seeded_positions(20, 42)
    assert 0 < sum(positions) < 20  # both slots are exercised

    knows = GenerativeJudge(ScriptedLM(lambda m, t: f"Reasoning: fits.\nResult: {_slot_of(user_text(m), 'CHOSEN')}"))
    report = judge_prb_pairs(knows, items)
    for policy in ("reference", "exclude"):
        s = report[policy]
        assert s["accuracy"] == 1.0 and s["position_bias"] == 0.0 and s["parse_failures"] == 0
        assert s["n_chosen_in_a"] == sum(positions) and s["n_chosen_in_b"] == 20 - sum(positions)
    assert [p["chosen_in_a"] for p in report["per_item"]] == positions
    assert all(p["correct"] for p in report["per_item"])

    always_a = judge_prb_pairs(GenerativeJudge(ScriptedLM(lambda m, t: "Result: A")), items)["reference"]
    assert always_a["accuracy_chosen_in_a"] == 1.0 and always_a["accuracy_chosen_in_b"] == 0.0
    assert always_a["position_bias"] == 1.0

    # The judge fails whenever chosen is in B: the reference policy turns those into wrong A votes.
    def fails_on_b(m: list[dict[str, str]], t: float) -> str:
        return "Result: A" if _slot_of(user_text(m), "CHOSEN") == "A" else "I cannot decide"

    report = judge_prb_pairs(GenerativeJudge(ScriptedLM(fails_on_b)), items)
    n_b = 20 - sum(positions)
    assert report["parse_failures"] == n_b
    assert report["reference"]["accuracy"] == sum(positions) / 20
    assert report["exclude"]["accuracy"] == 1.0
    assert report["exclude"]["n_chosen_in_b"] == 0


def test_pairwise_prompt_fences_and_profile() -> None:
    lm = ScriptedLM(lambda m, t: "**Result:** b")
    judge = GenerativeJudge(lm, profile=ProfileConfig(mode="raw"))
    verdict = judge.pairwise("dinner?", POSTS, "use ```code``` here", "plain")
    assert verdict == "B"
    system, user = lm.seen[0][0]["content"], user_text(lm.seen[0])
    assert "Result: A or B" in system and "length" in system and "order" in system
    assert "````\nuse ```code``` here\n````" in user  # a longer fence than any run inside
    assert "```\nplain\n```" in user
    assert "I only cook vegan dinners" in user
    assert GenerativeJudge(lm).pairwise_messages("dinner?", POSTS, "a", "b")[1]["content"].count("vegan") == 0


# --------------------------------------------------------------------------------------------
# gold judges with scripted outputs
# --------------------------------------------------------------------------------------------

ASPECTS = [
    {"aspect": "brevity", "reason": "the user is busy", "evidence": "I have 5 minutes"},
    {"aspect": "examples", "reason": "learns by example", "evidence": "show me"},
]


def test_aspect_judge_retries_with_raised_temperature_then_succeeds() -> None:
    def reply(m: list[dict[str, str]], t: float) -> str:
        if t == 0.0:
            return "Let me think about this aspect carefully"
        return '{"match_score": 2}' if "Aspect: brevity" in user_text(m) else 'Partly. ```json\n{"match_score": 1}\n```'

    lm = ScriptedLM(reply)
    judge = AspectLLMJudge(lm, seed=5)
    item = ScoreInput(prompt="quick recipe?", response="toast", hidden={"rubric_aspects": ASPECTS, "narrative": "NARR"})
    assert judge.score([item]).tolist() == [0.75]  # (2 + 1) / (2 * 2)
    assert [(n, t, s) for n, t, s in lm.calls] == [(2, 0.0, 5), (2, 0.1, 6)]
    assert judge.stats.parse_failures == 0 and judge.stats.extra["retries"] == 2
    first = user_text(lm.seen[0])
    for part in ("quick recipe?", "NARR", "toast", "brevity", "the user is busy", "I have 5 minutes"):
        assert part in first

    # RubricAspect records work too; a bare trailing digit is accepted.
    records = [RubricAspect(aspect="brevity", evidence="e", reason="r")]
    lenient = AspectLLMJudge(ScriptedLM(lambda m, t: "The response covers it: 1"))
    assert lenient.score([ScoreInput("q", "r", hidden={"rubric_aspects": records})]).tolist() == [0.5]


def test_aspect_judge_gives_up_after_three_tries() -> None:
    lm = ScriptedLM(lambda m, t: '{"match_score": 5}')
    judge = AspectLLMJudge(lm)
    item = ScoreInput(prompt="q", response="r", hidden={"rubric_aspects": ASPECTS})
    assert judge.score([item]).tolist() == [0.0]
    assert [t for _, t, _ in lm.calls] == [0.0, 0.1, 0.2]
    assert judge.stats.parse_failures == 2
    with pytest.raises(DataError, match="item 0 has no hidden 'rubric_aspects'"):
        judge.score([ScoreInput(prompt="q", response="r")])


def test_prb_list_judge_validates_the_list_length() -> None:
    aspects = [{"aspect": "brevity"}, {"aspect": "examples"}, {"aspect": "tone"}]
    item = ScoreInput(prompt="q?", response="resp", hidden={"rubric_aspects": aspects, "narrative": "SECRET"})
    lm = ScriptedLM(lambda m, t: "[2, 2]" if t == 0.0 else "Scores: [2, 1, 0]")
    judge = PRBListJudge(lm)
    assert judge.score([item]).tolist() == [1.0]  # mean of 0-2, not divided by 2
    assert judge.stats.extra["wrong_length"] == 1 and judge.stats.parse_failures == 0
    user = user_text(lm.seen[0])
    assert "brevity, examples, tone" in user and "SECRET" not in user

    normalised = PRBListJudge(ScriptedLM(lambda m, t: "[2, 1, 0]"), normalise=True)
    assert normalised.score([item]).tolist() == [0.5]

    short = PRBListJudge(ScriptedLM(lambda m, t: "[2, 1]"))
    assert short.score([item]).tolist() == [0.0]
    assert short.stats.parse_failures == 1 and short.stats.extra["wrong_length"] == 3


def test_parsers_are_lenient_but_not_sloppy() -> None:
    assert parse_match_score('Reasoning.\n{"match_score": 2}') == 2
    assert parse_match_score('{"match_score": 3}') is None
    assert parse_match_score("Score: 1.") == 1
    assert parse_match_score("score 10") is None
    assert parse_match_score("1/2") is None
    assert parse_match_score("<think>2</think>unsure") is None
    assert parse_score_list("[2, 0, 1]") == [2, 0, 1]
    assert parse_score_list("2, 1\n") == [2, 1]
    assert parse_score_list("[1, 3]") is None
    assert parse_score_list("no list") is None


def test_sandbox_and_rm_gold_judges_delegate() -> None:
    def rubric_score(response: str, hidden: dict[str, object]) -> float:
        return float(response == hidden.get("answer"))

    judge = SandboxJudge(rubric_score)
    items = [ScoreInput("q", "42", hidden={"answer": "42"}), ScoreInput("q", "41", hidden={"answer": "42"})]
    assert judge.name == "rubric_score"
    assert judge.score(items).tolist() == [1.0, 0.0]
    gold = RMGoldJudge(judge, name="gold")
    assert isinstance(gold, Scorer) and gold.name == "gold"
    assert gold.score(items).tolist() == [1.0, 0.0]
    assert gold.stats is judge.stats and judge.stats.items == 4
    with pytest.raises(DataError, match="not a number"):
        SandboxJudge(lambda r, h: "high").score(items[:1])
    with pytest.raises(ConfigError, match="not a scorer"):
        RMGoldJudge(object())  # type: ignore[arg-type]
    assert np.isfinite(judge.score(items)).all()
