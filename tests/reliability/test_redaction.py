"""Secrets never reach a record; settings that merely contain "token" always do."""

from __future__ import annotations

import pytest

from rlexp.tracking import REDACTED, is_secret_key, redact

KEPT = ("max_new_tokens", "max_length", "pad_token_id", "eos_token_id", "pad_token", "eos_token", "num_tokens",
        "max_tokens", "tokenizer", "tokenizer_check", "response_length", "token_count", "total_tokens")
SECRETS = ("api_key", "WANDB_API_KEY", "HF_TOKEN", "hf_token", "github_token", "access_token", "OPENAI_API_KEY",
           "password", "client_secret", "token", "auth_token", "apikey", "credentials", "private_key")


@pytest.mark.parametrize("key", KEPT)
def test_settings_survive(key: str) -> None:
    assert not is_secret_key(key)
    assert redact({"sampling": {key: 64}}) == {"sampling": {key: 64}}


@pytest.mark.parametrize("key", SECRETS)
def test_secret_keys_are_redacted(key: str) -> None:
    assert is_secret_key(key)
    assert redact({"judge": {key: "s3cr3t-value"}}) == {"judge": {key: REDACTED}}


def test_secret_values_are_redacted_under_any_key() -> None:
    cfg = {"judge": {"headers": ["Bearer x", "hf_" + "a" * 34], "note": "sk-" + "b" * 40},
           "model": {"revision": "0123456789abcdef0123456789abcdef01234567"}}  # a commit, not a key
    out = redact(cfg)
    assert out["judge"] == {"headers": ["Bearer x", REDACTED], "note": REDACTED}
    assert out["model"] == cfg["model"]
    assert redact({"api_key": None, "token": ""}) == {"api_key": None, "token": ""}  # nothing to hide


def test_a_recorded_config_keeps_its_generation_lengths(tmp_path) -> None:
    from omegaconf import OmegaConf

    from rlexp.runtime import execute

    cfg = OmegaConf.create({
        "paths": {"store": str(tmp_path / "runs"), "output_root": str(tmp_path / "out"), "cache": str(tmp_path / "c")},
        "logger": {"kind": "none"}, "runtime": {"threads": 0},
        "sampling": {"max_new_tokens": 64, "pad_token_id": 0}, "judge": {"api_key": "abc", "HF_TOKEN": "hf_x"},
    })
    rec = execute("env", cfg, lambda ctx: {"ok": 1})
    assert rec.config["sampling"] == {"max_new_tokens": 64, "pad_token_id": 0}
    assert rec.config["judge"] == {"api_key": REDACTED, "HF_TOKEN": REDACTED}
