"""A small, structured fake study written straight into a run store with ``Store.put``.

Six trained RMs (two lineages x data mixes x epochs) with train_rm, evaluate (profile none: RB2 +
PRB; profile raw: PRB), bon (personalized + general, with per-prompt parquet) and ppo records in
the formats the real tasks write, plus a judge-reward PPO upper bound and one superseded
evaluate record. These are inputs to `correlate`, not mocks of any component.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rlexp.store import Record, Store, content_hash

EXP = "fake_study"
SUBSETS = ("Factuality", "Precise IF", "Math", "Safety", "Focus", "Ties")
DOMAINS = ("Art_and_Entertainment", "Lifestyle_and_Personal_Development", "Society_and_Culture")
KS = (1, 2, 4, 8, 16)
POLICY = "tiny_llama"
RB2_DATA = "data-rb2-aaaaaaaa"
PRB_DATA = "data-prb-bbbbbbbb"
#: lineage, mix, epochs, learning rate, latent quality
RM_SPECS = (
    ("tiny_llama", "general", 1.0, 1e-3, 0.55),
    ("tiny_llama", "general", 2.0, 1e-3, 0.62),
    ("tiny_llama", "personal", 2.0, 3e-4, 0.71),
    ("tiny_qwen", "general", 1.0, 1e-3, 0.58),
    ("tiny_qwen", "personal", 2.0, 3e-4, 0.76),
    ("tiny_qwen", "personal", 3.0, 1e-3, 0.66),
)


@dataclass
class FakeStudy:
    store: Store
    rms: list[str] = field(default_factory=list)
    records: dict[str, list[str]] = field(default_factory=dict)  # task -> ids
    by_rm: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # rm -> task -> ids
    expected: dict[str, dict[str, float]] = field(default_factory=dict)  # rm -> column -> value
    ppo_seed_gains: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # rm -> PPO column -> gain per seed

    def add(self, rec: Record, rm: str | None = None) -> Record:
        self.store.put(rec)
        self.records.setdefault(rec.task, []).append(rec.id)
        if rm is not None:
            self.by_rm.setdefault(rm, {}).setdefault(rec.task, []).append(rec.id)
        return rec


class _Clock:
    def __init__(self) -> None:
        self.t = 1_700_000_000.0

    def __call__(self) -> float:
        self.t += 10.0
        return self.t


def _record(task: str, key: Any, clock: _Clock, *, config: dict[str, Any], experiment: str = EXP, **fields: Any) -> Record:
    ended = clock()
    return Record(id=content_hash({"task": task, "key": key}), task=task,
                  config={"experiment_name": experiment, "seed": 0, **config},
                  started=ended - 5.0, ended=ended, **fields)


def _per_prompt(store: Store, rid: str, rng: np.random.Generator, gain16: float, n_prompts: int = 24) -> tuple[dict, str]:
    """Per-prompt BoN results and the curve computed from them (as the bon task does)."""
    base = rng.uniform(0.2, 0.6, n_prompts)
    rows: dict[str, Any] = {"prompt_id": [f"p{i:03d}" for i in range(n_prompts)], "bon_at_1": base.tolist()}
    curve = {}
    for k in KS:
        frac = np.log2(k) / 4.0
        bon = base + gain16 * frac + (rng.normal(0, 0.03, n_prompts) if k > 1 else 0.0)
        oracle = base + 0.35 * frac
        first = bon - 0.01 * frac
        rows[f"bon@{k}"], rows[f"oracle@{k}"], rows[f"first@{k}"] = bon.tolist(), oracle.tolist(), first.tolist()
        gain = 0.0 if k == 1 else float(bon.mean() - base.mean())
        headroom = float(oracle.mean() - base.mean())
        curve[str(k)] = {"bon": float(bon.mean()), "first_k": float(first.mean()), "oracle": float(oracle.mean()),
                         "proxy": float(bon.mean() + 1.0), "gain": gain, "gain_ci": [gain - 0.02, gain + 0.02],
                         "normalised_gain": None if k == 1 else gain / headroom}
    folder = store.artifact_dir("bon", rid)
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(rows), folder / "per_prompt.parquet")
    return curve, store.relative(folder / "per_prompt.parquet")


def _ppo_per_prompt(store: Store, rid: str, rng: np.random.Generator, gain: float, n_prompts: int = 24) -> str:
    """Per-prompt PPO gains whose mean is ``gain`` (as the ppo task writes them)."""
    noise = rng.normal(0, 0.05, n_prompts)
    before = rng.uniform(0.2, 0.6, n_prompts)
    per = gain + noise - noise.mean()
    folder = store.artifact_dir("ppo", rid)
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"prompt_id": [f"q{i:03d}" for i in range(n_prompts)], "gold_before": before,
                             "gold_after": before + per, "gain": per}), folder / "per_prompt.parquet")
    return store.relative(folder / "per_prompt.parquet")


def by_group(i: int) -> dict[str, Any]:
    """A general BoN record's per-kind gains (RM ``i``): fact gains grow with i, math ones shrink."""
    g = 0.01 * (i + 1)
    return {"fact": {"prompts": 14, "gain": g, "gain_ci": [g - 0.02, g + 0.02], "oracle_gain": 0.3},
            "math": {"prompts": 10, "gain": -g, "gain_ci": [-g - 0.02, -g + 0.02], "oracle_gain": 0.2}}


def ppo_by_group(i: int) -> dict[str, Any]:
    """A general PPO record's per-kind gains (RM ``i``): constraint gains grow with i, safety ones shrink."""
    g = 0.005 * (i + 1)
    return {"constraints": {"prompts": 12, "gain": g, "gain_ci": [g - 0.01, g + 0.01]},
            "safety": {"prompts": 12, "gain": -g, "gain_ci": [-g - 0.01, -g + 0.01]}}


def agreement(i: int) -> dict[str, Any]:
    """A general BoN record's RM-gold agreement (RM ``i``)."""
    return {"mean_spearman": 0.05 * i - 0.1, "prompts": 18 - i, "gold_varies": 20, "total_prompts": 24}


def build(store: Store, *, seed: int = 0, specs: tuple = RM_SPECS, experiment: str = EXP,
          rb2_data: str = RB2_DATA, downstream: bool = True, duplicate: bool = True, tag: str = "",
          comparison: bool = False, train_seeds: tuple[int, ...] = (0,), ppo_seeds: tuple[int, ...] = (0,)) -> FakeStudy:
    """``train_seeds``: every RM spec is trained once per seed (seed 0 keeps the one-seed study's ids).
    ``ppo_seeds``: every PPO run (and the upper bound) once per seed with the RM fixed, as
    ``study.ppo_seeds`` runs them (seed 0 keeps the one-seed study's ids); ``expected`` then holds
    each PPO column's mean over the seeds and ``ppo_seed_gains`` each seed's gain."""
    rng = np.random.default_rng(seed)
    clock = _Clock()
    study = FakeStudy(store)
    runs = [(s, i, spec) for s in train_seeds for i, spec in enumerate(specs)]
    for train_seed, i, (lineage, mix, epochs, lr, q) in runs:
        run_tag = f"{tag}/s{train_seed}" if train_seed else tag
        rm = study.add(_record(
            "train_rm", ("rm", experiment, run_tag, i), clock, experiment=experiment,
            config={"model": {"lineage": lineage}, "data": {"name": mix}},
            inputs={"lineage": f"lin-{lineage}", "mix": f"mix-{mix}"},
            metrics={"heldout/accuracy": 0.5 + q / 2},
            artifacts={"model": f"artifacts/train_rm/rm{i}/model"},
            info={"lineage": {"lineage": lineage, "model": lineage, "checkpoint": "instruct",
                              "mix": {"name": mix, "id": f"mix-{mix}"}, "epochs": epochs,
                              "trainer": {"learning_rate": lr, "epochs": epochs}, "profile": {"mode": "none"},
                              "seed": train_seed}},
        ))
        rid = rm.id
        study.rms.append(rid)
        exp = study.expected.setdefault(rid, {})
        subsets = {s: float(np.clip(q + rng.normal(0, 0.08), 0, 1)) for s in SUBSETS}
        rb2 = {"overall": float(np.mean(list(subsets.values()))), **subsets,
               "counts": {s: 50 for s in SUBSETS}, "complete": True, "ties_components": {"accurate": 0.5}}
        if duplicate and i == 0 and not train_seed:  # an older evaluation of the same cell, superseded by the one below
            study.add(_record("evaluate", ("old", experiment, run_tag, i), clock, experiment=experiment,
                              config={"rm": rid, "profile": {"mode": "none"}},
                              inputs={"rm": rid, "rb2": rb2_data, "prb": PRB_DATA},
                              metrics={"rb2": {**rb2, "overall": 0.01}, "prb": {"accuracy": 0.01, "n": 90}}), rid)
        for mode, shift in (("none", 0.0), ("raw", 0.06)):
            domains = {d: float(np.clip(0.5 + 0.6 * (q - 0.5) + shift + rng.normal(0, 0.04), 0, 1)) for d in DOMAINS}
            prb = {"accuracy": float(np.mean(list(domains.values()))), **domains, "ties": 0, "mean_gap": 0.3, "n": 90}
            metrics: dict[str, Any] = {"prb": prb, "scoring": {"items": 10, "truncated": 0}}
            inputs = {"rm": rid, "prb": PRB_DATA}
            if mode == "none":
                metrics["rb2"] = rb2
                inputs["rb2"] = rb2_data
                exp["rb2/overall"] = rb2["overall"]
                exp.update({f"rb2/{s}": v for s, v in subsets.items()})
            exp[f"prb/{mode}/accuracy"] = prb["accuracy"]
            study.add(_record("evaluate", ("eval", experiment, run_tag, i, mode), clock, experiment=experiment,
                              config={"rm": rid, "profile": {"mode": mode}}, inputs=inputs, metrics=metrics,
                              artifacts={"prb_scores": f"artifacts/evaluate/x{i}{mode}/prb_scores.parquet"},
                              info={"rm": {"lineage": lineage, "record": rid}}), rid)
        if comparison:  # Chatbot Arena-/PRISM-Personalized: arena tracks the RM's quality, prism is noise
            scores = {"arena": float(0.5 + 0.4 * (q - 0.5) + rng.normal(0, 0.005)), "prism": float(rng.uniform(0.45, 0.6))}
            metrics = {b: {"accuracy": v, "user_accuracy": v - 0.01, "ties": 0, "n": 120, "n_users": 40,
                           "user_context": "history", "k": 2, "with_context": 100} for b, v in scores.items()}
            study.add(_record("evaluate", ("eval-comparison", experiment, run_tag, i), clock, experiment=experiment,
                              config={"rm": rid, "profile": {"mode": "none"}}, metrics=metrics,
                              inputs={"rm": rid, "arena": "data-cmp-cccccccc", "prism": "data-cmp-cccccccc"},
                              info={"rm": {"lineage": lineage, "record": rid}}), rid)
            exp.update({f"{b}/history/accuracy": v for b, v in scores.items()})
        if not downstream:
            continue
        for prompts, slope in (("personalized", 0.5), ("general", 0.3)):
            key = ("bon", experiment, run_tag, i, prompts)
            bid = content_hash({"task": "bon", "key": key})
            curve, rel = _per_prompt(store, bid, rng, gain16=slope * q + rng.normal(0, 0.02))
            rec = _record("bon", key, clock, experiment=experiment,
                          config={"rm": rid, "prompts": {"name": prompts}, "model": {"lineage": POLICY}},
                          inputs={"pool": f"pool-{prompts}", "rm_scores": f"s-{i}-{prompts}", "gold_scores": f"g-{prompts}"},
                          metrics={"n": 16, "prompts": 24, "bon_at_1": curve["1"]["bon"], "curve": curve,
                                   "gain_at_n": curve["16"]["gain"], "gain_at_n_ci": curve["16"]["gain_ci"],
                                   "normalised_gain_at_n": curve["16"]["normalised_gain"],
                                   **({"by_group": by_group(i), "rm_gold_agreement": agreement(i)}
                                      if prompts == "general" else {})},
                          artifacts={"per_prompt": rel},
                          info={"rm": {"id": rid, "lineage": lineage}, "policy_lineage": POLICY,
                                "prompts": prompts, "judge": {"name": "rubric" if prompts == "personalized" else "verifier"}})
            assert rec.id == bid
            study.add(rec, rid)
            exp[f"bon/{prompts}/gain@16"] = curve["16"]["gain"]
            exp[f"bon/{prompts}/ngain@16"] = curve["16"]["normalised_gain"]
            match = lineage == POLICY
            gains = []
            for ppo_seed in ppo_seeds:
                gain = 0.4 * q - (0.0 if match else 0.12) + rng.normal(0, 0.01)
                key = ("ppo", experiment, run_tag, i, prompts) + ((ppo_seed,) if ppo_seed else ())
                pid = content_hash({"task": "ppo", "key": key})
                study.add(_record("ppo", key, clock, experiment=experiment,
                                  artifacts={"per_prompt": _ppo_per_prompt(store, pid, rng, gain)},
                                  config={"rm": rid, "prompts": {"name": prompts}, "algorithm": "ppo",
                                          "model": {"lineage": POLICY}, "seed": ppo_seed},
                                  inputs={"policy": "pol", "rm": rid, "train_prompts": f"t-{prompts}",
                                          "baseline_pool": f"base-{prompts}" + (f"-s{ppo_seed}" if ppo_seed else "")},
                                  # The RM's score of the held-out samples rises on every other run.
                                  metrics={"gain": gain, "gain_ci": [gain - 0.03, gain + 0.03], "gold_before": 0.4,
                                           "gold_after": 0.4 + gain, "proxy_before": 0.1 * i,
                                           "proxy_after": 0.1 * i + (0.5 if i % 2 else -0.2), "final_kl": 1.0 + i,
                                           **({"by_group": ppo_by_group(i)} if prompts == "general" else {})},
                                  info={"rm": {"id": rid, "lineage": lineage}, "policy_lineage": POLICY,
                                        "lineage_match": match,
                                        "judge": {"name": "rubric" if prompts == "personalized" else "verifier"}}), rid)
                gains.append(gain)
            exp[f"ppo/{prompts}/gain"] = float(np.mean(gains))
            study.ppo_seed_gains.setdefault(rid, {})[f"ppo/{prompts}/gain"] = gains
    for ppo_seed in ppo_seeds if downstream else ():  # the PPO upper bound with the gold judge as reward: never correlated
        key = ("ppo-judge", experiment, tag) + ((ppo_seed,) if ppo_seed else ())
        gain = 0.45 + 0.01 * ppo_seed
        pooled = len(ppo_seeds) > 1  # per-prompt gains to pool (the one-seed study's record has none)
        per_prompt = {"per_prompt": _ppo_per_prompt(store, content_hash({"task": "ppo", "key": key}), rng, gain)} if pooled else {}
        study.add(_record("ppo", key, clock, experiment=experiment, artifacts=per_prompt,
                          config={"rm": "judge:rubric", "prompts": {"name": "personalized"}, "algorithm": "ppo", "seed": ppo_seed},
                          inputs={"policy": "pol", "rm": "judge:rubric", "train_prompts": "t-personalized",
                                  "baseline_pool": "base-personalized" + (f"-s{ppo_seed}" if ppo_seed else "")},
                          metrics={"gain": gain, "gain_ci": [0.0, 0.9], "gold_before": 0.4, "gold_after": 0.4 + gain},
                          info={"rm": {"id": "judge:rubric", "lineage": None}, "policy_lineage": POLICY,
                                "lineage_match": False, "judge": {"name": "rubric"}}))
    return study
