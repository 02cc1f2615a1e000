"""Secrets never reach a record; settings that merely contain "token" always do."""

from __future__ import annotations

import random
import string
import subprocess
from pathlib import Path

import pytest
import yaml

from rlexp.tracking import REDACTED, is_secret_key, redact
from tests.conftest import rlexp_cmd

KEPT = ("max_new_tokens", "max_length", "pad_token_id", "eos_token_id", "pad_token", "eos_token", "num_tokens",
        "max_tokens", "tokenizer", "tokenizer_check", "response_length", "token_count", "total_tokens")
SECRETS = ("api_key", "WANDB_API_KEY", "HF_TOKEN", "hf_token", "github_token", "access_token", "OPENAI_API_KEY",
           "password", "client_secret", "token", "auth_token", "apikey", "credentials", "private_key",
           "apiKey", "auth", "authorization", "Authorization", "refresh-token")


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


# ---------------------------------------------------------------------------------------------
# Secrets found by pattern: key words, value shapes, and Hydra's own job folder.
# ---------------------------------------------------------------------------------------------

# Credentials are assembled at run time so that no secret scanner mistakes this file for a leak.
OPENAI = "sk-" + "proj-" + "Ab12Cd34Ef56Gh78Ij90KlMnOp"
HF = "hf" + "_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567"
GITHUB = "gh" + "p_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"
AWS_ID = "AK" + "IA" + "QX7Z3M2K9L4P8R5T"
# A generated key with no known prefix: 40 characters drawn from [A-Za-z0-9] (seeded: the same key each run).
_RNG = random.Random(7)
RANDOM_KEY = "".join(_RNG.choice(string.ascii_letters + string.digits) for _ in range(40))


@pytest.mark.parametrize("key", ["accessToken", "AccessToken", "HFToken", "secret_key", "aws_secret_access_key",
                                 "openai_key", "client.secret", "passphrase", "ssh_key", "judge.api_key"])
def test_secret_keys_are_found_by_their_words(key: str) -> None:
    """A key names a credential by its last word (camelCase, snake_case, kebab-case and dotted paths
    split alike), not by a fixed list of names: none of these was redacted by the name list."""
    assert is_secret_key(key)
    assert redact({"judge": {key: "s3cr3t-value"}}) == {"judge": {key: REDACTED}}


# Keys holding a word of the secret vocabulary that are settings, not credentials.
KEPT_BY_WORDS = {
    "key": 17,  # IFEval's row id
    "keys": ["a", "b"],
    "monkey": "patch",
    "api_key_env": "OPENAI_API_KEY",  # the NAME of the variable holding the key (the key never enters a config)
    "sort_key": "length",
    "prompt_key": "prompt",
    "exclude_keys": ["seed"],
    "token_count": 12,
    "stop_token": "<|eot_id|>",
    "token_env": "HF_TOKEN",
    "hf_token_path": "/home/me/.cache/huggingface/token",
}


def test_settings_named_with_secret_words_survive() -> None:
    """The allow list: a secret word that is not the key's last word, ``key`` alone, a field's
    ``*_key``, a vocabulary ``*_token`` and a boolean flag (``use_auth_token: true`` hides nothing)."""
    assert redact({"cfg": KEPT_BY_WORDS}) == {"cfg": KEPT_BY_WORDS}
    assert not any(is_secret_key(k) for k in KEPT_BY_WORDS)
    assert redact({"use_auth_token": True, "token": None}) == {"use_auth_token": True, "token": None}


@pytest.mark.parametrize("value", [
    f"Bearer {OPENAI}", "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJl",
    f"token {HF} for the hub", f"git push https://{GITHUB}@github.com", AWS_ID, RANDOM_KEY,
    "https://user:hunter2pass@example.com/v1",
])
def test_secret_values_are_found_by_their_shape(value: str) -> None:
    """A credential is redacted under any key: inside a header value, a sentence or a URL, and a long
    random string with no known prefix (a whole ``hf_``/``sk-``/``ghp_`` value was already redacted)."""
    cfg = {"judge": {"headers": {"X-Custom": value}, "notes": [value]}}
    assert redact(cfg) == {"judge": {"headers": {"X-Custom": REDACTED}, "notes": [REDACTED]}}


# Values a record's config legitimately holds: none looks like a credential.
KEPT_VALUES = (
    "3476e31901852042",  # a record id
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",  # a sha256 content hash
    "0123456789abcdef0123456789abcdef01234567",  # a git commit
    "123e4567-e89b-12d3-a456-426614174000",  # a UUID
    "yojs42ig",  # a W&B run id
    "Skywork/Skywork-Reward-V2-Llama-3.1-8B",  # hub ids
    "nvidia/Llama-3.1-Nemotron-70B-Reward-HF",
    "Mistral-7B-Instruct-v0.2-GPTQ-4bit-32g-actorder_True",  # a long model name: short words
    "Qwen2.5-0.5B-Instruct-GPTQ-Int4-Calibrated-v2",
    "ThisIsAVeryLongCamelCaseName2024",  # camelCase words, not random pieces
    "ppo_rm-skywork_seed3_2024-05-01_Personal",  # an experiment name
    "/tmp/rlexp/outputs/env/runs/default/2026-12-07_03-22-51.961832",  # a path
    "store:artifacts/ppo/3476e31901852042/policy",
    "model-00001-of-00004.safetensors",
    "Answer the question below in at most 3 sentences. Bearer bonds are a kind of security.",  # a prompt
    "Bearer x",  # a token too short to be one
    "http://127.0.0.1:8000/v1",  # an endpoint without a password
    "${oc.env:HF_TOKEN}",  # an interpolation names the variable, not its value
)


def test_values_records_hold_are_kept() -> None:
    """The value rules' allow list: ids, hashes, paths, hub ids, names and prompts pass untouched."""
    from rlexp.redaction import redact_text

    cfg = {f"v{i}": v for i, v in enumerate(KEPT_VALUES)}
    assert redact(cfg) == cfg
    assert redact_text(" ".join(KEPT_VALUES)) == " ".join(KEPT_VALUES)


def test_log_lines_are_redacted_in_place() -> None:
    """Free text keeps everything but the secret: a secret-named ``key=value`` / ``key: value`` (JSON
    too), an Authorization header with its scheme, a URL's password, a token by its shape."""
    from rlexp.redaction import redact_text

    line = (f"#0 : logger=none +judge.api_key=abc123 max_new_tokens=64 note: accessToken={HF} "
            f'{{"password": "pw1"}} Authorization: Bearer {RANDOM_KEY} http://me:pw2@host/v1 key=3')
    assert redact_text(line) == ("#0 : logger=none +judge.api_key=*** max_new_tokens=64 note: accessToken=*** "
                                 '{"password": "***"} Authorization: *** http://me:***@host/v1 key=3')


def test_log_records_are_redacted_once_installed(caplog: pytest.LogCaptureFixture) -> None:
    """The record factory redacts a message (its arguments included) whatever handler writes it:
    Hydra replaces every handler when it sets up a job's logging."""
    import logging

    from rlexp.redaction import install_log_redaction

    before = logging.getLogRecordFactory()
    try:
        install_log_redaction()
        install_log_redaction()  # idempotent: one wrapper, not two
        with caplog.at_level(logging.INFO, logger="rlexp.test"):
            logging.getLogger("rlexp.test").info("overrides: %s", f"judge.api_key={OPENAI} seed=1")
    finally:
        logging.setLogRecordFactory(before)
    assert caplog.messages == ["overrides: judge.api_key=*** seed=1"]


def test_record_ids_are_computed_before_redaction(tmp_path: Path) -> None:
    """Redaction changes what a record stores, never its id: the id hashes the config as given
    (record ids of existing stores, the sandbox's included, stay what they were)."""
    from omegaconf import OmegaConf

    from rlexp.runtime import execute
    from rlexp.store import record_id

    raw = {
        "paths": {"store": str(tmp_path / "runs"), "output_root": str(tmp_path / "out"), "cache": str(tmp_path / "c")},
        "logger": {"kind": "none"}, "runtime": {"threads": 0},
        "judge": {"accessToken": "abc", "headers": {"Authorization": f"Bearer {RANDOM_KEY}"}, "note": HF},
    }
    rec = execute("env", OmegaConf.create(raw), lambda ctx: {"ok": 1})
    assert rec.id == record_id("env", raw)
    assert rec.config["judge"] == {"accessToken": REDACTED, "headers": {"Authorization": REDACTED}, "note": REDACTED}


SECRET_OVERRIDES = ("+judge.api_key=abc123secret", f"+judge.accessToken={HF}", f"note={OPENAI}",
                    f"+judge.headers.Authorization='Bearer {RANDOM_KEY}'")
SECRET_STRINGS = ("abc123secret", HF, OPENAI, RANDOM_KEY)


def _leaks(root: Path, console: str) -> list[str]:
    """Every place a secret shows: a file's content or a file or folder name under ``root``, or the
    console output."""
    found = [f"console: {s}" for s in SECRET_STRINGS if s in console]
    for path in root.rglob("*"):
        found += [f"name {path}" for s in SECRET_STRINGS if s in path.name]
        if path.is_file():
            text = path.read_bytes().decode("utf-8", "replace")
            found += [f"{path.relative_to(root)}: {s}" for s in SECRET_STRINGS if s in text]
    return found


def test_hydra_job_folder_holds_no_secret(root: Path) -> None:
    """A task run with secrets on its command line: Hydra's ``.hydra/{config,hydra,overrides}.yaml``,
    the job's log and the record hold ``***`` instead, and nothing else is lost (the overrides list
    keeps each key, the record keeps the settings)."""
    out = subprocess.run(rlexp_cmd("env", "logger=none", *SECRET_OVERRIDES), capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert not _leaks(root, out.stdout + out.stderr), _leaks(root, out.stdout + out.stderr)
    hydra_dir = next((root / "outputs" / "env" / "runs").rglob(".hydra"))
    assert yaml.safe_load((hydra_dir / "overrides.yaml").read_text()) == [
        "logger=none", "+judge.api_key=***", "+judge.accessToken=***", "note=***", "+judge.headers.Authorization=***"]
    job = yaml.safe_load((hydra_dir / "config.yaml").read_text())
    assert job["judge"] == {"api_key": REDACTED, "accessToken": REDACTED, "headers": {"Authorization": REDACTED}}
    hydra_cfg = yaml.safe_load((hydra_dir / "hydra.yaml").read_text())["hydra"]
    assert hydra_cfg["job"]["override_dirname"].startswith("+judge.accessToken=***,")
    assert hydra_cfg["callbacks"]["redaction"]["_target_"] == "rlexp.redaction.RedactSecrets"


def test_hydra_multirun_holds_no_secret(root: Path) -> None:
    """A sweep over a secret: ``multirun.yaml``, each job's ``.hydra`` files, the jobs' folder names
    (override_dirname) and Hydra's console lines (``#0 : +judge.api_key=...``) hold no secret; both
    jobs still write their record (their ids differ: ids hash the config before redaction)."""
    out = subprocess.run(
        rlexp_cmd("env", "-m", "logger=none", "+judge.api_key=abc123secret,other456secret", f"note={OPENAI}", "seed=1,2"),
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    leaks = _leaks(root, out.stdout + out.stderr) + [s for s in ("other456secret",) if s in out.stdout + out.stderr]
    leaks += [str(p) for p in root.rglob("*") if p.is_file() and "other456secret" in p.read_text(errors="replace")]
    assert not leaks, leaks
    assert "+judge.api_key=***" in out.stdout + out.stderr
    sweep = next((root / "outputs" / "env" / "multiruns").rglob("multirun.yaml"))
    assert yaml.safe_load(sweep.read_text())["hydra"]["overrides"]["task"][1:3] == ["+judge.api_key=***", "note=***"]
    # The secret overrides are left out of the folder names; the seed stays.
    assert sorted(p.name for p in sweep.parent.iterdir() if p.is_dir()) == ["seed=1", "seed=2"]
    assert len(list((root / "runs" / "records" / "env").glob("*.json"))) == 4
