"""The allowed values of rlexp's choice fields.

Choice fields are enums, so Hydra rejects a bad value at compose time, naming the key and the
allowed values. Members are ``StrEnum``s named by their values: records, hashes and comparisons
with plain strings see the same text a plain ``str`` field would.
"""

from __future__ import annotations

from enum import StrEnum

LoggerKind = StrEnum("LoggerKind", "wandb none")
WandbMode = StrEnum("WandbMode", "offline online disabled")
Device = StrEnum("Device", "auto cpu cuda")
Checkpoint = StrEnum("Checkpoint", "base instruct")
ProfileMode = StrEnum("ProfileMode", "none raw planner")
PlannerKind = StrEnum("PlannerKind", "sandbox lm")
ScorerKind = StrEnum("ScorerKind", "seq_cls generative")
TruncationSide = StrEnum("TruncationSide", "left right")
DType = StrEnum("DType", "auto float32 bfloat16 float16")
JudgeMode = StrEnum("JudgeMode", "ratings rankings")
# auto: transformers' AutoTokenizer; file: the folder's tokenizer.json exactly as written
TokenizerSource = StrEnum("TokenizerSource", "auto file")
TokenizerCheck = StrEnum("TokenizerCheck", "warn error off")
SamplingBackend = StrEnum("SamplingBackend", "hf vllm")
JudgeName = StrEnum("JudgeName", "auto rubric verifier rm llm")
JudgeVariant = StrEnum("JudgeVariant", "lampqa prb")  # lampqa: per aspect, /2; prb: one list judgement, 0-2
Algorithm = StrEnum("Algorithm", "ppo grpo rloo")
ValueInit = StrEnum("ValueInit", "auto rm policy")  # auto: the RM if same lineage, else the policy
