"""Users who vote between two answers to their own questions (the comparison sets' recipe).

Chatbot Arena-Personalized and PRISM-Personalized (SynthesizeMe) hold real users' votes between
two model answers to the users' own questions. The sandbox analogue follows the same recipe with
quantities a program can check, and never looks at a reward model:

- a *voter* is a :class:`~rlexp.sandbox.users.SandboxUser` (hidden aspects) with hidden weights
  ``w_quality`` and ``w_fit`` drawn from U[0.5, 1.5]: how much this user cares about a correct,
  on-topic answer and how much about an answer in their own style;
- a question is general (a verifiable task) or personal (a question about the user's site);
- the two answers of a pair differ in quality (right vs wrong, or on-topic vs off-topic), in fit
  (the user's pole on every aspect vs the opposite pole), or both (independently, so the two
  signals agree half the time);
- the vote is noisy: P(A chosen) = sigmoid((u_A - u_B) / tau), u = w_quality*quality + w_fit*fit,
  so some votes go against both signals.

The PRISM-like survey (stated preferences) is written in :mod:`rlexp.sandbox.comparison`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from rlexp.data.schemas import PRB_DOMAINS
from rlexp.sandbox.aspects import DIMENSIONS, Pole, dimension_state
from rlexp.sandbox.general import Task, matched
from rlexp.sandbox.judges import is_correct, verifier_score
from rlexp.sandbox.knobs import Knobs
from rlexp.sandbox.personal import answer_content, background_style, question_slots, render_pair
from rlexp.sandbox.render import render
from rlexp.sandbox.render_content import Content, make_content
from rlexp.sandbox.sites import SITES, SITES_BY_DOMAIN
from rlexp.sandbox.splits import PromptRegistry, draw_question, draw_task
from rlexp.sandbox.users import PoleBalancer, SandboxUser, make_user
from rlexp.sandbox.world import World

USER, MODEL = "user", "model"  # roles as in the published files (SynthesizeMe maps model -> assistant)
GENERAL_TASKS: tuple[str, ...] = ("fact", "math", "constraints", "safety")
PAIR_KINDS: tuple[str, ...] = ("quality", "fit", "both")
WEIGHT_RANGE = (0.5, 1.5)
RATING_NOISE = 6.0  # s.d. of a PRISM user's 1-100 rating around their utility
# A site a voter may ask about must hold this many questions reserved for the voter's dataset, so
# draw_question (rejection sampling over the site's 30 questions) never runs out of tries.
MIN_SITE_QUESTIONS = 3


@dataclass(frozen=True)
class Recipe:
    """The proportions of one comparison set (see module doc; docs/sandbox.md says why)."""

    name: str  # "arena" | "prism": also the registry owner and the rng stream
    dataset: str  # the `dataset` column
    n_users: int
    pairs: tuple[int, int]  # pairs per user (inclusive) for the users with a history
    single_share: float  # users with exactly one pair (nothing earlier to learn from)
    general_share: float  # general (verifiable) questions; the rest are personal
    personal_kinds: tuple[tuple[str, float], ...]  # pair kinds of personal questions
    tau: float  # vote temperature
    continue_prob: float  # a pair continues the user's previous conversation (second turn)
    ratings: bool  # users rate both answers 1-100 (PRISM)
    user_fmt: str
    conversation_fmt: str

    def user_id(self, i: int) -> str:
        return self.user_fmt.format(i)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["personal_kinds"] = dict(self.personal_kinds)
        d["pairs"] = list(self.pairs)
        return d


ARENA = Recipe(
    "arena", "chatbot_arena", 300, (2, 8), 0.10, 0.60, (("fit", 0.3), ("quality", 0.3), ("both", 0.4)),
    0.35, 0.0, False, "arena_user_{:04d}", "arena-{:06d}",
)  # fmt: skip
PRISM = Recipe(
    "prism", "prism", 300, (3, 10), 0.10, 0.30, (("fit", 0.5), ("quality", 0.1), ("both", 0.4)),
    0.25, 0.3, True, "user{:04d}", "c{:05d}",
)  # fmt: skip


@dataclass(frozen=True)
class Voter:
    """A comparison user: hidden aspects (``user``) and hidden weights; judges and tests only."""

    user: SandboxUser
    w_quality: float
    w_fit: float
    n_pairs: int

    @property
    def user_id(self) -> str:
        return self.user.user_id

    def utility(self, a: Answer) -> float:
        return self.w_quality * a.quality + self.w_fit * a.fit


@dataclass(frozen=True)
class Answer:
    """One answer of a pair with its hidden quality (0/1) and fit (share of the user's aspects met)."""

    text: str
    quality: int
    fit: float


@dataclass(frozen=True)
class Question:
    """A user turn: a general task (``task`` its kind) or a personal question (``task`` "personal")."""

    text: str
    task: str
    general: Task | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Vote:
    """One compared turn: the conversation so far, the two answers and the user's noisy vote."""

    conversation_id: str
    user_id: str
    context: tuple[tuple[str, str], ...]  # (role, content), ends with the user's question
    a: Answer
    b: Answer
    kind: str  # quality | fit | both
    task: str  # fact | math | constraints | safety | personal
    chose_a: bool
    flip: bool
    split: str  # the row's own `split` column
    scores: tuple[float, float] | None = None  # (chosen, rejected) ratings, PRISM only

    @property
    def chosen(self) -> Answer:
        return self.a if self.chose_a else self.b

    @property
    def rejected(self) -> Answer:
        return self.b if self.chose_a else self.a

    @property
    def turns(self) -> int:
        return sum(role == USER for role, _ in self.context)


def fit_of(text: str, aspects: Sequence[Pole]) -> float:
    """Share of ``aspects`` that ``text`` satisfies (the fit of an answer for its user)."""
    return sum(p.check(text) for p in aspects) / len(aspects)


def row_splits(n: int) -> list[str]:
    """The `split` column of a user's ``n`` pairs in order: last ceil(n/3) test, one val (n >= 3)."""
    n_test = max(1, math.ceil(n / 3))
    n_val = 1 if n >= 3 else 0
    return ["train"] * (n - n_test - n_val) + ["val"] * n_val + ["test"] * n_test


def reserve_questions(registry: PromptRegistry, owners: Sequence[str], rng: random.Random) -> dict[str, dict[str, int]]:
    """Split every site's still-free benchmark questions between ``owners`` and claim them.

    Why: personal questions use the benchmark templates, of which PRB already holds most; without
    a split, the first dataset built would take nearly all that is left on some sites and the
    second could not ask about them. Returns owner -> site -> questions reserved.
    """
    held: dict[str, dict[str, int]] = {o: {} for o in owners}
    for name in sorted(SITES):
        free = [q for q in question_slots(SITES[name], "bench") if registry.owner(q) is None]
        rng.shuffle(free)
        for i, q in enumerate(free):
            owner = owners[i % len(owners)]
            if not registry.claim(q, owner):
                raise RuntimeError(f"question {q!r} was claimed twice")
            held[owner][name] = held[owner].get(name, 0) + 1
    return held


def make_voters(recipe: Recipe, knobs: Knobs, rng: random.Random, held: Mapping[str, int]) -> list[Voter]:
    """The users of one comparison set, domains in turn, each on a site with reserved questions."""
    balancer = PoleBalancer()
    voters = []
    for i in range(recipe.n_users):
        domain = PRB_DOMAINS[i % len(PRB_DOMAINS)]
        sites = [s for s in SITES_BY_DOMAIN[domain] if held.get(s, 0) >= MIN_SITE_QUESTIONS]
        user = make_user(recipe.user_id(i + 1), domain, knobs, balancer, rng, category=rng.choice(sites))
        w_quality, w_fit = rng.uniform(*WEIGHT_RANGE), rng.uniform(*WEIGHT_RANGE)
        n = 1 if rng.random() < recipe.single_share else rng.randint(*recipe.pairs)
        voters.append(Voter(user, w_quality, w_fit, n))
    return voters


def ask(recipe: Recipe, voter: Voter, world: World, rng: random.Random, like: Question | None = None) -> Question:
    """The voter's next question; a follow-up (``like``) stays general/personal and keeps the task kind."""
    if like is not None:
        task = like.task
    elif rng.random() < recipe.general_share:
        task = rng.choice(GENERAL_TASKS)
    else:
        task = "personal"
    if task == "personal":
        site = SITES[voter.user.category]
        for _ in range(20):  # a follow-up asks something new
            text = draw_question(site, "bench", rng, world.registry, recipe.name)
            if like is None or text != like.text:
                break
        return Question(text, task)
    t = draw_task(task, "bench", world.kb, world.knobs, rng, world.registry, recipe.name, unique=False)
    return Question(t.prompt, task, t)


def general_pair(
    task: Task, aspects: Sequence[Pole], rng: random.Random, tries: int = 30
) -> tuple[Answer, Answer] | None:
    """(right, wrong) for a general task: verified, length-matched and equal in fit where possible;
    ``None`` when no verified pair comes out (a few constraint tasks cannot be met or missed).

    Fit is measured anyway, so the rare pair whose answers land in different style states (a
    length band, a contraction read as casual) is kept with its true fit after ``tries`` draws.
    """
    last = None
    for _ in range(tries):
        right, wrong = matched([task.right, task.wrong], rng)
        if not is_correct(verifier_score(right, task.hidden)) or is_correct(verifier_score(wrong, task.hidden)):
            continue
        last = Answer(right, 1, fit_of(right, aspects)), Answer(wrong, 0, fit_of(wrong, aspects))
        if last[0].fit == last[1].fit:
            return last
    return last


def _off_topic(site_name: str, rng: random.Random) -> Content:
    """An answer's content about a topic of another site: it does not address the question."""
    other = SITES[rng.choice([s for s in sorted(SITES) if s != site_name])]
    return make_content("answer", rng.choice(other.topics), other, rng)


def render_two(
    contents: tuple[Content, Content],
    sides: tuple[Mapping[str, int], Mapping[str, int]],
    knobs: Knobs,
    rng: random.Random,
    tries: int = 60,
) -> tuple[str, str]:
    """Render two contents so each lands on its ``sides`` (dimension -> pole) and both share every
    other dimension's state (checked; background and intensity are redrawn until it holds)."""
    dims = set(sides[0])
    others = [d.name for d in DIMENSIONS if d.name not in dims]
    quiet = any(s.get("length") == 0 for s in sides)  # a brief answer has no room for extras
    for attempt in range(tries):
        bg = background_style(dims, rng, quiet=quiet or attempt > tries // 2)
        texts = [render(c, {**bg, **s}, knobs.intensity(rng), rng) for c, s in zip(contents, sides, strict=True)]
        ok = all(dimension_state(d, t) == s[d] for t, s in zip(texts, sides, strict=True) for d in dims)
        if ok and all(dimension_state(d, texts[0]) == dimension_state(d, texts[1]) for d in others):
            return texts[0], texts[1]
    raise RuntimeError(f"could not render two answers on sides {sides}")


def personal_pair(kind: str, question: str, voter: Voter, knobs: Knobs, rng: random.Random) -> tuple[Answer, Answer]:
    """Two answers to a personal question; the first is the on-topic one (or the fitting one for
    ``fit``). ``fit``: same content, user's poles vs opposite poles; ``quality``: one shared style,
    on-topic vs off-topic content; ``both``: fit and quality winners drawn independently."""
    aspects = voter.user.aspects
    site = voter.user.category
    on = answer_content(question, SITES[site], rng)
    if kind == "fit":
        good, bad = render_pair(on, aspects, knobs, rng)
        return Answer(good, 1, fit_of(good, aspects)), Answer(bad, 1, fit_of(bad, aspects))
    own = {p.dim: p.side for p in aspects}
    if kind == "quality":
        shared = {p.dim: rng.randrange(2) for p in aspects}
        sides = (shared, shared)
    else:
        opposite = {d: 1 - s for d, s in own.items()}
        sides = (own, opposite) if rng.random() < 0.5 else (opposite, own)
    t_on, t_off = render_two((on, _off_topic(site, rng)), sides, knobs, rng)
    return Answer(t_on, 1, fit_of(t_on, aspects)), Answer(t_off, 0, fit_of(t_off, aspects))


def cast_vote(voter: Voter, a: Answer, b: Answer, tau: float, rng: random.Random) -> bool:
    """True when the voter picks ``a``: P = sigmoid((u_a - u_b) / tau)."""
    z = (voter.utility(a) - voter.utility(b)) / tau
    return rng.random() < 1.0 / (1.0 + math.exp(-z))


def ratings(voter: Voter, chosen: Answer, rejected: Answer, rng: random.Random) -> tuple[float, float]:
    """The voter's 1-100 ratings (chosen, rejected): utility mapped to 10-90 plus noise; the chosen
    answer gets the higher of the two, as in PRISM where the chosen answer is the top-rated one."""
    mid = (voter.w_quality + voter.w_fit) / 2

    def rate(a: Answer) -> int:
        return min(100, max(1, round(50 + 40 * (voter.utility(a) - mid) / mid + rng.gauss(0.0, RATING_NOISE))))

    c, r = rate(chosen), rate(rejected)
    return float(max(c, r)), float(min(c, r))


def _turn(
    recipe: Recipe, voter: Voter, world: World, rng: random.Random, like: Question | None
) -> tuple[Question, str, Answer, Answer]:
    """The next question, its pair kind and its two answers (in random order: position carries no
    signal). A general task without a verifiable pair is replaced by another one."""
    for _ in range(50):
        q = ask(recipe, voter, world, rng, like=like)
        if q.general is None:
            kinds, weights = zip(*recipe.personal_kinds, strict=True)
            kind = rng.choices(kinds, weights)[0]
            pair = personal_pair(kind, q.text, voter, world.knobs, rng)
        else:
            kind = "quality"
            got = general_pair(q.general, voter.user.aspects, rng)
            if got is None:
                continue
            pair = got
        a, b = pair if rng.random() < 0.5 else pair[::-1]
        return q, kind, a, b
    raise RuntimeError(f"no verifiable general pair for {voter.user_id}")


def user_votes(
    recipe: Recipe, voter: Voter, world: World, conversation_ids: Iterator[str], rng: random.Random
) -> list[Vote]:
    """The voter's pairs in chronological order (see module doc and :func:`row_splits`)."""
    votes: list[Vote] = []
    prev: tuple[Question, Vote] | None = None
    for split in row_splits(voter.n_pairs):
        follow = prev is not None and prev[1].turns == 1 and rng.random() < recipe.continue_prob
        q, kind, a, b = _turn(recipe, voter, world, rng, like=prev[0] if follow and prev else None)
        chose_a = cast_vote(voter, a, b, recipe.tau, rng)
        flip = rng.random() < 0.5
        if follow and prev is not None:
            last = prev[1]
            context = (*last.context, (MODEL, last.chosen.text), (USER, q.text))
            cid = last.conversation_id
        else:
            context, cid = ((USER, q.text),), next(conversation_ids)
        vote = Vote(cid, voter.user_id, context, a, b, kind, q.task, chose_a, flip, split)
        if recipe.ratings:
            vote = replace(vote, scores=ratings(voter, vote.chosen, vote.rejected, rng))
        votes.append(vote)
        prev = (q, vote)
    return votes
