"""The paper_prb preset rehearsed on this CPU: tiny lineages, the sandbox's PRB, LaMP-QA fixture rows in
the hub schema and a tiny served judge (an OpenAI-compatible server started here) substituted by the
paper_prb_rehearsal overrides, end to end to the report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rlexp.scoring.judges import LIST_SYSTEM
from rlexp.store import Store
from tests.conftest import QWEN_IN_STUDY, REPO, compose, hydra_list
from tests.scoring.test_served_judge import MODEL, JudgeServer


class KeywordJudge(JudgeServer):
    """A tiny served judge: an aspect scores 2 when one of its words is in the response, else 0."""

    def answer(self, body: dict, auth: str) -> tuple[int, str]:
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        if system != LIST_SYSTEM:
            return 400, "only PRB list prompts"
        response = user.split("\nResponse:\n", 1)[1].rsplit("\n\nAspects (", 1)[0].lower()
        aspects = user.rsplit("): ", 1)[1].split(", ")
        with self.lock:
            self.bodies.append(body)
        return 200, json.dumps([2 if any(w in response for w in re.findall(r"[a-z]{4,}", a.lower())) else 0
                                for a in aspects])


@pytest.mark.slow
def test_paper_prb_rehearsal_with_a_served_judge(world: Path, rms: dict[str, str]) -> None:
    from rlexp.tasks import study

    judge = KeywordJudge()
    judge.thread.start()
    try:
        items = [f"prompts.source={REPO / 'tests' / 'fixtures' / 'lampqa'}", "sampling=default", "sampling.n=4",
                 "sampling.max_new_tokens=32", "sampling.policy_profile=posts", "n_boot=100", "judge=llm",
                 "judge.variant=prb", f"judge.model={MODEL}",
                 f"judge.endpoint={judge.url}"]
        # The world's lineages (none to build: its tiny_llama, its lighter tiny_qwen), one RM per lineage and
        # no comparison sets (the quick study's test covers those): what is checked here is LaMP-QA and the
        # served judge.
        # The preset's PPO half: LaMP-QA's train rows, the RM's score divided by 10, the test rows judged by
        # the same served judge.
        ppo_items = [f"prompts.source={REPO / 'tests' / 'fixtures' / 'lampqa'}", "trainer=ppo", "sampling=default",
                     "sampling.n=4", "sampling.max_new_tokens=32", "sampling.policy_profile=posts", "n_boot=100",
                     "trainer.total_episodes=16", "reward_scale=0.1", "judge=llm", "judge.variant=prb",
                     f"judge.model={MODEL}", f"judge.endpoint={judge.url}"]
        record = study.run(compose("study", "experiment=paper_prb_rehearsal", "study.overrides.model=[]", QWEN_IN_STUDY,
                                   "study.mixes=[personal]", "study.extra_benchmarks=[]", f"study.overrides.bon={hydra_list(items)}",
                                   f"study.overrides.ppo={hydra_list(ppo_items)}"))
    finally:
        judge.httpd.shutdown()
        judge.httpd.server_close()
    store = Store(world / "runs")
    bons = [store.get(i, "bon") for i in record.inputs.values() if store.exists("bon", i)]
    assert len(bons) == 2 and all(b.metrics["prompts"] == 6 for b in bons)
    assert all(b.info["judge"] == {"judge": "llm", "model": MODEL, "variant": "prb", "served": True} for b in bons)
    # One pool, graded once through the endpoint (6 prompts x 4 samples), whatever the number of RMs; and
    # each PPO policy's samples of the same prompts.
    assert len(judge.bodies) <= 6 * 4 * 3  # 0 when a kept test world already holds the grades
    report = store.resolve(record.artifacts["report"]).read_text()
    page = report.split("\n# Appendices\n", 1)[0]
    assert "bon/lampqa/gain@4" in page and "`prb/" in page
    ppos = [store.get(i, "ppo") for i in record.inputs.values() if store.exists("ppo", i)]
    assert len(ppos) == 2 and {p.info["lineage_match"] for p in ppos} == {True, False}  # tiny_llama's and tiny_qwen's RM
    for ppo in ppos:
        assert (ppo.info["train_prompts"]["split"], ppo.info["train_prompts"]["count"]) == ("train", 8)
        assert (ppo.info["eval_prompts"]["split"], ppo.info["eval_prompts"]["count"]) == ("test", 6)
        assert ppo.config["reward_scale"] == 0.1 and ppo.info["judge"]["served"] is True
        assert ppo.info["baseline_pool"] == bons[0].inputs["pool"]
    assert "ppo/lampqa/gain" in report
    assert "### PPO: an RM of the policy's lineage vs one of another lineage" in report
