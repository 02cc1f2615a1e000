"""ppo: TRL PPO against any reward (cross-lineage RM, sandbox judge), gold-judged before/after."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rlexp.store import Store
from tests.conftest import compose, env_with, private_store, rlexp_cmd

SMALL = ["prompts.limit=32", "sampling.n=4", "n_boot=200", "trainer.total_episodes=32", "trainer.response_length=32"]


def test_cross_lineage_rm_reward_equals_rm_score_of_decoded_text(world: Path, rms: dict[str, str]) -> None:
    """A tiny_qwen RM drives PPO of a tiny_llama policy; the rewards are the RM's scores of the text."""
    from rlexp import inputs
    from rlexp.downstream import ppo as adapter
    from rlexp.models.loading import load_causal_lm, load_reward_model, load_tokenizer
    from rlexp.scorer import ScoreInput

    cfg = compose("ppo", f"rm={rms['qwen_general']}", "model=tiny_llama", "prompts=general", "profile=none", *SMALL)
    policy_path, _, lineage = inputs.policy(cfg)
    reward, _, rm_lineage = inputs.reward(cfg)
    assert (lineage, rm_lineage) == ("tiny_llama", "tiny_qwen")
    prompts, _ = inputs.prompt_set(cfg, split="train")
    tok = load_tokenizer(policy_path, padding_side="left")
    module = adapter.reward_module(reward, tok, prompts, 10)
    args = adapter.ppo_config(str(world / "ppo_scratch"), {
        "per_device_train_batch_size": 4, "total_episodes": 8, "num_ppo_epochs": 1, "response_length": 24,
        "use_cpu": True, "bf16": False, "stop_token": "eos", "num_sample_generations": 0, "report_to": "none",
        "save_strategy": "no", "local_rollout_forward_batch_size": 4, "seed": 0,
    })
    policy = load_causal_lm(policy_path)
    import copy

    value = load_reward_model(policy_path, init_head=True)
    value.config.pad_token_id = tok.pad_token_id
    adapter.train_ppo(args=args, tokenizer=tok, policy=policy, ref_policy=copy.deepcopy(policy), value_model=value,
                      reward_model=module, dataset=adapter.tokenise_prompts(tok, prompts, 10))
    log = module.log
    assert len(log.scores) >= 8 and log.history == log.scores  # under the limit both hold every score
    by_prompt = {p.prompt: p for p in prompts}
    again = reward.score([ScoreInput(p, r, by_prompt[p].profile) for p, r in zip(log.prompts, log.responses, strict=True)])
    assert np.max(np.abs(np.asarray(log.scores) - again)) <= 1e-5


def test_bad_inputs(world: Path, rms: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rlexp.errors import ConfigError
    from rlexp.tasks import ppo

    own = private_store(world, tmp_path)
    rm = f"rm={rms['llama_general']}"
    # Through the CLI once (one line, exit 2); the other cases in this process (each CLI start costs
    # ~4 s of imports), where the error is the ConfigError the CLI prints.
    out = subprocess.run(rlexp_cmd("ppo", "logger=none", rm, "trainer.response_length=0"), capture_output=True,
                         text=True, env=env_with(RLEXP_ROOT=str(own)), timeout=300)
    assert out.returncode == 2 and "response_length=0" in out.stderr and out.stderr.strip().count("\n") == 0, out.stderr
    monkeypatch.setenv("RLEXP_ROOT", str(own))
    for args, msg in [
        ((rm, "trainer.total_episodes=-4"), "total_episodes=-4"),
        ((rm, "trainer.per_device_train_batch_size=6", "trainer.num_mini_batches=4"), "num_mini_batches=4"),
        (("rm=judge:oracle",), "judge='oracle'"),
        # TRL's drop_last prompt loader would be empty and its endless loop would spin forever.
        ((rm, "prompts.limit=8", "trainer.gradient_accumulation_steps=2"), "fewer than one PPO batch (16"),
        ((rm, "baseline_samples=0"), "baseline_samples=0"),
    ]:
        with pytest.raises(ConfigError) as err:
            ppo.run(compose("ppo", *args))
        assert msg in str(err.value) and "\n" not in str(err.value)
    assert not list((own / "runs" / "records").glob("ppo/*.json"))  # no record written


def test_ppo_trains_the_same_weights_whatever_numpys_global_state(world: Path, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """TRL's PPO draws each update's minibatch order from numpy's global RNG. Unseeded, a PPO run's
    weights depended on what its process ran before: a study resumed after its RMs trained other floats
    than one run from an empty store (up to 1.5e-6, enough to move a gain's CI across 0), and two
    `rlexp ppo` runs differed. The run seeds it: the same weights after any numpy state."""
    import random

    import torch
    from safetensors.torch import load_file

    from rlexp.tasks import ppo

    monkeypatch.setenv("RLEXP_ROOT", str(private_store(world, tmp_path)))
    cfg = compose("ppo", "rm=judge:verifier", "model=tiny_llama", "prompts=general", "prompts.limit=16",
                  "sampling.n=2", "n_boot=50", "trainer.total_episodes=16", "trainer.response_length=16", "force=true")
    weights = []
    for state in (1, 2):
        np.random.seed(state)
        random.seed(state)
        rec = ppo.run(cfg)
        weights.append(load_file(Store(tmp_path / "runs").resolve(rec.artifacts["policy"]) / "model.safetensors"))
    assert weights[0].keys() == weights[1].keys()
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])


def test_reward_must_be_a_scorer() -> None:
    from rlexp.downstream.ppo import reward_module
    from rlexp.errors import ConfigError

    with pytest.raises(ConfigError, match="is not a scorer"):
        reward_module(object(), None, [], 10)


@pytest.mark.slow
def test_general_rm_ppo_beats_flipped_on_general_prompts(world: Path, rms: dict[str, str]) -> None:
    """The sandbox's directional fact on the PPO side: PPO against the general RM ends with more general gold
    than PPO against the flipped control (the Best-of-N side is test_bon's). Also checks the records.

    The study's PPO settings (lr 5e-5, 8 rollouts per update, 256 episodes) on all 300 general evaluation
    prompts, both RMs read without a profile as test_bon reads them (a general prompt has no user). The
    initial policy's side is Best-of-N's 16-sample pool, the trained side 8 samples per prompt: with 4 the
    margin's sampling noise was as large as the margin itself.

    The margin is asserted over the 240 prompts outside safety. On safety the order is reversed in every
    seed on both CPUs measured (the template-trained RMs score the policy's advice-shaped answers above
    refusals: docs/sandbox.md), by an amount that varies with the seed and the CPU's float path; on an
    Intel Xeon at seed 0 it flipped the overall order.
    Measured (docs/sandbox.md, "The PPO half of the directional check"), general minus flipped outside
    safety: +0.016 / +0.035 / +0.026 / +0.028 / +0.026 at seeds 0-4 on that Intel Xeon, where the overall
    margin was -0.008 / +0.020 / +0.016 / +0.022 / +0.014; on an AMD EPYC the overall margin alone was
    positive in every draw of five seeds, and safety only lowered it there.
    """
    import pyarrow.parquet as pq

    from rlexp import inputs
    from rlexp.tasks import ppo, sample

    common = ["model=tiny_llama", "prompts=general", "profile=none", "sampling.n=8", "baseline_samples=16",
              "n_boot=200"]
    good = ppo.run(compose("ppo", f"rm={rms['llama_general']}", *common))
    bad = ppo.run(compose("ppo", f"rm={rms['llama_flipped']}", *common))
    store = Store(world / "runs")
    assert store.get(good.info["baseline_pool"], "sample").metrics["samples"] == 300 * 16
    assert store.get(good.info["eval_pool"], "sample").metrics["samples"] == 300 * 8
    assert bad.info["baseline_pool"] == good.info["baseline_pool"]  # one shared, cached baseline
    assert good.info["baseline_samples"] == bad.info["baseline_samples"] == 16

    def gold(pool: str) -> Any:
        (scores,) = [r for r in store.records("pool_scores") if r.inputs["pool"] == pool and r.config["role"] == "gold"]
        return pq.read_table(store.resolve(scores.artifacts["scores"])).to_pandas().groupby("prompt_id")["score"]

    # Each prompt's gain is the trained policy's mean gold over its 8 samples minus the initial policy's
    # over 16, recomputed here from the stored gold scores of both pools.
    before = gold(good.info["baseline_pool"])
    assert set(before.size()) == {16}
    prompts, _ = inputs.prompt_set(compose("ppo", *common), split="eval")
    task_of = {p.prompt_id: p.hidden["task"] for p in prompts}  # the general prompts' kinds (ties: set_member)
    for rec in (good, bad):
        m = rec.metrics
        print(rec.config["rm"], "gold", m["gold_before"], "->", m["gold_after"], "gain", m["gain"], m["gain_ci"])
        after = gold(rec.info["eval_pool"])
        assert set(after.size()) == {8}
        per_prompt = pq.read_table(store.resolve(rec.artifacts["per_prompt"])).to_pandas().set_index("prompt_id")
        assert len(per_prompt) == 300
        assert np.allclose(per_prompt["gain"], (after.mean() - before.mean()).loc[per_prompt.index], atol=1e-12)
        assert 0 <= m["gold_before"] <= 1 and 0 <= m["gold_after"] <= 1
        assert m["gain_ci"][0] <= m["gain"] <= m["gain_ci"][1]
        assert m["train"]["steps"] == 32 and m["final_kl"] is not None
        curve = rec.info["reward_curve"]
        assert len(curve) == 32 and m["train"]["reward/first_batch_mean"] == pytest.approx(curve[0])
        assert rec.info["lineage_match"] is True and rec.info["rm"]["id"] == rec.config["rm"]
        assert m["proxy_after"] > m["proxy_before"]  # each run raised its own RM's score of held-out samples
        # Per task kind, as Best-of-N reports it: the kinds' gains, weighted by their prompts, make the gain.
        kinds = m["by_group"]
        assert {k: v["prompts"] for k, v in kinds.items()} == {"constraints": 60, "fact": 75, "focus": 15,
                                                                "math": 60, "safety": 60, "set_member": 30}
        assert sum(v["gain"] * v["prompts"] for v in kinds.values()) / 300 == pytest.approx(m["gain"], abs=1e-12)
        for kind, v in kinds.items():
            mine = per_prompt.loc[[i for i, task in task_of.items() if task == kind], "gain"]
            assert v["gain"] == pytest.approx(mine.mean(), abs=1e-12)
            assert v["gain_ci"][0] <= v["gain"] <= v["gain_ci"][1]
        print({k: round(v["gain"], 4) for k, v in kinds.items()})

    def outside_safety(rec: Any) -> float:
        kinds = [v for k, v in rec.metrics["by_group"].items() if k != "safety"]
        return sum(v["gain"] * v["prompts"] for v in kinds) / sum(v["prompts"] for v in kinds)

    assert outside_safety(good) > outside_safety(bad)
    pool = sample.run(compose("sample", f"policy={good.id}", "prompts=personalized", "prompts.limit=8", "sampling.n=2"))
    assert pool.metrics["samples"] == 16


class ProseReward:
    """A verifiable, user-blind reward: 1 for flowing prose (the sandbox format checker), else 0.

    Prose, because the sandbox policy starts from bulleted lists on about two thirds of its samples
    (most users state them), which leaves a bulleted reward little room to rise."""

    name = "prose"

    def __init__(self) -> None:
        from rlexp.scorer import ScoreStats

        self.stats = ScoreStats()

    def score(self, items: list[Any]) -> np.ndarray:
        from rlexp.sandbox.aspects import dimension_state

        self.stats.items += len(items)
        return np.asarray([float(dimension_state("format", it.response) == 1) for it in items])


@pytest.mark.slow
def test_default_ppo_settings_learn_an_easy_reward(world: Path) -> None:
    """With `conf/trainer/ppo.yaml` as shipped, PPO raises a reward the policy can reach.

    Guards the defaults against two failures measured on the sandbox: a missing-EOS penalty of 1.0
    (13% of the tiny policy's samples run out of tokens) taught the policy to stop after a few
    tokens, and a per-token KL penalty of 0.05 did the same once the bulleted answers grew long;
    both drove this reward from about 0.4 to 0.
    """
    import copy

    from rlexp import inputs
    from rlexp.downstream import ppo as adapter
    from rlexp.models.loading import load_causal_lm, load_reward_model, load_tokenizer
    from rlexp.tasks.ppo import _settings

    cfg = compose("ppo", "rm=judge:rubric", "model=tiny_llama", "prompts=personalized", "trainer.total_episodes=128")
    policy_path, _, _ = inputs.policy(cfg)
    prompts, _ = inputs.prompt_set(cfg, split="train")
    tok = load_tokenizer(policy_path, padding_side="left")
    reward = ProseReward()
    view = (cfg.sampling.profile_k, cfg.sampling.policy_profile)
    module = adapter.reward_module(reward, tok, prompts, view[0], profile=view[1])
    args = adapter.ppo_config(str(world / "ppo_easy_reward"), _settings(cfg, "none", bf16=False, use_cpu=True))
    policy = load_causal_lm(policy_path)
    value = load_reward_model(policy_path, init_head=True)
    value.config.pad_token_id = tok.pad_token_id
    _, _, metrics, curves = adapter.train_ppo(
        args=args, tokenizer=tok, policy=policy, ref_policy=copy.deepcopy(policy), value_model=value,
        reward_model=module, dataset=adapter.tokenise_prompts(tok, prompts, *view))
    scores = curves["objective/scores"]
    assert len(scores) == 16 and metrics["steps"] == 16
    first, last = float(np.mean(scores[:4])), float(np.mean(scores[-4:]))
    print("prose share of rollouts: first 4 updates", first, "last 4", last, "entropy", curves["objective/entropy"])
    assert last >= first + 0.2 and last >= 0.7
    assert np.mean(curves["val/num_eos_tokens"][-4:]) > 0  # still answers that end, not a run-on


@pytest.mark.slow
def test_ppo_deepspeed_zero2_on_cpu(world: Path, rms: dict[str, str], tmp_path: Path) -> None:
    extensions = tmp_path / "torch_extensions"
    out = subprocess.run(
        rlexp_cmd("ppo", "logger=none", f"rm={rms['llama_general']}", "model=tiny_llama", "prompts=general",
                  "deepspeed=zero2", *SMALL),
        capture_output=True, text=True, timeout=1200,
        env=env_with(RLEXP_ROOT=str(world), TORCH_EXTENSIONS_DIR=str(extensions)),
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "===training policy===" not in out.stdout  # TRL's banner, dropped (rlexp.downstream.ppo)
    recs = [r for r in Store(world / "runs").records("ppo") if r.config["deepspeed"]["name"] == "zero2"]
    assert recs and recs[-1].metrics["train"]["steps"] > 0
    assert not extensions.exists() or not any(extensions.iterdir())  # one process: no C++ op compiled


@pytest.mark.parametrize("algorithm", ["grpo", "rloo"])
def test_grpo_and_rloo_train_and_are_judged_like_ppo(world: Path, algorithm: str) -> None:
    """TRL's GRPO / RLOO with a scorer (here the rubric judge) as reward: trained, saved, gold-judged."""
    from rlexp.tasks import ppo

    rec = ppo.run(compose("ppo", f"algorithm={algorithm}", "rm=judge:rubric", "model=tiny_llama",
                          "prompts=personalized", "prompts.limit=16", "sampling.n=2", "n_boot=100",
                          "trainer.total_episodes=32"))
    m = rec.metrics
    assert rec.info["algorithm"] == algorithm
    assert m["train"]["steps"] >= 1 and "reward" in m["train"]
    assert rec.info["reward_curve"] and rec.info["reward_curve"][-1] == pytest.approx(m["train"]["reward"])
    assert 0.0 <= m["gold_before"] <= 1.0 and 0.0 <= m["gold_after"] <= 1.0
    assert m["gain"] == pytest.approx(m["gold_after"] - m["gold_before"])
    lo, hi = m["gain_ci"]
    assert lo <= m["gain"] <= hi
    # A judge as reward: no lineage, and every batch mean is a rubric score.
    assert rec.info["rm"]["lineage"] is None and all(0.0 <= r <= 1.0 for r in rec.info["reward_curve"])
    policy = Store(world / "runs").resolve(rec.artifacts["policy"])
    assert (policy / "model.safetensors").is_file() and (policy / "tokenizer_config.json").is_file()


def test_tail_logits_slice_like_the_whole_sequence() -> None:
    """TRL reads ``logits[:, context_length - 1 : -1]``; the kept tail answers it with the same rows, and a
    slice reaching before the tail fails instead of returning other positions."""
    import torch

    from rlexp.downstream.ppo import TailLogits

    full = torch.arange(2 * 10 * 3, dtype=torch.float32).reshape(2, 10, 3)
    tail = TailLogits(full[:, -5:], 10)
    for start, stop in ((5, -1), (6, None), (7, 9), (-4, -1)):
        assert torch.equal(tail[:, start:stop], full[:, start:stop])
    with pytest.raises(ValueError, match="last 5 of 10 positions"):
        tail[:, 4:-1]
    with pytest.raises(TypeError):
        tail[0]


def test_response_logits_only_computes_the_same_rollouts_with_shorter_logits(world: Path) -> None:
    """`trainer.response_logits_only=true`: every training and reference forward pass computes logits for at
    most response_length + 1 positions instead of the whole sequence; the first update (rollouts of the
    same policy, the same reference logits) logs the same numbers, and the trained weights differ by float
    noise only (a wrong slice would shift every log-probability by a position)."""
    import copy

    import torch

    from rlexp import inputs
    from rlexp.downstream import ppo as adapter
    from rlexp.models.loading import load_causal_lm, load_reward_model, load_tokenizer
    from rlexp.tasks.ppo import _settings

    cfg = compose("ppo", "rm=judge:rubric", "model=tiny_llama", "prompts=personalized", "trainer.total_episodes=16",
                  "trainer.response_length=24")
    policy_path, _, _ = inputs.policy(cfg)
    reward, _, _ = inputs.reward(cfg)
    prompts, _ = inputs.prompt_set(cfg, split="train")
    tok = load_tokenizer(policy_path, padding_side="left")
    view = (cfg.sampling.profile_k, cfg.sampling.policy_profile)
    runs = {}
    for tail in (False, True):
        torch.manual_seed(0)
        np.random.seed(0)
        policy = load_causal_lm(policy_path)
        value = load_reward_model(policy_path, init_head=True)
        value.config.pad_token_id = tok.pad_token_id
        widths: list[int] = []
        policy.lm_head.register_forward_hook(lambda _m, inp, _o, w=widths: w.append(inp[0].shape[1]))
        args = adapter.ppo_config(str(world / f"ppo_tail_{tail}"), _settings(cfg, "none", bf16=False, use_cpu=True))
        trained, _, metrics, curves = adapter.train_ppo(
            args=args, tokenizer=tok, policy=policy, ref_policy=copy.deepcopy(policy), value_model=value,
            reward_model=adapter.reward_module(reward, tok, prompts, view[0], profile=view[1]),
            dataset=adapter.tokenise_prompts(tok, prompts, *view), response_logits_only=tail)
        assert metrics["steps"] == 2
        runs[tail] = (max(widths), curves, trained.state_dict())
    assert runs[True][0] <= 25 < runs[False][0]  # the prompts alone are longer than 25 tokens
    for key in ("objective/scores", "objective/kl", "objective/entropy"):
        assert runs[True][1][key][0] == runs[False][1][key][0], key
    a, b = runs[False][2], runs[True][2]
    assert max(float((a[k] - b[k]).abs().max()) for k in a) < 1e-5
