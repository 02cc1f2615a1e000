"""The allowed values of rlexp's choice fields.

Choice fields are enums, so Hydra rejects a bad value at compose time, naming the key and the
allowed values. Members are ``StrEnum``s named by their values: records, hashes and comparisons
with plain strings see the same text a plain ``str`` field would.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from enum import Enum, StrEnum
from typing import Any

from rlexp.errors import ConfigError

LoggerKind = StrEnum("LoggerKind", "wandb none")
WandbMode = StrEnum("WandbMode", "offline online disabled")
Checkpoint = StrEnum("Checkpoint", "base instruct")
ProfileMode = StrEnum("ProfileMode", "none raw planner")
# What a policy sees of a personalized prompt's user: its top-k posts, or the sandbox planner's aspects.
PolicyProfile = StrEnum("PolicyProfile", "posts plan")
# What an RM sees of the user on Chatbot Arena-/PRISM-Personalized: nothing, the user's earlier votes,
# or the PRISM survey's self-description and stated preferences.
UserContextMode = StrEnum("UserContextMode", "none history persona")
PlannerKind = StrEnum("PlannerKind", "sandbox lm")
ScorerKind = StrEnum("ScorerKind", "seq_cls generative")
TruncationSide = StrEnum("TruncationSide", "left right")
DType = StrEnum("DType", "auto float32 bfloat16 float16")
JudgeMode = StrEnum("JudgeMode", "ratings rankings")
# auto: transformers' AutoTokenizer; file: the folder's tokenizer.json exactly as written
TokenizerSource = StrEnum("TokenizerSource", "auto file")
TokenizerCheck = StrEnum("TokenizerCheck", "warn error off")
SamplingBackend = StrEnum("SamplingBackend", "hf vllm")
# How the hf backend draws a token: full: transformers' multinomial over the whole vocabulary (every stored
# pool); kept: a draw among the tokens top-k and top-p keep, the same distribution from other random numbers.
SamplingDraw = StrEnum("SamplingDraw", "full kept")
JudgeName = StrEnum("JudgeName", "auto rubric verifier rm llm grader")  # grader: the suite tasks' own
JudgeVariant = StrEnum("JudgeVariant", "lampqa prb")  # lampqa: per aspect, /2; prb: one list judgement, 0-2
Algorithm = StrEnum("Algorithm", "ppo grpo rloo")
ValueInit = StrEnum("ValueInit", "auto rm policy")  # auto: the RM if same lineage, else the policy
# Where a study runs its steps: local worker processes, or one SLURM job each (submitit).
Launcher = StrEnum("Launcher", "local slurm")


@functools.cache
def _choice_fields(cls: type) -> tuple[tuple[str, type[Enum]], ...]:
    """(field, enum) for every field of dataclass ``cls`` typed ``SomeEnum`` or ``SomeEnum | None``."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        options = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
        enums = [t for t in options if isinstance(t, type) and issubclass(t, Enum)]
        if enums:
            out.append((f.name, enums[0]))
    return tuple(out)


def coerce_choices(node: Any, where: str) -> None:
    """Turn the choice fields of a dataclass built in code (not composed by Hydra, which checks them
    itself) into their enum members, or raise a one-line ConfigError naming ``where.field``."""
    for name, enum in _choice_fields(type(node)):
        value = getattr(node, name)
        if value is None or isinstance(value, enum):
            continue
        try:
            setattr(node, name, enum(value))
        except ValueError:
            raise ConfigError(f"{where}.{name}={value!r} is not one of {', '.join(enum)}") from None
