"""Chatbot Arena-/PRISM-Personalized loaders (real schemas), the user-context blocks, and multi-turn RM input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rlexp.benchmarks.user_pairs import context_block, user_pair_cases, user_pairs_summary
from rlexp.data.formatting import history_block, persona_block, with_user_context
from rlexp.data.loaders import load_prism_survey, load_user_pairs
from rlexp.data.schemas import PRISM_SURVEY_ARROW_SCHEMA, USER_PAIRS_ARROW_SCHEMA
from rlexp.errors import DataError
from tests.data._factories import prb_row, write_jsonl, write_parquet


def msg(role: str, content: str) -> dict[str, str]:
    return {"content": content, "role": role}


def vote(user: str, conv: str, question: str, split: str, *, context: list[dict[str, str]] | None = None,
         chosen: Any = None, kind: str = "values guided") -> dict[str, Any]:
    """One row in the published layout: single `model` messages for chosen/rejected."""
    return {
        "conversation_id": conv, "user_id": user, "context": context or [msg("user", question)],
        "chosen": chosen if chosen is not None else msg("model", f"good answer to {question}"),
        "rejected": msg("model", f"poor answer to {question}"),
        "turns": 1, "type": kind, "split": split, "flip": False,
        "chosen_score": 80.0, "rejected_score": 40.0, "dataset": "prism",
    }


def fixture_rows() -> list[dict[str, Any]]:
    multi = [msg("user", "Plan a trip?"), msg("model", "Sure: where to?"), msg("user", "Somewhere quiet.")]
    return [
        vote("user584", "c3156", "Should my daughter take a gap year?", "train"),
        vote("user584", "c3157", "How do I talk about money?", "val"),
        vote("user584", "c3158", "Plan a trip?", "test", context=multi),
        # A user whose only vote is a test vote: no earlier pairs.
        vote("user9", "c0001", "Is tea healthy?", "test", kind="unguided"),
    ]


def test_rows_in_the_published_schema_load_with_roles_mapped(tmp_path: Path) -> None:
    path = write_parquet(tmp_path / "prism" / "test-00000-of-00001.parquet", fixture_rows(), USER_PAIRS_ARROW_SCHEMA)
    items = load_user_pairs(tmp_path / "prism")
    assert [it.id for it in items] == ["user584/c3156/0", "user584/c3157/0", "user584/c3158/0", "user9/c0001/0"]
    multi = items[2]
    assert multi.context == (("user", "Plan a trip?"), ("assistant", "Sure: where to?"), ("user", "Somewhere quiet."))
    assert multi.question == "Somewhere quiet." and multi.split == "test" and multi.kind == "values guided"
    assert items[1].split == "val" and not items[0].flip
    # The same rows as JSON lines read the same.
    jsonl = write_jsonl(tmp_path / "rows.jsonl", fixture_rows())
    assert load_user_pairs(jsonl) == items
    assert path.is_file()


def test_cases_pair_each_test_vote_with_its_users_earlier_votes(tmp_path: Path) -> None:
    items = load_user_pairs(write_jsonl(tmp_path / "rows.jsonl", fixture_rows()))
    cases = user_pair_cases(items, "test")
    assert [c.item.id for c in cases] == ["user584/c3158/0", "user9/c0001/0"]
    assert [ctx[-1][1] for ctx, _, _ in cases[0].history] == ["Should my daughter take a gap year?",
                                                              "How do I talk about money?"]
    assert cases[1].history == ()  # no earlier pairs: the RM sees the conversation alone
    assert context_block(cases[1], "history", 2) == ""
    turns, prompt = with_user_context(cases[1].item.context, context_block(cases[1], "history", 2), "\n\n")
    assert turns == () and prompt == "Is tea healthy?"
    # With history, the block goes before the conversation: into the first user message.
    turns, prompt = with_user_context(cases[0].item.context, context_block(cases[0], "history", 1), "\n\n")
    assert turns[0][0] == "user" and turns[0][1].startswith("Earlier choices of this user:")
    assert "How do I talk about money?" in turns[0][1] and "gap year" not in turns[0][1]  # k=1: the latest only
    assert turns[0][1].endswith("\n\nPlan a trip?") and turns[1] == ("assistant", "Sure: where to?")
    assert prompt == "Somewhere quiet."
    assert context_block(cases[0], "none", 2) == ""
    with pytest.raises(DataError, match="no votes with split 'dev'"):
        user_pair_cases(items, "dev")


def test_summary_counts_ties_as_wrong_and_weights_users_once() -> None:
    from rlexp.data.schemas import UserPairItem

    def case(user: str, i: int) -> Any:
        return user_pair_cases([UserPairItem(f"{user}/{i}", user, (("user", "q"),), "a", "b", "test")])[0]

    cases = [case("u1", 0), case("u1", 1), case("u1", 2), case("u2", 0)]
    out = user_pairs_summary([1.0, 1.0, 0.0, 0.0], [0.0, 1.0, 1.0, 1.0], cases, [False] * 4)
    assert out["accuracy"] == 0.25 and out["ties"] == 1 and out["n_users"] == 2
    assert out["user_accuracy"] == pytest.approx((1 / 3 + 0) / 2)


def test_persona_and_history_blocks() -> None:
    assert history_block([("q1", "c1", "r1"), ("q2", "c2", "r2")], 1) == (
        "Earlier choices of this user:\n\nQuestion: q2\nPreferred answer: c2\nOther answer: r2")
    assert history_block([], 3) == ""
    text = persona_block("I value honesty.", [("factuality", 90), ("personalisation", 20)])
    assert text == "About the user: I value honesty.\nThe user's stated priorities (0-100): factuality 90, personalisation 20"
    assert persona_block("", []) == ""
    assert with_user_context([("user", "hi")], "", "\n\n") == ((), "hi")
    assert with_user_context([("system", "be nice"), ("user", "hi")], "B", " | ") == ((("system", "be nice"),), "B | hi")


def test_survey_loads_self_description_and_sliders(tmp_path: Path) -> None:
    rows = [
        {"user_id": "user584", "survey_only": False, "self_description": " I care about facts. ", "system_string": "",
         "stated_prefs": {"values": 10, "factuality": 95, "personalisation": None, "other": 0, "other_text": ""},
         "age": "25-34 years old", "gender": "Prefer not to say", "english_proficiency": "Native speaker"},
        {"user_id": "user9", "self_description": None, "stated_prefs": None},
    ]
    path = write_jsonl(tmp_path / "survey.jsonl", rows)
    surveys = load_prism_survey(path)
    assert surveys["user584"].self_description == "I care about facts."
    assert surveys["user584"].stated_prefs == (("values", 10), ("factuality", 95))
    assert surveys["user9"].self_description == "" and surveys["user9"].stated_prefs == ()
    write_parquet(tmp_path / "s.parquet", [rows[0]], PRISM_SURVEY_ARROW_SCHEMA)
    assert load_prism_survey(tmp_path / "s.parquet")["user584"] == surveys["user584"]
    bad = write_jsonl(tmp_path / "bad.jsonl", [{**rows[0], "stated_prefs": {"factuality": 150}}])
    with pytest.raises(DataError, match=r"line 1 \(id 'user584'\): field 'stated_prefs.factuality'"):
        load_prism_survey(bad)
    with pytest.raises(DataError, match="not a PRISM survey file"):
        load_prism_survey(write_jsonl(tmp_path / "votes.jsonl", fixture_rows()))


@pytest.mark.parametrize(
    ("change", "field", "problem"),
    [
        ({"chosen": [msg("model", "a"), msg("model", "b")]}, "chosen", "expected one message object"),
        ({"chosen": msg("user", "a")}, "chosen.role", "an answer must be the model's"),
        ({"context": []}, "context", "expected a non-empty list of messages"),
        ({"context": "just a string"}, "context", "expected a non-empty list of messages"),
        ({"context": [msg("user", "q"), msg("model", "a")]}, r"context\[1\].role", "the context must end with the user's message"),
        ({"context": [{"content": "q"}]}, r"context\[0\].role", "expected one of"),
        ({"context": [msg("user", "")]}, r"context\[0\].content", "expected a non-empty string"),
        ({"split": "holdout"}, "split", "expected one of train, val, test"),
        ({"flip": "yes"}, "flip", "expected a boolean"),
    ],
)
def test_a_malformed_row_is_one_line_naming_file_row_and_field(tmp_path: Path, change: dict[str, Any], field: str,
                                                              problem: str) -> None:
    rows = fixture_rows()
    rows[2] = {**rows[2], **change}
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    with pytest.raises(DataError, match=rf"rows.jsonl: line 3 \(id 'user584/c3158/0'\): field '{field}': {problem}") as err:
        load_user_pairs(path)
    assert "\n" not in str(err.value)


def test_a_file_of_another_kind_is_refused_by_name(tmp_path: Path) -> None:
    prb = write_jsonl(tmp_path / "prb.jsonl", [prb_row("p1")])
    with pytest.raises(DataError, match="this is a Personalized RewardBench file"):
        load_user_pairs(prb)
    missing = write_jsonl(tmp_path / "no_user.jsonl", [{k: v for k, v in vote("u", "c", "q", "test").items()
                                                          if k != "user_id"}])
    with pytest.raises(DataError, match="field 'user_id': missing"):
        load_user_pairs(missing)


def test_hf_splits_are_chosen_by_file_name(tmp_path: Path) -> None:
    rows = fixture_rows()
    write_parquet(tmp_path / "arena" / "train-00000-of-00001.parquet", rows[:1], USER_PAIRS_ARROW_SCHEMA)
    write_parquet(tmp_path / "arena" / "test-00000-of-00001.parquet", rows[1:], USER_PAIRS_ARROW_SCHEMA)
    assert len(load_user_pairs(tmp_path / "arena", split="train")) == 1
    assert len(load_user_pairs(tmp_path / "arena")) == 3


@pytest.mark.parametrize("with_template", [True, False])
def test_a_reward_model_reads_the_earlier_turns(with_template: bool) -> None:
    """The multi-turn context reaches the RM through its chat template (or the fallback), in order."""
    from transformers import AutoModelForSequenceClassification

    from rlexp.models import tiny
    from rlexp.scorer import ScoreInput
    from rlexp.scoring.reward_model import RewardModelScorer
    from tests._tiny_random import corpus

    spec = tiny.TinySpec(arch="llama", chat_format="llama", vocab_size=300, hidden_size=32, num_layers=1, num_heads=2,
                         intermediate_size=64, max_position=512, corpus="a", pretrain_epochs=0, sft_epochs=0, lr=1e-3,
                         batch_size=8, max_length=128, seed=0)
    tok = tiny.build_tokenizer(corpus(), spec)
    config = tiny.build_model(spec, tok).config
    config.num_labels = 1
    rm = RewardModelScorer(AutoModelForSequenceClassification.from_config(config), tok)
    if not with_template:
        tok.chat_template = None
    turns = (("user", "FIRST question"), ("assistant", "FIRST answer"))
    text = rm.render(ScoreInput("SECOND question", "SECOND answer", turns=turns))
    positions = [text.index(s) for s in ("FIRST question", "FIRST answer", "SECOND question", "SECOND answer")]
    assert positions == sorted(positions)
    single = rm.render(ScoreInput("SECOND question", "SECOND answer"))
    assert "FIRST" not in single and text.endswith(single[len(single) - len("SECOND answer") - 10:])
    scores = rm.score([ScoreInput("SECOND question", "SECOND answer", turns=turns),
                       ScoreInput("SECOND question", "SECOND answer")])
    assert scores[0] != scores[1]  # the earlier turns change what the RM reads
