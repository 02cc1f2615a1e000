"""The policy's SFT corpus: the planned rows teach it to read the user the way sampling shows it."""

from __future__ import annotations

from rlexp.data.formatting import SYSTEM_PERSONALIZED
from rlexp.data.schemas import ProfilePost, PromptItem
from rlexp.downstream.sampling import chat_messages
from rlexp.sandbox.aspects import pole_for_title
from rlexp.sandbox.corpus import PLAN_FOLLOW_SHARE, SFT_COUNTS
from rlexp.sandbox.planner import PLAN_HEADER
from tests.sandbox.conftest import Loaded


def _plan_titles(turn: str) -> list[str]:
    plan = turn.split(PLAN_HEADER, 1)[1]
    return [line[2:] for line in plan.strip().splitlines()]


def test_planned_rows_state_aspects_and_mostly_follow_them(world: Loaded) -> None:
    planned = [r for r in world.sft if r["system"]]
    plain = [r for r in world.sft if not r["system"]]
    assert len(planned) == SFT_COUNTS["planned"]
    assert len(plain) == SFT_COUNTS["general"] + SFT_COUNTS["personal"]
    assert {r["system"] for r in planned} == {SYSTEM_PERSONALIZED}
    assert not any(PLAN_HEADER in r["prompt"] for r in plain)

    met = total = 0
    for r in planned:
        for title in _plan_titles(r["prompt"]):
            pole = pole_for_title(title)  # every stated aspect is a canonical sandbox title
            if pole.dim == "length":  # left random on purpose (corpus._following)
                continue
            total += 1
            met += pole.check(r["response"])
    share = met / total
    # Followed answers meet every (non-length) stated aspect; the rest meet about half by chance.
    assert PLAN_FOLLOW_SHARE * 0.95 < share < PLAN_FOLLOW_SHARE + (1 - PLAN_FOLLOW_SHARE) * 0.75, share


def test_a_planned_row_is_what_a_plan_policy_is_shown(world: Loaded) -> None:
    """The SFT prompt of a training user equals chat_messages(policy_profile="plan") for the same
    question and profile, so the policy is tuned on the exact turn it later samples from."""
    # The personal training pairs carry the same training users' profiles.
    profiles = {tuple(p["text"] for p in row["profile"]): row["profile"] for row in world.pairs["personal"]}
    matched = 0
    for r in [r for r in world.sft if r["system"]][:40]:
        question = r["prompt"].split("\n\n", 1)[0]
        for profile in profiles.values():
            posts = tuple(ProfilePost(**p) for p in profile)
            item = PromptItem(prompt_id="x", kind="personalized", prompt=question, profile=posts)
            messages = chat_messages(item, 10, "plan")
            if messages[1]["content"] == r["prompt"]:
                assert messages[0] == {"role": "system", "content": SYSTEM_PERSONALIZED}
                matched += 1
                break
        if matched >= 3:
            break
    assert matched >= 3
