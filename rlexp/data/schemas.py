"""Record schemas: the in-memory records every task exchanges, and the exact on-disk schemas of
the real datasets (``allenai/reward-bench-2``, ``QiyaoMa/Personalized-RewardBench``).

The sandbox writes files with exactly these arrow schemas, so the loaders cannot tell a sandbox
file from a real one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

RB2_SUBSETS: tuple[str, ...] = ("Factuality", "Precise IF", "Math", "Safety", "Focus", "Ties")
# A Ties prompt has a reference row and a tied row, told apart (and paired) by id: `ref:<n>` / `tied:<n>`.
RB2_TIES_ID: re.Pattern[str] = re.compile(r"^(ref|tied):(\d+)$")
PRB_DOMAINS: tuple[str, ...] = (
    "Art_and_Entertainment",
    "Lifestyle_and_Personal_Development",
    "Society_and_Culture",
)

# allenai/reward-bench-2, config `default`, split `test` (reference/rewardbench2.md §1).
RB2_METADATA_TYPE = pa.struct(
    [
        ("category", pa.string()),
        ("correct", pa.string()),
        ("index", pa.float64()),
        ("instruction_id_list", pa.list_(pa.string())),
        ("label", pa.string()),
        ("method", pa.string()),
        ("models", pa.list_(pa.string())),
        ("prompt_norm", pa.string()),
        ("subcategory", pa.string()),
        ("valid", pa.float64()),
    ]
)
RB2_ARROW_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("prompt", pa.string()),
        ("chosen", pa.list_(pa.string())),
        ("rejected", pa.list_(pa.string())),
        ("num_correct", pa.int64()),
        ("num_incorrect", pa.int64()),
        ("total_completions", pa.int64()),
        ("models", pa.list_(pa.string())),
        ("subset", pa.string()),
        ("additional_metadata", RB2_METADATA_TYPE),
    ]
)

# QiyaoMa/Personalized-RewardBench, one config per domain, split `test`
# (reference/personalized-rewardbench.md §1).
PROFILE_POST_TYPE = pa.struct([("category", pa.string()), ("id", pa.string()), ("text", pa.string())])
RUBRIC_ASPECT_TYPE = pa.struct([("aspect", pa.string()), ("evidence", pa.string()), ("reason", pa.string())])
PRB_ARROW_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("question", pa.string()),
        ("profile", pa.list_(PROFILE_POST_TYPE)),
        ("rubric_aspects", pa.list_(RUBRIC_ASPECT_TYPE)),
        ("narrative", pa.string()),
        ("category", pa.string()),
        ("chosen", pa.string()),
        ("rejected", pa.string()),
    ]
)


# MichaelR207/chatbot_arena_personalized_0125 and MichaelR207/prism_personalized_0125 (SynthesizeMe;
# reference/prb-comparison-benchmarks.md §2): HF splits partition users, the `split` column splits each
# user's pairs (train/val/test); chosen/rejected are single messages whose role is `model`.
CHAT_MESSAGE_TYPE = pa.struct([("content", pa.string()), ("role", pa.string())])
USER_PAIRS_ARROW_SCHEMA = pa.schema(
    [
        ("conversation_id", pa.string()),
        ("user_id", pa.string()),
        ("context", pa.list_(CHAT_MESSAGE_TYPE)),
        ("chosen", CHAT_MESSAGE_TYPE),
        ("rejected", CHAT_MESSAGE_TYPE),
        ("turns", pa.int64()),
        ("type", pa.string()),
        ("split", pa.string()),
        ("flip", pa.bool_()),
        # Columns SynthesizeMe drops on load (kept so a file has the published layout).
        ("chosen_score", pa.float64()),
        ("rejected_score", pa.float64()),
        ("dataset", pa.string()),
    ]
)
USER_PAIR_SPLITS: tuple[str, ...] = ("train", "val", "test")
# PRB's comparison benchmarks: config/metric key -> name (benchmark.<key>, metrics.<key>, <key>/... columns).
USER_PAIR_SETS: dict[str, str] = {"arena": "Chatbot Arena-Personalized", "prism": "PRISM-Personalized"}  # values of the per-row `split` column
# HannahRoseKirk/prism-alignment, config `survey` (survey.jsonl): the fields rlexp reads and writes.
PRISM_STATED_PREFS: tuple[str, ...] = (
    "values", "creativity", "fluency", "factuality", "diversity", "safety", "personalisation", "helpfulness",
)
PRISM_SURVEY_ARROW_SCHEMA = pa.schema(
    [
        ("user_id", pa.string()),
        ("survey_only", pa.bool_()),
        ("self_description", pa.string()),
        ("system_string", pa.string()),
        ("stated_prefs", pa.struct([*((k, pa.int64()) for k in PRISM_STATED_PREFS), ("other", pa.int64()),
                                    ("other_text", pa.string())])),
        ("age", pa.string()),
        ("gender", pa.string()),
        ("english_proficiency", pa.string()),
    ]
)


@dataclass(frozen=True)
class ProfilePost:
    """One earlier post of a user (StackExchange question + description in the real data)."""

    category: str
    id: str
    text: str


@dataclass(frozen=True)
class RubricAspect:
    """One personal rubric aspect. Hidden: only judges may read it, never a reward model."""

    aspect: str
    evidence: str
    reason: str


@dataclass(frozen=True)
class UserContext:
    """What travels with a personalized prompt: the visible profile and the hidden rubric."""

    profile: tuple[ProfilePost, ...] = ()
    # Hidden fields: only gold judges read them.
    rubric_aspects: tuple[RubricAspect, ...] = ()
    narrative: str = ""


@dataclass(frozen=True)
class PreferencePair:
    """A training preference pair; ``context`` is set for personalized pairs."""

    id: str
    prompt: str
    chosen: str
    rejected: str
    source: str
    context: UserContext | None = None


@dataclass(frozen=True)
class RB2Item:
    """One RewardBench 2 prompt with its completions laid out ``chosen + rejected``."""

    id: str
    prompt: str
    chosen: tuple[str, ...]
    rejected: tuple[str, ...]
    subset: str
    models: tuple[str, ...] = ()
    additional_metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def num_correct(self) -> int:
        return len(self.chosen)

    @property
    def total_completions(self) -> int:
        return len(self.chosen) + len(self.rejected)


@dataclass(frozen=True)
class PRBItem:
    """One Personalized RewardBench pair; ``domain`` is the dataset config it came from."""

    id: str
    question: str
    profile: tuple[ProfilePost, ...]
    rubric_aspects: tuple[RubricAspect, ...]
    narrative: str
    category: str
    chosen: str
    rejected: str
    domain: str


#: Field metadata of a field added after rows were hashed: rows_hash leaves it out at its default, so the
#: ids of records read from older files stay as they were.
HASH_NEUTRAL = {"hash_neutral": True}


@dataclass(frozen=True)
class PromptItem:
    """A downstream prompt. ``hidden`` holds what only gold judges may read (answers, aspects).

    ``shots`` are few-shot (user, assistant) exchanges the policy sees as earlier chat turns
    (a suite task's regime); reward models and judges see ``prompt`` alone.
    """

    prompt_id: str
    prompt: str
    kind: str  # "personalized" | "general" | "suite"
    profile: tuple[ProfilePost, ...] = ()
    hidden: dict[str, Any] = field(default_factory=dict)
    shots: tuple[tuple[str, str], ...] = ()
    # True when a loader already put the profile in retrieval order (LaMP-QA's dense retriever):
    # renderers then keep that order instead of ranking the posts by BM25 themselves.
    profile_ranked: bool = False
    # A suite task's generation regime (rlexp.suite.base.SuiteTask): the assistant turn's prefill,
    # stop sequences and a token ceiling under sampling.max_new_tokens. Defaults: none of them. Added
    # after prompt sets were hashed (rlexp.inputs.worlds.rows_hash): hashed only when set.
    prefill: str = field(default="", metadata=HASH_NEUTRAL)
    stop: tuple[str, ...] = field(default=(), metadata=HASH_NEUTRAL)
    max_new_tokens: int | None = field(default=None, metadata=HASH_NEUTRAL)
    # How the policy is prompted: "" the sandbox's prompt (rlexp.data.formatting.policy_prompt), "prb" PRB's
    # BoN prompt (prompts/sample.txt), which LaMP-QA prompts get.
    template: str = field(default="", metadata=HASH_NEUTRAL)


@dataclass(frozen=True)
class UserPairItem:
    """One pair of Chatbot Arena- or PRISM-Personalized: a user's vote between two answers.

    ``context`` is the conversation up to the compared turn as (role, content) messages, roles
    ``user``/``assistant`` (``model`` is mapped on load), ending with the user's message. ``split``
    is the row's own `split` column: a user's ``train``/``val`` pairs are the history an RM may see
    when it scores the user's ``test`` pairs.
    """

    id: str
    user_id: str
    context: tuple[tuple[str, str], ...]
    chosen: str
    rejected: str
    split: str
    flip: bool = False
    kind: str = ""  # the `type` column (PRISM's conversation type); "" where absent

    @property
    def question(self) -> str:
        """The user message the two answers reply to."""
        return self.context[-1][1]


@dataclass(frozen=True)
class UserSurvey:
    """What a PRISM user said about themselves (the `survey` config), as far as rlexp reads it."""

    user_id: str
    self_description: str = ""
    system_string: str = ""
    stated_prefs: tuple[tuple[str, int], ...] = ()  # (name, 0-100 slider) for the sliders answered


# rlexp's own on-disk formats (sandbox output and user-supplied files of the same shape).
PAIRS_ARROW_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("prompt", pa.string()),
        ("chosen", pa.string()),
        ("rejected", pa.string()),
        ("source", pa.string()),
        # Personalized pairs carry the user's context; empty lists / "" for general pairs.
        ("profile", pa.list_(PROFILE_POST_TYPE)),
        ("rubric_aspects", pa.list_(RUBRIC_ASPECT_TYPE)),
        ("narrative", pa.string()),
    ]
)
PROMPTS_ARROW_SCHEMA = pa.schema(
    [
        ("prompt_id", pa.string()),
        ("prompt", pa.string()),
        ("kind", pa.string()),
        ("profile", pa.list_(PROFILE_POST_TYPE)),
        # JSON object with judge-only fields (gold answer, constraints, rubric aspects).
        ("hidden", pa.string()),
    ]
)
# system: the system message ("" for none); the planned rows carry the personalized policy's.
SFT_ARROW_SCHEMA = pa.schema([("prompt", pa.string()), ("response", pa.string()), ("system", pa.string())])
