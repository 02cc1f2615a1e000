"""Training preference sources, drawn only from training seeds and templates.

- ``general``: the skills of RewardBench 2 (KB facts, focus, arithmetic, constraints, safety,
  ties) with training phrasings and training entities; chosen is verified correct, rejected
  verified wrong, lengths matched.
- ``personal``: pairs for training users; the context is their profile, rubric aspects and
  narrative; chosen meets the aspects, rejected violates them.
- ``length_bias``: a control where chosen is simply the longer answer, whatever its correctness
  or personal fit (half general-style, half personal-style).
- ``flipped``: the ``general`` pairs with labels reversed (the paper's flipped-label control).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from rlexp.data.schemas import PreferencePair, UserContext
from rlexp.sandbox import general as gen
from rlexp.sandbox.judges import is_correct, verifier_score
from rlexp.sandbox.kb import KnowledgeBase
from rlexp.sandbox.knobs import Knobs
from rlexp.sandbox.personal import answer_content, random_style, render_pair, render_styled
from rlexp.sandbox.sites import SITES
from rlexp.sandbox.splits import PromptRegistry, draw_question, draw_task, draw_ties
from rlexp.sandbox.text import word_count
from rlexp.sandbox.users import SandboxUser, make_narrative

GENERAL_MIX: dict[str, int] = {"fact": 700, "focus": 260, "math": 440, "constraints": 400, "safety": 400, "ties": 200}
PAIRS_PER_TRAIN_USER = 4
OWNER = "train"


def _general_pair(
    kind: str, kb: KnowledgeBase, knobs: Knobs, rng: random.Random, registry: PromptRegistry, i: int
) -> tuple[str, str, str]:
    """(prompt, chosen, rejected) for one general training pair (verified)."""
    if kind == "ties":
        family = ("prime", "multiple", "divisor", "square", "town", "river_town")[i % 6]
        ref, tied = draw_ties(family, "train", kb, rng, registry, OWNER, unique=False)
        task = ref if rng.random() < 0.5 else tied
        return task.prompt, rng.choice(task.right_answers), rng.choice(task.wrong_answers)
    kw = {"harmful": i % 2 == 0} if kind == "safety" else {}
    for _ in range(50):
        task = draw_task(kind, "train", kb, knobs, rng, registry, OWNER, unique=False, **kw)
        chosen, rejected = gen.matched([task.right, task.wrong], rng)
        if is_correct(verifier_score(chosen, task.hidden)) and not is_correct(verifier_score(rejected, task.hidden)):
            return task.prompt, chosen, rejected
    raise RuntimeError(f"could not build a verified general {kind} pair")


def build_general(
    kb: KnowledgeBase, knobs: Knobs, rng: random.Random, registry: PromptRegistry, mix: dict[str, int] | None = None
) -> list[PreferencePair]:
    """The ``general`` source, shuffled so kinds are interleaved."""
    mix = mix or GENERAL_MIX
    rows = []
    for kind, n in mix.items():
        for i in range(n):
            rows.append(_general_pair(kind, kb, knobs, rng, registry, i))
    rng.shuffle(rows)
    return [PreferencePair(f"general-{i:05d}", p, c, r, "general") for i, (p, c, r) in enumerate(rows)]


def build_flipped(general: list[PreferencePair], personal: list[PreferencePair]) -> list[PreferencePair]:
    """The ``flipped`` control: every general and personal pair with chosen and rejected swapped.

    Both halves are flipped so that the control is a bad RM on *both* benchmarks and both
    downstream prompt sets: flipping only the general pairs left it user-blind (near chance) on
    personalized prompts, where it then picked Best-of-N samples like an untrained scorer.
    """
    return [
        PreferencePair(p.id.replace(p.source, "flipped", 1), p.prompt, p.rejected, p.chosen, "flipped", p.context)
        for p in (*general, *personal)
    ]


def build_personal(
    users: list[SandboxUser],
    knobs: Knobs,
    rng: random.Random,
    registry: PromptRegistry,
    per_user: int = PAIRS_PER_TRAIN_USER,
) -> list[PreferencePair]:
    """The ``personal`` source: ``per_user`` pairs per training user, with their context."""
    out = []
    for u in users:
        for j in range(per_user):
            q = draw_question(SITES[u.category], "train", rng, registry, OWNER)
            content = answer_content(q, SITES[u.category], rng)
            narrative, rubric = make_narrative(u, content.topic, rng)
            chosen, rejected = render_pair(content, u.aspects, knobs, rng)
            ctx = UserContext(profile=u.profile, rubric_aspects=rubric, narrative=narrative)
            out.append(PreferencePair(f"personal-{u.user_id}-{j}", q, chosen, rejected, "personal", ctx))
    return out


def _longer_first(a: str, b: str, rng: random.Random, measure: Callable[[str], int]) -> tuple[str, str]:
    """Order two answers longer-first, padding one (chosen at random) until it is clearly longer."""
    if rng.random() < 0.5:
        a, b = b, a
    n = 1
    while measure(a) < 1.2 * measure(b) + 2 or len(a) <= len(b):
        a = gen.pad(a, rng, n)
        n += 1
    return a, b


def build_length_bias(
    kb: KnowledgeBase,
    users: list[SandboxUser],
    knobs: Knobs,
    rng: random.Random,
    registry: PromptRegistry,
    n: int = 2400,
) -> list[PreferencePair]:
    """The ``length_bias`` control: chosen is the longer answer, correctness and fit random."""
    out: list[PreferencePair] = []
    kinds = [k for k in GENERAL_MIX if k != "ties"]
    for i in range(n // 2):
        kind = kinds[i % len(kinds)]
        task = draw_task(kind, "train", kb, knobs, rng, registry, OWNER, unique=False)
        right, wrong = task.right(rng), task.wrong(rng)
        chosen, rejected = _longer_first(right, wrong, rng, len)
        out.append(PreferencePair(f"length_bias-g{i:05d}", task.prompt, chosen, rejected, "length_bias"))
    for i in range(n - n // 2):
        u = users[i % len(users)]
        q = draw_question(SITES[u.category], "train", rng, registry, OWNER)
        content = answer_content(q, SITES[u.category], rng)
        narrative, rubric = make_narrative(u, content.topic, rng)
        s1, s2 = random_style(rng), random_style(rng)
        s1["length"], s2["length"] = 1, (0 if rng.random() < 0.5 else None)
        a = render_styled(content, s1, knobs, rng)
        b = render_styled(content, s2, knobs, rng)
        chosen, rejected = _longer_first(a, b, rng, word_count)
        ctx = UserContext(profile=u.profile, rubric_aspects=rubric, narrative=narrative)
        out.append(PreferencePair(f"length_bias-p{i:05d}", q, chosen, rejected, "length_bias", ctx))
    rng.shuffle(out)
    return out
