"""Best-of-N on RewardBench 2's downstream suite (fixture rows in the real schemas, tiny policy)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlexp.errors import ConfigError
from rlexp.store import Store
from tests.conftest import compose

TASKS = {"gsm8k", "math", "ifeval", "alpacaeval", "bbh", "popqa", "humanevalplus"}
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "suite"
# The real preset with every task's source swapped for the fixture rows in its dataset's schema.
SUITE = ["prompts=rb2_suite", *(f"prompts.tasks.{t}.source={FIXTURES / t}" for t in sorted(TASKS)),
         "model=tiny_llama", "sampling.n=4", "sampling.max_new_tokens=32", "n_boot=100", "profile=none"]


def _bon(rm: str, judge_rm: str, *extra: str):
    from rlexp.tasks import bon

    return bon.run(compose("bon", f"rm={rm}", f"judge.rm={judge_rm}", *SUITE, *extra))


def _gold_records(store: Store, pool: str) -> list:
    # Only this pool's grades: other tests running in parallel grade their own pools in the same store.
    return [r for r in store.records("pool_scores")
            if r.config.get("role") == "gold" and r.inputs.get("pool") == pool]


@pytest.mark.slow
def test_suite_bon_per_task_gains_and_cached_grades(world: Path, rms: dict[str, str]) -> None:
    store = Store(world / "runs")
    first = _bon(rms["llama_general"], rms["llama_personal"])
    m = first.metrics
    assert set(m["by_group"]) == TASKS
    avg = m["downstream_average"]
    assert avg["tasks"] == sorted(TASKS)
    # The headline is the unweighted mean over tasks, not over prompts.
    per_task = [g["bon_at_n"] for g in m["by_group"].values()]
    assert avg["bon_at_n"] == pytest.approx(sum(per_task) / len(per_task))
    assert avg["gain_at_n"] == pytest.approx(sum(g["gain"] for g in m["by_group"].values()) / len(TASKS))
    assert first.info["judge"]["judge"] == "grader"
    graded = len(_gold_records(store, first.inputs["pool"]))
    assert graded >= 1

    # Another RM on the same pool: its own RM scores, the same gold grades (nothing re-graded).
    second = _bon(rms["llama_flipped"], rms["llama_personal"])
    assert second.inputs["gold_scores"] == first.inputs["gold_scores"]
    assert second.inputs["pool"] == first.inputs["pool"]
    assert len(_gold_records(store, first.inputs["pool"])) == graded
    # A rerun finds the record.
    assert _bon(rms["llama_general"], rms["llama_personal"]).id == first.id


def test_alpacaeval_needs_a_preference_judge(world: Path, rms: dict[str, str]) -> None:
    from rlexp.tasks import bon

    with pytest.raises(ConfigError, match="judge.rm"):
        bon.run(compose("bon", f"rm={rms['llama_general']}", *SUITE))
