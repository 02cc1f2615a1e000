"""sample + bon on the sandbox: pools are cached and resumable; better RMs give larger gains."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rlexp.store import Store
from tests.conftest import compose, env_with, private_store, rlexp_cmd

SMALL = ["prompts.limit=48", "sampling.n=16", "n_boot=200"]


def _bon(rid: str, prompts: str, *extra: str, every_prompt: bool = False):
    from rlexp.tasks import bon

    size = SMALL[1:] if every_prompt else SMALL
    return bon.run(compose("bon", f"rm={rid}", "model=tiny_llama", f"prompts={prompts}", *size, *extra))


def test_bon_gains_follow_rm_quality(world: Path, rms: dict[str, str]) -> None:
    pers_good = _bon(rms["llama_personal"], "personalized", "profile=planner").metrics
    pers_bad = _bon(rms["llama_flipped"], "personalized", "profile=planner").metrics
    # Every general prompt: the pool, its scores and these two records are the next test's (one general
    # pool in the suite: a 48-prompt one cost another 768 samples and its scorings).
    gen_good = _bon(rms["llama_general"], "general", "profile=none", every_prompt=True).metrics
    gen_bad = _bon(rms["llama_flipped"], "general", "profile=none", every_prompt=True).metrics
    print("within-prompt gold std", pers_good["gold_within_prompt_std"], gen_good["gold_within_prompt_std"])
    print("gain@16 personal/flipped", pers_good["curve"]["16"]["gain"], pers_bad["curve"]["16"]["gain"])
    print("gain@16 general/flipped", gen_good["curve"]["16"]["gain"], gen_bad["curve"]["16"]["gain"])
    print("RM-gold agreement personal/flipped", pers_good["rm_gold_agreement"], pers_bad["rm_gold_agreement"])
    for m in (pers_good, gen_good):
        a = m["rm_gold_agreement"]
        assert 0 < a["prompts"] <= a["gold_varies"] <= a["total_prompts"] == m["prompts"]
        assert -1.0 <= a["mean_spearman"] <= 1.0
    assert pers_good["gold_within_prompt_std"] > 0.05 and gen_good["gold_within_prompt_std"] > 0.05
    assert pers_good["curve"]["16"]["gain"] > pers_bad["curve"]["16"]["gain"]
    # The general-vs-flipped order is the next test's (slow: it is the sandbox's directional fact).
    for m in (pers_good, gen_good):
        oracle = [m["curve"][k]["oracle"] for k in sorted(m["curve"], key=int)]
        assert all(a <= b + 1e-12 for a, b in zip(oracle, oracle[1:], strict=False))
        assert all(m["curve"][k]["oracle"] >= m["curve"][k]["bon"] - 1e-12 for k in m["curve"])


@pytest.mark.slow
def test_general_rm_beats_flipped_on_general_prompts(world: Path, rms: dict[str, str]) -> None:
    # All 300 general evaluation prompts: the tiny policy's samples vary in gold on only about one
    # prompt in four, so a 48-prompt slice cannot order two RMs.
    good = _bon(rms["llama_general"], "general", "profile=none", every_prompt=True).metrics
    bad = _bon(rms["llama_flipped"], "general", "profile=none", every_prompt=True).metrics
    print("general gain@16 general/flipped", good["curve"]["16"]["gain"], bad["curve"]["16"]["gain"])
    print("RM-gold agreement general/flipped", good["rm_gold_agreement"], bad["rm_gold_agreement"])
    assert good["prompts"] == bad["prompts"] == 300
    assert good["curve"]["16"]["gain"] > bad["curve"]["16"]["gain"]
    assert good["rm_gold_agreement"]["mean_spearman"] > 0 > bad["rm_gold_agreement"]["mean_spearman"]


def test_gains_by_prompt_group_add_up(world: Path, rms: dict[str, str]) -> None:
    rec = _bon(rms["llama_general"], "general", "profile=none", "n_boot=150", every_prompt=True)
    m = rec.metrics
    groups = m["by_group"]
    assert {"fact", "math", "constraints", "safety"} <= set(groups)
    assert sum(g["prompts"] for g in groups.values()) == m["prompts"]
    weighted = sum(g["gain"] * g["prompts"] for g in groups.values()) / m["prompts"]
    assert weighted == pytest.approx(m["gain_at_n"], abs=1e-12)
    for g in groups.values():
        assert g["gain_ci"][0] <= g["gain"] <= g["gain_ci"][1]
        assert g["oracle_gain"] >= g["gain"] - 1e-12
    # How many prompts' samples differ in gold, overall and per kind, recomputed from the gold scores.
    store = Store(world / "runs")
    scores = store.resolve(store.get(rec.inputs["gold_scores"]).artifacts["scores"])
    gold = pq.read_table(scores).to_pandas().groupby("prompt_id")["score"]
    varies = m["rm_gold_agreement"]["gold_varies"]
    assert varies == ((gold.max() - gold.min()) > 0).sum() and 0 < varies < m["prompts"]
    assert sum(g["samples_differ"] * g["prompts"] for g in groups.values()) == pytest.approx(varies, abs=1e-9)


def test_pool_is_shared_and_scores_cached(world: Path, rms: dict[str, str]) -> None:
    # Compared by record ids and file times: other xdist workers add records to this store meanwhile.
    store = Store(world / "runs")
    first = _bon(rms["qwen_general"], "personalized", "profile=none")  # an RM of another lineage than the policy
    written = {k: store.record_path(task, first.inputs[k]).stat().st_mtime_ns
               for k, task in (("pool", "sample"), ("rm_scores", "pool_scores"))}
    again = _bon(rms["qwen_general"], "personalized", "profile=none", "ks=[1,4]")  # another k: no rescoring
    assert again.inputs == first.inputs
    assert {k: store.record_path(task, first.inputs[k]).stat().st_mtime_ns
            for k, task in (("pool", "sample"), ("rm_scores", "pool_scores"))} == written


def test_bad_inputs(world: Path, rms: dict[str, str], tmp_path: Path) -> None:
    own = private_store(world, tmp_path)
    env = env_with(RLEXP_ROOT=str(own))
    out = subprocess.run(rlexp_cmd("bon", "logger=none", f"rm={rms['llama_general']}", "prompts=general", *SMALL, "ks=[1,32]"),
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 2 and "k=32" in out.stderr and out.stderr.strip().count("\n") == 0
    # An RM as gold judge without naming the RM: one line, before any sampling, no record.
    out = subprocess.run(rlexp_cmd("bon", "logger=none", f"rm={rms['llama_general']}", "prompts=general", *SMALL,
                                   "judge=rm"), capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 2 and "judge.rm" in out.stderr and out.stderr.strip().count("\n") == 0
    assert not list((own / "runs" / "records").glob("bon/*.json"))
    # A pool and a prompt set that do not match.
    from rlexp import inputs
    from rlexp.data.loaders import load_prompts
    from rlexp.downstream.pool_scoring import pool_matrix
    from rlexp.errors import DataError

    # The small personalized pool (built here unless an earlier test already did: then a cache hit).
    pool, _ = inputs.pool(compose("bon", f"rm={rms['llama_personal']}", "prompts=personalized", *SMALL))
    general, _ = inputs.data_ref("sandbox:prompts/general", compose("sample"))
    with pytest.raises(DataError, match="does not match the prompt set"):
        pool_matrix(str(Store(world / "runs").resolve(pool.artifacts["pool"])), load_prompts(general, limit=10))


def test_nan_score_is_named(world: Path) -> None:
    import numpy as np

    from rlexp.downstream.bon_math import bon_curve
    from rlexp.errors import DataError

    rm = np.zeros((2, 4))
    rm[1, 2] = np.nan
    with pytest.raises(DataError, match="'p1'.*sample 2|sample 2.*'p1'"):
        bon_curve(rm, np.zeros((2, 4)), [1, 2], prompt_ids=["p0", "p1"])


@pytest.mark.slow
def test_killed_sample_resumes_to_identical_pool(world: Path, rms: dict[str, str], tmp_path: Path) -> None:
    args = ["sample", "logger=none", "model=tiny_llama", "prompts=personalized", "prompts.limit=40",
            "sampling.chunk_prompts=8", "sampling.n=4", "seed=11"]
    # A store of its own: in the shared one another worker's pool could write a third chunk meanwhile.
    own = private_store(world, tmp_path / "own", ("data", "lineage"))
    env = env_with(RLEXP_ROOT=str(own))
    pools = own / "runs" / "artifacts" / "sample"
    proc = subprocess.Popen(rlexp_cmd(*args), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    chunks: list[Path] = []
    while time.time() < deadline and proc.poll() is None:
        chunks = list(pools.glob("*/chunks/chunk-00002.parquet"))
        if chunks:
            break
        time.sleep(0.1)
    assert chunks, "sampling never got to its third chunk"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    rid = chunks[0].parents[1].name
    store = Store(own / "runs")
    assert not store.exists("sample", rid)
    assert subprocess.run(rlexp_cmd(*args), env=env, capture_output=True, timeout=600).returncode == 0
    first = store.get(rid, "sample")
    assert first.info["resumed_chunks"] >= 3
    resumed = pq.read_table(store.resolve(first.artifacts["pool"]))
    # An uninterrupted run of the same config gives the same pool.
    shutil.rmtree(pools / rid)
    store.record_path("sample", rid).unlink()
    out = subprocess.run(rlexp_cmd(*args), env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    again = store.get(rid, "sample")
    assert again.info["resumed_chunks"] == 0
    assert resumed.equals(pq.read_table(store.resolve(again.artifacts["pool"])))
