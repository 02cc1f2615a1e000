"""LaMP-QA prompted as PRB's BoN samples it (issue 64): PRB's prompts/sample.txt and system message, the posts
(never the planner's summary), and the ranked files LaMP-QA's own rank_dataset.py writes ({id, text} per post)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from rlexp.data.formatting import PRB_SAMPLE_PROMPT, PRB_SYSTEM, SYSTEM_PERSONALIZED
from rlexp.data.loaders import load_lampqa
from rlexp.data.schemas import ProfilePost, PromptItem
from rlexp.downstream.sampling import chat_messages
from rlexp.errors import ConfigError
from rlexp.inputs.worlds import rows_hash
from rlexp.store import content_hash
from tests.data._factories import write_jsonl
from tests.data.test_lampqa import ART, lampqa_row


def test_lampqa_prompts_are_prbs_sample_prompt(tmp_path: Path) -> None:
    items = load_lampqa(write_jsonl(tmp_path / f"{ART}_test.jsonl", [lampqa_row("a1", "Tune a guitar?",
                                                                                ["guitar tuning", "cats"])]))
    system, user = chat_messages(items[0], 10, "posts")
    assert system == {"role": "system", "content": PRB_SYSTEM}
    # PRB's template with {question} and {profile} replaced; PRB's format_profile blocks.
    assert user["content"].startswith("Your task is to generate a personalized answer to the user's current question")
    assert "- User's current question:\nTune a guitar?\n- Past post questions and detailed descriptions" in user["content"]
    assert "Post 1 (Category: music):\nguitar tuning\nPost 2 (Category: movies):\ncats" in user["content"]
    assert user["content"].endswith("Generate the answer to user's current question following above instructions.")
    assert "keep the answer under 100 words" not in user["content"]  # not the sandbox's instruction
    assert PRB_SAMPLE_PROMPT.count("{question}") == 1 and PRB_SAMPLE_PROMPT.count("{profile}") == 1


def test_lampqa_prompts_never_get_the_planners_summary(tmp_path: Path) -> None:
    items = load_lampqa(write_jsonl(tmp_path / f"{ART}_test.jsonl", [lampqa_row("a1", "Tune?", ["guitar"])]))
    with pytest.raises(ConfigError, match="sampling.policy_profile=posts"):
        chat_messages(items[0], 10, "plan")


def test_the_sandbox_keeps_its_prompt_and_its_ids() -> None:
    item = PromptItem("p1", "Tune?", "personalized", (ProfilePost("music", "x", "guitar"),))
    system, _ = chat_messages(item, 3, "posts")
    assert system["content"] == SYSTEM_PERSONALIZED
    # The new field is hash-neutral: a sandbox prompt hashes as it did before the field existed.
    before = {k: v for k, v in dataclasses.asdict(item).items()
              if k not in ("prefill", "stop", "max_new_tokens", "template")}
    assert rows_hash([item]) == content_hash([before])
    assert rows_hash([item]) != rows_hash([dataclasses.replace(item, template="prb")])


def test_lampqas_own_ranked_file_is_accepted(tmp_path: Path) -> None:
    # retrieval/rank_dataset.py of LaMP-QA keeps only {id, text} per post.
    row = lampqa_row("a1", "Tune a guitar?", ["guitar tuning", "cats"])
    row["profile"] = [{"id": p["id"], "text": p["text"]} for p in row["profile"]]
    nulls = lampqa_row("a2", "Anime?", ["anime"])
    nulls["profile"] = [{**p, "category": None} for p in nulls["profile"]]
    items = load_lampqa(write_jsonl(tmp_path / f"{ART}_test.jsonl", [row, nulls]))
    assert [p.category for p in items[0].profile] == ["", ""] and items[1].profile[0].category == ""
    _, user = chat_messages(items[0], 10, "posts")
    assert "Post 1:\nguitar tuning\nPost 2:\ncats" in user["content"] and "Category" not in user["content"]
