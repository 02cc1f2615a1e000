"""The CLI: help, unknown task, bad overrides, unwritable store, python -m equivalence."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import rlexp_cmd


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(rlexp_cmd(*args), capture_output=True, text=True, cwd=cwd, timeout=120)


def test_help_lists_every_task() -> None:
    out = run("--help")
    assert out.returncode == 0
    for task in ("env", "data", "train_rm", "evaluate", "sample", "bon", "ppo", "correlate", "study"):
        assert f"  {task} " in out.stdout


def test_unknown_task_is_one_line_exit_2() -> None:
    out = run("trian_rm")
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0
    assert "unknown task 'trian_rm'" in out.stderr


def test_misspelled_key_names_it(root: Path) -> None:
    out = run("env", "sede=3")
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0
    assert "sede" in out.stderr
    assert not (root / "runs" / "records").exists()


def test_wrong_type_names_key_and_value(root: Path) -> None:
    out = run("env", "seed=abc")
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0
    assert "seed=abc" in out.stderr and "Integer" in out.stderr
    assert not (root / "runs").exists()


def test_bad_sweep_value_is_checked_too(root: Path) -> None:
    out = run("env", "-m", "seed=1,abc")
    # The first value is valid; Hydra itself then rejects the second one with a non-zero exit.
    assert out.returncode != 0
    assert not list((root / "runs" / "records").glob("*/*.json")) if (root / "runs").exists() else True


def test_unwritable_store_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    out = run("env", f"paths.store={blocker}/store")
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0
    assert "not writable" in out.stderr and str(blocker) in out.stderr


def test_env_task_writes_record_then_skips(root: Path) -> None:
    first = run("env")
    assert first.returncode == 0, first.stderr
    records = list((root / "runs" / "records" / "env").glob("*.json"))
    assert len(records) == 1
    second = run("env")
    assert second.returncode == 0
    assert "exists, skipping" in second.stdout + second.stderr
    assert len(list((root / "runs" / "records" / "env").glob("*.json"))) == 1
    forced = run("env", "force=true")
    assert "wrote record" in forced.stdout + forced.stderr


def test_python_dash_m_task_is_equivalent(root: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "rlexp.tasks.env"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert len(list((root / "runs" / "records" / "env").glob("*.json"))) == 1


def test_store_ls_and_show(root: Path) -> None:
    assert run("env").returncode == 0
    ls = run("store", "ls")
    assert ls.returncode == 0 and "env" in ls.stdout and "1 record(s)" in ls.stdout
    rid = next((root / "runs" / "records" / "env").glob("*.json")).stem
    show = run("store", "show", rid[:8])
    assert show.returncode == 0 and f'"id": "{rid}"' in show.stdout
    missing = run("store", "show", "nope")
    assert missing.returncode == 2 and "no unique record" in missing.stderr


def test_missing_required_value_is_one_line(root: Path) -> None:
    for args, key in ((("bon",), "rm"), (("ppo",), "rm"), (("train_rm", "data=local"), "data.sources.local")):
        out = run(*args)
        assert out.returncode == 2, (args, out.stderr[-500:])
        assert out.stderr.strip().count("\n") == 0
        assert f"{key} is required" in out.stderr
    assert not list((root / "runs" / "records").glob("*/*.json")) if (root / "runs").exists() else True
