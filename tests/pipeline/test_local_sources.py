"""Data read from a local folder is named by what was read, not by its path: a file edited in place is
read afresh, never matched to the records made from its old content."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rlexp.store import Store
from tests.conftest import compose


def _edit_first_row(path: Path, column: str, text: str) -> None:
    table = pq.read_table(path)
    rows = table.to_pylist()
    rows[0][column] = text
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)


def test_an_edited_local_prompt_set_gets_a_new_id(world: Path, tmp_path: Path) -> None:
    from rlexp import inputs

    world_prompts, sandbox_id = inputs.data_ref("sandbox:prompts/general", compose("sample", "model=tiny_llama"))
    local = tmp_path / "prompts"
    shutil.copytree(world_prompts, local)

    def prompt_set() -> tuple[list, str]:
        return inputs.prompt_set(compose("sample", "model=tiny_llama", "prompts=general", f"prompts.source={local}"))

    sandbox_items, sandbox_pid = inputs.prompt_set(compose("sample", "model=tiny_llama", "prompts=general"))
    assert sandbox_pid == f"{sandbox_id}:eval"  # the world's prompt sets keep their ids
    items, first = prompt_set()
    assert [i.prompt for i in items] == [i.prompt for i in sandbox_items]
    assert first.startswith(f"{local}:eval#")
    # Rewritten with the same rows: the same id (so its pools are found again).
    pq.write_table(pq.read_table(local / "eval.parquet"), local / "eval.parquet")
    assert prompt_set()[1] == first
    _edit_first_row(local / "eval.parquet", "prompt", "What is 2 + 2?")
    items, edited = prompt_set()
    assert edited != first and items[0].prompt == "What is 2 + 2?"


def test_an_edited_local_benchmark_is_scored_again(world: Path, rms: dict[str, str], tmp_path: Path) -> None:
    from rlexp import inputs
    from rlexp.tasks import evaluate

    world_rb2, _ = inputs.data_ref("sandbox:rb2", compose("evaluate", "rm=x"))
    local = tmp_path / "rb2"
    shutil.copytree(Path(world_rb2), local)

    def run():
        return evaluate.run(compose("evaluate", f"rm={rms['llama_general']}", "benchmark=rb2", "profile=none",
                                    f"benchmark.rb2.source={local}", "benchmark.rb2.limit=12"))

    first = run()
    assert run().id == first.id  # unchanged content: the record is found, not recomputed
    [data_file] = sorted(local.glob("*.parquet"))
    _edit_first_row(data_file, "prompt", "An edited prompt, so the first item's scores change")
    edited = run()
    assert edited.id != first.id
    store = Store(world / "runs")
    before = pq.read_table(store.resolve(first.artifacts["rb2_scores"])).to_pandas()
    after = pq.read_table(store.resolve(edited.artifacts["rb2_scores"])).to_pandas()
    first_id = before.id.iloc[0]
    # Other rows share a padded batch with the edited one, so their scores may move in the last float bits.
    edited_scores = before[before.id == first_id].score.to_numpy(), after[after.id == first_id].score.to_numpy()
    assert (np.abs(edited_scores[0] - edited_scores[1]) > 1e-3).all()
    np.testing.assert_allclose(before[before.id != first_id].score.to_numpy(),
                               after[after.id != first_id].score.to_numpy(), rtol=0, atol=1e-4)


def test_an_edited_suite_task_export_gets_a_new_prompt_set_id(world: Path, tmp_path: Path) -> None:
    import json

    from rlexp import inputs
    from tests.downstream.test_suite_bon import FIXTURES, SUITE

    local = tmp_path / "gsm8k"
    shutil.copytree(FIXTURES / "gsm8k", local)
    suite = [*SUITE, f"prompts.tasks.gsm8k.source={local}"]

    def prompt_set() -> tuple[list, str]:
        return inputs.prompt_set(compose("bon", "rm=unused", *suite))

    items, first = prompt_set()
    assert prompt_set()[1] == first
    rows = [json.loads(line) for line in (local / "test.jsonl").read_text().splitlines()]
    rows[0]["question"] = "What is 2 + 2?"
    (local / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    edited_items, edited = prompt_set()
    assert edited != first and edited.split("#")[0] == first.split("#")[0]  # same settings, other rows
    assert any("What is 2 + 2?" in i.prompt for i in edited_items)
    assert not any("What is 2 + 2?" in i.prompt for i in items)
