"""Minimal pairs that ask what a sandbox reward model *knows*, apart from the cues it can read.

A tiny RM can pass RewardBench 2's Factuality and Math by reading tells (a hedge on the wrong answer,
"or possibly", "without working it all out") without knowing a single fact. Best-of-N on a policy's
own samples needs the knowledge, because the policy scatters those tells at random. Each family
below is a list of (prompt, better, worse) pairs, better by the verifier; an RM's pairwise accuracy
on a family is the share it orders right (0.5 = chance):

- ``fact/<split>``: one KB attribute stated in the same sentence with the true value and with
  another value of its domain, for the entities of one KB split (``train`` entities appear in the
  RM's preference pairs, ``ds_eval`` ones are the downstream prompts'; every split is in the
  pretraining corpora). Nothing but the value differs.
- ``arithmetic``: single-digit sums and products in the same sentence, right against off by one or two.
- ``<kind>/cues`` and ``<kind>/no cues``: right and wrong answers of the general task generators on
  evaluation phrasings, at the world's difficulty and with ``wrong_cue_prob = right_cue_prob = 0``.
- ``<kind>/train phrasings``: as ``<kind>/cues``, drawn where the RMs' preference pairs come from
  (training template group and entities). Against ``<kind>/cues`` it shows what an RM learned that
  does not carry over to the phrasings the benchmark and the downstream prompts use.

Everything is drawn from the world ``seed`` alone; no RM is looked at.
"""

from __future__ import annotations

import dataclasses
import random
from typing import NamedTuple

from rlexp.sandbox.general_facts import FACT_TEMPLATES, STATEMENTS, subject, wrong_value
from rlexp.sandbox.judges import verifier_score
from rlexp.sandbox.kb import ATTRIBUTES, KnowledgeBase, build_kb
from rlexp.sandbox.knobs import knobs_for
from rlexp.sandbox.rng import make_rng
from rlexp.sandbox.splits import PromptRegistry, draw_task
from rlexp.sandbox.text import capitalise

KINDS: tuple[str, ...] = ("fact", "focus", "math", "constraints", "safety")
FACT_SPLITS: tuple[str, ...] = ("train", "ds_eval")
_OWNER = "probe"


class ProbePair(NamedTuple):
    """A prompt with a better and a worse response (by the verifier)."""

    prompt: str
    better: str
    worse: str


def fact_pairs(kb: KnowledgeBase, split: str, rng: random.Random) -> list[ProbePair]:
    """Every non-year attribute of the ``split`` entities: the same sentence, true value vs another."""
    pairs = []
    for e in kb.of(split):
        big, small = subject(e)
        for attr, dom in ATTRIBUTES[e.kind].items():
            if dom == "year":  # a wrong year is a different number of tokens, not just another value
                continue
            gold = e.get(attr)
            wrong = wrong_value(kb, e, attr, rng)
            sentence = rng.choice(STATEMENTS[attr])
            prompt = rng.choice(FACT_TEMPLATES[attr][0]).format(label=e.label, Label=capitalise(e.label))
            pairs.append(ProbePair(prompt, sentence.format(S=big, s=small, v=gold), sentence.format(S=big, s=small, v=wrong)))
    return pairs


def arithmetic_pairs(rng: random.Random) -> list[ProbePair]:
    """Single-digit sums and products, right against off by one or two, in the same sentence."""
    pairs = []
    for a in range(2, 10):
        for b in range(2, 10):
            for op, val in (("+", a + b), ("×", a * b)):
                bad = val + rng.choice((-2, -1, 1, 2))
                say = "{a} {op} {b} = {v}. The answer is {v}."
                pairs.append(ProbePair(f"What is {a} {op} {b}?", say.format(a=a, op=op, b=b, v=val),
                                       say.format(a=a, op=op, b=b, v=bad)))
    return pairs


def task_pairs(kb: KnowledgeBase, kind: str, difficulty: float, cues: bool, n: int, seed: int,
               where: str = "ds_eval") -> list[ProbePair]:
    """``n`` right/wrong answer pairs of general task ``kind`` drawn as ``where``'s prompts are (the
    downstream evaluation phrasings by default), with the world's cues or without any; pairs the
    verifier does not order (a wrong draw that happens to pass) are skipped."""
    knobs = knobs_for(difficulty)
    if not cues:
        knobs = dataclasses.replace(knobs, wrong_cue_prob=0.0, right_cue_prob=0.0)
    # The same tasks with and without cues; other draws for other phrasings.
    rng = make_rng(seed, "probe", kind) if where == "ds_eval" else make_rng(seed, "probe", kind, where)
    registry = PromptRegistry()
    pairs = []
    for i in range(n):
        kw = {"harmful": i % 2 == 0} if kind == "safety" else {}
        task = draw_task(kind, where, kb, knobs, rng, registry, _OWNER, unique=False, **kw)
        right, wrong = task.right(rng), task.wrong(rng)
        if verifier_score(right, task.hidden) > verifier_score(wrong, task.hidden):
            pairs.append(ProbePair(task.prompt, right, wrong))
    return pairs


def probe_families(seed: int, difficulty: float, n: int = 150) -> dict[str, list[ProbePair]]:
    """Every probe family of world ``seed`` (see module doc), in a fixed order."""
    kb = build_kb(seed)
    out = {f"fact/{s}": fact_pairs(kb, s, make_rng(seed, "probe", "fact", s)) for s in FACT_SPLITS}
    out["arithmetic"] = arithmetic_pairs(make_rng(seed, "probe", "arithmetic"))
    for kind in KINDS:
        for cues in (True, False):
            out[f"{kind}/{'cues' if cues else 'no cues'}"] = task_pairs(kb, kind, difficulty, cues, n, seed)
    for kind in KINDS:
        out[f"{kind}/train phrasings"] = task_pairs(kb, kind, difficulty, True, n, seed, where="train")
    return out
