"""An RM folder whose tokenizer.json transformers does not load as written: the drift is detected,
recorded, refused in parity mode, and `scorer.tokenizer=file` scores with the file's own ids."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from rlexp.errors import ConfigError
from rlexp.models.loading import DRIFT_PROBE, load_tokenizer, tokenizer_drift
from rlexp.store import Store
from tests.conftest import compose

pytestmark = pytest.mark.slow


@pytest.fixture
def drift_folder(world: Path, rms: dict[str, str], tmp_path: Path) -> Path:
    store = Store(world / "runs")
    folder = tmp_path / "qwen_rm_own_pretokenizer"
    shutil.copytree(store.resolve(store.get(rms["qwen_general"], "train_rm").artifacts["model"]), folder)
    tok = json.loads((folder / "tokenizer.json").read_text())
    tok["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    (folder / "tokenizer.json").write_text(json.dumps(tok))
    return folder


def test_drift_is_detected_recorded_and_refused_in_parity_mode(drift_folder: Path, rms: dict[str, str],
                                                               world: Path) -> None:
    from rlexp.tasks import evaluate

    own = Store(world / "runs").resolve(Store(world / "runs").get(rms["qwen_general"], "train_rm").artifacts["model"])
    assert tokenizer_drift(load_tokenizer(str(own)), str(own)) is None  # rlexp's own lineages load as written
    auto = load_tokenizer(str(drift_folder))
    assert "tokenizer drift" in tokenizer_drift(auto, str(drift_folder))
    literal = load_tokenizer(str(drift_folder), literal=True)
    expected = Tokenizer.from_file(str(drift_folder / "tokenizer.json")).encode(DRIFT_PROBE, add_special_tokens=False).ids
    assert literal(DRIFT_PROBE, add_special_tokens=False)["input_ids"] == expected
    assert literal.chat_template == auto.chat_template and literal.eos_token == auto.eos_token

    base = [f"rm={drift_folder}", "benchmark=rb2", "benchmark.rb2.limit=12", "logger=none"]
    warned = evaluate.run(compose("evaluate", *base))
    assert warned.info["tokenizer"]["drift"] and warned.info["tokenizer"]["source"] == "auto"
    as_file = evaluate.run(compose("evaluate", *base, "scorer.tokenizer=file"))
    assert as_file.id != warned.id and as_file.info["tokenizer"] == {
        "class": type(literal).__name__, "source": "file", "drift": None}
    with pytest.raises(ConfigError, match="tokenizer drift"):
        evaluate.run(compose("evaluate", *base, "scorer=rb2_reference", "scorer.dtype=float32"))
