"""The study on a real SLURM: the one-node cluster of launch/slurm/local-cluster.sh (Debian's slurm-wlm,
started here by the tests; skipped, saying why, where this machine is not root or cannot install it).

``study.launcher=slurm`` writes the records ``study.launcher=local`` writes; a rerun submits nothing;
a cancelled job fails only the steps that need it, and a rerun finishes it; a parent killed mid-study
and started again submits no step twice; Hydra's submitit launcher runs a ``-m`` sweep to records."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, env_with, private_store, rlexp_cmd

SCRIPT = REPO / "launch" / "slurm" / "local-cluster.sh"
# The smallest grid that has every kind of step (one lineage, two RMs, no PPO), in the quick preset's
# lighter settings: its lineage comes from the session's quick study, so it starts at the RMs.
SMALL = ("experiment=quick", "logger=none", "progress=false", "study.lineages=[tiny_llama]",
         "study.mixes=[general,personal]", "study.eval_profiles=[none]", "study.extra_benchmarks=[]",
         "study.prompt_sets=[general]", "study.ppo=[]", "study.launcher=slurm", "study.slurm.poll_s=0.5")


@pytest.fixture(scope="module")
def cluster() -> dict[str, str]:
    """The environment of a process that submits to the local cluster (its sacct on PATH)."""
    if os.geteuid() != 0:
        pytest.skip("the local SLURM cluster needs root (daemons, /etc/slurm)")
    if shutil.which("slurmctld") is None and shutil.which("apt-get") is None:
        pytest.skip("SLURM is not installed and there is no apt-get to install it")
    up = subprocess.run(["bash", str(SCRIPT), "start"], capture_output=True, text=True, timeout=600)
    assert up.returncode == 0, up.stdout + up.stderr
    bin_dir = subprocess.run(["bash", str(SCRIPT), "bin"], capture_output=True, text=True).stdout.strip()
    return env_with(PATH=f"{bin_dir}:{os.environ['PATH']}")


def test_a_second_start_finds_the_cluster_up_at_once(cluster: dict[str, str]) -> None:
    """The daemons a start launched do not hold its lock: another start (a second test worker, a second
    test run) returns at once instead of waiting for them to exit."""
    t0 = time.time()
    again = subprocess.run(["bash", str(SCRIPT), "start"], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "local SLURM cluster up" in again.stdout, again.stdout + again.stderr
    assert time.time() - t0 < 60
    for daemon in ("munged", "slurmctld", "slurmd"):
        pids = subprocess.run(["pgrep", "-x", daemon], capture_output=True, text=True).stdout.split()
        assert pids, daemon
        held = [os.readlink(f"/proc/{pid}/fd/{fd}") for pid in pids for fd in os.listdir(f"/proc/{pid}/fd")
                if os.path.exists(f"/proc/{pid}/fd/{fd}")]
        assert not any(h.endswith("rlexp-local-cluster.lock") for h in held), daemon


def _jobs(env: dict[str, str]) -> dict[str, tuple[str, str]]:
    """Every job the cluster remembers: id -> (name, state)."""
    out = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%i|%j|%T"], env=env, capture_output=True, text=True,
                         check=True).stdout
    return {i: (n, s) for i, n, s in (line.split("|") for line in out.splitlines())}


def _study(root: Path, env: dict[str, str], *extra: str, background: bool = False):
    cmd = rlexp_cmd("study", *extra)
    env = {**env, "RLEXP_ROOT": str(root)}
    if background:
        return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)


def _ids(root: Path) -> set[str]:
    return {str(p.relative_to(root / "runs" / "records")) for p in (root / "runs" / "records").glob("*/*.json")}


def _report(root: Path) -> Path:
    return next((root / "runs" / "artifacts" / "correlate").glob("*/report.md")).parent


def _wait_for(condition, what: str, proc: subprocess.Popen | None = None, timeout: float = 600) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the study ended before {what}: {proc.stdout.read()[-3000:] if proc.stdout else ''}")
        time.sleep(0.3)
    pytest.fail(f"timed out waiting for {what}")


@pytest.mark.slow
def test_the_quick_study_on_slurm_writes_the_local_records(cluster: dict[str, str], quick_study: tuple[Path, str],
                                                           tmp_path: Path) -> None:
    local, _ = quick_study
    root = tmp_path / "slurm"
    before = set(_jobs(cluster))
    out = _study(root, cluster, "experiment=quick", "logger=none", "progress=false", "study.launcher=slurm",
                 "study.slurm.poll_s=0.5")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    ours = {i: v for i, v in _jobs(cluster).items() if i not in before}
    assert ours and all(name.startswith("rlexp-") for name, _ in ours.values())
    assert all(state == "COMPLETED" for _, state in ours.values()), ours
    assert _ids(root) == _ids(local), sorted(_ids(root) ^ _ids(local))
    for table in ("table.csv", "correlations.csv"):
        assert (_report(root) / table).read_text() == (_report(local) / table).read_text(), table
    # Finished: a rerun submits nothing and only re-renders.
    seen = set(_jobs(cluster))
    again = _study(root, cluster, "experiment=quick", "logger=none", "progress=false", "study.launcher=slurm")
    assert again.returncode == 0, again.stderr[-3000:]
    assert set(_jobs(cluster)) == seen and "wrote record" not in again.stdout + again.stderr


@pytest.mark.slow
def test_a_cancelled_job_fails_only_its_dependants_and_a_rerun_finishes_it(
        cluster: dict[str, str], quick_study: tuple[Path, str], tmp_path: Path) -> None:
    root = private_store(quick_study[0], tmp_path / "root", ("data", "lineage"))
    before = set(_jobs(cluster))
    proc = _study(root, cluster, *SMALL, background=True)

    def running_rm() -> str | None:
        return next((i for i, (n, s) in _jobs(cluster).items()
                     if i not in before and n.startswith("rlexp-train_rm-") and s == "RUNNING"), None)

    _wait_for(lambda: running_rm() is not None, "an RM's job ran", proc)
    victim = running_rm()
    subprocess.run(["scancel", str(victim)], env=cluster, check=True)
    stdout, _ = proc.communicate(timeout=1200)
    lines = [ln for ln in stdout.splitlines() if ln.startswith("  ")]  # the study's summary of failed steps
    cancelled = next(ln for ln in lines if f"slurm job {victim} cancelled: " in ln)
    rm_key = cancelled.split(":", 1)[0].strip()  # "train_rm/tiny_llama/<mix>/e1"
    assert cancelled.split(f"slurm job {victim} cancelled: ", 1)[1].strip()  # the last line of the job's log
    mix = rm_key.split("/")[2]
    other = "general" if mix == "personal" else "personal"
    assert any(ln.strip().startswith(f"evaluate/{rm_key}/none: not run: {rm_key} failed") for ln in lines)
    assert any(ln.strip().startswith(f"bon/{rm_key}/general: not run: {rm_key} failed") for ln in lines)
    assert not any(f"train_rm/tiny_llama/{other}/" in ln for ln in lines if "failed" in ln)
    assert "2 reward models" not in stdout and "1 reward models" in stdout

    # The rerun submits the cancelled RM again and its two dependants, nothing else.
    seen = set(_jobs(cluster))
    done = _study(root, cluster, *SMALL)
    assert done.returncode == 0 and "step(s) failed" not in done.stdout, done.stdout[-3000:]
    new = [n for i, (n, _) in _jobs(cluster).items() if i not in seen]
    assert sorted(n.split("-")[1] for n in new) == ["bon", "evaluate", "train_rm"], new
    assert "2 reward models" in done.stdout


@pytest.mark.slow
def test_a_killed_parent_started_again_submits_no_step_twice(
        cluster: dict[str, str], quick_study: tuple[Path, str], tmp_path: Path) -> None:
    root = private_store(quick_study[0], tmp_path / "root", ("data", "lineage"))
    before = set(_jobs(cluster))
    proc = _study(root, cluster, *SMALL, background=True)

    def ours() -> dict[str, tuple[str, str]]:
        return {i: v for i, v in _jobs(cluster).items() if i not in before}

    _wait_for(lambda: any(n.startswith("rlexp-train_rm-") and s == "RUNNING" for n, s in ours().values()),
              "an RM's job ran", proc)
    os.killpg(proc.pid, signal.SIGKILL)  # the parent only: SLURM's jobs live on under slurmd
    proc.wait()
    assert any(s in ("RUNNING", "PENDING") for _, s in ours().values())
    done = _study(root, cluster, *SMALL)
    assert done.returncode == 0 and "step(s) failed" not in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]
    assert "of an earlier run found again" in done.stdout + done.stderr
    names = [n for n, _ in ours().values()]
    assert len(names) == len(set(names)), sorted(names)  # one job per step, over both runs
    assert {"rlexp-lineage", "rlexp-train_rm", "rlexp-evaluate", "rlexp-bon", "rlexp-pool"} == {
        n.rsplit("-", 1)[0] for n in names}
    assert "2 reward models" in done.stdout


@pytest.mark.slow
def test_a_hydra_sweep_on_the_submitit_slurm_launcher_writes_its_records(
        cluster: dict[str, str], quick_study: tuple[Path, str], tmp_path: Path) -> None:
    root = private_store(quick_study[0], tmp_path / "root", ("data", "lineage"))
    before = set(_jobs(cluster))
    light = ["model.tiny.pretrain_epochs=0.25", "model.tiny.sft_epochs=0.5", "model.tiny.pack_batches=false",
             "data.max_rows=600", "profile=planner"]
    out = subprocess.run(rlexp_cmd("train_rm", "-m", "hydra/launcher=slurm", "logger=none", "progress=false",
                                   "model=tiny_llama", "data=general,personal", *light),
                         env={**cluster, "RLEXP_ROOT": str(root)}, capture_output=True, text=True, timeout=1200, cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert len(list((root / "runs" / "records" / "train_rm").glob("*.json"))) == 2
    # The same two RMs as the quick study's: a sweep and a study name one step by one record.
    assert {p.name for p in (root / "runs" / "records" / "train_rm").glob("*.json")} <= {
        p.name for p in (quick_study[0] / "runs" / "records" / "train_rm").glob("*.json")}
    def jobs() -> dict[str, tuple[str, str]]:
        return {i: v for i, v in _jobs(cluster).items() if i not in before}

    assert sorted(n for n, _ in jobs().values()) == ["rlexp-train_rm"] * 2
    # The launcher returns once both results exist; SLURM may still be closing a job.
    _wait_for(lambda: all(s == "COMPLETED" for _, s in jobs().values()), "both jobs completed", timeout=60)


@pytest.mark.slow
def test_bad_slurm_settings_are_one_line_before_any_job(cluster: dict[str, str], tmp_path: Path) -> None:
    from tests.conftest import one_line_error

    before = set(_jobs(cluster))
    base = ("experiment=quick", "logger=none", "study.launcher=slurm")
    cases = [
        ({}, ["study.resources.train_rm.partition=nowhere"], "study.resources.train_rm.partition=nowhere: no such SLURM partition"),
        ({}, ["+study.resources.nope={gpus: 1}"], "study.resources.nope"),
        ({"SLURM_CONF": str(tmp_path / "missing.conf")}, [], "cannot reach the SLURM controller"),
        ({"PATH": str(Path(sys.executable).parent)}, [], "`sbatch` is not on PATH"),
    ]
    for extra_env, overrides, message in cases:
        out = _study(tmp_path / "root", {**cluster, **extra_env}, *base, *overrides)
        assert message in one_line_error(out), (message, out.stderr[-500:])
    assert set(_jobs(cluster)) == before
    assert not (tmp_path / "root" / "runs" / "records").exists()
