"""The paper_rb2 preset rehearsed on this CPU: tiny lineages, sandbox RB2 and the suite's fixture rows
substituted by the paper_rb2_rehearsal overrides, end to end to the report."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlexp.store import Store
from tests.conftest import QWEN_IN_STUDY, compose, hydra_list


@pytest.mark.slow
def test_paper_rb2_rehearsal_reports_rb2_vs_downstream(world: Path, rms: dict[str, str]) -> None:
    from rlexp.tasks import study

    items = ["sampling=default", "sampling.n=4", "sampling.max_new_tokens=32", "n_boot=100",
             f"judge.rm={rms['llama_personal']}"]
    # The preset's PPO half, with the same preference judge for AlpacaEval.
    ppo_items = ["trainer=ppo", "deepspeed=none", "sampling=default", "sampling.n=4", "sampling.max_new_tokens=32",
                 "n_boot=100", "trainer.total_episodes=16", "eval_every=1", "headline_gain=best_checkpoint",
                 f"judge.rm={rms['llama_personal']}"]
    # The shared world's lineages and its two general RMs (study.overrides.model=[], the world's lighter
    # tiny_qwen and train_rm=[]: the same configs, so cache hits), so only the rehearsal's evaluation and
    # downstream steps run here.
    record = study.run(compose("study", "experiment=paper_rb2_rehearsal", "study.overrides.model=[]", QWEN_IN_STUDY,
                               "study.overrides.train_rm=[]", "study.mixes=[general]", f"study.overrides.bon={hydra_list(items)}",
                               f"study.overrides.ppo={hydra_list(ppo_items)}"))
    store = Store(world / "runs")
    report = store.resolve(record.artifacts["report"]).read_text()
    bons = [store.get(i, "bon") for i in record.inputs.values() if store.exists("bon", i)]
    assert {b.info["rm"]["id"] for b in bons} == {rms["llama_general"], rms["qwen_general"]}  # every one on the suite
    assert all(set(b.metrics["by_group"]) == {"gsm8k", "math", "ifeval", "alpacaeval", "bbh", "popqa",
                                              "humanevalplus"} for b in bons)
    # Page one pairs RB2's average with the downstream average (the suite's BoN gain column).
    page = report.split("\n# Appendices\n", 1)[0]
    assert "`rb2/overall`" in page and "bon/rb2_suite_fixtures/gain@4" in page
    # The paper's table: rows tasks (and the downstream average), columns RB2 average and subsets.
    section = report.split("### RewardBench 2 vs the downstream suite", 1)[1]
    header = next(line for line in section.splitlines() if line.startswith("| task |"))
    assert header == "| task | RB2 avg | Factuality | Precise IF | Math | Safety | Focus | Ties |"
    rows = [line.split(" | ")[0].strip("| *") for line in section.splitlines()[section.splitlines().index(header) + 2:]
            if line.startswith("| ")][:8]
    assert rows == ["gsm8k", "math", "ifeval", "alpacaeval", "bbh", "popqa", "humanevalplus", "Downstream avg"]

    # PPO as RewardBench 2 ran it, in miniature: trained on the Tulu 3 preference-mixture fixture rows,
    # evaluated on the suite's rows at every update (2 updates of 8 episodes), for an RM of the policy's
    # lineage and one of another; the baseline is Best-of-N's pool.
    ppos = [store.get(i, "ppo") for i in record.inputs.values() if store.exists("ppo", i)]
    assert {p.info["rm"]["id"] for p in ppos} == {rms["llama_general"], rms["qwen_general"]}
    assert {p.info["lineage_match"] for p in ppos} == {True, False}
    for ppo in ppos:
        assert ppo.info["train_prompts"]["name"] == "tulu3_prefs_fixtures"
        assert ppo.info["eval_prompts"]["name"] == "rb2_suite_fixtures"
        assert [c["step"] for c in ppo.metrics["checkpoints"]] == [0, 1, 2]
        assert ppo.metrics["headline_gain"]["which"] == "best_checkpoint"
        assert ppo.info["baseline_pool"] == bons[0].inputs["pool"]
    appendix = report.split("\n# Appendices\n", 1)[1]
    assert "### PPO: an RM of the policy's lineage vs one of another lineage" in appendix
    assert "ppo/rb2_suite_fixtures/gain" in report
