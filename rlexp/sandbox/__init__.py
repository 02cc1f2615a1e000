"""The sandbox: a deterministic, seeded world in which every preference is verifiable by a program.

Entry points::

    from rlexp.sandbox import materialise
    manifest = materialise(Path("data/sandbox"), seed=0, difficulty=0.5)

writes RewardBench 2 / Personalized RewardBench files in the real schemas, training preference
sources, downstream prompt sets and text corpora (see :mod:`rlexp.sandbox.materialise`). The gold
judges (:func:`rubric_score`, :func:`verifier_score`), the planner (:func:`infer_aspects`,
:func:`format_plan`) and the aspect checkers are importable on their own.

Modules: ``aspects`` (dimensions, poles, checkers), ``render_content`` (what a personal text
says), ``render`` (styled text), ``users`` (profiles, narratives), ``planner``, ``kb`` (fictional
facts), ``constraints``, ``safety``, ``general`` (the verifiable task record, cues and length
matching) with one module per task kind (``general_facts``, ``general_math``,
``general_constraints``, ``general_safety``, ``general_ties``), ``personal`` (personal questions
and pairs), ``splits`` (disjointness), ``rb2``, ``prb``, ``pairs``, ``prompts``, ``corpus``,
``judges``, ``baselines``, ``knobs`` (difficulty), ``world`` (in-memory build), ``materialise``
(files + manifest).
"""

from rlexp.sandbox.aspects import (
    DIMENSIONS,
    POLES,
    POLES_BY_TITLE,
    Dimension,
    Pole,
    check,
    dimension_state,
    pole_for_title,
    style_vector,
)
from rlexp.sandbox.baselines import compute_baselines, prb_accuracy, rb2_scores
from rlexp.sandbox.judges import (
    aspect_scores,
    gold_score,
    is_correct,
    judge_rb2_completion,
    rubric_score,
    verifier_score,
)
from rlexp.sandbox.knobs import Knobs, knobs_for
from rlexp.sandbox.materialise import SCHEMA_VERSION, materialise, read_manifest
from rlexp.sandbox.planner import format_plan, infer_aspects, planner_quality
from rlexp.sandbox.text import normalise_prompt
from rlexp.sandbox.world import World, build_world

__all__ = [
    "DIMENSIONS",
    "POLES",
    "POLES_BY_TITLE",
    "SCHEMA_VERSION",
    "Dimension",
    "Knobs",
    "Pole",
    "World",
    "aspect_scores",
    "build_world",
    "check",
    "compute_baselines",
    "dimension_state",
    "format_plan",
    "gold_score",
    "infer_aspects",
    "is_correct",
    "judge_rb2_completion",
    "knobs_for",
    "materialise",
    "normalise_prompt",
    "planner_quality",
    "pole_for_title",
    "prb_accuracy",
    "rb2_scores",
    "read_manifest",
    "rubric_score",
    "style_vector",
    "verifier_score",
]
