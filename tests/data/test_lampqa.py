"""LaMP-QA prompts: rows in the hub schema -> personalized prompts with question-only top-k retrieval."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from omegaconf import OmegaConf

from rlexp import inputs
from rlexp.data.loaders import load_lampqa, load_prompt_set
from rlexp.data.retrieval import DenseEncoder, bm25_scores, rank_posts
from rlexp.data.schemas import PRB_ARROW_SCHEMA, ProfilePost
from rlexp.errors import ConfigError, DataError
from rlexp.store import result_config
from tests.conftest import compose

from ._factories import post, write_jsonl, write_parquet

# alireza7/LaMP-QA's arrow schema: PRB's without the answer pair.
LAMPQA_SCHEMA = pa.schema([f for f in PRB_ARROW_SCHEMA if f.name not in ("chosen", "rejected")])
ART, LIFE, SOC = "Art_and_Entertainment", "Lifestyle_and_Personal_Development", "Society_and_Culture"
TOPICS = ["guitar", "piano", "anime", "movie", "novel", "drums", "poetry", "jazz", "opera", "film", "comics", "chess"]


def lampqa_row(item_id: str, question: str, texts: list[str], category: str = "music") -> dict[str, Any]:
    """One row in the hub schema, posts ``<id>-p<j>`` on alternating sites."""
    return {
        "id": item_id,
        "question": question,
        "narrative": f"I play at home and want practical tips ({item_id}).",
        "rubric_aspects": [
            {"aspect": "practical steps", "reason": "wants to act on it", "evidence": "asks how to"},
            {"aspect": "home setup", "reason": "plays at home", "evidence": "I play at home"},
        ],
        "profile": [post(f"{item_id}-p{j}", ["music", "movies"][j % 2], t) for j, t in enumerate(texts)],
        "category": category,
    }


def many_posts(n: int = 15) -> list[str]:
    """A heavy user's posts with graded overlap with "how do I tune a guitar at home"."""
    texts = [f"thoughts about {TOPICS[j % len(TOPICS)]} number {j}" for j in range(n)]
    texts[3] = "how to tune a guitar quickly"
    texts[7] = "guitar strings at home"
    texts[11] = "tune tune tune the guitar guitar"
    texts[12] = "home studio for my guitar"
    return texts


def art_rows() -> list[dict[str, Any]]:
    return [
        lampqa_row("a1", "How do I tune a guitar at home?", many_posts()),
        lampqa_row("a2", "Which anime should I watch next?", ["I loved this anime series"], category="anime"),
    ]


def soc_rows() -> list[dict[str, Any]]:
    return [lampqa_row("s1", "Is this contract clause legal?", ["a law question about leases"], category="law")]


@pytest.fixture
def hub_layout(tmp_path: Path) -> Path:
    """``<root>/<Domain>/<split>-00000-of-00001.parquet`` as the hub stores it; train rows differ from test."""
    root = tmp_path / "lampqa"
    write_parquet(root / ART / "test-00000-of-00001.parquet", art_rows(), LAMPQA_SCHEMA)
    write_parquet(root / SOC / "test-00000-of-00001.parquet", soc_rows(), LAMPQA_SCHEMA)
    train = [lampqa_row("t1", "Best way to learn piano?", ["piano scales every day", "guitar"])]
    write_parquet(root / ART / "train-00000-of-00001.parquet", train, LAMPQA_SCHEMA)
    write_parquet(root / SOC / "train-00000-of-00001.parquet", soc_rows(), LAMPQA_SCHEMA)
    return root


def one_line_error(exc: pytest.ExceptionInfo[BaseException], *parts: str) -> str:
    message = str(exc.value)
    assert "\n" not in message, message
    for part in parts:
        assert part in message, message
    return message


# --------------------------------------------------------------------------- items


def test_items_profile_is_the_bm25_top_k_for_the_question(hub_layout: Path) -> None:
    items = load_lampqa(str(hub_layout), split="test")
    assert [it.prompt_id for it in items] == [f"{ART}:a1", f"{ART}:a2", f"{SOC}:s1"]
    heavy, light, soc = items
    assert heavy.prompt == "How do I tune a guitar at home?" and heavy.kind == "personalized"

    row = art_rows()[0]
    scores = bm25_scores(row["question"], [p["text"] for p in row["profile"]])  # the question only
    expected = [row["profile"][i] for i in np.argsort(-scores, kind="stable")[:10]]
    assert [ProfilePost(**p) for p in expected] == list(heavy.profile)
    assert heavy.profile_ranked  # renderers keep this order (a dense ranking must survive them)
    assert heavy.profile[0].id in {"a1-p3", "a1-p11"}  # the posts that share most words come first
    # records stay intact: every id keeps its own text and category (reference §10.1)
    originals = {p["id"]: p for p in row["profile"]}
    assert all(originals[p.id] == {"category": p.category, "id": p.id, "text": p.text} for p in heavy.profile)
    assert len(light.profile) == 1 and light.profile[0].id == "a2-p0"
    assert soc.hidden["domain"] == SOC


def test_hidden_holds_what_the_gold_judges_read(hub_layout: Path) -> None:
    item = load_lampqa(str(hub_layout), split="test", domains=[SOC])[0]
    row = soc_rows()[0]
    assert item.hidden == {
        "id": "s1",
        "rubric_aspects": [{"aspect": a["aspect"], "evidence": a["evidence"], "reason": a["reason"]}
                           for a in row["rubric_aspects"]],
        "narrative": row["narrative"],
        "domain": SOC,
        "category": "law",
    }


def test_k_limit_domains_and_split(hub_layout: Path) -> None:
    assert [len(it.profile) for it in load_lampqa(str(hub_layout), profile_k=3)] == [3, 1, 1]
    assert [it.prompt_id for it in load_lampqa(str(hub_layout), limit=1)] == [f"{ART}:a1"]
    assert load_lampqa(str(hub_layout), limit=0) == []
    assert [it.prompt_id for it in load_lampqa(str(hub_layout), domains=[SOC])] == [f"{SOC}:s1"]
    assert [it.prompt_id for it in load_lampqa(str(hub_layout), split="train")] == [f"{ART}:t1", f"{SOC}:s1"]


def test_flat_files_named_by_domain_and_split(tmp_path: Path) -> None:
    # The reference scripts' `{config}_{split}.jsonl`, and a single file named by its domain.
    write_jsonl(tmp_path / "flat" / f"{ART}_test.jsonl", art_rows())
    write_jsonl(tmp_path / "flat" / f"{SOC}_test.jsonl", soc_rows())
    write_jsonl(tmp_path / "flat" / f"{SOC}_train.jsonl", [lampqa_row("t9", "q?", ["p"])])
    assert [it.prompt_id for it in load_lampqa(str(tmp_path / "flat"), split="test")] == [
        f"{ART}:a1", f"{ART}:a2", f"{SOC}:s1"]
    assert [it.prompt_id for it in load_lampqa(str(tmp_path / "flat"), split="train")] == [f"{SOC}:t9"]
    single = write_jsonl(tmp_path / f"{LIFE}.jsonl", soc_rows())
    assert [it.prompt_id for it in load_lampqa(str(single))] == [f"{LIFE}:s1"]


def test_hub_id_reads_one_config_per_domain(monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    calls: list[tuple[str, str | None, str | None]] = []

    def fake_load(path: str, name: str | None = None, split: str | None = None, revision: str | None = None):
        calls.append((path, name, split))
        return datasets.Dataset.from_list({ART: art_rows(), SOC: soc_rows()}[name])

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    monkeypatch.setattr(datasets, "get_dataset_config_names", lambda path, revision=None: [ART, SOC])
    items = load_lampqa("alireza7/LaMP-QA", split="validation")
    assert [it.prompt_id for it in items] == [f"{ART}:a1", f"{ART}:a2", f"{SOC}:s1"]
    assert calls == [("alireza7/LaMP-QA", ART, "validation"), ("alireza7/LaMP-QA", SOC, "validation")]
    assert [it.prompt_id for it in load_lampqa("alireza7/LaMP-QA", domains=[SOC])] == [f"{SOC}:s1"]
    assert calls[-1] == ("alireza7/LaMP-QA", SOC, "test")


# --------------------------------------------------------------------------- bad inputs


def _broken(change: str) -> list[dict[str, Any]]:
    rows = copy.deepcopy(art_rows())
    bad = rows[1]
    if change == "no-profile":
        bad["profile"] = []
    elif change == "no-profile-column":
        del bad["profile"]
    elif change == "no-question":
        del bad["question"]
    elif change == "no-aspects-column":
        del bad["rubric_aspects"]
    elif change == "empty-aspects":
        bad["rubric_aspects"] = []
    elif change == "blank-aspect":
        bad["rubric_aspects"][1]["aspect"] = " "
    elif change == "duplicate-id":
        bad["id"] = "a1"
    return rows


@pytest.mark.parametrize(
    ("change", "parts"),
    [
        ("no-profile", ["line 2", "id 'a2'", "field 'profile'", "has no posts"]),
        ("no-profile-column", ["line 2", "field 'profile'", "missing"]),
        ("no-question", ["line 2", "field 'question'", "missing"]),
        ("no-aspects-column", ["line 2", "field 'rubric_aspects'", "missing"]),
        ("empty-aspects", ["field 'rubric_aspects'", "empty list"]),
        ("blank-aspect", ["field 'rubric_aspects[1].aspect'", "non-empty string"]),
        ("duplicate-id", ["field 'id'", "duplicate id"]),
    ],
)
def test_bad_rows_are_one_line_data_errors(tmp_path: Path, change: str, parts: list[str]) -> None:
    path = write_jsonl(tmp_path / f"{ART}_test.jsonl", _broken(change))
    with pytest.raises(DataError) as exc:
        load_lampqa(str(path))
    one_line_error(exc, str(path), *parts)


def test_bad_settings_are_one_line_config_errors(hub_layout: Path) -> None:
    with pytest.raises(ConfigError) as exc:
        load_lampqa(str(hub_layout), retriever="tfidf")
    one_line_error(exc, "unknown retrieval method 'tfidf'", "valid: bm25, dense")
    with pytest.raises(ConfigError) as exc:
        load_lampqa(str(hub_layout), retriever="dense")
    one_line_error(exc, "'dense' needs a local encoder path", "prompts.retriever_model")
    with pytest.raises(ConfigError) as exc:
        load_lampqa(str(hub_layout), retriever="dense", retriever_model=str(hub_layout / "nope"))
    one_line_error(exc, "is not a local folder")
    with pytest.raises(ConfigError) as exc:
        load_lampqa(str(hub_layout), domains=["Art"])
    one_line_error(exc, "unknown LaMP-QA domain 'Art'", ART, SOC)
    with pytest.raises(ConfigError) as exc:
        load_lampqa(str(hub_layout), profile_k=0)
    one_line_error(exc, "profile_k must be a positive integer")


def test_a_prompt_set_file_is_refused_with_what_it_is(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [{"prompt_id": "x", "prompt": "q", "kind": "general"}])
    with pytest.raises(DataError) as exc:
        load_lampqa(str(path))
    one_line_error(exc, "prompt-set file", "not a LaMP-QA file", "load_prompts()")


# --------------------------------------------------------------------------- dense retrieval


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised 2-layer BERT and a word-level tokenizer, saved like a hub encoder folder."""
    import torch
    import transformers

    folder = tmp_path_factory.mktemp("tiny-contriever")
    words = sorted({w for t in [*many_posts(), "how do i tune a guitar at home"] for w in t.split()})
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    transformers.BertTokenizerFast(vocab_file=str(vocab)).save_pretrained(folder)
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=len(words) + 5, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    transformers.BertModel(config).save_pretrained(folder)
    return folder


def test_dense_ranks_deterministically_and_a_duplicate_of_the_question_first(tiny_encoder: Path) -> None:
    question = "How do I tune a guitar at home?"
    posts = [ProfilePost("music", f"p{j}", t) for j, t in enumerate(many_posts())]
    posts.insert(9, ProfilePost("music", "dup", question))
    encoder = DenseEncoder(tiny_encoder, batch_size=4)  # several batches: padding must not change a score
    ranked = rank_posts(question, posts, method="dense", encoder=encoder)
    assert ranked[0].id == "dup"
    assert sorted(p.id for p in ranked) == sorted(p.id for p in posts)  # records kept whole, none lost
    again = rank_posts(question, posts, method="dense", encoder=DenseEncoder(tiny_encoder, batch_size=16))
    assert [p.id for p in again] == [p.id for p in ranked]
    scores = encoder.scores(question, [p.text for p in posts])
    assert scores.shape == (len(posts),) and np.isfinite(scores).all()


def test_load_lampqa_with_the_dense_retriever(tiny_encoder: Path, tmp_path: Path) -> None:
    rows = art_rows()
    rows[0]["profile"].append(post("a1-dup", "music", rows[0]["question"]))
    path = write_jsonl(tmp_path / f"{ART}_test.jsonl", rows)
    items = load_lampqa(str(path), retriever="dense", retriever_model=str(tiny_encoder), profile_k=4)
    assert items[0].profile[0].id == "a1-dup" and len(items[0].profile) == 4


# --------------------------------------------------------------------------- config wiring


def test_prompts_lampqa_composes_and_prompt_set_loads_it(hub_layout: Path) -> None:
    cfg = compose("sample", "prompts=lampqa")
    assert cfg.prompts.source == "alireza7/LaMP-QA" and cfg.prompts.format == "lampqa"
    assert (cfg.prompts.split, cfg.prompts.train_split, cfg.prompts.retriever, cfg.prompts.profile_k) == (
        "test", "train", "bm25", 10)

    cfg = compose("sample", "prompts=lampqa", f"prompts.source={hub_layout}", f"prompts.domains=[{ART}]",
                  "prompts.profile_k=2", "prompts.limit=5")
    items, prompts_id = inputs.prompt_set(cfg)
    assert [(it.prompt_id, len(it.profile)) for it in items] == [(f"{ART}:a1", 2), (f"{ART}:a2", 1)]
    for part in (str(hub_layout), ":test:", f"domains={ART}", "retriever=bm25", "k=2", "limit=5"):
        assert part in prompts_id
    train, train_id = inputs.prompt_set(cfg, split=cfg.prompts.train_split)
    assert [it.prompt_id for it in train] == [f"{ART}:t1"] and ":train:" in train_id

    bad = compose("sample", "prompts=lampqa", f"prompts.source={hub_layout}", "prompts.format=lamp")
    with pytest.raises(ConfigError) as exc:
        inputs.prompt_set(bad)
    one_line_error(exc, "unknown prompts.format 'lamp'", "rlexp, lampqa")


def test_the_new_prompt_keys_leave_record_ids_alone() -> None:
    new = {"format", "domains", "retriever", "retriever_model", "profile_k"}
    hashed = result_config(OmegaConf.to_container(compose("sample"), resolve=False), "sample")["prompts"]
    assert not new & set(hashed)  # at their defaults: every older record keeps its id
    hashed = result_config(OmegaConf.to_container(compose("sample", "prompts=lampqa"), resolve=False), "sample")
    assert hashed["prompts"]["format"] == "lampqa"


def test_the_id_names_the_dense_model(tiny_encoder: Path, hub_layout: Path) -> None:
    settings = {"format": "lampqa", "retriever": "dense", "retriever_model": str(tiny_encoder), "profile_k": 3}
    _, prompts_id = load_prompt_set(settings, str(hub_layout), "test")
    assert "retriever=dense" in prompts_id and f"model={tiny_encoder.resolve()}" in prompts_id
