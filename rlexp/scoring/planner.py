"""Planners: infer a user's rubric aspects from their profile, for the ``planner`` profile mode.

The sandbox planner reads the profile text with no LM; the LM planner prompts a causal LM like
LaMP-QA's PlanPers (question + top-k posts -> bulleted aspects).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from rlexp.data.formatting import Planner, top_posts
from rlexp.data.schemas import ProfilePost
from rlexp.errors import ConfigError
from rlexp.sandbox.planner import format_plan, infer_aspects

PLANPERS_SYSTEM = (
    "Given a user's past questions and their current question, list the aspects this user "
    "probably expects a good answer to have. Answer with one sentence, then one bulleted line per aspect."
)


def sandbox_planner(question: str, posts: Sequence[ProfilePost]) -> str:
    """Aspect titles inferred from the profile text by the sandbox's checkers (no LM)."""
    return _sandbox_plan(tuple(posts))


@lru_cache(maxsize=16384)
def _sandbox_plan(posts: tuple[ProfilePost, ...]) -> str:
    # Memoised for the same reason as the post ranking: the same profile is planned for every
    # sample of a pool and every RM.
    return format_plan(infer_aspects(posts))


class LMPlanner:
    """PlanPers-style planner: a chat LM reads the top-k posts and the question, writes the aspects."""

    def __init__(self, model: Any, tokenizer: Any, *, k: int = 10, max_new_tokens: int = 64) -> None:
        if not getattr(tokenizer, "chat_template", None):
            raise ConfigError("the LM planner's tokenizer has no chat template")
        self.model, self.tokenizer, self.k, self.max_new_tokens = model.eval(), tokenizer, k, max_new_tokens

    def prompt(self, question: str, posts: Sequence[ProfilePost]) -> str:
        past = "\n".join(f"- {p.text}" for p in top_posts(posts, self.k, question))
        return f"{PLANPERS_SYSTEM}\n\n# Past questions\n{past}\n\n# Current question\n{question}"

    def __call__(self, question: str, posts: Sequence[ProfilePost]) -> str:
        import torch

        messages = [{"role": "user", "content": self.prompt(question, posts)}]
        enc = self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        with torch.inference_mode():
            out = self.model.generate(
                **enc, do_sample=False, max_new_tokens=self.max_new_tokens, pad_token_id=self.tokenizer.pad_token_id
            )
        return self.tokenizer.decode(out[0, enc["input_ids"].shape[1] :], skip_special_tokens=True).strip()


def make_planner(mode: str, planner: str = "sandbox", lm: tuple[Any, Any] | None = None, k: int = 10) -> Planner | None:
    """The planner a profile config asks for (None unless ``mode == 'planner'``)."""
    if mode != "planner":
        return None
    if planner == "sandbox":
        return sandbox_planner
    if planner == "lm":
        if lm is None:
            raise ConfigError("profile.planner=lm needs a planner model (profile.planner_model)")
        return LMPlanner(*lm, k=k)
    raise ConfigError(f"profile.planner={planner!r} is not one of sandbox, lm")
