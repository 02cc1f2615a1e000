"""The only module that touches TRL's PPO API (``trl.experimental.ppo`` in trl 1.12.0).

TRL hands the reward model the *policy's* token ids and reads ``model.score(backbone(...)
.hidden_states[-1])`` at the last response token. :class:`ScorerAsRewardModel` makes any rlexp
scorer look like that: it decodes the policy's tokens, splits prompt and response at the chat
template's generation prompt, scores (prompt item, response text) with the scorer — an RM of the
policy's lineage, an RM of another lineage (its own tokenizer and template) or a sandbox judge —
and returns the score broadcast over the sequence. GRPO and RLOO take the scorer as a reward
function directly (:mod:`rlexp.downstream.grpo`).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from rlexp.data.schemas import PromptItem
from rlexp.downstream.sampling import chat_messages
from rlexp.errors import ConfigError
from rlexp.models.loading import drop_log_printer
from rlexp.scorer import ScoreInput, Scorer, check_scorer

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


# TRL's per-update metrics kept in the record (W&B gets all of them).
CURVE_KEYS = ("objective/scores", "objective/kl", "objective/entropy", "val/num_eos_tokens")


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Exclude the objects that exist now from garbage collection while the block runs.

    TRL's PPO loop calls ``gc.collect()`` twice per update to free accelerator memory; with the
    libraries' objects on the heap each call took about 0.26 s, 8 s of a 94 s sandbox run. Frozen,
    only what the update itself allocated is traversed.
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


class TailLogits:
    """A batch's logits at its last positions only, sliced as if it held every position.

    TRL's PPO reads the policy's and the reference's logits once, as ``logits[:, context_length - 1 :
    -1]``: the positions that predict the response. A slice that would need an earlier position fails
    instead of returning the wrong rows."""

    def __init__(self, tail: Any, length: int) -> None:
        self.tail, self.length = tail, length
        self.offset = length - tail.shape[1]

    def __getitem__(self, key: Any) -> Any:
        rows, cols = key if isinstance(key, tuple) and len(key) == 2 else (None, None)
        if rows != slice(None) or not isinstance(cols, slice) or cols.step not in (None, 1):
            raise TypeError(f"TailLogits supports [:, start:stop] only, got {key!r}")
        start = cols.start or 0
        start = (start + self.length if start < 0 else start) - self.offset
        if start < 0:
            raise ValueError(f"logits were kept for the last {self.tail.shape[1]} of {self.length} positions; "
                             f"the slice starts {-start} position(s) earlier")
        stop = cols.stop if cols.stop is None or cols.stop < 0 else cols.stop - self.offset
        return self.tail[:, start:stop]


@contextmanager
def logits_at_responses(response_length: int) -> Iterator[None]:
    """Inside the block, TRL's PPO computes the policy's and the reference's logits at the positions that
    predict a response token only (``logits_to_keep``), not over the prompt as well.

    A rollout's response has at most ``response_length`` tokens, so the last ``response_length + 1``
    positions hold every one TRL reads. The logits are the same floats; the backward pass is cheaper
    and the logits tensor is ``response_length + 1`` positions long instead of the whole sequence (with
    a 128k vocabulary and long prompts, most of the forward pass's memory). The output layer's weight
    gradient then sums fewer (zero) rows, which changes the weights by float noise.
    """
    from trl.experimental.ppo import ppo_trainer as trl_ppo

    full = trl_ppo.forward
    keep = response_length + 1

    def forward(model: Any, query_responses: Any, pad_token_id: int) -> Any:
        length = query_responses.shape[1]
        out = full(partial(model, logits_to_keep=min(keep, length)), query_responses, pad_token_id)
        policy_out = out[0] if isinstance(out, tuple) else out  # PolicyAndValueWrapper: (policy, values)
        policy_out.logits = TailLogits(policy_out.logits, length)
        return out

    trl_ppo.forward = forward
    try:
        yield
    finally:
        trl_ppo.forward = full


def _torch() -> Any:
    import torch

    return torch


@dataclass
class RewardLog:
    """What the policy was rewarded with: every score in order (``history``: floats only, so kept
    whole) and the last ``limit`` prompts and responses, for checks and samples."""

    prompts: list[str] = field(default_factory=list)
    responses: list[str] = field(default_factory=list)
    history: list[float] = field(default_factory=list)
    limit: int = 4096

    @property
    def scores(self) -> list[float]:
        """The scores of the kept (prompt, response) pairs, aligned with them."""
        return self.history[len(self.history) - len(self.prompts) :]

    def add(self, prompts: Sequence[str], responses: Sequence[str], scores: Sequence[float]) -> None:
        self.prompts.extend(prompts)
        self.responses.extend(responses)
        self.history.extend(float(s) for s in scores)
        overflow = len(self.prompts) - self.limit
        if overflow > 0:
            del self.prompts[:overflow], self.responses[:overflow]


def _make_reward_module(scorer: Scorer, tokenizer: Any, prompts: Sequence[PromptItem], profile_k: int, scale: float,
                        profile: str) -> Any:
    torch = _torch()
    nn = torch.nn

    class _Output:
        def __init__(self, hidden: Any) -> None:
            self.hidden_states = (hidden,)

    class _Backbone(nn.Module):
        def __init__(self, outer: Any) -> None:
            super().__init__()
            self._outer = [outer]  # a list: not a registered submodule (no recursion)

        def forward(self, input_ids: Any, attention_mask: Any, **_: Any) -> Any:
            return self._outer[0].score_ids(input_ids, attention_mask)

    class ScorerAsRewardModel(nn.Module):
        """Looks like a HF sequence classifier to TRL; scores decoded text with an rlexp scorer."""

        base_model_prefix = "backbone"

        def __init__(self) -> None:
            super().__init__()
            self.backbone = _Backbone(self)
            # DeepSpeed refuses a module without parameters.
            self.anchor = nn.Parameter(torch.zeros(1), requires_grad=False)
            self.scorer = scorer
            self.tokenizer = tokenizer
            self.scale = scale
            self.log = RewardLog()
            self.by_query: dict[str, PromptItem] = {}
            for item in prompts:
                text = tokenizer.apply_chat_template(chat_messages(item, profile_k, profile), add_generation_prompt=True,
                                                     tokenize=False)
                self.by_query[text] = item
            probe = tokenizer.apply_chat_template([{"role": "user", "content": "\x00"}], add_generation_prompt=True, tokenize=False)
            self.marker = probe.split("\x00", 1)[1]  # what follows the user's text: end of turn + generation prompt
            self.specials = sorted((t for t in tokenizer.all_special_tokens if t), key=len, reverse=True)

        def score(self, hidden: Any) -> Any:
            return hidden

        def split(self, ids: list[int]) -> tuple[PromptItem, str]:
            text = self.tokenizer.decode(ids, skip_special_tokens=False)
            cut = text.rfind(self.marker)
            if cut < 0:
                raise ConfigError("PPO reward: cannot find the generation prompt in a rollout (chat template mismatch)")
            query, response = text[: cut + len(self.marker)], text[cut + len(self.marker) :]
            item = self.by_query.get(query)
            if item is None:
                # Left padding/BOS may prefix the query: match by suffix.
                item = next((v for k, v in self.by_query.items() if query.endswith(k)), None)
            if item is None:
                raise ConfigError("PPO reward: a rollout's prompt is not in the prompt set")
            eos = self.tokenizer.eos_token
            if eos and eos in response:
                response = response[: response.index(eos)]
            for tok in self.specials:
                response = response.replace(tok, "")
            return item, response.strip()

        def score_ids(self, input_ids: Any, attention_mask: Any) -> Any:
            pairs = [self.split(row[mask.bool()].tolist()) for row, mask in zip(input_ids, attention_mask, strict=False)]
            inputs = [ScoreInput(item.prompt, resp, item.profile, item.hidden, item.profile_ranked) for item, resp in pairs]
            raw = np.asarray(self.scorer.score(inputs), dtype=np.float64)
            self.log.add([i.prompt for i in inputs], [i.response for i in inputs], raw.tolist())
            values = torch.tensor(raw * self.scale, dtype=torch.float32, device=input_ids.device)
            return _Output(values[:, None, None].expand(input_ids.shape[0], input_ids.shape[1], 1))

    return ScorerAsRewardModel()


def reward_module(scorer: Any, tokenizer: Any, prompts: Sequence[PromptItem], profile_k: int = 10, scale: float = 1.0,
                  profile: str = "posts") -> Any:
    """Wrap any scorer as the reward model TRL's PPOTrainer expects (``profile``: what the policy sees of
    the user, as in :func:`~rlexp.downstream.sampling.chat_messages`)."""
    check_scorer(scorer)
    if not getattr(tokenizer, "chat_template", None):
        raise ConfigError("policy tokenizer has no chat template")
    return _make_reward_module(scorer, tokenizer, prompts, profile_k, scale, profile)


def tokenise_prompts(tokenizer: Any, prompts: Sequence[PromptItem], profile_k: int, profile: str = "posts") -> Any:
    """The PPO dataset: chat-rendered prompts, pre-tokenised in an ``input_ids`` column."""
    from datasets import Dataset

    ids = [
        tokenizer.apply_chat_template(chat_messages(p, profile_k, profile), add_generation_prompt=True, tokenize=True, return_dict=False)
        for p in prompts
    ]
    ids = [x["input_ids"] if isinstance(x, dict) else list(x) for x in ids]
    return Dataset.from_dict({"input_ids": ids})


def ppo_config(out: str, settings: dict[str, Any]) -> Any:
    """TRL's PPOConfig from settings under TRL's own field names; a bad field is one line."""
    from trl.experimental.ppo import PPOConfig

    try:
        return PPOConfig(output_dir=out, **settings)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"invalid PPO settings: {' '.join(str(exc).split())[:300]}") from None


def _trainer_class(critic_learning_rate: float | None) -> Any:
    """TRL's PPOTrainer, or (``critic_learning_rate`` set) one whose single optimizer has two parameter groups.

    TRL 1.12 trains the policy and the value model as one module (``PolicyAndValueWrapper``: ``policy`` and
    ``value_model``) with one optimizer built by ``Trainer.create_optimizer``, at ``args.learning_rate``.
    verl trains the critic with its own optimizer and learning rate; the closest TRL allows is the same
    optimizer (AdamW, same betas, epsilon, weight decay and schedule) with the value model's parameters in
    their own groups at ``critic_learning_rate``. The linear schedule scales each group's rate alike.
    """
    from trl.experimental.ppo import PPOTrainer

    if critic_learning_rate is None:
        return PPOTrainer

    class TwoRatePPOTrainer(PPOTrainer):
        def create_optimizer(self, model: Any = None) -> Any:
            if self.optimizer is not None:
                return self.optimizer
            opt_model = self.model if model is None else model
            decay = set(self.get_decay_parameter_names(opt_model))
            groups = []
            for is_policy, lr in ((True, self.args.learning_rate), (False, critic_learning_rate)):
                for decayed in (True, False):
                    params = [p for n, p in opt_model.named_parameters()
                              if p.requires_grad and n.startswith("policy.") == is_policy and (n in decay) == decayed]
                    if params:
                        groups.append({"params": params, "lr": lr,
                                       "weight_decay": self.args.weight_decay if decayed else 0.0})
            optimizer_cls, optimizer_kwargs = self.get_optimizer_cls_and_kwargs(self.args, opt_model)
            self.optimizer = optimizer_cls(groups, **optimizer_kwargs)
            return self.optimizer

    return TwoRatePPOTrainer


def _step_callback(on_step: Callable[[int, Any], None]) -> Any:
    """A TrainerCallback that calls ``on_step(global_step, trainer)`` after every PPO update (the trainer is
    set on it once built): rlexp's evaluation at checkpoints."""
    from transformers import TrainerCallback

    class StepCallback(TrainerCallback):
        trainer: Any = None

        def on_step_end(self, args: Any, state: Any, control: Any, **_: Any) -> Any:
            on_step(int(state.global_step), self.trainer)
            return control

    return StepCallback()


def unwrapped_policy(trainer: Any) -> Any:
    """The policy module inside a running PPOTrainer (under DeepSpeed ZeRO-2 every rank holds it whole)."""
    return trainer.accelerator.unwrap_model(trainer.model).policy


def train_ppo(
    *,
    args: Any,
    tokenizer: Any,
    policy: Any,
    ref_policy: Any,
    value_model: Any,
    reward_model: Any,
    dataset: Any,
    peft_config: Any = None,
    callbacks: list[Any] | None = None,
    response_logits_only: bool = False,
    critic_learning_rate: float | None = None,
    on_step: Callable[[int, Any], None] | None = None,
) -> tuple[Any, Any, dict[str, Any], dict[str, list[float]]]:
    """Run TRL's PPOTrainer (``response_logits_only``: inside :func:`logits_at_responses`).

    ``critic_learning_rate``: the value model's own learning rate (:func:`_trainer_class`); ``on_step``:
    called as ``on_step(global_step, trainer)`` after every update (:func:`unwrapped_policy` reads the
    policy). Returns (trained policy, trained value model, final metrics, per-update curves of
    :data:`CURVE_KEYS`). The curves show at a glance whether a run learned or collapsed: a falling
    ``objective/entropy`` with a flat ``objective/scores`` is a policy that has stopped exploring.
    """
    PPOTrainer = _trainer_class(critic_learning_rate)  # noqa: N806 - a class
    step_callback = _step_callback(on_step) if on_step is not None else None
    callbacks = [*(callbacks or []), *([step_callback] if step_callback is not None else [])] or None

    try:
        trainer = PPOTrainer(
            args=args,
            processing_class=tokenizer,
            model=policy,
            ref_model=ref_policy,
            reward_model=reward_model,
            train_dataset=dataset,
            value_model=value_model,
            peft_config=peft_config,
            callbacks=callbacks,
        )
    except ValueError as exc:
        raise ConfigError(f"PPO: {' '.join(str(exc).split())[:300]}") from None
    if step_callback is not None:
        step_callback.trainer = trainer
    drop_log_printer(trainer)
    _drop_banner(trainer.accelerator)
    tail = logits_at_responses(int(args.response_length)) if response_logits_only else nullcontext()
    with frozen_heap(), tail:
        trainer.train()
    history = [h for h in trainer.state.log_history if "objective/kl" in h]
    last = history[-1] if history else {}
    metrics = {k: float(v) for k, v in last.items() if isinstance(v, (int, float))}
    metrics["steps"] = int(trainer.state.global_step)
    metrics["episodes"] = int(trainer.state.episode)
    curves = {k: [float(h[k]) for h in history if k in h] for k in CURVE_KEYS}
    model = trainer.accelerator.unwrap_model(trainer.model)
    policy_out = model.policy
    if hasattr(policy_out, "merge_and_unload"):
        policy_out = policy_out.merge_and_unload()
    return policy_out, model.value_model, metrics, curves


def _drop_banner(accelerator: Any) -> None:
    """TRL's PPOTrainer.train prints "===training policy===" to stdout at every start, a line a study's
    log repeats once per PPO run; drop that line and pass every other print through."""
    shown = accelerator.print

    def print_unless_banner(*args: Any, **kwargs: Any) -> None:
        if args != ("===training policy===",):
            shown(*args, **kwargs)

    accelerator.print = print_unless_banner
