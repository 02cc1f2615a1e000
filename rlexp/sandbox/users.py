"""Sandbox users: hidden aspects, a profile of past posts written in their style, narratives.

A user has 2-4 hidden aspects (distinct dimensions, one pole each), a domain and a site
(``category``). Their profile posts are rendered in their style: on each aspect dimension a post
shows the user's pole with probability ``profile_follow`` (else the opposite pole or nothing), and
on every other dimension it is random. Nothing in a post names an aspect; the planner has to infer
the aspects from the markers, and the noise (which grows with difficulty) makes that imperfect.

The narrative is the body of the user's current post: it states the hidden needs in prose, and
each rubric aspect's ``evidence`` is the sentence of the narrative that states it (as in LaMP-QA).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from rlexp.data.schemas import ProfilePost, RubricAspect
from rlexp.sandbox.aspects import DIMENSIONS, Pole
from rlexp.sandbox.knobs import Knobs
from rlexp.sandbox.render import render
from rlexp.sandbox.render_content import make_content
from rlexp.sandbox.sites import SITES, SITES_BY_DOMAIN

MIN_ASPECTS, MAX_ASPECTS = 2, 4
MIN_POSTS, MAX_POSTS = 10, 40

# (need sentence, reason) per pole key; the need sentence is quoted as evidence.
_NEEDS: dict[str, tuple[tuple[str, str], ...]] = {
    "format.0": (
        (
            "I take things in best when advice is broken into separate points I can tick off.",
            "The user wants the answer organised as a list of points.",
        ),
        (
            "Long blocks of text lose me, so separate points are much easier for me to follow.",
            "The user finds list-structured answers easier to follow.",
        ),
    ),
    "format.1": (
        (
            "I would rather read a connected explanation than a list of disjointed points.",
            "The user prefers connected prose over lists.",
        ),
        (
            "Lists feel choppy to me; I like advice that reads like someone talking it through.",
            "The user wants a flowing, paragraph-style answer.",
        ),
    ),
    "length.0": (
        ("I have very little time, so I only want the short version.", "The user wants a brief answer."),
        (
            "Please keep it short, because I read these on my phone between other things.",
            "The user asks for a concise answer.",
        ),
    ),
    "length.1": (
        (
            "I like to understand things thoroughly, so a full and detailed answer is welcome.",
            "The user wants a thorough, detailed answer.",
        ),
        (
            "Short answers never cover my situation, so I prefer a long and complete explanation.",
            "The user prefers detailed answers.",
        ),
    ),
    "tone.0": (
        (
            "I appreciate a professional, respectful tone, the way a good advisor would write.",
            "The user prefers a formal tone.",
        ),
        (
            "Chatty answers put me off; I prefer a measured and professional style.",
            "The user wants a formal, professional register.",
        ),
    ),
    "tone.1": (
        (
            "Stiff, official-sounding answers put me off; I like a relaxed and friendly tone.",
            "The user prefers a casual, friendly tone.",
        ),
        ("Talk to me like a friend would, nothing too stiff.", "The user wants an informal, friendly register."),
    ),
    "example.0": (
        (
            "Abstract advice never sticks with me unless I see a concrete case of how it plays out.",
            "The user wants a concrete example.",
        ),
        ("A real scenario helps me far more than theory.", "The user learns best from examples."),
    ),
    "example.1": (
        (
            "I do not need anecdotes or scenarios; just give me the principles that hold in general.",
            "The user prefers general rules over examples.",
        ),
        (
            "Specific cases rarely match mine, so I prefer rules I can apply myself.",
            "The user wants general rules of thumb.",
        ),
    ),
    "jargon.0": (
        (
            "I am new to this and technical terms confuse me, so please use everyday words.",
            "The user wants plain language without jargon.",
        ),
        (
            "Every guide I find is full of insider vocabulary that I do not understand.",
            "The user needs jargon-free explanations.",
        ),
    ),
    "jargon.1": (
        (
            "I know the field well, so please use the proper technical terms.",
            "The user wants precise technical terminology.",
        ),
        (
            "Simplified explanations feel vague to me; I want the exact terminology.",
            "The user prefers technical vocabulary.",
        ),
    ),
    "voice.0": (
        (
            "I trust advice more when it comes from someone who has actually been through it.",
            "The user values personal experience in answers.",
        ),
        (
            "Hearing how it went for a real person helps me much more than textbook advice.",
            "The user wants first-hand experience.",
        ),
    ),
    "voice.1": (
        (
            "Personal stories do not help me; I want an objective view of what works for people in general.",
            "The user prefers an impersonal, objective answer.",
        ),
        (
            "Please keep anecdotes out of it and stick to what holds for most situations.",
            "The user wants an objective, impersonal voice.",
        ),
    ),
    "ending.0": (
        (
            "I like it when an answer invites me to reflect on my next step instead of just ending.",
            "The user likes answers that end by asking them something.",
        ),
        (
            "It helps me when the answer hands the conversation back to me.",
            "The user wants the answer to end with a question.",
        ),
    ),
    "ending.1": (
        (
            "I want the answer to end with a clear conclusion, not with more questions for me.",
            "The user wants a clear concluding statement.",
        ),
        ("Open-ended replies frustrate me; I want a firm wrap-up.", "The user prefers a decisive ending."),
    ),
    "justification.0": (
        (
            "I only trust advice that points to a book, study or reference I can check.",
            "The user wants sources or references.",
        ),
        (
            "Please mention where the advice comes from so I can read more.",
            "The user wants the answer to cite a source.",
        ),
    ),
    "justification.1": (
        (
            "I do not care about references, but I do want to understand why the advice works.",
            "The user wants the reasoning explained.",
        ),
        ("Tell me the logic behind each suggestion so I can adapt it.", "The user values explanations of why."),
    ),
    "caution.0": (
        (
            "I have been burned before, so I want to hear about the risks and pitfalls up front.",
            "The user wants risks and caveats pointed out.",
        ),
        ("Please warn me about what can go wrong.", "The user wants caveats and warnings."),
    ),
    "caution.1": (
        (
            "I get anxious easily, so I would like a calm, confident answer rather than a list of dangers.",
            "The user wants a reassuring, confident framing.",
        ),
        (
            "Too many warnings make me give up; I need encouragement that this is doable.",
            "The user prefers reassurance over warnings.",
        ),
    ),
    "options.0": (
        ("I like to weigh several options before I commit to anything.", "The user wants alternatives compared."),
        (
            "Please show me the different routes I could take and how they compare.",
            "The user wants several alternatives.",
        ),
    ),
    "options.1": (
        (
            "Too many options paralyse me; just tell me the one thing to do.",
            "The user wants a single clear recommendation.",
        ),
        ("I want one recommendation, not a menu of choices.", "The user prefers one decisive recommendation."),
    ),
}
_INTROS = (
    "I have been getting into {topic} lately and keep running into the same problems.",
    "For a few months now {topic} has taken up most of my free time.",
    "I recently started {topic} and I am not sure I am going about it the right way.",
    "{Topic} has been on my mind for a while and I finally want to make progress.",
)
_OUTROS = ("Any help is welcome.", "Thanks to anyone who takes the time.", "I would be grateful for advice.")


@dataclass(frozen=True)
class SandboxUser:
    """A generated user. ``aspects`` are hidden; only judges (and tests) may read them."""

    user_id: str
    domain: str
    category: str
    aspects: tuple[Pole, ...]
    profile: tuple[ProfilePost, ...] = field(repr=False)

    @property
    def titles(self) -> list[str]:
        return [p.title for p in self.aspects]


# Dimensions whose poles are not equally popular: dimension -> (majority side, its share of users).
# Why: real users are not evenly split (most want an example, reasons, a warning about risks, an
# answer they can skim), so part of "what users want" is learnable without knowing the user and a
# profile-blind policy can improve by moving to the majority pole. The other six dimensions stay
# balanced, so on them only personalization beats chance.
MAJORITY_POLES: dict[str, tuple[int, float]] = {
    "format": (0, 0.7),
    "example": (0, 0.7),
    "justification": (1, 0.7),
    "caution": (0, 0.7),
}


class PoleBalancer:
    """Chooses poles so that each dimension's poles are used in fixed shares across users.

    Shares are 50/50 except for :data:`MAJORITY_POLES`. Quotas (not coin flips) keep the shares
    exact in every generated set, however small, so a user-blind scorer can gain on a balanced
    dimension only by chance and on a skewed one exactly as much as the stated share allows.
    """

    def __init__(self) -> None:
        self._counts = {d.name: [0, 0] for d in DIMENSIONS}

    def pick(self, dim: str, rng: random.Random) -> int:
        c = self._counts[dim]
        side, share = MAJORITY_POLES.get(dim, (0, 0.5))
        target = (share, 1.0 - share) if side == 0 else (1.0 - share, share)
        n = c[0] + c[1] + 1
        deficit = [target[0] * n - c[0], target[1] * n - c[1]]
        if abs(deficit[0] - deficit[1]) < 1e-9:
            pick = rng.randrange(2)
        else:
            pick = 0 if deficit[0] > deficit[1] else 1
        c[pick] += 1
        return pick


def _post_style(user_poles: dict[str, int], knobs: Knobs, rng: random.Random) -> dict[str, int | None]:
    style: dict[str, int | None] = {}
    for d in DIMENSIONS:
        if d.name in user_poles:
            side = user_poles[d.name]
            u = rng.random()
            if u < knobs.profile_follow:
                style[d.name] = side
            elif d.binary or u < knobs.profile_follow + knobs.profile_opposite:
                style[d.name] = 1 - side
            else:
                style[d.name] = None
        elif d.binary:
            style[d.name] = rng.randrange(2)
        else:
            # Neutral on most unrelated dimensions, so the user's own aspects stand out.
            u = rng.random()
            style[d.name] = None if u < 0.5 else (0 if u < 0.75 else 1)
    if style["length"] == 0:
        # A brief post has no room for unrelated add-ons; keep only the user's own markers.
        for d in DIMENSIONS:
            if d.name not in user_poles and not d.binary and d.name != "length":
                style[d.name] = None
    return style


def make_profile(
    user_id: str, domain: str, category: str, user_poles: dict[str, int], knobs: Knobs, rng: random.Random
) -> tuple[ProfilePost, ...]:
    """10-40 earlier posts of the user, rendered in their (noisy) style."""
    n = rng.randint(MIN_POSTS, MAX_POSTS)
    sites = SITES_BY_DOMAIN[domain]
    posts = []
    for i in range(n):
        cat = category if rng.random() < 0.75 else rng.choice(sites)
        site = SITES[cat]
        topic = rng.choice(site.topics)
        content = make_content("post", topic, site, rng)
        text = render(content, _post_style(user_poles, knobs, rng), knobs.intensity(rng), rng)
        posts.append(ProfilePost(category=cat, id=f"{user_id}-{i:02d}", text=text))
    return tuple(posts)


def make_user(
    user_id: str, domain: str, knobs: Knobs, balancer: PoleBalancer, rng: random.Random, category: str | None = None
) -> SandboxUser:
    """One user with 2-4 hidden aspects (poles drawn by ``balancer``) and a profile in their style."""
    category = category or rng.choice(SITES_BY_DOMAIN[domain])
    n_aspects = rng.randint(MIN_ASPECTS, MAX_ASPECTS)
    dims = rng.sample([d.name for d in DIMENSIONS], n_aspects)
    dims.sort(key=[d.name for d in DIMENSIONS].index)
    poles = tuple(next(d for d in DIMENSIONS if d.name == n).poles[balancer.pick(n, rng)] for n in dims)
    profile = make_profile(user_id, domain, category, {p.dim: p.side for p in poles}, knobs, rng)
    return SandboxUser(user_id, domain, category, poles, profile)


def make_narrative(user: SandboxUser, topic: str, rng: random.Random) -> tuple[str, tuple[RubricAspect, ...]]:
    """The user's hidden need for one question (prose) and the rubric aspects extracted from it."""
    intro = rng.choice(_INTROS).replace("{topic}", topic).replace("{Topic}", topic[:1].upper() + topic[1:])
    needs = []
    aspects = []
    for pole in user.aspects:
        need, reason = rng.choice(_NEEDS[pole.key])
        needs.append(need)
        aspects.append(RubricAspect(aspect=pole.title, evidence=need, reason=reason))
    order = list(range(len(needs)))
    rng.shuffle(order)
    narrative = " ".join([intro, *(needs[i] for i in order), rng.choice(_OUTROS)])
    return narrative, tuple(aspects)
