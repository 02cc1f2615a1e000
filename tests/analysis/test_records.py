"""How a downstream record is named in the report's columns."""

from __future__ import annotations

from rlexp.analysis.records import downstream_group
from rlexp.store import Record


def _ppo(eval_prompts: str | None, algorithm: str = "ppo") -> Record:
    info = {"train_prompts": {"name": "tulu3_prefs"}, "eval_prompts": {"name": eval_prompts or "lampqa"}}
    return Record(id="0" * 16, task="ppo", info=info,
                  config={"algorithm": algorithm, "prompts": {"name": "tulu3_prefs" if eval_prompts else "lampqa"},
                          "eval_prompts": eval_prompts})


def test_ppo_evaluated_on_another_set_is_named_by_that_set() -> None:
    # RewardBench 2's protocol: trained on Tulu 3 preference prompts, gain measured on the suite, so the
    # column sits beside Best-of-N's on the suite.
    assert downstream_group(_ppo("rb2_suite")) == "ppo/rb2_suite"
    assert downstream_group(_ppo("rb2_suite", algorithm="grpo")) == "grpo/rb2_suite"
    # Trained and evaluated on splits of one set: that set.
    assert downstream_group(_ppo(None)) == "ppo/lampqa"
    bon = Record(id="1" * 16, task="bon", config={"prompts": {"name": "rb2_suite"}})
    assert downstream_group(bon) == "bon/rb2_suite"
