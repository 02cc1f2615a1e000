"""The sandbox policy reads the user: the same question, two users with opposite stated formats,
two different sample distributions (the planned SFT rows of sandbox/corpus.py at work)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tests.conftest import compose


def test_opposite_users_get_different_samples_for_the_same_question(world: Path) -> None:
    from omegaconf import OmegaConf

    from rlexp import inputs
    from rlexp.downstream.sampling import HFSampler, chat_messages
    from rlexp.models.loading import load_causal_lm, load_tokenizer
    from rlexp.sandbox.aspects import dimension_state
    from rlexp.scoring.planner import sandbox_planner

    cfg = compose("sample", "model=tiny_llama", "prompts=personalized")
    assert cfg.sampling.policy_profile == "plan"
    items, _ = inputs.prompt_set(cfg)
    k = cfg.sampling.profile_k

    def stated(item, title: str) -> bool:
        return f"- {title}" in sandbox_planner(item.prompt, item.profile[:k])

    bullets = next(i for i in items if stated(i, "Uses a bulleted list") and not stated(i, "Writes in flowing prose"))
    prose = next(i for i in items if stated(i, "Writes in flowing prose") and not stated(i, "Uses a bulleted list"))
    question = bullets.prompt
    users = [bullets, dataclasses.replace(prose, prompt=question)]
    # The same question, the profiles differ: the plan each user's turn shows is the only difference.
    turns = [chat_messages(u, k, "plan")[1]["content"] for u in users]
    assert turns[0] != turns[1] and all(t.startswith(question) for t in turns)

    path = inputs.lineage(cfg).instruct
    sampler = HFSampler(load_causal_lm(path), load_tokenizer(path, padding_side="left"))
    s = dataclasses.replace(OmegaConf.to_object(cfg.sampling), n=24)
    samples = sampler.generate([chat_messages(u, k, "plan") for u in users], s, seed=0)
    share = [sum(dimension_state("format", text) == 0 for text, _, _ in row) / s.n for row in samples]
    # Measured with the study's lineage: 0.84 of the samples follow a stated format, 0.16 show the other.
    assert share[0] - share[1] >= 0.4, share
