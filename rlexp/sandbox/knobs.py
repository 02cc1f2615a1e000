"""How the difficulty knob (a float in [0, 1], default 0.5) shapes the sandbox world.

All difficulty-dependent probabilities live here so the manifest can record them and a reader
can see in one place what "harder" means:

- personal styles are marked with fewer cue phrases (``intensity``);
- personal pairs differ more often on dimensions unrelated to the user (``distractor_prob``), so
  a scorer that attends to the wrong aspects is misled;
- profiles follow the user's hidden aspects less reliably (``profile_follow``), so the planner
  and any profile-reading scorer infer them less well;
- wrong general answers carry a tell-tale hedge/bluff cue less often and correct answers carry a
  misleading one more often (``wrong_cue_prob`` / ``right_cue_prob``), so lexical shortcuts help
  less and knowledge/verification is needed more.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Knobs:
    """Concrete probabilities derived from the difficulty."""

    difficulty: float
    intensity_p: float  # each of two extra marker phrases is added with this probability
    profile_follow: float  # a profile post shows the user's pole with this probability
    profile_opposite: float  # ... and the opposite pole with this probability (else neutral)
    distractor_prob: float  # in a personal pair, an unrelated dimension differs at random
    wrong_cue_prob: float  # a wrong general answer carries a hedge/bluff cue
    right_cue_prob: float  # a correct general answer carries a (misleading) hedge

    def to_dict(self) -> dict[str, float]:
        return {k: round(v, 6) for k, v in asdict(self).items()}

    def intensity(self, rng: random.Random) -> int:
        """Number of marker phrases (1-3) for one marked pole."""
        return 1 + (rng.random() < self.intensity_p) + (rng.random() < self.intensity_p)


def knobs_for(difficulty: float) -> Knobs:
    """Map the difficulty in [0, 1] to the generator probabilities (see module doc)."""
    d = min(1.0, max(0.0, float(difficulty)))
    follow = 0.95 - 0.3 * d
    return Knobs(
        difficulty=d,
        intensity_p=0.85 * (1.0 - d),
        profile_follow=follow,
        profile_opposite=(1.0 - follow) * 0.5,
        distractor_prob=0.1 + 0.3 * d,
        wrong_cue_prob=0.85 - 0.5 * d,
        right_cue_prob=0.03 + 0.2 * d,
    )
