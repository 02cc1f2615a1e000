"""GRPO and RLOO through TRL's own trainers, with an rlexp scorer as the reward function.

The prompts are rendered as PPO renders them (:func:`rlexp.downstream.sampling.chat_messages`), so the
three algorithms of `rlexp ppo` see the same inputs; PPO itself is :mod:`rlexp.downstream.ppo`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rlexp.data.schemas import PromptItem
from rlexp.downstream.ppo import frozen_heap
from rlexp.downstream.sampling import chat_messages
from rlexp.errors import ConfigError
from rlexp.models.loading import drop_log_printer
from rlexp.scorer import ScoreInput, Scorer, check_scorer


def train_grpo_like(
    algorithm: str,
    *,
    out: str,
    settings: dict[str, Any],
    tokenizer: Any,
    policy: Any,
    scorer: Scorer,
    prompts: Sequence[PromptItem],
    profile_k: int,
    peft_config: Any = None,
    profile: str = "posts",
) -> tuple[Any, dict[str, Any], list[float]]:
    """GRPO or RLOO with the scorer as reward function (same prompts and rendering as PPO).

    Returns the trained policy, the last logged metrics and the mean reward of every logging step.
    """
    from datasets import Dataset

    check_scorer(scorer)
    by_text = {p.prompt_id: p for p in prompts}
    ds = Dataset.from_dict(
        {"prompt": [chat_messages(p, profile_k, profile) for p in prompts], "prompt_id": [p.prompt_id for p in prompts]}
    )

    def reward(completions: list[Any], prompt_id: list[str], **_: Any) -> list[float]:
        texts = [c[-1]["content"] if isinstance(c, list) else str(c) for c in completions]
        items = [by_text[i] for i in prompt_id]
        return np.asarray(scorer.score([ScoreInput(it.prompt, t, it.profile, it.hidden, it.profile_ranked)
                                        for it, t in zip(items, texts, strict=False)])).tolist()

    if algorithm == "grpo":
        from trl import GRPOConfig as Cfg
        from trl import GRPOTrainer as Trainer
    elif algorithm == "rloo":
        from trl import RLOOConfig as Cfg
        from trl import RLOOTrainer as Trainer
    else:
        raise ConfigError(f"algorithm={algorithm!r} is not one of ppo, grpo, rloo")
    try:
        args = Cfg(output_dir=out, **settings)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"invalid {algorithm} settings: {' '.join(str(exc).split())[:300]}") from None
    trainer = Trainer(model=policy, reward_funcs=reward, args=args, train_dataset=ds, processing_class=tokenizer,
                      peft_config=peft_config)
    drop_log_printer(trainer)
    with frozen_heap():
        trainer.train()
    history = [h for h in trainer.state.log_history if "reward" in h]
    metrics = {k: float(v) for k, v in (history[-1] if history else {}).items() if isinstance(v, (int, float))}
    metrics["steps"] = int(trainer.state.global_step)
    model = trainer.model
    if hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    return model, metrics, [float(h["reward"]) for h in history]
