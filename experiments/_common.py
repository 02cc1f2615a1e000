"""Shared helpers for the research scripts: composed task configs (perf/_common's), labels of a study's
runs, the personalized prompts' length groups, and extra training users beside a sandbox world."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

# perf/_common.py's store and config set-up (it also puts the checkout on sys.path); loaded by file,
# since this module is itself `_common` on the research scripts' path.
_spec = importlib.util.spec_from_file_location("perf_common", Path(__file__).resolve().parents[1] / "perf" / "_common.py")
_perf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_perf)
compose, use_root = _perf.compose, _perf.use_root

__all__ = ["LENGTH_GROUPS", "compose", "extra_training_users", "gold_scores_by_pool", "held_out_questions",
           "length_group", "length_groups", "rm_label", "trainer_label", "use_root"]


def gold_scores_by_pool(store: Any) -> dict[str, Any]:
    """Every pool's gold scores a store holds: pool record id -> its scores frame (prompt_id, score, ...)."""
    import pyarrow.parquet as pq

    return {rec.inputs["pool"]: pq.read_table(store.resolve(rec.artifacts["scores"])).to_pandas()
            for rec in store.records("pool_scores") if rec.config.get("role") == "gold"}


def trainer_label(config: dict) -> str:
    """The PPO budget of a run's config: learning rate, episodes, rollouts per update."""
    t = config.get("trainer") or {}
    per_update = int(t.get("per_device_train_batch_size", 0)) * int(t.get("gradient_accumulation_steps", 1))
    return f"lr {float(t.get('learning_rate', 0)):g}, {t.get('total_episodes')} x{per_update}"


def rm_label(store: Any, rm: str) -> str:
    """``<lineage> <mix> e<epochs>`` of a study RM, from its train_rm record."""
    from rlexp.analysis.records import factors

    f = factors(store.get(rm, "train_rm"))
    return f"{f['lineage']} {f['mix']} e{float(f['epochs']):g}"


# Personalized prompts by what the sandbox planner says about length, the dimension every sandbox RM
# reads (docs/sandbox.md, "Where the personal RMs' Best-of-N gain comes from").
LENGTH_GROUPS = ("plan: brief", "plan: detailed, wanted", "plan: detailed, not wanted", "plan: no length")


def length_group(plan: list[Any], hidden: Any) -> str:
    """A personalized prompt's group in :data:`LENGTH_GROUPS`, from the planner's poles and its hidden dict."""
    from rlexp.sandbox.aspects import known_titles
    from rlexp.sandbox.judges import aspect_titles

    side = next((a.side for a in plan if a.dim == "length"), None)
    if side is None:
        return LENGTH_GROUPS[3]
    if side == 0:
        return LENGTH_GROUPS[0]
    wanted = any(a.dim == "length" and a.side == 1 for a in known_titles(aspect_titles(hidden)))
    return LENGTH_GROUPS[1 if wanted else 2]


def length_groups(prompts: list[Any], k: int) -> list[str]:
    """Each personalized prompt's :func:`length_group`: the planner's reading of its top ``k`` posts,
    against the user's hidden aspects."""
    from rlexp.data.formatting import top_posts
    from rlexp.sandbox.aspects import known_titles
    from rlexp.sandbox.planner import infer_aspects

    return [length_group(known_titles(infer_aspects(top_posts(p.profile, k, p.prompt))), p.hidden) for p in prompts]


def extra_training_users(world: Any, n: int, seed: int = 0) -> list[Any]:
    """``n`` training users beyond a sandbox world's own, drawn as the world draws its users but from a
    random stream of their own (``train-users-extra``), so the first ``n`` are the same for any ``n``."""
    from rlexp.sandbox.rng import make_rng
    from rlexp.sandbox.sites import SITES_BY_DOMAIN
    from rlexp.sandbox.users import PoleBalancer, make_user

    rng, balancer, domains = make_rng(seed, "train-users-extra"), PoleBalancer(), list(SITES_BY_DOMAIN)
    return [make_user(f"tx{i:05d}", domains[i % len(domains)], world.knobs, balancer, rng) for i in range(n)]


def held_out_questions(world: Any) -> set[str]:
    """Every question of a sandbox world's evaluation prompt sets and of its Personalized RewardBench:
    what no training data built beside the world may ask."""
    held = {p.prompt for (_, split), items in world.prompts.items() if split == "eval" for p in items}
    return held | {item.question for item in world.prb}
