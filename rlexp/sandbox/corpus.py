"""Text corpora for the tiny model lineages: pretraining text and SFT pairs.

Pretraining text (``pretrain_a`` / ``pretrain_b``) mixes KB statements, arithmetic statements,
profile-style posts, personal answers in every style, and general Q/A documents. The two variants
are different samples: each states a different random ~75% of the KB facts in its own wording and
draws its own posts and answers, so two lineages trained on them know different things.

The SFT set pairs training-template prompts with responses of *varied* quality: general answers
are right or wrong (with the same tells as the preference data) and personal answers come in
random styles, so a policy tuned on it produces samples whose gold scores vary within a prompt —
which is what makes Best-of-N and PPO with a reward model measurable. No SFT prompt is a benchmark
or downstream prompt (training template group only).

A third part teaches the policy to read the user (:func:`planned_sft`): a training user's question
followed by the sandbox planner's aspects inferred from their profile, the user turn a policy sees
with ``sampling.policy_profile=plan``. Most answers follow the stated aspects and the rest take a
random style, so a policy tuned on it personalises, imperfectly, and its samples still differ.
"""

from __future__ import annotations

import random

from rlexp.data.formatting import DEFAULT_K, SYSTEM_PERSONALIZED, rm_user_turn, top_posts
from rlexp.sandbox.aspects import pole_for_title
from rlexp.sandbox.general_facts import statement
from rlexp.sandbox.kb import KnowledgeBase
from rlexp.sandbox.knobs import Knobs
from rlexp.sandbox.personal import answer_content, random_style, render_styled
from rlexp.sandbox.planner import format_plan, infer_aspects
from rlexp.sandbox.render import render
from rlexp.sandbox.render_content import Content, make_content
from rlexp.sandbox.sites import SITES
from rlexp.sandbox.splits import PromptRegistry, draw_question, draw_task
from rlexp.sandbox.users import SandboxUser

VARIANTS: tuple[str, ...] = ("a", "b")
PRETRAIN_COUNTS = {"arith": 600, "posts": 700, "answers": 900, "qa": 800}
SFT_COUNTS = {"general": 1500, "personal": 500, "planned": 1500}
SFT_RIGHT_SHARE = 0.6
# Share of planned answers that follow every stated aspect; the rest show what an unguided answer does.
PLAN_FOLLOW_SHARE = 0.8
_RENDER_TRIES = 20
SFTRow = tuple[str, str, str]  # (prompt, response, system message or "")
OWNER = "train"
_GENERAL_KINDS = ("fact", "focus", "math", "constraints", "safety")


def _kb_docs(kb: KnowledgeBase, variant: str, rng: random.Random) -> list[str]:
    docs = []
    for e in kb.entities:
        if rng.random() >= 0.75:
            continue
        if variant == "a":
            docs.append(" ".join(statement(e, a, v, rng) for a, v in e.attrs))
        else:
            fields = "; ".join(f"{a}: {v}" for a, v in e.attrs)
            docs.append(f"{e.name} ({e.kind}). {fields}.")
    return docs


def _arith(rng: random.Random) -> str:
    a, b = rng.randint(2, 99), rng.randint(2, 30)
    op = rng.choice(("+", "-", "×"))
    val = a + b if op == "+" else a - b if op == "-" else a * b
    return rng.choice(("{a} {op} {b} = {v}.", "{a} {op} {b} is {v}.", "We have {a} {op} {b} = {v}.")).format(
        a=a, op=op, b=b, v=val
    )


def pretrain_docs(
    kb: KnowledgeBase, knobs: Knobs, variant: str, seed_rng: random.Random, registry: PromptRegistry
) -> list[str]:
    """Documents of pretraining corpus ``variant`` (shuffled)."""
    rng = seed_rng
    docs = _kb_docs(kb, variant, rng)
    docs += [_arith(rng) for _ in range(PRETRAIN_COUNTS["arith"])]
    site_names = sorted(SITES)
    for _ in range(PRETRAIN_COUNTS["posts"]):
        site = SITES[rng.choice(site_names)]
        content = make_content("post", rng.choice(site.topics), site, rng)
        docs.append(render(content, random_style(rng), knobs.intensity(rng), rng))
    for i in range(PRETRAIN_COUNTS["answers"]):
        site = SITES[rng.choice(site_names)]
        q = draw_question(site, "train", rng, registry, OWNER)
        text = render_styled(answer_content(q, site, rng), random_style(rng), knobs, rng)
        docs.append(f"{q}\n{text}" if i % 2 else text)
    for i in range(PRETRAIN_COUNTS["qa"]):
        task = draw_task(
            _GENERAL_KINDS[i % len(_GENERAL_KINDS)], "train", kb, knobs, rng, registry, OWNER, unique=False
        )
        answer = task.right(rng) if rng.random() < 0.85 else task.wrong(rng)
        docs.append(f"Q: {task.prompt}\nA: {answer}")
    rng.shuffle(docs)
    return docs


def sft_pairs(kb: KnowledgeBase, knobs: Knobs, rng: random.Random, registry: PromptRegistry) -> list[SFTRow]:
    """(prompt, response, "") rows of varied quality and style, no system message (see module doc)."""
    rows: list[SFTRow] = []
    for i in range(SFT_COUNTS["general"]):
        task = draw_task(
            _GENERAL_KINDS[i % len(_GENERAL_KINDS)], "train", kb, knobs, rng, registry, OWNER, unique=False
        )
        rows.append((task.prompt, task.right(rng) if rng.random() < SFT_RIGHT_SHARE else task.wrong(rng), ""))
    site_names = sorted(SITES)
    for _ in range(SFT_COUNTS["personal"]):
        site = SITES[rng.choice(site_names)]
        q = draw_question(site, "sft", rng, registry, OWNER)
        rows.append((q, render_styled(answer_content(q, site, rng), random_style(rng), knobs, rng), ""))
    rng.shuffle(rows)
    return rows


def _following(content: Content, titles: list[str], knobs: Knobs, rng: random.Random) -> str:
    """An answer in a random style except on the stated aspects, which it meets (checked; the last
    draw is kept when faint cues defeat every try).

    Length is left random: a detailed answer (60+ words) does not fit the policy's 64-token budget,
    and the planner reads "detailed" into most long-posting users, so following it taught the policy
    answers that were cut off before their ending (88% without EOS, measured)."""
    poles = [p for p in map(pole_for_title, titles) if p.dim != "length"]
    text = ""
    for _ in range(_RENDER_TRIES):
        style = random_style(rng) | {p.dim: p.side for p in poles}
        text = render_styled(content, style, knobs, rng)
        if all(p.check(text) for p in poles):
            break
    return text


def planned_sft(users: list[SandboxUser], knobs: Knobs, rng: random.Random, registry: PromptRegistry) -> list[SFTRow]:
    """Personalised SFT rows: a training user's question with their planned aspects (see module doc)."""
    rows: list[SFTRow] = []
    for _ in range(SFT_COUNTS["planned"]):
        user = rng.choice(users)
        site = SITES[user.category]
        q = draw_question(site, "sft", rng, registry, OWNER)
        titles = infer_aspects(top_posts(user.profile, DEFAULT_K, q))
        content = answer_content(q, site, rng)
        follow = bool(titles) and rng.random() < PLAN_FOLLOW_SHARE
        answer = _following(content, titles, knobs, rng) if follow else render_styled(content, random_style(rng), knobs, rng)
        # Rendered as sampling renders it: the same top posts, planned as scoring.planner.sandbox_planner does.
        turn = rm_user_turn(q, user.profile, "planner", k=DEFAULT_K, planner=lambda _q, _posts, t=titles: format_plan(t))
        rows.append((turn, answer, SYSTEM_PERSONALIZED))
    return rows
