"""evaluate: the published scoring on the sandbox, invariance of scores, clear errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from rlexp.store import Store
from tests.conftest import QWEN, compose, env_with, rlexp_cmd


def _evaluate(rid: str, *overrides: str):
    from rlexp.tasks import evaluate

    return evaluate.run(compose("evaluate", f"rm={rid}", *overrides))


def test_general_rm_rb2_above_chance_prb_near_chance(world: Path, rms: dict[str, str]) -> None:
    rec = _evaluate(rms["llama_general"], "benchmark=both", "profile=none")
    rb2, prb = rec.metrics["rb2"], rec.metrics["prb"]
    print("llama_general", json.dumps({"rb2": rb2["overall"], "prb": prb["accuracy"]}))
    assert rb2["complete"] and set(rb2["counts"]) == {"Factuality", "Precise IF", "Math", "Safety", "Focus", "Ties"}
    assert rb2["overall"] > 0.35  # chance is 0.25
    assert 0.35 < prb["accuracy"] < 0.65
    # Per-completion scores recompute the subset scores exactly.
    from rlexp.benchmarks.rewardbench2_math import score_rewardbench2

    table = pq.read_table(Store(world / "runs").resolve(rec.artifacts["rb2_scores"])).to_pandas()
    rows = [
        {"id": i, "subset": g.subset.iloc[0], "scores": g.sort_values("completion_index").score.tolist(),
         "num_correct": int(g.num_correct.iloc[0])}
        for i, g in table.groupby("id", sort=False)
    ]
    assert abs(score_rewardbench2(rows)["overall"] - rb2["overall"]) < 1e-12


def test_personal_rm_with_planner_beats_chance_on_prb(world: Path, rms: dict[str, str]) -> None:
    planner = _evaluate(rms["llama_personal"], "benchmark=prb", "profile=planner").metrics["prb"]
    none = _evaluate(rms["llama_personal"], "benchmark=prb", "profile=none").metrics["prb"]
    print("llama_personal prb planner/none", planner["accuracy"], none["accuracy"])
    assert planner["accuracy"] > 0.6  # chance 0.5; n = 640 pairs, so 0.6 is ~5 standard errors above
    assert planner["accuracy"] > none["accuracy"] + 0.08


def test_scores_do_not_depend_on_batching_sorting_padding_sharing_or_reload(world: Path, rms: dict[str, str]) -> None:
    from rlexp import inputs
    from rlexp.config.nodes import ScorerConfig
    from rlexp.data.loaders import load_rb2
    from rlexp.scorer import ScoreInput
    from rlexp.scoring.reward_model import RewardModelScorer

    path = Store(world / "runs").resolve(Store(world / "runs").get(rms["qwen_general"], "train_rm").artifacts["model"])
    rb2_path, _ = inputs.data_ref("sandbox:rb2", compose("evaluate", "rm=x"))
    items = [ScoreInput(it.prompt, c) for it in load_rb2(rb2_path, limit=40) for c in it.chosen + it.rejected]
    ref = RewardModelScorer.from_pretrained(str(path), ScorerConfig(batch_size=1, sort_by_length=False)).score(items)
    for bs, sort in ((7, True), (64, False), (160, True)):
        s = RewardModelScorer.from_pretrained(str(path), ScorerConfig(batch_size=bs, sort_by_length=sort)).score(items)
        assert np.max(np.abs(s - ref)) <= 1e-5
    left = RewardModelScorer.from_pretrained(str(path), ScorerConfig(batch_size=16))
    left.tokenizer.padding_side = "left"
    assert np.max(np.abs(left.score(items) - ref)) <= 1e-5
    shared = RewardModelScorer.from_pretrained(str(path), ScorerConfig(batch_size=16, share_prefix=True))
    assert np.max(np.abs(shared.score(items) - ref)) <= 1e-5


def test_bad_inputs(world: Path, rms: dict[str, str], tmp_path: Path) -> None:
    env = env_with(RLEXP_ROOT=str(world))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(rlexp_cmd("evaluate", "logger=none", *args), capture_output=True, text=True, env=env, timeout=300)

    # A head with num_labels != 1.
    from transformers import AutoModelForSequenceClassification

    from rlexp.models.loading import load_tokenizer

    rm_dir = Store(world / "runs").resolve(Store(world / "runs").get(rms["llama_general"], "train_rm").artifacts["model"])
    two = AutoModelForSequenceClassification.from_pretrained(str(rm_dir), num_labels=2, ignore_mismatched_sizes=True)
    two.save_pretrained(tmp_path / "two_labels")
    load_tokenizer(str(rm_dir)).save_pretrained(tmp_path / "two_labels")
    out = run(f"rm={tmp_path / 'two_labels'}")
    assert out.returncode == 2 and "num_labels=2" in out.stderr and out.stderr.strip().count("\n") == 0
    # A benchmark file of the wrong kind (a PRB folder given as RB2).
    from rlexp import inputs

    prb_path, _ = inputs.data_ref("sandbox:prb", compose("evaluate", "rm=x"))
    out = run(f"rm={rms['llama_general']}", "benchmark=rb2", f"benchmark.rb2.source={prb_path}")
    assert out.returncode == 2 and "Personalized RewardBench" in out.stderr and out.stderr.strip().count("\n") == 0
    # An unknown profile mode.
    out = run(f"rm={rms['llama_general']}", "profile.mode=psychic")
    assert out.returncode == 2 and "psychic" in out.stderr and out.stderr.strip().count("\n") == 0


def test_generative_judge_runs_and_counts_failures(world: Path, rms: dict[str, str]) -> None:
    from rlexp.tasks import evaluate

    # A lineage name as the judge (its instruct checkpoint): the world's tiny_llama.
    rec = evaluate.run(compose("evaluate", "rm=tiny_llama", "scorer=generative", "scorer.max_new_tokens=12",
                               "benchmark=both", "benchmark.rb2.subsets=[Math]", "benchmark.rb2.limit=6",
                               "benchmark.prb.limit=8"))
    m = rec.metrics
    assert 0.0 <= m["rb2"]["Math"] <= 1.0 and m["rb2"]["counts"]["Math"] == 6
    assert m["prb"]["n"] == 8 and set(m["prb"]["summary"]) >= {"position_bias", "accuracy_chosen_in_a"}
    assert m["scoring"]["parse_failures"] >= 0


def test_generative_judge_without_chat_template(world: Path, rms: dict[str, str], tmp_path: Path) -> None:
    import json
    import shutil

    from rlexp import inputs

    src = Path(inputs.lineage(compose("train_rm", *QWEN)).instruct)
    dst = tmp_path / "no_template"
    shutil.copytree(src, dst)
    (dst / "chat_template.jinja").unlink(missing_ok=True)
    cfg = json.loads((dst / "tokenizer_config.json").read_text())
    cfg.pop("chat_template", None)
    (dst / "tokenizer_config.json").write_text(json.dumps(cfg))
    out = subprocess.run(rlexp_cmd("evaluate", "logger=none", f"rm={dst}", "scorer=generative", "benchmark=prb"),
                         capture_output=True, text=True, env=env_with(RLEXP_ROOT=str(world)), timeout=300)
    assert out.returncode == 2 and "no chat template" in out.stderr and out.stderr.strip().count("\n") == 0


def test_comparison_benchmarks_score_held_out_votes_with_the_users_context(world: Path, rms: dict[str, str]) -> None:
    """Chatbot Arena-/PRISM-Personalized analogues: the test votes of held-out users, each user's history
    (or PRISM survey) before the conversation; per-vote scores on disk recompute the accuracy. The first
    150 votes of each (`comparison_small`, the quick study's), as the benchmarks' `limit` takes them."""
    from rlexp import inputs
    from rlexp.benchmarks.user_pairs import user_pair_cases
    from rlexp.data.loaders import load_prism_survey, load_user_pairs

    votes = 150  # comparison_small's limit per set
    rec = _evaluate(rms["llama_personal"], "benchmark=comparison_small", "profile=planner")
    store = Store(world / "runs")
    cfg = compose("evaluate", "rm=x")
    for name in ("arena", "prism"):
        m = rec.metrics[name]
        path, data_id = inputs.data_ref(f"sandbox:{name}", cfg)
        cases = user_pair_cases(load_user_pairs(path), "test")[:votes]
        assert rec.inputs[name] == data_id and m["n"] == len(cases) == votes
        assert m["user_context"] == "history" and m["with_context"] == sum(bool(c.history) for c in cases) < m["n"]
        table = pq.read_table(store.resolve(rec.artifacts[f"{name}_scores"])).to_pandas()
        assert len(table) == m["n"] and table["correct"].mean() == m["accuracy"]
        assert (table["correct"] == (table["chosen_score"] > table["rejected_score"])).all()
        print(name, "history accuracy", m["accuracy"], "users", m["n_users"])
    # PRISM with the survey instead: another record, the survey an input of it.
    persona = _evaluate(rms["llama_personal"], "benchmark=prism", "benchmark.prism.user_context=persona",
                        f"benchmark.prism.limit={votes}")
    survey_path, survey_id = inputs.data_ref("sandbox:prism_survey", cfg)
    surveys = load_prism_survey(survey_path)
    m = persona.metrics["prism"]
    assert persona.id != rec.id and persona.inputs["prism_survey"] == survey_id and "arena" not in persona.metrics
    described = [c for c in user_pair_cases(load_user_pairs(inputs.data_ref("sandbox:prism", cfg)[0]), "test", surveys)[:votes]
                 if c.survey is not None and (c.survey.self_description or c.survey.stated_prefs)]
    assert m["user_context"] == "persona" and m["with_context"] == len(described) > 0
    print("prism persona accuracy", m["accuracy"])
