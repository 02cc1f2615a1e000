"""Published reward models in the study (``study.rms``): two RM folders written outside rlexp are evaluated
on every benchmark, used for Best-of-N and (picked) PPO, and reported beside the quick grid's trained RMs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import env_with, rlexp_cmd


def _published_rm(src: Path, dst: Path, shift: float) -> Path:
    """A reward model saved by transformers alone: a trained RM's weights with its score head moved, so it
    ranks responses unlike any RM of the grid."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(src)
    with torch.no_grad():
        model.score.weight.add_(shift * torch.randn_like(model.score.weight, generator=torch.Generator().manual_seed(7)))
    model.save_pretrained(dst, safe_serialization=True)
    AutoTokenizer.from_pretrained(src).save_pretrained(dst)
    return dst


@pytest.mark.slow
def test_published_rms_are_evaluated_used_downstream_and_reported(quick_study: tuple[Path, str], tmp_path: Path) -> None:
    base = quick_study[0]
    root = tmp_path / "root"
    shutil.copytree(base / "runs", root / "runs", copy_function=os.link, ignore=shutil.ignore_patterns(".*.lock"))
    trained = sorted((base / "runs" / "artifacts" / "train_rm").glob("*/model"))
    # Two RMs made here from the grid's models (one per lineage), written where rlexp never writes.
    by_type = {json.loads((m / "config.json").read_text())["model_type"]: m for m in trained}
    pub_a = _published_rm(by_type["llama"], tmp_path / "published" / "rm_a", 0.5)
    pub_b = _published_rm(by_type["qwen2"], tmp_path / "published" / "rm_b", 0.5)
    rms = f"study.rms=[{pub_a},{{rm:{pub_b},name:qwen_pub}}]"
    out = subprocess.run(rlexp_cmd("study", "experiment=quick", "logger=none", "progress=false", rms,
                                   "study.ppo=[{model:tiny_llama,data:personal,epochs:1},{model:tiny_qwen,data:personal,"
                                   "epochs:1},{rm:rm_a}]"),
                         env=env_with(RLEXP_ROOT=str(root)), capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "rlexp study: 8 reward models" in out.stdout
    records = root / "runs" / "records"
    new = {t.name: [json.loads(p.read_text()) for p in t.glob("*.json") if not (base / "runs" / "records" / t.name / p.name).exists()]
           for t in records.iterdir()}
    # Only the published RMs' steps made records: the grid's were found in the store.
    assert {t for t, recs in new.items() if recs} == {"evaluate", "bon", "ppo", "pool_scores", "sample", "correlate"}, \
        {t: len(r) for t, r in new.items()}
    published = {str(pub_a), str(pub_b)}
    evaluated = [r["info"]["rm"]["path"] for r in new["evaluate"] if r["info"]["rm"]["path"] in published]
    assert sorted(evaluated) == sorted([*published] * 3)  # eval profiles none and planner, the comparison benchmarks
    assert sorted(r["info"]["rm"]["id"] for r in new["bon"]) == sorted([*published] * 2)  # both prompt sets
    # PPO with the published llama RM, whose lineage is read from its config (llama), not the policy's (tiny_llama).
    assert [r["info"]["rm"] for r in new["ppo"]] == [{"id": str(pub_a), "lineage": "llama"}] * 2
    assert all(r["info"]["lineage_match"] is False for r in new["ppo"])
    # The report: both beside the six trained RMs, external, with their lineage; the BoN and PPO columns filled.
    corr = next(r for r in new["correlate"])
    table = pd.read_csv(root / "runs" / corr["artifacts"]["table"], index_col=0)
    assert len(table) == 8 and table["external"].sum() == 2
    assert table.at[str(pub_a), "lineage"] == "llama" and table.at[str(pub_b), "lineage"] == "qwen2"
    assert table.loc[[str(pub_a), str(pub_b)], ["rb2/overall", "bon/personalized/gain@8", "bon/general/gain@8"]].notna().all().all()
    assert pd.notna(table.at[str(pub_a), "ppo/personalized/gain"]) and pd.isna(table.at[str(pub_b), "ppo/personalized/gain"])
    report = (root / "runs" / corr["artifacts"]["report"]).read_text()
    assert "6 trained reward models" in report and "plus 2 external" in report
