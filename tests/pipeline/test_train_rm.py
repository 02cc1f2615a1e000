"""Lineages and train_rm on the sandbox: learning is real, bad RMs look bad, bad input is one line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from rlexp.store import Store
from tests.conftest import QWEN, compose, env_with, private_store, rlexp_cmd


def _general_heldout(world: Path):
    from rlexp import inputs
    from rlexp.data.loaders import load_pairs
    from rlexp.data.mixes import split_heldout

    cfg = compose("train_rm", "data=general")
    path, _ = inputs.data_ref("sandbox:general", cfg)
    _, heldout = split_heldout(load_pairs(path, name="general"), cfg.heldout_fraction, cfg.seed)
    return heldout


def _accuracy(model_dir: str, pairs, mode: str = "none") -> float:
    from rlexp.config.nodes import ProfileConfig, ScorerConfig
    from rlexp.models.reward_training import pair_inputs
    from rlexp.scoring.reward_model import RewardModelScorer

    scorer = RewardModelScorer.from_pretrained(model_dir, ScorerConfig(max_length=512), ProfileConfig(mode=mode))
    s = scorer.score([x for p in pairs for x in pair_inputs(p)])
    return float(np.mean(s[0::2] > s[1::2]))


def test_two_lineages_have_different_tokenizers(world: Path, rms: dict[str, str]) -> None:
    from rlexp import inputs
    from rlexp.models.loading import load_tokenizer

    llama = inputs.lineage(compose("train_rm", "model=tiny_llama"))
    qwen = inputs.lineage(compose("train_rm", *QWEN))
    t1, t2 = load_tokenizer(llama.base), load_tokenizer(qwen.base)
    text = "The capital of the northern province is famous for its bridges."
    assert t1(text)["input_ids"] != t2(text)["input_ids"]
    assert len(t1) != len(t2)
    for tok in (t1, t2):
        assert tok.chat_template and tok.pad_token != tok.eos_token
    # Built once: resolving again is a cache hit, the same records and none written (compared by ids, not
    # counted: a kept test world, RLEXP_TEST_WORLD, may hold other lineages).
    store = Store(world / "runs")
    before = {r.id for r in store.records("lineage")}
    again = [inputs.lineage(compose("train_rm", *m)) for m in (("model=tiny_llama",), QWEN)]
    assert [a.record_id for a in again] == [llama.record_id, qwen.record_id]
    assert {llama.record_id, qwen.record_id} <= before == {r.id for r in store.records("lineage")}


def test_general_rm_learns_flipped_rm_is_bad(world: Path, rms: dict[str, str]) -> None:
    store = Store(world / "runs")
    heldout = _general_heldout(world)
    for name in ("llama_general", "qwen_general"):
        rec = store.get(rms[name], "train_rm")
        assert rec.metrics["heldout/accuracy"] >= rec.metrics["heldout/accuracy_init"] + 0.15, rec.metrics
        assert rec.info["lineage"]["lineage"] == name.split("_")[0].replace("llama", "tiny_llama").replace("qwen", "tiny_qwen")
    flipped = store.get(rms["llama_flipped"], "train_rm")
    acc = _accuracy(str(store.resolve(flipped.artifacts["model"])), heldout)
    assert acc < 0.5, acc


def test_record_names_lineage_mix_and_hyperparameters(world: Path, rms: dict[str, str]) -> None:
    rec = Store(world / "runs").get(rms["llama_personal"], "train_rm")
    lin = rec.info["lineage"]
    assert lin["lineage_record"] and lin["checkpoint"] == "instruct"
    assert lin["mix"]["id"] and lin["mix"]["rows"]["personal"] > 1000
    assert lin["profile"]["mode"] == "planner" and lin["epochs"] == 1.0
    assert lin["trainer"]["learning_rate"] > 0
    model_dir = Path(Store(world / "runs").resolve(rec.artifacts["model"]))
    assert (model_dir / "model.safetensors").is_file() and (model_dir / "tokenizer_config.json").is_file()


def test_same_command_again_does_no_training(world: Path, rms: dict[str, str]) -> None:
    from rlexp.tasks import train_rm

    record = Store(world / "runs").record_path("train_rm", rms["llama_general"])
    written = record.stat().st_mtime_ns
    rec = train_rm.run(compose("train_rm", "model=tiny_llama", "data=general"))
    assert rec.id == rms["llama_general"]
    assert record.stat().st_mtime_ns == written  # found, not trained and written again


def test_lora_trains_saves_and_reloads_to_same_scores(world: Path, rms: dict[str, str]) -> None:
    from peft import AutoPeftModelForSequenceClassification

    from rlexp.models.loading import load_tokenizer
    from rlexp.scorer import ScoreInput
    from rlexp.scoring.reward_model import RewardModelScorer
    from rlexp.tasks import train_rm

    rec = train_rm.run(compose("train_rm", "model=tiny_llama", "data=general", "peft=lora", "data.max_rows=400"))
    work = Store(world / "runs").resolve(f"artifacts/train_rm/{rec.id}")
    items = [ScoreInput("What is 3 plus 4?", t) for t in ("It is 7.", "It is 8.", "Seven, of course.")]
    merged = RewardModelScorer.from_pretrained(str(work / "model")).score(items)
    peft_model = AutoPeftModelForSequenceClassification.from_pretrained(str(work / "adapter"), num_labels=1)
    reloaded = RewardModelScorer(peft_model.merge_and_unload(), load_tokenizer(str(work / "model"))).score(items)
    assert np.max(np.abs(merged - reloaded)) <= 1e-5


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["data.sources.general=sandbox:nope"], "unknown sandbox source 'sandbox:nope'"),
        (["data=mix", "data.weights.general=0"], "mix.weights.general"),
        (["data=mix", "data.weights.general=-1"], "mix.weights.general"),
        (["data=mix", "data.weights.general=nan"], "mix.weights.general"),
        (["trainer.max_length=12"], "drops all"),
        (["deepspeed=zero2", "deepspeed.config.zero_optimization.stage=7"], "stage=7"),
    ],
)
def test_bad_input_is_one_line_and_writes_no_record(world: Path, rms: dict[str, str], tmp_path: Path,
                                                   overrides: list[str], message: str) -> None:
    private_store(world, tmp_path, ("data", "lineage"))
    out = subprocess.run(rlexp_cmd("train_rm", "logger=none", *overrides), capture_output=True, text=True, timeout=600,
                         env=env_with(RLEXP_ROOT=str(tmp_path)))
    assert out.returncode != 0
    err = out.stderr.strip().splitlines()
    assert len(err) == 1 and message in err[0], out.stderr[-2000:]
    assert not list((tmp_path / "runs" / "records").glob("train_rm/*.json"))


def test_base_model_folder_without_weights(tmp_path: Path) -> None:
    folder = tmp_path / "empty_model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "llama"}))
    (folder / "pytorch_model.bin").write_bytes(b"pickle!")
    out = subprocess.run(rlexp_cmd("train_rm", "logger=none", f"model.name_or_path={folder}"),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "no safetensors weights" in out.stderr
    assert not (tmp_path / "root" / "runs" / "records" / "train_rm").exists()


def test_world_version_keys_the_stored_world(world: Path) -> None:
    """A generator change (WORLD_VERSION bump) must not reuse a world stored by older code."""
    from rlexp.sandbox.materialise import WORLD_VERSION
    from rlexp.store import record_id
    from rlexp.tasks import data

    rec = data.run(compose("data"))
    manifest = json.loads((Store(world / "runs").resolve(rec.artifacts["manifest"])).read_text())
    assert manifest["world_version"] == WORLD_VERSION
    assert rec.inputs == {"world_version": str(WORLD_VERSION)}
    bumped = record_id("data", rec.config, {"world_version": str(WORLD_VERSION + 1)})
    assert bumped != rec.id and not Store(world / "runs").exists("data", bumped)
    assert record_id("data", rec.config, rec.inputs) == rec.id  # the id execute derives
