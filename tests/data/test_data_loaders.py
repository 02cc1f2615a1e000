"""Loaders: malformed inputs fail with one-line DataErrors; valid files round-trip; hub vs local."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from rlexp.data import loaders
from rlexp.data.loaders import load_pairs, load_prb, load_prompts, load_rb2, load_records, resolve_source
from rlexp.data.schemas import PRB_ARROW_SCHEMA, RB2_ARROW_SCHEMA, RB2_SUBSETS, ProfilePost, UserContext
from rlexp.errors import ConfigError, DataError

from ._factories import listing, pair_row, post, prb_row, prompt_row, rb2_row, write_jsonl, write_parquet, write_rows

LOAD = {"rb2": load_rb2, "prb": load_prb, "pairs": load_pairs, "prompts": load_prompts}


# --------------------------------------------------------------------------- malformed inputs


def _rb2(**changes: Any) -> Callable[[], list[dict[str, Any]]]:
    """Two valid RB2 rows; the second gets ``changes`` (a value of ... deletes the key)."""

    def build() -> list[dict[str, Any]]:
        good, bad = rb2_row("f1"), rb2_row("f2", subset=changes.pop("_subset", "Factuality"))
        for key, value in changes.items():
            if value is ...:
                del bad[key]
            else:
                bad[key] = value
        return [good, bad]

    return build


def _second(make: Callable[[str], dict[str, Any]], first_id: str, second_id: str, **changes: Any):
    def build() -> list[dict[str, Any]]:
        bad = make(second_id)
        for key, value in changes.items():
            if value is ...:
                del bad[key]
            else:
                bad[key] = value
        return [make(first_id), bad]

    return build


def _prb_bad_post(text: Any, drop: bool = False):
    def build() -> list[dict[str, Any]]:
        bad = prb_row("q2")
        bad["profile"][1] = {"category": "c", "id": "x"} if drop else post("x", "c", text)
        return [prb_row("q1"), bad]

    return build


@dataclass
class Bad:
    name: str
    kind: str
    suffix: str
    rows: Callable[[], list[dict[str, Any]]]
    fragments: list[str]  # besides the file name, all must appear in the message
    exact_schema: bool = True
    kwargs: dict[str, Any] = field(default_factory=dict)


BAD_CASES = [
    Bad("rb2-missing-subset", "rb2", ".jsonl", _rb2(subset=...), ["line 2", "'f2'", "field 'subset'", "missing"]),
    Bad("rb2-chosen-str", "rb2", ".jsonl", _rb2(chosen="just one"), ["'f2'", "field 'chosen'", "list of strings"]),
    Bad(
        "rb2-empty-chosen",
        "rb2",
        ".parquet",
        _rb2(chosen=[], num_correct=0, total_completions=3),
        ["row 1", "'f2'", "field 'chosen'", "empty"],
    ),
    Bad(
        "rb2-num-correct",
        "rb2",
        ".parquet",
        _rb2(num_correct=2),
        ["'f2'", "field 'num_correct'", "is 2", "len(chosen) is 1"],
    ),
    Bad(
        "rb2-num-incorrect",
        "rb2",
        ".jsonl",
        _rb2(num_incorrect=2),
        ["'f2'", "field 'num_incorrect'", "len(rejected) is 3"],
    ),
    Bad("rb2-total", "rb2", ".parquet", _rb2(total_completions=5), ["'f2'", "field 'total_completions'", "is 5"]),
    Bad(
        "rb2-count-type", "rb2", ".jsonl", _rb2(num_correct="1"), ["'f2'", "field 'num_correct'", "expected an integer"]
    ),
    Bad(
        "rb2-count-type-parquet",
        "rb2",
        ".parquet",
        lambda: [{**rb2_row("f1"), "num_correct": "1"}],  # parquet column typed string
        ["row 0", "'f1'", "field 'num_correct'", "expected an integer"],
        exact_schema=False,
    ),
    Bad(
        "rb2-unknown-subset",
        "rb2",
        ".parquet",
        _rb2(subset="math"),
        ["'f2'", "field 'subset'", "unknown subset 'math'", "Math"],
    ),
    Bad("rb2-ties-id", "rb2", ".jsonl", _rb2(_subset="Ties", id="ref-3"), ["'ref-3'", "field 'id'", "ref:N"]),
    Bad("rb2-duplicate-id", "rb2", ".parquet", _rb2(id="f1"), ["row 1", "'f1'", "field 'id'", "duplicate", "row 0"]),
    Bad("prb-post-null-text", "prb", ".parquet", _prb_bad_post(None), ["'q2'", "field 'profile[1].text'", "is null"]),
    Bad(
        "prb-post-no-text-key",
        "prb",
        ".jsonl",
        _prb_bad_post(None, drop=True),
        ["'q2'", "field 'profile[1].text'", "missing"],
    ),
    Bad("prb-post-empty-text", "prb", ".jsonl", _prb_bad_post("  "), ["'q2'", "field 'profile[1].text'", "is empty"]),
    Bad(
        "prb-identical",
        "prb",
        ".parquet",
        _second(prb_row, "q1", "q2", rejected="short answer q2"),
        ["'q2'", "field 'rejected'", "identical to chosen"],
        kwargs={"strict": True},  # by default such a row is skipped and counted: test_prb_skips_unscorable_rows
    ),
    Bad(
        "prb-null-question",
        "prb",
        ".parquet",
        _second(prb_row, "q1", "q2", question=None),
        ["'q2'", "field 'question'", "null"],
    ),
    Bad(
        "pairs-identical",
        "pairs",
        ".jsonl",
        _second(pair_row, "a", "b", rejected="good b"),
        ["'b'", "field 'rejected'", "identical"],
    ),
    Bad(
        "pairs-empty-rejected",
        "pairs",
        ".parquet",
        _second(pair_row, "a", "b", rejected=" "),
        ["'b'", "field 'rejected'", "empty"],
    ),
    Bad(
        "pairs-no-prompt",
        "pairs",
        ".jsonl",
        _second(pair_row, "a", "b", prompt=...),
        ["'b'", "field 'prompt'", "missing"],
    ),
    Bad(
        "pairs-last-not-assistant",
        "pairs",
        ".jsonl",
        _second(
            pair_row,
            "a",
            "b",
            prompt=...,
            chosen=[{"role": "user", "content": "q"}, {"role": "assistant", "content": "x"}],
            rejected=[{"role": "assistant", "content": "y"}, {"role": "user", "content": "q"}],
        ),
        ["'b'", "field 'rejected[1].role'", "assistant"],
    ),
    Bad(
        "pairs-duplicate-id",
        "pairs",
        ".parquet",
        _second(pair_row, "a", "a"),
        ["row 1", "'a'", "field 'id'", "duplicate"],
    ),
    Bad(
        "prompts-bad-hidden",
        "prompts",
        ".parquet",
        _second(prompt_row, "g1", "g2", hidden="{not json"),
        ["'g2'", "field 'hidden'", "not valid JSON"],
    ),
    Bad(
        "prompts-kind",
        "prompts",
        ".jsonl",
        _second(prompt_row, "g1", "g2", kind="chat"),
        ["'g2'", "field 'kind'", "personalized"],
    ),
    Bad(
        "prompts-personalized-no-profile",
        "prompts",
        ".jsonl",
        _second(prompt_row, "g1", "g2", kind="personalized"),
        ["'g2'", "field 'profile'"],
    ),
]


@pytest.mark.parametrize("case", BAD_CASES, ids=[c.name for c in BAD_CASES])
def test_malformed_row_is_a_one_line_data_error(case: Bad, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    path = write_rows(folder / f"bad{case.suffix}", case.rows(), case.kind, exact_schema=case.exact_schema)
    before = listing(tmp_path)
    with pytest.raises(DataError) as info:
        LOAD[case.kind](str(path), **case.kwargs)
    message = str(info.value)
    assert "\n" not in message
    assert str(path) in message
    for fragment in case.fragments:
        assert fragment in message, (fragment, message)
    assert listing(tmp_path) == before  # the loader wrote nothing


def test_invalid_json_line_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(rb2_row("f1")) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"bad\.jsonl: line 2: invalid JSON"):
        load_rb2(str(path))


@pytest.mark.parametrize(
    ("kind", "rows", "loader", "says"),
    [
        ("prb", [prb_row("q1")], "rb2", "Personalized RewardBench file"),
        ("rb2", [rb2_row("f1")], "prb", "RewardBench 2 file"),
        ("prompts", [prompt_row("g1")], "pairs", "prompt-set file"),
        ("rb2", [rb2_row("f1")], "pairs", "load it with load_rb2()"),
    ],
)
def test_file_of_the_wrong_kind_says_what_it_is(tmp_path: Path, kind: str, rows: list, loader: str, says: str) -> None:
    path = write_rows(tmp_path / "x.parquet", rows, kind)
    with pytest.raises(DataError) as info:
        LOAD[loader](str(path))
    assert str(path) in str(info.value) and says in str(info.value)


def test_duplicate_ids_across_files_of_a_folder(tmp_path: Path) -> None:
    write_parquet(tmp_path / "rb2" / "test-00000-of-00002.parquet", [rb2_row("f1")], RB2_ARROW_SCHEMA)
    second = write_jsonl(tmp_path / "rb2" / "test-00001-of-00002.jsonl", [rb2_row("f1")])
    with pytest.raises(DataError, match="duplicate id") as info:
        load_rb2(str(tmp_path / "rb2"))
    assert str(second) in str(info.value) and "test-00000-of-00002.parquet row 0" in str(info.value)


def test_selection_arguments_are_validated(tmp_path: Path) -> None:
    path = write_parquet(tmp_path / "rb2.parquet", [rb2_row("f1")], RB2_ARROW_SCHEMA)
    with pytest.raises(ConfigError, match="unknown RewardBench 2 subset 'Maths'"):
        load_rb2(str(path), subsets=["Maths"])
    with pytest.raises(ConfigError, match="selects nothing"):
        load_rb2(str(path), subsets=[])
    with pytest.raises(ConfigError, match="limit"):
        load_rb2(str(path), limit=-1)
    with pytest.raises(ConfigError, match="unknown record kind"):
        load_records("rb3", str(path))


# --------------------------------------------------------------------------- round trips


def _rb2_rows() -> list[dict[str, Any]]:
    rows = [rb2_row(f"{s[:4].lower()}-{i}", subset=s) for s in RB2_SUBSETS if s != "Ties" for i in range(2)]
    rows += [rb2_row("ref:1", "Ties", 1, 5), rb2_row("tied:1", "Ties", 3, 4)]
    rows[0]["models"] = None  # nullable fields read as empty
    rows[0]["additional_metadata"] = None
    return rows


def test_rb2_round_trip_with_the_exact_arrow_schema(tmp_path: Path) -> None:
    rows = _rb2_rows()
    path = write_parquet(tmp_path / "rb2" / "data" / "test-00000-of-00001.parquet", rows, RB2_ARROW_SCHEMA)
    assert pq.read_schema(path).remove_metadata() == RB2_ARROW_SCHEMA
    items = load_rb2(str(tmp_path / "rb2"))
    assert [it.id for it in items] == [r["id"] for r in rows]
    for item, row in zip(items, rows, strict=True):
        assert item.prompt == row["prompt"] and item.subset == row["subset"]
        assert item.chosen == tuple(row["chosen"]) and item.rejected == tuple(row["rejected"])
        assert item.num_correct == row["num_correct"] and item.total_completions == row["total_completions"]
        assert item.models == tuple(row["models"] or ())
        assert item.additional_metadata == (row["additional_metadata"] or {})
    # explicit selection, then limit, in file order
    ties = load_rb2(str(tmp_path / "rb2"), subsets=["Ties"])
    assert [it.id for it in ties] == ["ref:1", "tied:1"]
    assert [it.id for it in load_rb2(str(tmp_path / "rb2"), subsets=["Math", "Ties"], limit=3)] == [
        "math-0",
        "math-1",
        "ref:1",
    ]


def test_rb2_jsonl_without_count_columns_derives_them(tmp_path: Path) -> None:
    row = rb2_row("f1")
    for key in ("num_correct", "num_incorrect", "total_completions", "models", "additional_metadata"):
        del row[key]
    [item] = load_rb2(str(write_jsonl(tmp_path / "rb2.jsonl", [row])))
    assert item.total_completions == 4 and item.models == ()


def test_prb_round_trip_hub_layout_and_domains(tmp_path: Path) -> None:
    root = tmp_path / "prb"
    art = [prb_row("a1"), prb_row("a2")]
    soc = [prb_row("s1")]
    write_parquet(root / "Art_and_Entertainment" / "test-00000-of-00001.parquet", art, PRB_ARROW_SCHEMA)
    write_parquet(root / "Society_and_Culture" / "test-00000-of-00001.parquet", soc, PRB_ARROW_SCHEMA)
    items = load_prb(str(root))
    assert [(it.domain, it.id) for it in items] == [
        ("Art_and_Entertainment", "a1"),
        ("Art_and_Entertainment", "a2"),
        ("Society_and_Culture", "s1"),
    ]
    first = items[0]
    assert first.profile == tuple(ProfilePost(**p) for p in art[0]["profile"])
    assert first.rubric_aspects[0].aspect == "brevity" and first.narrative == "I want short answers."
    assert (first.question, first.category, first.chosen, first.rejected) == (
        art[0]["question"],
        "cooking",
        art[0]["chosen"],
        art[0]["rejected"],
    )
    assert [it.id for it in load_prb(str(root), domains=["Society_and_Culture"])] == ["s1"]
    with pytest.raises(ConfigError, match="selects nothing"):
        load_prb(str(root), domains=[])
    assert len(load_prb(str(root), limit=2)) == 2
    with pytest.raises(ConfigError, match="unknown Personalized RewardBench domain 'Lifestyle'"):
        load_prb(str(root), domains=["Lifestyle"])


def test_folder_split_selection(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "p" / "train.jsonl", [pair_row("t1")])
    write_jsonl(tmp_path / "p" / "eval.jsonl", [pair_row("e1")])
    assert [p.id for p in load_pairs(str(tmp_path / "p"))] == ["t1"]
    assert [p.id for p in load_pairs(str(tmp_path / "p"), split="eval")] == ["e1"]
    with pytest.raises(DataError, match="no files for split 'test'"):
        load_pairs(str(tmp_path / "p"), split="test")
    write_jsonl(tmp_path / "p" / "extra.jsonl", [pair_row("x1")])
    with pytest.raises(DataError, match="extra.jsonl: cannot tell which split"):
        load_pairs(str(tmp_path / "p"))


def test_pairs_schema_minimal_and_message_list_files(tmp_path: Path) -> None:
    full = load_pairs(str(write_parquet(tmp_path / "mix.parquet", [pair_row("a"), pair_row("b", True)], None)))
    assert full[0].context is None and full[0].source == "general"
    assert full[1].context == UserContext(
        profile=(ProfilePost("diy", "p0", "how do I fix a hinge"),),
        rubric_aspects=full[1].context.rubric_aspects,
        narrative="narr",
    )
    minimal = [{"id": "m1", "prompt": "p", "chosen": "c", "rejected": "r"}]
    [pair] = load_pairs(str(write_jsonl(tmp_path / "minimal.jsonl", minimal)), name="mine")
    assert (pair.id, pair.prompt, pair.chosen, pair.rejected, pair.source) == ("m1", "p", "c", "r", "mine")

    def conv(answer: str) -> list[dict[str, str]]:
        return [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": answer}]

    hub_style = [{"chosen": conv("4"), "rejected": conv("5")}, {"chosen": conv("four"), "rejected": conv("22")}]
    path = tmp_path / "skywork.json"
    path.write_text(json.dumps(hub_style), encoding="utf-8")
    pairs = load_pairs(str(path))
    assert [(p.id, p.prompt, p.chosen, p.rejected, p.source) for p in pairs] == [
        ("skywork:0", "What is 2+2?", "4", "5", "skywork"),
        ("skywork:1", "What is 2+2?", "four", "22", "skywork"),
    ]
    differ = [{"chosen": [{"role": "system", "content": "s"}, *conv("4")], "rejected": conv("5")}]
    with pytest.raises(DataError, match="field 'rejected': its turns before the final answer differ"):
        load_pairs(str(write_jsonl(tmp_path / "differ.jsonl", differ)))
    # the prompt column serves conversations that hold only the answer
    answers_only = [{"id": "t1", "prompt": "Hi?", "chosen": conv("4")[1:], "rejected": conv("5")[1:]}]
    [pair] = load_pairs(str(write_jsonl(tmp_path / "answers_only.jsonl", answers_only)))
    assert (pair.prompt, pair.chosen, pair.rejected) == ("Hi?", "4", "5")


def test_multi_turn_conversations_are_refused_unless_asked_for(tmp_path: Path) -> None:
    def conv(answer: str) -> list[dict[str, str]]:
        turns = [
            ("system", "Be brief."),
            ("user", "Hi"),
            ("assistant", "Hello"),
            ("user", "2+2?"),
            ("assistant", answer),
        ]
        return [{"role": r, "content": c} for r, c in turns]

    path = write_jsonl(
        tmp_path / "multi.jsonl", [{"id": "m1", "prompt": "Hi", "chosen": conv("4"), "rejected": conv("5")}]
    )
    with pytest.raises(DataError) as info:
        load_pairs(str(path))
    assert "(id 'm1'): field 'chosen'" in str(info.value) and "multi_turn='last_user'" in str(info.value)
    [pair] = load_pairs(str(path), multi_turn="last_user")
    assert (pair.prompt, pair.chosen, pair.rejected) == ("2+2?", "4", "5")
    with pytest.raises(ConfigError, match="multi_turn"):
        load_pairs(str(path), multi_turn="join")


def test_prompts_round_trip(tmp_path: Path) -> None:
    rows = [prompt_row("g1"), prompt_row("p1", "personalized")]
    items = load_prompts(str(write_rows(tmp_path / "prompts" / "eval-00000.parquet", rows, "prompts")))
    assert [(it.prompt_id, it.kind, it.hidden) for it in items] == [
        ("g1", "general", {"answer": 42}),
        ("p1", "personalized", {"answer": 42}),
    ]
    assert items[1].profile == (ProfilePost("diy", "p0", "an old post"),)


# --------------------------------------------------------------------------- hub vs local


def test_resolve_source_hub_vs_local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve_source("allenai/reward-bench-2") == loaders.SourceRef("hub", "allenai/reward-bench-2")
    assert resolve_source("QiyaoMa/Personalized-RewardBench").kind == "hub"
    (tmp_path / "org" / "name").mkdir(parents=True)
    assert resolve_source("org/name").kind == "local"  # an existing folder wins over the hub
    for missing in ("data/missing.parquet", "./org/other", "/nonexistent/file.jsonl", "single", "a/b/c"):
        with pytest.raises(DataError) as info:
            resolve_source(missing)
        assert missing in str(info.value) and "does not exist" in str(info.value)


class _FakeHub:
    """Stands in for datasets.load_dataset: records calls, serves in-memory Datasets."""

    def __init__(self, tables: dict[str | None, list[dict[str, Any]]]) -> None:
        self.tables = tables
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, path: str, name: str | None = None, split: str | None = None, revision: str | None = None):
        import datasets

        self.calls.append((path, name, split, revision))
        return datasets.Dataset.from_list(self.tables[name])


def test_hub_ids_go_through_load_dataset(monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    fake = _FakeHub({None: [rb2_row("f1")], "Art_and_Entertainment": [prb_row("a1")], "Society_and_Culture": []})
    monkeypatch.setattr(datasets, "load_dataset", fake)
    items = load_rb2("allenai/reward-bench-2", revision="abc123")
    assert [it.id for it in items] == ["f1"]
    assert fake.calls == [("allenai/reward-bench-2", None, "test", "abc123")]

    monkeypatch.setattr(
        datasets,
        "get_dataset_config_names",
        lambda path, revision=None: ["Art_and_Entertainment", "Society_and_Culture"],
    )
    prb = load_prb("QiyaoMa/Personalized-RewardBench")
    assert [(it.domain, it.id) for it in prb] == [("Art_and_Entertainment", "a1")]
    assert fake.calls[-2:] == [
        ("QiyaoMa/Personalized-RewardBench", "Art_and_Entertainment", "test", None),
        ("QiyaoMa/Personalized-RewardBench", "Society_and_Culture", "test", None),
    ]


def test_hub_failure_is_a_one_line_data_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    def offline(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError("Couldn't reach the hub\n(offline mode)")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(DataError) as info:
        load_pairs("org/prefs", split="train")
    assert "\n" not in str(info.value)
    assert "hub:org/prefs[default/train]" in str(info.value) and "ConnectionError" in str(info.value)


def test_prb_skips_unscorable_rows_with_a_count(tmp_path: Path) -> None:
    """A published PRB file with one row whose answers are identical still loads (issue 64): the row is left
    out and counted by reason, and a slice keeps the count."""
    path = write_rows(tmp_path / "prb.parquet", _second(prb_row, "q1", "q2", rejected="short answer q2")(), "prb")
    items = load_prb(str(path))
    assert [i.id for i in items] == ["q1"] and items.skipped == {"chosen identical to rejected": 1}
    assert load_prb(str(path), limit=1).skipped == {"chosen identical to rejected": 1}
