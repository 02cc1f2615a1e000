"""On-policy preference pairs (`policy:<preset>`): the policy's own samples on train prompts, gold-labelled."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlexp.errors import ConfigError
from tests.conftest import compose

pytestmark = pytest.mark.slow


def test_on_policy_pairs_are_gold_labelled_train_prompts(world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rlexp import inputs
    from rlexp.data.loaders import load_pairs
    from rlexp.inputs import on_policy
    from rlexp.inputs.on_policy import LABEL_NOISE, MIN_MARGIN, PAIRS_PER_PROMPT, PROMPT_SETS
    from rlexp.sandbox.judges import gold_score
    from rlexp.store import Store

    # 4 samples for each of the first 120 train prompts per set instead of 16 for all 300: what is
    # checked here is which pairs are made, and every sample of the full pools took a minute to draw.
    monkeypatch.setattr(on_policy, "SAMPLES", 4)
    monkeypatch.setattr(on_policy, "PROMPT_LIMIT", 120)

    cfg = compose("train_rm", "model=tiny_qwen", "data=on_policy")
    path, rid = inputs.data_ref(str(cfg.data.sources.on_policy), cfg)
    rows = load_pairs(path, name="on_policy")
    record = Store(cfg.paths.store).get(rid, "on_policy")
    assert set(record.inputs) == {f"{k}/{s}" for k in ("pool", "gold") for s in PROMPT_SETS}
    assert record.metrics["pairs"] == len(rows) > 50

    train, evaluation = {}, set()
    for name in PROMPT_SETS:
        pcfg = compose("bon", "rm=unused", f"prompts={name}")
        train.update({p.prompt: p for p in inputs.prompt_set(pcfg, split="train")[0]})
        evaluation |= {p.prompt for p in inputs.prompt_set(pcfg, split="eval")[0]}
    assert {r.prompt for r in rows} <= set(train) and not {r.prompt for r in rows} & evaluation

    agree = 0
    for r in rows:
        item = train[r.prompt]
        chosen, rejected = gold_score(r.chosen, item.hidden), gold_score(r.rejected, item.hidden)
        assert abs(chosen - rejected) >= MIN_MARGIN - 1e-9, r.id
        agree += chosen > rejected
        # A personalized pair carries its user's profile, so a profile-reading RM can learn from it.
        assert (r.context is not None and r.context.profile == item.profile) == (item.kind == "personalized")
    swapped = 1 - agree / len(rows)
    assert 0 < swapped < 2.5 * LABEL_NOISE, swapped
    per_prompt = {}
    for r in rows:
        per_prompt[r.prompt] = per_prompt.get(r.prompt, 0) + 1
    assert max(per_prompt.values()) <= min(PAIRS_PER_PROMPT, 4 // 2)
    assert max(per_prompt.values()) > 1  # the second-best against the second-worst, where they differ enough

    # One prompt set's pairs: the same pools, so exactly that set's part of the pairs above.
    gpath, gid = inputs.data_ref("policy:tiny_llama/general", cfg)
    assert gid != rid and set(Store(cfg.paths.store).get(gid, "on_policy").inputs) == {"pool/general", "gold/general"}
    general = {(r.prompt, r.chosen, r.rejected) for r in rows if train[r.prompt].kind == "general"}
    assert {(r.prompt, r.chosen, r.rejected) for r in load_pairs(gpath, name="g")} == general

    # Built once: a second request is the same record, and the source works inside a mix.
    assert inputs.data_ref("policy:tiny_llama", cfg) == (path, rid)
    mix = compose("train_rm", "model=tiny_qwen", "data=general_on_policy")
    assert dict(mix.data.sources) == {"general": "sandbox:general", "on_policy": "policy:tiny_llama/general"}


def test_a_policy_source_without_a_preset_is_one_line(world: Path) -> None:
    from rlexp import inputs

    with pytest.raises(ConfigError, match="name a model preset"):
        inputs.data_ref("policy:", compose("train_rm", "data=on_policy"))
    with pytest.raises(ConfigError, match="must be one of personalized, general"):
        inputs.data_ref("policy:tiny_llama/generl", compose("train_rm", "data=on_policy"))
