"""ppo with an evaluation prompt set apart from the training one (eval_prompts), evaluation at checkpoints
(eval_every), the critic's own learning rate, and the Tulu 3 preference-mixture prompts it trains on."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rlexp.errors import ConfigError, DataError
from rlexp.store import Store
from tests.conftest import compose

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TULU = FIXTURES / "tulu3_prefs" / "train.jsonl"


# --- the Tulu 3 preference-mixture loader -------------------------------------------------------------------


def test_tulu3_prefs_fixture_loads_as_prompts_with_earlier_turns() -> None:
    from rlexp.data.loaders import load_tulu3_prefs

    items = load_tulu3_prefs(TULU)
    assert len(items) == 26 and len({p.prompt_id for p in items}) == 26
    assert all(p.kind == "general" and not p.profile and p.hidden["source"].startswith("allenai/") for p in items)
    first = items[0]
    assert (first.prompt_id, first.prompt, first.shots) == ("tulu3-pref-000", "Write a haiku about autumn leaves.", ())
    multi = {p.prompt_id: p for p in items}["tulu3-pref-mt-001"]
    # The last user turn is the prompt; the earlier exchanges are the policy's earlier chat turns.
    assert multi.prompt == "How long should each session be?" and len(multi.shots) == 2
    assert multi.shots[0] == ("I want to learn to draw.", "Great! Start with simple shapes and daily practice.")
    assert len(load_tulu3_prefs(TULU, limit=3)) == 3


def _row(**change: object) -> dict:
    conv = [{"role": "user", "content": "Say hi."}]
    row = {"id": "r1", "prompt": "Say hi.", "chosen": [*conv, {"role": "assistant", "content": "Hi!"}],
           "rejected": [*conv, {"role": "assistant", "content": "No."}], "source": "allenai/x"}
    row.update(change)
    return {k: v for k, v in row.items() if v is not None}


@pytest.mark.parametrize(("row", "message"), [
    (_row(id=None), "field 'id': missing"),
    (_row(source=None), "(id 'r1'): field 'source': missing"),
    (_row(chosen="Hi!"), "field 'chosen': expected a list of {role, content} messages, got str"),
    (_row(chosen=[{"role": "user", "content": "Say hi."}]), "field 'chosen[0].role': the last message must be"),
    (_row(rejected=[{"role": "user", "content": "Other?"}, {"role": "assistant", "content": "No."}]),
     "field 'rejected': its turns before the final answer differ"),
    (_row(chosen=[{"role": "system", "content": "Be nice."}, {"role": "user", "content": "Say hi."},
                  {"role": "assistant", "content": "Hi!"}],
          rejected=[{"role": "system", "content": "Be nice."}, {"role": "user", "content": "Say hi."},
                    {"role": "assistant", "content": "No."}]),
     "expected alternating user/assistant turns ending with the user before the answer, got roles ['system', 'user']"),
])
def test_tulu3_prefs_bad_rows_are_one_line_naming_file_row_and_field(tmp_path: Path, row: dict, message: str) -> None:
    from rlexp.data.loaders import load_tulu3_prefs

    path = tmp_path / "prefs.jsonl"
    path.write_text(json.dumps(_row(id="ok")) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(DataError) as err:
        load_tulu3_prefs(path)
    text = str(err.value)
    assert "\n" not in text and str(path) in text and "line 2" in text and message in text, text


def test_tulu3_prefs_refuses_other_files_and_duplicates(tmp_path: Path) -> None:
    from rlexp.data.loaders import load_tulu3_prefs

    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(json.dumps({"prompt_id": "a", "prompt": "x", "kind": "general"}) + "\n")
    with pytest.raises(DataError, match="this is a prompt-set file .* not a Tulu 3 preference-mixture file"):
        load_tulu3_prefs(prompts)
    dup = tmp_path / "dup.jsonl"
    dup.write_text(json.dumps(_row()) + "\n" + json.dumps(_row()) + "\n")
    with pytest.raises(DataError, match="line 2 .*duplicate id"):
        load_tulu3_prefs(dup)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(DataError, match="holds no Tulu 3 preference rows"):
        load_tulu3_prefs(empty)


# --- eval_prompts: the evaluation set, disjoint from the training set ----------------------------------------


def test_eval_prompts_compose_and_must_be_disjoint(world: Path) -> None:
    from rlexp import inputs
    from rlexp.tasks import ppo

    cfg = compose("ppo", "rm=judge:rubric", "prompts=tulu3_prefs_fixtures", "eval_prompts=rb2_suite_fixtures")
    ecfg = ppo.eval_config(cfg)
    assert ecfg.prompts.name == "rb2_suite_fixtures" and cfg.prompts.name == "tulu3_prefs_fixtures"
    assert set(ecfg.prompts.tasks) == {"gsm8k", "math", "ifeval", "alpacaeval", "bbh", "popqa", "humanevalplus"}
    # A prompts node: `preset` merged under the rest.
    node = ppo.eval_config(compose("ppo", "rm=judge:rubric", "prompts=tulu3_prefs_fixtures",
                                   "+eval_prompts={preset: rb2_suite_fixtures, limit: 5}"))
    assert node.prompts.name == "rb2_suite_fixtures" and node.prompts.limit == 5
    assert ppo.eval_config(compose("ppo", "rm=judge:rubric")).prompts.name == "personalized"  # null: the same set

    train, train_id = inputs.prompt_set(cfg, split="train")
    evals, _ = inputs.prompt_set(inputs.sample_config(ecfg))
    kept, kept_id, info = ppo.disjoint_train_prompts(cfg, train, train_id, evals)
    assert (kept, kept_id, info) == (train, train_id, {"train_prompts_excluded": 0})
    assert not {p.prompt for p in kept} & {p.prompt for p in evals}
    # A training prompt equal to an evaluation prompt (whitespace and case aside) is left out of training.
    leak = type(train[0])(prompt_id="leak", prompt="  " + evals[3].prompt.upper() + " ", kind="general")
    kept, kept_id, info = ppo.disjoint_train_prompts(cfg, [*train, leak], train_id, evals)
    assert kept == train and kept_id != train_id and info["train_prompts_excluded_ids"] == ["leak"]

    # The held-out split of the same set: the sandbox's splits share no prompt.
    same = compose("ppo", "rm=judge:rubric", "prompts=general")
    strain, sid = inputs.prompt_set(same, split="train")
    seval, _ = inputs.prompt_set(same)
    assert ppo.disjoint_train_prompts(same, strain, sid, seval) == (strain, sid, {})
    with pytest.raises(ConfigError, match="1 prompt\\(s\\) are in both the 'train' and the 'eval' split"):
        ppo.disjoint_train_prompts(same, [*strain, seval[0]], sid, seval)
    # Tulu 3's mixture has one split: evaluating on it would evaluate on the training prompts.
    alone = compose("ppo", "rm=judge:rubric", "prompts=tulu3_prefs_fixtures")
    with pytest.raises(ConfigError, match="the evaluation split 'train' is the training split; evaluate on another"):
        ppo.disjoint_train_prompts(alone, train, train_id, train)
    from rlexp.config import check_config

    for args, msg in [  # the config's own checks (every task entry runs them first) and the run's, before any model
        (("eval_prompts=nope",), "eval_prompts='nope' is not a prompt set of conf/prompts/; valid:"),
        (("eval_every=-1",), "eval_every=-1"),
        (("headline_gain=best_checkpoint",), "needs checkpoints to pick from"),
        (("headline_gain=best",), "headline_gain='best' is not one of"),
        (("eval_every=2", "algorithm=grpo"), "for algorithm=ppo only"),
        (("trainer.critic_learning_rate=0",), "critic_learning_rate=0.0 must be > 0"),
    ]:
        with pytest.raises(ConfigError) as err:
            bad = compose("ppo", "rm=judge:rubric", *args)
            check_config(bad)
            ppo.run(bad)
        assert msg in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_new_keys_at_their_defaults_keep_record_ids() -> None:
    """eval_prompts=null, eval_every=0, headline_gain=final, trainer.critic_learning_rate=null: hash-neutral."""
    from omegaconf import OmegaConf

    from rlexp.store import record_id, result_config

    cfg = OmegaConf.to_container(compose("ppo", "rm=judge:rubric"), resolve=True)
    hashed = result_config(cfg, "ppo")
    assert not {"eval_prompts", "eval_every", "headline_gain"} & set(hashed)
    assert "critic_learning_rate" not in hashed["trainer"]
    old = {k: v for k, v in cfg.items() if k not in ("eval_prompts", "eval_every", "headline_gain")}
    old["trainer"] = {k: v for k, v in cfg["trainer"].items() if k != "critic_learning_rate"}
    assert record_id("ppo", cfg, {"x": "y"}) == record_id("ppo", old, {"x": "y"})
    for key, value in (("eval_prompts", "rb2_suite"), ("eval_every", 4), ("headline_gain", "best_checkpoint")):
        assert record_id("ppo", {**cfg, key: value}) != record_id("ppo", cfg)
    two = {**cfg, "trainer": {**cfg["trainer"], "critic_learning_rate": 5e-6}}
    assert record_id("ppo", two) != record_id("ppo", cfg)


# --- the critic's learning rate ------------------------------------------------------------------------------


def test_critic_learning_rate_gives_the_value_model_its_own_groups(world: Path) -> None:
    """TRL trains policy and value with one optimizer; trainer.critic_learning_rate puts the value model's
    parameters in their own groups of it (verl's critic lr), and the linear schedule scales both alike."""
    import copy

    from rlexp import inputs
    from rlexp.downstream import ppo as adapter
    from rlexp.models.loading import load_causal_lm, load_reward_model, load_tokenizer
    from rlexp.tasks.ppo import _settings

    cfg = compose("ppo", "rm=judge:verifier", "model=tiny_llama", "prompts=general", "trainer.total_episodes=16",
                  "trainer.response_length=8", "trainer.learning_rate=5e-7", "trainer.critic_learning_rate=5e-6")
    policy_path, _, _ = inputs.policy(cfg)
    reward, _, _ = inputs.reward(cfg)
    prompts, _ = inputs.prompt_set(cfg, split="train")
    prompts = prompts[:16]
    tok = load_tokenizer(policy_path, padding_side="left")
    policy = load_causal_lm(policy_path)
    value = load_reward_model(policy_path, init_head=True)
    value.config.pad_token_id = tok.pad_token_id
    seen: list[list[tuple[float, int]]] = []

    def on_step(step: int, trainer: object) -> None:
        groups = trainer.optimizer.param_groups  # type: ignore[attr-defined]
        seen.append([(g["initial_lr"], sum(p.numel() for p in g["params"])) for g in groups])

    settings = _settings(cfg, "none", bf16=False, use_cpu=True)
    assert "critic_learning_rate" not in settings  # not a TRL field
    adapter.train_ppo(args=adapter.ppo_config(str(world / "ppo_critic_lr"), settings), tokenizer=tok, policy=policy,
                      ref_policy=copy.deepcopy(policy), value_model=value,
                      reward_model=adapter.reward_module(reward, tok, prompts, 10),
                      dataset=adapter.tokenise_prompts(tok, prompts, 10), critic_learning_rate=5e-6, on_step=on_step)
    assert len(seen) == 2
    by_lr: dict[float, int] = {}
    for lr, n in seen[0]:
        by_lr[lr] = by_lr.get(lr, 0) + n
    assert by_lr == {5e-7: sum(p.numel() for p in policy.parameters()),
                     5e-6: sum(p.numel() for p in value.parameters())}


# --- a PPO run: Tulu 3-schema training prompts, the suite's fixture rows graded as the evaluation set ---------


@pytest.mark.slow
def test_ppo_trains_on_tulu3_prompts_and_evaluates_on_the_suite_at_checkpoints(world: Path, rms: dict[str, str]) -> None:
    from rlexp import inputs
    from rlexp.tasks import ppo

    common = ["model=tiny_llama", "prompts=tulu3_prefs_fixtures", "eval_prompts=rb2_suite_fixtures", "profile=none",
              f"judge.rm={rms['llama_personal']}", "sampling.n=2", "sampling.max_new_tokens=32", "n_boot=100",
              "trainer.total_episodes=24", "trainer.per_device_train_batch_size=8", "eval_every=1"]
    cfg = compose("ppo", f"rm={rms['llama_general']}", *common, "headline_gain=best_checkpoint")
    rec = ppo.run(cfg)
    m, info = rec.metrics, rec.info
    store = Store(world / "runs")

    # Trained on the Tulu 3-schema prompts, evaluated on the suite rows: disjoint sets.
    train, _ = inputs.prompt_set(cfg, split="train")
    evals, _ = inputs.prompt_set(inputs.sample_config(ppo.eval_config(cfg)))
    assert info["train_prompts"]["name"] == "tulu3_prefs_fixtures" and info["train_prompts"]["count"] == 26
    assert info["eval_prompts"]["name"] == "rb2_suite_fixtures" and info["eval_prompts"]["count"] == len(evals)
    assert info["train_prompts"]["train_prompts_excluded"] == 0
    assert not {p.prompt_id for p in train} & {p.prompt_id for p in evals}
    assert not {p.prompt for p in train} & {p.prompt for p in evals}
    assert info["judge"]["judge"] == "grader"

    # 24 episodes of 8: 3 updates; evaluated at 0 (the initial policy), 1, 2 and 3 (the final policy).
    points = m["checkpoints"]
    assert [p["step"] for p in points] == [0, 1, 2, 3] and m["train"]["steps"] == 3
    for p in points:
        assert p["gold_ci"][0] <= p["gold"] <= p["gold_ci"][1] and p["gain_ci"][0] <= p["gain"] <= p["gain_ci"][1]
        assert store.get(p["pool"], "sample").metrics["prompts"] == len(evals)
    assert points[0]["gain"] == 0 and points[0]["pool"] == info["baseline_pool"]
    assert points[-1]["pool"] == info["eval_pool"]
    assert points[-1]["gain"] == pytest.approx(m["gain"]) and points[-1]["gain_ci"] == pytest.approx(m["gain_ci"])
    # The suite's means are over tasks (the downstream average), the curve's too.
    assert m["downstream_average"]["gain"] == m["gain"] and len(m["by_group"]) == 7
    best = max(points[1:], key=lambda p: p["gold"])
    assert (m["best_checkpoint_step"], m["gain_best_checkpoint"]) == (best["step"], best["gain"])
    assert m["gain_best_checkpoint"] >= m["gain"]
    assert m["headline_gain"]["which"] == "best_checkpoint" and m["headline_gain"]["gain"] == m["gain_best_checkpoint"]
    assert "optimistic" in m["headline_gain"]["note"]
    # The finished evaluations are on disk as they finish (a killed run keeps them), one line per point.
    lines = (store.resolve(rec.artifacts["checkpoints"])).read_text().splitlines()
    assert [json.loads(x)["step"] for x in lines] == [0, 1, 2, 3]
    if best["step"] < 3:
        assert (store.resolve(rec.artifacts["best_checkpoint"]) / "model.safetensors").is_file()

    # The baseline is the initial policy's pool on the evaluation set: Best-of-N's pool with the same settings.
    bon_cfg = compose("bon", f"rm={rms['llama_general']}", "model=tiny_llama", "prompts=rb2_suite_fixtures",
                      "profile=none", "sampling.n=2", "sampling.max_new_tokens=32")
    bon_pool, _ = inputs.pool(bon_cfg)
    assert bon_pool.id == info["baseline_pool"]

    # Another RM, same settings: the same cached baseline and gold grades of it.
    other = ppo.run(compose("ppo", f"rm={rms['llama_flipped']}", *common))
    assert other.info["baseline_pool"] == info["baseline_pool"]
    assert other.metrics["checkpoints"][0] == points[0]
    assert other.metrics["headline_gain"]["which"] == "final" and other.metrics["headline_gain"]["gain"] == other.metrics["gain"]
    assert np.isfinite(other.metrics["gain_best_checkpoint"])
