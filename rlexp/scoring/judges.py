"""Gold judges as scorers: what downstream Best-of-N and PPO results are measured with.

* :class:`AspectLLMJudge` - LaMP-QA's per-aspect metric (PRB reference §2): one LLM call per rubric
  aspect with the question, the user's narrative, the response and the aspect (+ reason, evidence);
  the call returns ``{"match_score": 0|1|2}`` and ``s(q) = sum m_a / (2 |A_q|)`` in [0, 1].
* :class:`PRBListJudge` - PRB's simpler downstream variant: one call per response listing only the
  aspect titles, a list of 0-2 scores back, the mean of the list (0-2, not divided by 2 unless
  ``normalise=True``). Unlike the reference (§10.9) the list's length is validated and retried.
* :class:`SandboxJudge` - any ``fn(response, hidden) -> float`` (the sandbox's programmatic judges).
* :class:`RMGoldJudge` - any scorer, renamed as a gold judge.

Both LLM judges read only ``ScoreInput.hidden`` for the rubric, never the profile, and retry a
parse failure with the temperature raised by 0.1 per try (LaMP-QA's rule), seeded, so a run is
reproducible. An output still unusable after the last try scores 0 and is counted in
``stats.parse_failures``; ``stats.extra["retries"]`` counts the extra calls.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from rlexp.errors import ConfigError, DataError
from rlexp.models.chat_lm import ChatModel, Messages
from rlexp.scorer import ScoreInput, Scorer, ScoreStats, check_scorer
from rlexp.scoring.judge_parsing import parse_match_score, parse_score_list

# --------------------------------------------------------------------------------------------
# shared retry loop
# --------------------------------------------------------------------------------------------


def _check_tries(max_tries: int, temperature_step: float, max_new_tokens: int, who: str) -> None:
    if isinstance(max_tries, bool) or not isinstance(max_tries, int) or max_tries < 1:
        raise ConfigError(f"{who}: max_tries must be a positive integer, got {max_tries!r}")
    if not temperature_step >= 0:
        raise ConfigError(f"{who}: temperature_step must be >= 0, got {temperature_step!r}")
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ConfigError(f"{who}: max_new_tokens must be a positive integer, got {max_new_tokens!r}")


def _generate_with_retries(
    lm: ChatModel,
    prompts: list[Messages],
    parse: Callable[[int, str], Any],
    *,
    max_tries: int,
    temperature_step: float,
    max_new_tokens: int,
    seed: int,
    stats: ScoreStats,
) -> list[Any]:
    """Parsed results per prompt (None where every try failed).

    Try ``t`` (0-based) runs at temperature ``t * temperature_step`` with seed ``seed + t``, and
    only for the prompts still unparsed, so the retries stay batched. ``parse(i, text)`` returns
    None to ask for a retry.
    """
    results: list[Any] = [None] * len(prompts)
    pending = list(range(len(prompts)))
    for attempt in range(max_tries):
        if not pending:
            break
        before = lm.truncated
        outputs = lm.generate(
            [prompts[i] for i in pending],
            max_new_tokens=max_new_tokens,
            # round(): 0.1 * 3 is 0.30000000000000004, and the temperature is recorded.
            temperature=round(attempt * temperature_step, 6),
            seed=seed + attempt,
        )
        stats.truncated += lm.truncated - before
        stats.extra["calls"] = stats.extra.get("calls", 0) + len(pending)
        if attempt:
            stats.extra["retries"] = stats.extra.get("retries", 0) + len(pending)
        still = []
        for i, text in zip(pending, outputs, strict=True):
            parsed = parse(i, text)
            if parsed is None:
                still.append(i)
            else:
                results[i] = parsed
        pending = still
    stats.parse_failures += len(pending)
    served_counts(lm, stats)
    return results


def served_counts(lm: Any, stats: ScoreStats) -> None:
    """A served judge's HTTP requests and cache hits so far, in ``stats.extra["served"]`` (the record's
    scorer_stats): how much a run asked the server and how much it read from the cache. A local model
    has neither."""
    if hasattr(lm, "cache_hits") and hasattr(lm, "requests"):
        stats.extra["served"] = {"requests": int(lm.requests), "cache_hits": int(lm.cache_hits)}


class _RetryingJudge:
    """What the LLM gold judges share: a chat model (local or served) asked until its answer parses, with bounded,
    batched retries at rising temperature (:func:`_generate_with_retries`)."""

    def __init__(self, lm: ChatModel, name: str, *, max_new_tokens: int, max_tries: int, temperature_step: float,
                 seed: int, counters: Mapping[str, int]) -> None:
        _check_tries(max_tries, temperature_step, max_new_tokens, name)
        self.lm, self.name = lm, name
        self.max_new_tokens, self.max_tries, self.temperature_step, self.seed = (
            max_new_tokens, max_tries, temperature_step, seed)
        self.stats = ScoreStats()
        self.stats.extra.update(calls=0, retries=0, **counters)

    def _ask(self, prompts: list[Messages], parse: Callable[[int, str], Any]) -> list[Any]:
        return _generate_with_retries(self.lm, prompts, parse, max_tries=self.max_tries,
                                      temperature_step=self.temperature_step, max_new_tokens=self.max_new_tokens,
                                      seed=self.seed, stats=self.stats)


def _field(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _aspects(item: ScoreInput, index: int, who: str) -> list[dict[str, str]]:
    """The rubric aspects of ``item`` as dicts (from dicts or RubricAspect records)."""
    raw = item.hidden.get("rubric_aspects")
    if raw is None or isinstance(raw, (str, bytes)) or len(raw) == 0:
        raise DataError(f"{who}: item {index} has no hidden 'rubric_aspects' to judge against")
    out = []
    for j, a in enumerate(raw):
        title = _field(a, "aspect")
        if not isinstance(title, str) or not title.strip():
            raise DataError(f"{who}: item {index}, rubric_aspects[{j}] has no 'aspect' text")
        out.append(
            {"aspect": title, "reason": str(_field(a, "reason") or ""), "evidence": str(_field(a, "evidence") or "")}
        )
    return out


# --------------------------------------------------------------------------------------------
# LaMP-QA per-aspect judge
# --------------------------------------------------------------------------------------------

ASPECT_SYSTEM = (
    "You evaluate how well a response addresses one specific aspect that a user expects in an answer to "
    "their question. You are given the question, the user's own description of their situation and "
    "needs, the response, and the aspect with the reason it matters to the user and the evidence for "
    "it. Score how well the response covers this aspect only:\n"
    "0 - the response does not address the aspect;\n"
    "1 - the response addresses it partially or superficially;\n"
    "2 - the response addresses it fully and appropriately for this user.\n"
    'Reply with a JSON object only, in exactly this form: {"match_score": 0}'
)
ASPECT_USER = (
    "Question:\n{question}\n\n"
    "User's description of their needs:\n{narrative}\n\n"
    "Response:\n{response}\n\n"
    "Aspect: {aspect}\n"
    "Reason: {reason}\n"
    "Evidence: {evidence}"
)


class AspectLLMJudge(_RetryingJudge):
    """LaMP-QA's aspect-based metric as a scorer: ``sum(match_score) / (2 * n_aspects)`` per item."""

    def __init__(
        self,
        lm: ChatModel,
        *,
        name: str | None = None,
        max_new_tokens: int = 256,
        max_tries: int = 3,
        temperature_step: float = 0.1,
        seed: int = 0,
    ) -> None:
        super().__init__(lm, name or f"aspect-judge:{lm.name}", max_new_tokens=max_new_tokens, max_tries=max_tries,
                         temperature_step=temperature_step, seed=seed, counters={"aspects": 0})

    def messages(self, item: ScoreInput, aspect: Mapping[str, str]) -> Messages:
        user = ASPECT_USER.format(
            question=item.prompt,
            narrative=item.hidden.get("narrative") or "(not given)",
            response=item.response,
            aspect=aspect["aspect"],
            reason=aspect.get("reason") or "(not given)",
            evidence=aspect.get("evidence") or "(not given)",
        )
        return [{"role": "system", "content": ASPECT_SYSTEM}, {"role": "user", "content": user}]

    def aspect_scores(self, items: Sequence[ScoreInput]) -> list[list[int | None]]:
        """Each item's per-aspect ``match_score`` (None where every try failed), in aspect order."""
        owners: list[tuple[int, int]] = []
        prompts: list[Messages] = []
        for i, item in enumerate(items):
            for j, aspect in enumerate(_aspects(item, i, self.name)):
                owners.append((i, j))
                prompts.append(self.messages(item, aspect))
        # All aspects of all items go to the model together: one batched call per try.
        parsed = self._ask(prompts, lambda _i, text: parse_match_score(text))
        out: list[list[int | None]] = [[] for _ in items]
        for (i, _), value in zip(owners, parsed, strict=True):
            out[i].append(value)
        self.stats.extra["aspects"] += len(prompts)
        return out

    def score(self, items: Sequence[ScoreInput]) -> np.ndarray:
        per_item = self.aspect_scores(items)
        self.stats.items += len(items)
        # A failed aspect counts as 0 (LaMP-QA), and is visible in stats.parse_failures.
        return np.array([sum(m or 0 for m in ms) / (2 * len(ms)) for ms in per_item], dtype=np.float64)


# --------------------------------------------------------------------------------------------
# PRB's list judge
# --------------------------------------------------------------------------------------------

LIST_SYSTEM = (
    "You evaluate a response to a user's question against a list of aspects the user expects. For each "
    "aspect, in the order given, score the response: 0 if it does not address the aspect, 1 if it "
    "addresses it partially, 2 if it addresses it fully. Reply with the list of scores only, one per "
    "aspect, as a JSON list such as [2, 0, 1]."
)
LIST_USER = "Question:\n{question}\n\nResponse:\n{response}\n\nAspects ({n}): {aspects}"


class PRBListJudge(_RetryingJudge):
    """PRB's downstream rubric judge: the mean of a 0-2 list, one entry per aspect (0-1 with ``normalise``)."""

    def __init__(
        self,
        lm: ChatModel,
        *,
        name: str | None = None,
        normalise: bool = False,
        max_new_tokens: int = 64,
        max_tries: int = 3,
        temperature_step: float = 0.1,
        seed: int = 0,
    ) -> None:
        # 64 tokens rather than the reference's 32, which can cut a long list short (§10.9).
        super().__init__(lm, name or f"prb-list-judge:{lm.name}", max_new_tokens=max_new_tokens,
                         max_tries=max_tries, temperature_step=temperature_step, seed=seed,
                         counters={"wrong_length": 0})
        self.normalise = normalise

    def messages(self, item: ScoreInput, titles: Sequence[str]) -> Messages:
        user = LIST_USER.format(question=item.prompt, response=item.response, n=len(titles), aspects=", ".join(titles))
        return [{"role": "system", "content": LIST_SYSTEM}, {"role": "user", "content": user}]

    def score_lists(self, items: Sequence[ScoreInput]) -> list[list[int] | None]:
        """Each item's validated score list (one 0/1/2 per aspect), or None after the last failed try."""
        titles = [[a["aspect"] for a in _aspects(item, i, self.name)] for i, item in enumerate(items)]

        def parse(i: int, text: str) -> list[int] | None:
            scores = parse_score_list(text)
            if scores is not None and len(scores) != len(titles[i]):
                # A list of the wrong length cannot be matched to the aspects: retry it.
                self.stats.extra["wrong_length"] += 1
                return None
            return scores

        return self._ask([self.messages(item, t) for item, t in zip(items, titles, strict=True)], parse)

    def score(self, items: Sequence[ScoreInput]) -> np.ndarray:
        lists = self.score_lists(items)
        self.stats.items += len(items)
        # A failed item scores 0, as in the reference, and is counted in stats.parse_failures.
        means = np.array([float(np.mean(s)) if s else 0.0 for s in lists], dtype=np.float64)
        return means / 2.0 if self.normalise else means


# --------------------------------------------------------------------------------------------
# adapters
# --------------------------------------------------------------------------------------------


class SandboxJudge:
    """A programmatic judge ``fn(response, hidden) -> float`` (e.g. the sandbox's rubric/verifier score)."""

    def __init__(self, fn: Callable[[str, dict[str, Any]], float], *, name: str | None = None) -> None:
        if not callable(fn):
            raise ConfigError(f"sandbox judge {name or fn!r}: {fn!r} is not callable")
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "sandbox-judge")
        self.stats = ScoreStats()

    def score(self, items: Sequence[ScoreInput]) -> np.ndarray:
        out = np.empty(len(items), dtype=np.float64)
        for i, item in enumerate(items):
            value = self.fn(item.response, item.hidden)
            try:
                out[i] = float(value)
            except (TypeError, ValueError):
                raise DataError(f"{self.name}: item {i} scored {value!r}, not a number") from None
            if not math.isfinite(out[i]):
                raise DataError(f"{self.name}: item {i} scored {out[i]}, not a finite number")
        self.stats.items += len(items)
        return out


class RMGoldJudge:
    """Any scorer (typically a strong reward model) used as the gold judge, under its own name."""

    def __init__(self, scorer: Scorer, *, name: str | None = None) -> None:
        self.scorer = check_scorer(scorer, "gold judge")
        self.name = name or f"gold:{scorer.name}"

    @property
    def stats(self) -> ScoreStats:
        return self.scorer.stats

    def score(self, items: Sequence[ScoreInput]) -> np.ndarray:
        return self.scorer.score(items)


__all__ = [
    "AspectLLMJudge",
    "PRBListJudge",
    "RMGoldJudge",
    "SandboxJudge",
    "parse_match_score",
    "parse_score_list",
]


PAIR_SYSTEM = "You compare two answers to the same instruction and say which one follows it better."
PAIR_USER = ("Instruction:\n{instruction}\n\nOutput (a):\n{a}\n\nOutput (b):\n{b}\n\n"
             "Which output is better? Reply with the single letter a or b.")
_VERDICT = re.compile(r"^\W*\(?([ab])\b", re.I)


class PairwiseJudge(_RetryingJudge):
    """AlpacaEval's kind of judgement: P(an output beats the reference output) from an LLM.

    Each pair is asked in both orders (an LLM judge prefers one position; AlpacaEval randomises it,
    asking both is the deterministic equivalent), so a preference is 0, 0.5 or 1. An order whose
    answer never parses counts as a tie (0.5) and as a parse failure.
    """

    def __init__(self, lm: ChatModel, *, name: str | None = None, max_new_tokens: int = 4, max_tries: int = 3,
                 temperature_step: float = 0.1, seed: int = 0) -> None:
        super().__init__(lm, name or f"pairwise-judge:{lm.name}", max_new_tokens=max_new_tokens, max_tries=max_tries,
                         temperature_step=temperature_step, seed=seed, counters={})

    def preferences(self, items: Sequence[ScoreInput]) -> np.ndarray:
        """P(``item.response`` beats ``item.hidden['reference']``) for each item, in [0, 1]."""
        def ask(a: str, b: str, instruction: str) -> Messages:
            return [{"role": "system", "content": PAIR_SYSTEM},
                    {"role": "user", "content": PAIR_USER.format(instruction=instruction, a=a, b=b)}]

        prompts = [ask(it.response, it.hidden["reference"], it.prompt) for it in items]
        prompts += [ask(it.hidden["reference"], it.response, it.prompt) for it in items]

        def parse(i: int, text: str) -> str | None:
            found = _VERDICT.match(text.strip())
            return found.group(1).lower() if found else None

        verdicts = self._ask(prompts, parse)
        n = len(items)
        first = np.array([{"a": 1.0, "b": 0.0}.get(v, 0.5) for v in verdicts[:n]])
        second = np.array([{"b": 1.0, "a": 0.0}.get(v, 0.5) for v in verdicts[n:]])
        self.stats.items += n
        return (first + second) / 2.0
