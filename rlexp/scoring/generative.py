"""Generative (LLM-as-a-judge) reward models.

:class:`GenerativeJudge` prompts a :class:`~rlexp.models.chat_lm.ChatLM` in the ways the two benchmarks use a generative judge:

* RB2 *ratings* mode (RB2 reference §2.4): one call per completion, a short explanation and then a
  1-10 rating; the judge is a :class:`~rlexp.scorer.Scorer` in this mode, so Best-of-N and PPO
  can use it like any reward model. A Ties variant of the prompt tells it to ignore depth and detail.
* RB2 *rankings* mode: all four answers in one MT-Bench-style prompt, verdict ``[[A]]`` .. ``[[D]]``.
  Unlike the reference, which draws the correct answer's slot from numpy's unseeded global RNG, the
  slot comes from a generator seeded per item by ``(seed, item id)``, so a run is reproducible and
  does not depend on item order.
* PRB *pairwise* mode (PRB reference §3.2): two answers, ``Result: A`` / ``Result: B``.
  :func:`judge_prb_pairs` reports accuracy under both failure policies (PRB §10.8), since the
  reference's "failure -> A" rule biases results towards slot A.

The parsing and scoring arithmetic lives in :mod:`rlexp.benchmarks.rewardbench2_math` and
:mod:`rlexp.benchmarks.personalized_math`; this module only builds prompts and calls the model.
Every parse failure is counted in ``stats.parse_failures``.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlexp.benchmarks.personalized_math import pairwise_judge_summary, parse_pairwise_verdict, seeded_positions
from rlexp.benchmarks.rewardbench2_math import (
    INVALID_RATING,
    parse_ranking_verdict,
    parse_rating,
    rankings_credit,
    ratings_credit,
)
from rlexp.config.nodes import ProfileConfig
from rlexp.data.formatting import Planner, rm_user_turn
from rlexp.data.schemas import ProfilePost
from rlexp.errors import ConfigError, DataError
from rlexp.models.chat_lm import ChatLM, Messages
from rlexp.scorer import ScoreInput, ScoreStats

log = logging.getLogger("rlexp")

RANKING_LETTERS: tuple[str, ...] = ("A", "B", "C", "D")


# --------------------------------------------------------------------------------------------
# prompts (our own wording; the formats follow the references so their parsers apply)
# --------------------------------------------------------------------------------------------

RATING_SYSTEM = (
    "You are an impartial judge. Read the user's question and one AI assistant's answer, and rate how "
    "well the answer serves the user: consider helpfulness, relevance, accuracy, depth and level of "
    "detail.{ties} Be objective. First give a short explanation (a few sentences). Then end your reply "
    "with the rating alone on the last line, as an integer from 1 (worst) to 10 (best), for example:\n"
    "Rating: 7"
)
# RB2 Ties: several answers are equally correct, so the judge must not reward length (RB2 §2.4).
TIES_CLAUSE = (
    " Several different answers can be equally correct: judge only whether this answer is correct, and "
    "do not let its depth, length or level of detail change the rating."
)
RATING_USER = "[Question]\n{question}\n\n[Start of the assistant's answer]\n{answer}\n[End of the assistant's answer]"

RANKING_SYSTEM = (
    "You are an impartial judge. Compare the answers four AI assistants gave to the user question below "
    "and decide which assistant follows the user's instructions and answers the question best, "
    "considering helpfulness, relevance, accuracy, depth, creativity and level of detail. Start with a "
    "short explanation comparing the four answers. The order in which the answers appear, their length "
    "and the assistants' names must not influence you. Be objective. After the explanation, give your "
    'final verdict in exactly this format: "[[A]]" if assistant A is best, "[[B]]" if assistant B is '
    'best, "[[C]]" if assistant C is best, "[[D]]" if assistant D is best.'
)

PAIRWISE_SYSTEM = (
    "You judge which of two answers better fits one particular user. Each question comes from a user "
    "with personal needs and expectations; pick the answer that best covers the aspects this user "
    "expects from a good answer, as far as the question (and any information about the user) reveals "
    "them. Do not let the order of the answers or their length influence you. Reply in exactly this "
    "format:\n"
    "Reasoning: <at most 100 words>\n"
    "Result: A or B"
)


def _fence(text: str) -> str:
    """``text`` in a fenced block whose fence is longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


def _item_key(item_id: str | int) -> int:
    # Python's hash() is salted per process; a digest keeps the slot stable across runs.
    return int.from_bytes(hashlib.sha256(str(item_id).encode("utf-8")).digest()[:8], "little")


def seeded_slot(seed: int, item_id: str | int, n: int = 4) -> int:
    """The slot (0-based) the correct answer takes among ``n``, from a generator seeded by ``(seed, item id)``."""
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFFFFFFFFFF, _item_key(item_id)])
    return int(rng.integers(n))


def _as_posts(profile: Any, where: str) -> tuple[ProfilePost, ...]:
    """Profile posts from records or plain dicts (rendering needs ``category`` and ``text``)."""
    posts = []
    for j, p in enumerate(profile or ()):
        if isinstance(p, ProfilePost):
            posts.append(p)
        elif isinstance(p, Mapping):
            try:
                posts.append(ProfilePost(category=str(p["category"]), id=str(p.get("id", j)), text=str(p["text"])))
            except KeyError as exc:
                raise DataError(f"{where}: profile[{j}] has no {exc.args[0]!r}") from None
        else:
            raise DataError(f"{where}: profile[{j}] is a {type(p).__name__}, expected a post")
    return tuple(posts)


# --------------------------------------------------------------------------------------------
# the judge
# --------------------------------------------------------------------------------------------


@dataclass
class JudgeSettings:
    """How a generative judge is prompted and sampled; every field is recorded with the results.

    How the user's profile reaches the judge is the same :class:`~rlexp.config.nodes.ProfileConfig` every
    scorer takes, passed beside these settings."""

    max_new_tokens: int = 512  # PRB pairwise uses 512; RB2's vLLM runs allow 2,048
    temperature: float = 0.0  # both references judge greedily
    seed: int = 0  # sampling seed, and the default seed of the rankings-mode placement
    batch_size: int | None = None  # None: the ChatLM's own
    ties_prompt: bool = False  # RB2 Ties variant of the ratings prompt
    strict_parsing: bool = False  # reference-exact parsers (rating must end the text; one verdict only)


class GenerativeJudge:
    """An LLM judge; as a :class:`~rlexp.scorer.Scorer` it runs RB2 ratings mode.

    ``score`` returns each response's 1-10 rating, or -1 when the output has none (counted in
    ``stats.parse_failures``). :meth:`rank_rb2` and :meth:`pairwise` run the other two modes.
    """

    def __init__(
        self,
        lm: ChatLM,
        settings: JudgeSettings | None = None,
        profile: ProfileConfig | None = None,
        *,
        name: str | None = None,
        planner: Planner | None = None,
    ) -> None:
        self.lm = lm
        self.settings = settings or JudgeSettings()
        self.profile = profile or ProfileConfig()
        self.name = name or lm.name
        self.planner = planner
        self.stats = ScoreStats()
        self.stats.extra["calls"] = 0
        # Fail on a missing planner now rather than at the first item (ProfileConfig checks the mode).
        if self.profile.mode == "planner" and planner is None:
            raise ConfigError(
                f"generative judge {self.name}: profile mode 'planner' needs a planner (none was configured)"
            )

    # -- shared --------------------------------------------------------------------------------
    def user_turn(self, question: str, profile: Sequence[ProfilePost]) -> str:
        """The question as the judge sees it, with the profile per the configured mode."""
        p = self.profile
        return rm_user_turn(question, profile, str(p.mode), k=p.k, separator=p.separator, planner=self.planner)

    def _generate(self, prompts: list[Messages], seed: int | None = None) -> list[str]:
        s = self.settings
        before = self.lm.truncated
        out = self.lm.generate(
            prompts,
            max_new_tokens=s.max_new_tokens,
            temperature=s.temperature,
            seed=s.seed if seed is None else seed,
            batch_size=s.batch_size,
        )
        self.stats.truncated += self.lm.truncated - before
        self.stats.extra["calls"] += len(prompts)
        return out

    # -- RB2 ratings mode -------------------------------------------------------------------------
    def rating_messages(self, item: ScoreInput) -> Messages:
        system = RATING_SYSTEM.format(ties=TIES_CLAUSE if self.settings.ties_prompt else "")
        user = RATING_USER.format(question=self.user_turn(item.prompt, item.profile), answer=item.response)
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def score(self, items: Sequence[ScoreInput]) -> np.ndarray:
        """One rating per item (-1 where none could be parsed), in input order."""
        outputs = self._generate([self.rating_messages(it) for it in items])
        ratings = np.array(
            [parse_rating(o, strict_trailing=self.settings.strict_parsing) for o in outputs], dtype=np.float64
        )
        self.stats.items += len(items)
        self.stats.parse_failures += int((ratings == INVALID_RATING).sum())
        return ratings

    def rate_rb2(self, item_prompt: str, completions: Sequence[str], num_correct: int = 1) -> tuple[float, list[int]]:
        """RB2 ratings-mode credit for one prompt (completions laid out ``chosen + rejected``) and the ratings."""
        if not completions:
            raise DataError(f"{self.name}: rate_rb2 needs at least one completion")
        ratings = [int(r) for r in self.score([ScoreInput(prompt=item_prompt, response=c) for c in completions])]
        return ratings_credit(ratings, num_correct), ratings

    # -- RB2 rankings mode ------------------------------------------------------------------------
    def ranking_messages(self, item_prompt: str, answers: Sequence[str]) -> Messages:
        if len(answers) != len(RANKING_LETTERS):
            raise DataError(f"{self.name}: rankings mode shows exactly 4 answers, got {len(answers)}")
        blocks = [f"[User Question]\n{item_prompt}"]
        for letter, answer in zip(RANKING_LETTERS, answers, strict=True):
            blocks.append(
                f"[The Start of Assistant {letter}'s Answer]\n{answer}\n[The End of Assistant {letter}'s Answer]"
            )
        return [{"role": "system", "content": RANKING_SYSTEM}, {"role": "user", "content": "\n\n".join(blocks)}]

    def place_rb2(
        self,
        completions: Sequence[str],
        correct_index: int = 0,
        seed: int | None = None,
        *,
        item_id: str | int | None = None,
        item_prompt: str = "",
    ) -> tuple[list[str], str]:
        """The four answers in display order and the letter of the correct one.

        The correct answer goes to :func:`seeded_slot` (keyed by ``item_id``, or by the prompt text
        when there is no id); the others keep their relative order around it.
        """
        if len(completions) != len(RANKING_LETTERS):
            raise DataError(f"{self.name}: rankings mode needs exactly 4 completions, got {len(completions)}")
        if isinstance(correct_index, bool) or not 0 <= correct_index < len(completions):
            raise DataError(f"{self.name}: correct_index={correct_index!r} is out of range for 4 completions")
        seed = self.settings.seed if seed is None else seed
        slot = seeded_slot(seed, item_prompt if item_id is None else item_id, len(completions))
        others = [c for j, c in enumerate(completions) if j != correct_index]
        shown = others[:slot] + [completions[correct_index]] + others[slot:]
        return shown, RANKING_LETTERS[slot]

    def rank_rb2(
        self,
        item_prompt: str,
        completions: Sequence[str],
        correct_index: int = 0,
        seed: int | None = None,
        *,
        item_id: str | int | None = None,
    ) -> tuple[float, str | None]:
        """RB2 rankings-mode credit (1, 0, or 0.25 when unparsable) and the parsed verdict letter."""
        shown, correct_letter = self.place_rb2(
            completions, correct_index, seed, item_id=item_id, item_prompt=item_prompt
        )
        (output,) = self._generate([self.ranking_messages(item_prompt, shown)], seed=seed)
        verdict = parse_ranking_verdict(output, strict=self.settings.strict_parsing)
        self.stats.items += 1
        if verdict is None:
            self.stats.parse_failures += 1
        return rankings_credit(verdict, correct_letter), verdict

    # -- PRB pairwise mode ----------------------------------------------------------------------
    def pairwise_messages(
        self, question: str, profile: Sequence[ProfilePost], response_a: str, response_b: str
    ) -> Messages:
        user = (
            f"Question:\n{self.user_turn(question, _as_posts(profile, f'{self.name} pairwise'))}\n\n"
            f"Response A:\n{_fence(response_a)}\n\n"
            f"Response B:\n{_fence(response_b)}"
        )
        return [{"role": "system", "content": PAIRWISE_SYSTEM}, {"role": "user", "content": user}]

    def pairwise_many(
        self, rows: Sequence[tuple[str, Sequence[ProfilePost], str, str]]
    ) -> list[tuple[str | None, str]]:
        """``(verdict, raw output)`` for each ``(question, profile, response_a, response_b)``; batched."""
        outputs = self._generate([self.pairwise_messages(q, p, a, b) for q, p, a, b in rows])
        verdicts = [parse_pairwise_verdict(o) for o in outputs]
        self.stats.items += len(rows)
        self.stats.parse_failures += sum(1 for v in verdicts if v is None)
        return list(zip(verdicts, outputs, strict=True))

    def pairwise(self, question: str, profile: Sequence[ProfilePost], response_a: str, response_b: str) -> str | None:
        """``"A"``, ``"B"``, or None when the output has no usable ``Result:`` line."""
        return self.pairwise_many([(question, profile, response_a, response_b)])[0][0]


def _pair_fields(item: Any, i: int) -> tuple[str, str, tuple[ProfilePost, ...], str, str]:
    """``(id, question, profile, chosen, rejected)`` from a PRBItem-like record or a dict."""

    def get(name: str, *alts: str, default: Any = None) -> Any:
        for key in (name, *alts):
            if isinstance(item, Mapping) and key in item:
                return item[key]
            if not isinstance(item, Mapping) and hasattr(item, key):
                return getattr(item, key)
        return default

    item_id = str(get("id", default=i))
    where = f"PRB item {item_id!r}"
    question = get("question", "prompt")
    chosen, rejected = get("chosen"), get("rejected")
    for field_name, value in (("question", question), ("chosen", chosen), ("rejected", rejected)):
        if not isinstance(value, str):
            raise DataError(f"{where}: missing or non-string field '{field_name}'")
    return item_id, question, _as_posts(get("profile", default=()), where), chosen, rejected


def judge_prb_pairs(judge: GenerativeJudge, items: Sequence[Any], seed: int = 42) -> dict[str, Any]:
    """Run a pairwise judge over PRB pairs, once each, ``chosen`` in slot A or B per :func:`seeded_positions`.

    Returns ``n``, ``seed``, ``parse_failures``, ``reference`` and ``exclude`` (the
    :func:`pairwise_judge_summary` under each failure policy) and ``per_item``: for each item its
    ``id``, ``chosen_in_a``, ``verdict`` (None on a parse failure), ``correct`` (None on a parse
    failure) and the raw ``output``.
    """
    if len(items) == 0:
        raise DataError("judge_prb_pairs: no items")
    fields = [_pair_fields(it, i) for i, it in enumerate(items)]
    positions = seeded_positions(len(fields), seed)
    rows = [
        (q, profile, chosen, rejected) if in_a else (q, profile, rejected, chosen)
        for (_, q, profile, chosen, rejected), in_a in zip(fields, positions, strict=True)
    ]
    results = judge.pairwise_many(rows)
    verdicts = [v for v, _ in results]
    per_item = [
        {
            "id": f[0],
            "chosen_in_a": in_a,
            "verdict": v,
            "correct": None if v is None else (v == "A") == in_a,
            "output": out,
        }
        for f, in_a, (v, out) in zip(fields, positions, results, strict=True)
    ]
    return {
        "n": len(items),
        "seed": seed,
        "parse_failures": sum(1 for v in verdicts if v is None),
        "reference": pairwise_judge_summary(verdicts, positions, "reference"),
        "exclude": pairwise_judge_summary(verdicts, positions, "exclude"),
        "per_item": per_item,
    }


__all__ = [
    "GenerativeJudge",
    "JudgeSettings",
    "RANKING_LETTERS",
    "judge_prb_pairs",
    "seeded_slot",
]
