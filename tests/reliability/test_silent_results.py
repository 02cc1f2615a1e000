"""Results that used to come out silently wrong: a study rerun that missed an edited input file, a store
at the filesystem root or in the working directory, an infinite sampling temperature, a report that
left out a reward model whose folder was deleted (now trained again). Each case is refused, or seen, now."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import env_with, one_line_error, rlexp_cmd

# --- the step ledger and files outside the store ----------------------------------------------------


def test_ledger_rechecks_files_read_from_outside_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A step whose record names a local file or folder is decided by the ledger only while it holds the
    same bytes: a touched file (new mtime, same bytes) keeps the step and refreshes its stamp, an edited
    file or a folder with a new file sends it to a worker; a step that reads only the store has no stamps."""
    from rlexp import step_ledger
    from rlexp.step_ledger import StepLedger
    from rlexp.store import Record, Store
    from rlexp.tasks.study_plan import Step

    store = Store(tmp_path / "runs")
    data = tmp_path / "data"
    data.mkdir()
    rb2 = data / "rb2.jsonl"
    rb2.write_text('{"id": 1}\n')
    prompts = data / "prompts"
    prompts.mkdir()
    (prompts / "a.jsonl").write_text('{"prompt": "a"}\n')
    # The evaluation names the file; the BoN names a pool record (its input) that names the folder.
    store.put(Record(id="e" * 16, task="evaluate", config={"benchmark": {"rb2": {"source": str(rb2)}}},
                     inputs={"rb2": f"{rb2}#0123456789abcdef"}))
    store.put(Record(id="c" * 16, task="sample", config={"prompts": {"source": str(prompts)}}))
    store.put(Record(id="b" * 16, task="bon", config={"prompts": {"name": "general"}}, inputs={"pool": "c" * 16}))
    store.put(Record(id="d" * 16, task="train_rm", config={"data": {"sources": {"general": "sandbox:general"}},
                                                          "paths": {"store": str(store.root)}}))
    steps = {"evaluate": Step("evaluate", "evaluate/x", ["rm=x", "benchmark=both"]),
             "bon": Step("bon", "bon/x", ["rm=x", "prompts=general"]),
             "train_rm": Step("train_rm", "train_rm/x", ["data=general"])}
    ids = {"evaluate": "e" * 16, "bon": "b" * 16, "train_rm": "d" * 16}
    StepLedger(store).remember(list(steps.values()), {s.key: (ids[name], None) for name, s in steps.items()})

    ledger = StepLedger(store)
    assert {name: ledger.cached(s) for name, s in steps.items()} == ids
    assert set(ledger.reads) == {StepLedger.key(steps["evaluate"]), StepLedger.key(steps["bon"])}  # not train_rm

    # Touched, same bytes: still decided, and the refreshed stamp spares the next run the hash.
    os.utime(rb2, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    ledger = StepLedger(store)
    assert ledger.cached(steps["evaluate"]) == ids["evaluate"]
    ledger.flush()
    hashed: list[str] = []
    digest = step_ledger.content_digest
    monkeypatch.setattr(step_ledger, "content_digest", lambda path: hashed.append(path) or digest(path))
    assert StepLedger(store).cached(steps["evaluate"]) == ids["evaluate"] and not hashed

    # Edited in place: the evaluation runs again; the others are untouched.
    rb2.write_text('{"id": 2}\n')
    ledger = StepLedger(store)
    assert ledger.cached(steps["evaluate"]) is None
    assert ledger.cached(steps["bon"]) == ids["bon"] and ledger.cached(steps["train_rm"]) == ids["train_rm"]
    # A new file in the folder a pool read: the BoN built on that pool runs again.
    (prompts / "b.jsonl").write_text('{"prompt": "b"}\n')
    assert StepLedger(store).cached(steps["bon"]) is None
    # Gone: not decided either.
    shutil.rmtree(prompts)
    assert StepLedger(store).cached(steps["bon"]) is None


# The smallest study with a local file: one lineage, two RMs, RewardBench 2 read from a copy of the
# sandbox's folder, Best-of-N on the general prompts (the quick preset's lighter settings).
SMALL = ("experiment=quick", "logger=none", "progress=false", "study.lineages=[tiny_llama]", "study.mixes=[general,personal]",
         "study.eval_profiles=[none]", "study.extra_benchmarks=[]", "study.prompt_sets=[general]", "study.ppo=[]",
         "study.n_jobs=2")


def _study(root: Path, rb2: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = rlexp_cmd("study", *SMALL, f"+study.overrides.evaluate=['benchmark.rb2.source={rb2}']", *extra)
    return subprocess.run(cmd, env=env_with(RLEXP_ROOT=str(root)), capture_output=True, text=True, timeout=1800)


def _records(root: Path) -> dict[str, set[str]]:
    runs = root / "runs" / "records"
    return {d.name: {p.stem for p in d.glob("*.json")} for d in runs.iterdir() if d.is_dir()}


@pytest.fixture(scope="module")
def small_study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(root, RewardBench 2 folder) of a finished small study."""
    base = tmp_path_factory.mktemp("small_study")
    root = base / "root"
    env = env_with(RLEXP_ROOT=str(root))
    built = subprocess.run(rlexp_cmd("data", "logger=none", "progress=false"), env=env, capture_output=True, text=True,
                           timeout=900)
    assert built.returncode == 0, built.stderr[-3000:]
    sandbox = next((root / "runs" / "artifacts" / "data").glob("*/sandbox"))
    rb2 = base / "local" / "rb2"
    shutil.copytree(sandbox / "rb2", rb2)
    out = _study(root, rb2)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return root, rb2


@pytest.mark.slow
def test_study_rerun_reevaluates_exactly_the_steps_that_read_an_edited_file(small_study: tuple[Path, Path]) -> None:
    root, rb2 = small_study
    before = _records(root)
    assert len(before["train_rm"]) == 2 and len(before["evaluate"]) == 2
    scores = {rid: json.loads((root / "runs" / "records" / "evaluate" / f"{rid}.json").read_text())["metrics"]
              for rid in before["evaluate"]}
    # Finished: a rerun dispatches no step.
    again = _study(root, rb2)
    assert again.returncode == 0 and "step(s) ran" not in again.stdout + again.stderr, again.stderr[-3000:]

    # Edit the benchmark in place: drop the second half of each of its files' rows.
    import pyarrow.parquet as pq

    edited = 0
    for path in sorted(rb2.rglob("*.parquet")):
        table = pq.read_table(path)
        if table.num_rows > 1:
            pq.write_table(table.slice(0, table.num_rows // 2), path)
            edited += 1
    assert edited
    out = _study(root, rb2)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    after = _records(root)
    new = {task: after[task] - before.get(task, set()) for task in after}
    # Both evaluations read the edited rows (new records, other scores); nothing else ran again.
    assert len(new["evaluate"]) == 2, new
    assert {task for task, ids in new.items() if ids} == {"evaluate", "correlate"}, new
    for rid in new["evaluate"]:
        record = json.loads((root / "runs" / "records" / "evaluate" / f"{rid}.json").read_text())
        assert record["metrics"]["rb2"] not in [s["rb2"] for s in scores.values()]
        assert record["inputs"]["rb2"].startswith(str(rb2))
    # The parent logs each kind of step that was dispatched: the evaluations only.
    ran = [ln for ln in (out.stdout + out.stderr).splitlines() if "step(s) ran" in ln]
    assert len(ran) == 1 and "study: evaluate: 2 step(s) ran" in ran[0], ran
    # The new content is remembered: the next rerun dispatches nothing again.
    last = _study(root, rb2)
    assert last.returncode == 0 and "step(s) ran" not in last.stdout + last.stderr, last.stderr[-3000:]
    assert _records(root) == after


@pytest.mark.slow
def test_study_rerun_trains_again_an_rm_whose_folder_was_deleted_or_record_cut_short(small_study: tuple[Path, Path],
                                                                                     tmp_path: Path) -> None:
    """A study resumed after one RM's model folder was deleted and another RM's record file was cut short
    (a crash, a full disk) sets both records aside and trains both RMs again under their ids: the report
    leaves neither out (it used to be left out silently, then a traceback or a refusal)."""
    root, rb2 = small_study
    copy = tmp_path / "root"
    shutil.copytree(root / "runs", copy / "runs", copy_function=os.link, ignore=shutil.ignore_patterns(".*.lock"))
    deleted, cut = sorted(p.stem for p in (copy / "runs" / "records" / "train_rm").glob("*.json"))
    shutil.rmtree(copy / "runs" / "artifacts" / "train_rm" / deleted / "model")
    record = copy / "runs" / "records" / "train_rm" / f"{cut}.json"
    data = record.read_bytes()
    record.unlink()  # a hard link to the first store's file: cut a copy
    record.write_bytes(data[: len(data) // 2])
    before = _records(copy)
    out = _study(copy, rb2)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    logged = out.stdout + out.stderr
    for rid in (deleted, cut):
        assert f"train_rm: record {rid} is damaged" in logged, logged[-3000:]
        assert (copy / "runs" / "damaged" / "train_rm" / rid / "record.json").is_file()
    assert (copy / "runs" / "artifacts" / "train_rm" / deleted / "model" / "model.safetensors").is_file()
    # The same ids everywhere: every other step and the report were found in the store.
    assert _records(copy) == before
    ran = [ln for ln in logged.splitlines() if "step(s) ran" in ln]
    assert len(ran) == 1 and "study: train_rm: 2 step(s) ran" in ran[0], ran


@pytest.mark.slow
def test_a_study_with_a_failed_step_writes_its_report_and_exits_2(small_study: tuple[Path, Path], tmp_path: Path) -> None:
    """A step that fails (here a PPO pick whose RM the grid does not train) does not pass for a finished study:
    the report of what finished is written, the failed steps are listed, and the study exits 2 with one line."""
    root, rb2 = small_study
    copy = tmp_path / "root"
    shutil.copytree(root / "runs", copy / "runs", copy_function=os.link, ignore=shutil.ignore_patterns(".*.lock"))
    small = [o for o in SMALL if not o.startswith("study.ppo=")]
    cmd = rlexp_cmd("study", *small, f"+study.overrides.evaluate=['benchmark.rb2.source={rb2}']",
                    "study.ppo=[{model:tiny_llama,data:nowhere,epochs:1}]")
    out = subprocess.run(cmd, env=env_with(RLEXP_ROOT=str(copy)), capture_output=True, text=True, timeout=1800)
    assert out.returncode == 2, out.stdout[-3000:] + out.stderr[-3000:]
    assert any("nowhere" in ln and ln.endswith(": no trained RM for this pick") for ln in out.stdout.splitlines()), \
        out.stdout[-3000:]
    last = [ln for ln in out.stderr.splitlines() if ln.strip()][-1]
    assert last.startswith("rlexp study: error: 1 of ") and "study steps failed (listed above)" in last, last
    report = Path(last.split("the report covers the steps that finished: ", 1)[1].split(";", 1)[0])
    assert report.is_file() and report.read_text().startswith("# Do benchmark scores predict downstream gains?")


def test_a_study_refuses_a_reward_model_whose_folder_lost_its_config(tmp_path: Path) -> None:
    """The study's last check before its report (rlexp.tasks.study.check_rm_folders): a model folder
    that lost its config.json but kept whole weights is no damaged record to the store (its integrity
    check reads safetensors and parquet lengths only), so the ledger decides its steps; the study then
    refuses to write a report without that RM's rows, in one line (exit 2) naming the record to delete."""
    from rlexp.errors import StoreError
    from rlexp.store import Record, Store
    from rlexp.tasks.study import check_rm_folders
    from tests.reliability.test_damaged_store import _safetensors

    store = Store(tmp_path / "runs")
    rms = {"train_rm/tiny_llama/general/e1": "a" * 16, "train_rm/tiny_llama/personal/e1": "b" * 16}
    for rid in rms.values():
        folder = _safetensors(store.artifact_dir("train_rm", rid) / "model" / "model.safetensors").parent
        (folder / "config.json").write_text("{}")
        store.put(Record(id=rid, task="train_rm", config={}, artifacts={"model": store.relative(folder)}))
    check_rm_folders(store, rms)  # both whole: nothing to say
    (store.artifact_dir("train_rm", "b" * 16) / "model" / "config.json").unlink()
    assert store.intact("train_rm", "b" * 16) is not None  # the ledger would decide its steps
    with pytest.raises(StoreError) as refused:
        check_rm_folders(store, rms)
    message = str(refused.value)
    assert "\n" not in message and message.startswith("reward model train_rm/tiny_llama/personal/e1: ")
    assert "has no config.json" in message and "(no report written)" in message
    assert f"delete its record {store.record_path('train_rm', 'b' * 16)} to train it again" in message


# --- where the store goes ------------------------------------------------------------------------------


@pytest.mark.parametrize(("env", "override", "named"), [
    ({"RLEXP_ROOT": ""}, None, "RLEXP_ROOT"),
    ({"RLEXP_ROOT": "  "}, None, "RLEXP_ROOT"),
    ({}, "paths.root=", "paths.root"),
    ({}, "paths.store=", "paths.store"),
    ({}, "paths.output_root=", "paths.output_root"),
])
def test_an_empty_root_or_store_is_one_line(env: dict[str, str], override: str | None, named: str, tmp_path: Path) -> None:
    """An empty RLEXP_ROOT put the store at the filesystem root (/runs, /outputs); an empty paths.store
    put records in the working directory. Both are refused before anything is written."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    out = subprocess.run(rlexp_cmd("env", "logger=none", *([override] if override else [])), cwd=cwd,
                         env=env_with(**env), capture_output=True, text=True, timeout=300)
    assert f"{named} is set but empty" in one_line_error(out)
    assert not any(cwd.iterdir())


def test_a_tilde_in_rlexp_root_is_expanded_for_everything(tmp_path: Path) -> None:
    """RLEXP_ROOT='~/x' put records under $HOME but Hydra's job folders under a literal '~' folder."""
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    out = subprocess.run(rlexp_cmd("env", "logger=none"), cwd=cwd, env=env_with(HOME=str(home), RLEXP_ROOT="~/x"),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert list((home / "x" / "runs" / "records" / "env").glob("*.json"))
    assert (home / "x" / "outputs" / "env" / "runs").is_dir()
    assert not any(cwd.iterdir())


def test_the_store_command_refuses_an_empty_root(tmp_path: Path) -> None:
    out = subprocess.run(rlexp_cmd("store", "ls"), cwd=tmp_path, env=env_with(RLEXP_ROOT=""), capture_output=True,
                         text=True, timeout=120)
    assert "RLEXP_ROOT is set but empty" in one_line_error(out)


# --- sampling settings --------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["inf", "nan"])
def test_a_temperature_that_is_no_finite_number_is_refused(value: str, root: Path) -> None:
    """sampling.temperature=inf was accepted and wrote a pool record."""
    out = subprocess.run(rlexp_cmd("sample", "logger=none", "progress=false", f"sampling.temperature={value}"),
                         capture_output=True, text=True, timeout=300)
    assert "sampling.temperature" in one_line_error(out) and "finite" in out.stderr
    assert not (root / "runs" / "records").exists() or not any((root / "runs" / "records").rglob("*.json"))
