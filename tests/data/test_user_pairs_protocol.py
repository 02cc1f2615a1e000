"""Chatbot Arena-/PRISM-Personalized as SynthesizeMe defines them (issue 64): history in SynthesizeMe's order
(train, then val), earlier votes rendered whole, history cut from its oldest vote (never the answers) to fit
max_length, unscorable and repeated rows skipped with counts (or refused under strict), and the user
context labelled rlexp's assumption in the record."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rlexp.benchmarks.runners import run_user_pairs
from rlexp.benchmarks.user_pairs import context_block, user_pair_cases
from rlexp.data.formatting import history_block
from rlexp.data.loaders import load_user_pairs
from rlexp.errors import DataError
from rlexp.scorer import ScoreInput, ScoreStats
from tests.data._factories import write_jsonl
from tests.data.test_user_pairs import fixture_rows, msg, vote


def test_history_is_train_then_val_whatever_the_file_order(tmp_path: Path) -> None:
    rows = [vote("u", "c1", "val question", "val"), vote("u", "c2", "test question", "test"),
            vote("u", "c3", "train question", "train")]
    cases = user_pair_cases(load_user_pairs(write_jsonl(tmp_path / "r.jsonl", rows)), "test")
    assert [ctx[-1][1] for ctx, _, _ in cases[0].history] == ["train question", "val question"]
    block = context_block(cases[0], "history", 2)
    assert block.index("train question") < block.index("val question")


def test_an_earlier_vote_shows_its_whole_conversation(tmp_path: Path) -> None:
    multi = [msg("user", "Plan a trip?"), msg("model", "Sure: where to?"), msg("user", "Somewhere quiet.")]
    rows = [vote("u", "c1", "Plan a trip?", "train", context=multi), vote("u", "c2", "Tea?", "test")]
    cases = user_pair_cases(load_user_pairs(write_jsonl(tmp_path / "r.jsonl", rows)), "test")
    block = context_block(cases[0], "history", 2)
    assert "Conversation:\nUser: Plan a trip?\nAssistant: Sure: where to?\nUser: Somewhere quiet." in block
    # A single-message conversation keeps the Question line it always had.
    assert history_block([((("user", "q"),), "c", "r")], 1).endswith("Question: q\nPreferred answer: c\nOther answer: r")


def test_unscorable_rows_are_skipped_with_counts_or_refused_under_strict(tmp_path: Path) -> None:
    rows = fixture_rows()
    same = {**vote("u7", "c7", "Same?", "test"), "rejected": msg("model", "good answer to Same?")}
    empty = {**vote("u8", "c8", "Empty?", "test"), "chosen": msg("model", "  ")}
    path = write_jsonl(tmp_path / "r.jsonl", [*rows, same, empty])
    items = load_user_pairs(path)
    assert len(items) == 4 and items.skipped == {"chosen identical to rejected": 1, "empty answer": 1}
    with pytest.raises(DataError, match="identical to chosen"):
        load_user_pairs(path, strict=True)
    cases = user_pair_cases(items, "test")
    assert cases.skipped == items.skipped and cases[:1].skipped == items.skipped  # sliced by benchmark.limit


def test_a_file_with_every_row_twice_is_scored_once(tmp_path: Path) -> None:
    rows = fixture_rows()
    items = load_user_pairs(write_jsonl(tmp_path / "r.jsonl", rows + rows))
    assert len(items) == 4 and items.skipped == {"duplicate of an earlier row": 4}
    assert len(user_pair_cases(items, "test")) == 2
    with pytest.raises(DataError, match="repeats row"):
        load_user_pairs(write_jsonl(tmp_path / "r.jsonl", rows + rows), strict=True)
    # Two votes in one conversation (different turns) are not duplicates.
    turn2 = vote("user9", "c0001", "More tea?", "test", context=[msg("user", "Is tea healthy?"),
                                                                msg("model", "Yes."), msg("user", "More tea?")])
    assert len(load_user_pairs(write_jsonl(tmp_path / "t.jsonl", [*rows, turn2]))) == 5


class CharScorer:
    """A scorer reading at most ``max_length`` characters (a tokenizer of one token per character), right-truncated:
    its score is the length of the answer it still sees."""

    def __init__(self, max_length: int) -> None:
        self.settings = type("S", (), {"max_length": max_length})()
        self.stats = ScoreStats()
        self.name = "chars"

    def render(self, it: ScoreInput) -> str:
        turns = "".join(f"[{r}]{c}" for r, c in it.turns)
        return f"{turns}[user]{it.prompt}[assistant]{it.response}"

    def tokenizer(self, texts: list[str], **kw: Any) -> dict[str, Any]:
        return {"input_ids": [list(t) for t in texts]}

    def score(self, items: list[ScoreInput]) -> np.ndarray:
        out = []
        for it in items:
            text = self.render(it)[: self.settings.max_length]
            out.append(float(len(text.split("[assistant]", 1)[1])) if "[assistant]" in text else 0.0)
        self.stats.items += len(items)
        return np.asarray(out)


def test_history_is_cut_from_its_oldest_vote_never_the_answers(tmp_path: Path) -> None:
    long = "x" * 300
    rows = [vote("u", "c1", f"old {long}", "train"), vote("u", "c2", "new", "val"),
            {**vote("u", "c3", "Which?", "test"), "chosen": msg("model", "a much longer, better answer"),
             "rejected": msg("model", "short")}]
    cases = user_pair_cases(load_user_pairs(write_jsonl(tmp_path / "r.jsonl", rows)), "test")
    scorer = CharScorer(max_length=300)
    summary, per = run_user_pairs(scorer, cases, mode="history", k=2, separator="\n\n", name="arena")
    # Right truncation of history + conversation would cut both answers and tie them; the oldest vote goes instead.
    assert summary["history_trimmed"] == 1 and summary["still_too_long"] == 0
    assert per[0]["history_shown"] == 1 and per[0]["correct"] and per[0]["chosen_score"] > per[0]["rejected_score"]
    assert summary["skipped"] == {} and "assumption" in summary["user_context_note"]
    none, _ = run_user_pairs(scorer, cases, mode="none", k=2, separator="\n\n", name="arena")
    assert "user_context_note" not in none and "history_trimmed" not in none


def test_an_evaluation_with_history_is_named_by_the_history_format(tmp_path: Path) -> None:
    """The rendering of earlier votes changed what an RM sees for the same votes: evaluations with
    user_context=history carry HISTORY_FORMAT in their inputs, so a store holding one made with the old
    rendering is never served for the new one; other modes keep their ids."""
    from rlexp import inputs
    from rlexp.benchmarks.user_pairs import HISTORY_FORMAT
    from tests.conftest import compose

    source = write_jsonl(tmp_path / "r.jsonl", [vote("u", "c1", "Tea?", "train"), vote("u", "c2", "Coffee?", "test")])
    for mode, expected in (("history", {"arena", "arena_history_format"}), ("none", {"arena"})):
        ids: dict[str, str] = {}
        cfg = compose("evaluate", "rm=x", "benchmark=arena", f"benchmark.arena.source={source}",
                      f"benchmark.arena.user_context={mode}")
        inputs.user_pair_benchmark(cfg, "arena", ids)
        assert set(ids) == expected
    assert ids.get("arena_history_format") is None and HISTORY_FORMAT == 2
