"""Served judges as a run uses them (issue 64): probed before the first expensive step, their requests and
cache hits in the record, `rlexp judge serve`'s hint with --served-model-name, and `openai` declared."""

from __future__ import annotations

import re
import socket
from pathlib import Path
from typing import Any

import pytest
import tomllib

from rlexp.errors import ConfigError
from rlexp.scoring.judges import AspectLLMJudge, PRBListJudge
from rlexp.scoring.suite_grader import SuiteGraderJudge
from tests.conftest import compose
from tests.scoring.test_served_judge import MODEL, JudgeServer, PairServer, item, lm, server  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]


def closed_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_openai_is_a_declared_dependency() -> None:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(re.match(r"openai\b", d) for d in deps), deps


def test_judge_serve_hint_names_the_served_model_name(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    from rlexp import cli
    from rlexp.commands import judge as judge_cmd

    ran: list[list[str]] = []
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())
    monkeypatch.setattr(judge_cmd.os, "execv", lambda path, argv: ran.append(argv))
    for args, name in ([["--served-model-name", "judge-32b"], "judge-32b"],
                       [["--served-model-name=judge-b", "--tensor-parallel-size", "4"], "judge-b"],
                       [["--served-model-name", "first", "second"], "first"],
                       [["--tensor-parallel-size", "4"], "/models/Qwen"]):
        cli.main(["judge", "serve", "/models/Qwen", "--port", "8011", *args])
        out = capsys.readouterr().out
        assert f"judge.endpoint=http://127.0.0.1:8011/v1 judge.model={name}\n" in out, out
    assert ran[0][-2:] == ["--served-model-name", "judge-32b"]  # the server gets the argument unchanged


def test_the_record_counts_requests_and_cache_hits(server: JudgeServer, tmp_path: Path) -> None:  # noqa: F811
    first = AspectLLMJudge(lm(server, tmp_path))
    first.score([item("toast"), item("soup")])
    assert first.stats.extra["served"] == {"requests": 5, "cache_hits": 0}  # 4 aspects and the probe
    again = PRBListJudge(lm(server, tmp_path))
    again.score([item("toast")])
    again.score([item("toast")])
    assert again.stats.extra["served"] == {"requests": 2, "cache_hits": 1}  # probe + 1 list, then cached


def test_a_served_preference_judge_counts_in_the_grader_stats(tmp_path: Path) -> None:
    from rlexp.scoring.judges import PairwiseJudge

    srv = PairServer()
    srv.thread.start()
    try:
        judge = SuiteGraderJudge(PairwiseJudge(lm(srv, tmp_path)))
        hidden = {"task": "alpacaeval", "index": 0, "reference": "steep it"}
        from rlexp.scorer import ScoreInput

        judge.score([ScoreInput("tea?", "GOOD: boil water", hidden=hidden)])
        served = judge.stats.extra["served"]
        assert served["requests"] == 3 and served["cache_hits"] == 0  # both orders and the probe
    finally:
        srv.httpd.shutdown()
        srv.httpd.server_close()


class Sampled(Exception):
    """Raised where the run would sample its pool: the probe must come first."""


def _no_sampling(*_a: Any, **_k: Any) -> Any:
    raise Sampled


@pytest.mark.parametrize("task", ["bon", "ppo"])
def test_a_down_judge_fails_before_sampling(task: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rlexp import inputs

    monkeypatch.setattr(inputs, "pool", _no_sampling)
    monkeypatch.setattr(inputs, "sample", _no_sampling)
    monkeypatch.setattr(inputs, "policy", lambda cfg: ("/nowhere", "policy", None))
    monkeypatch.setattr(inputs, "rm", lambda ref, store: pytest.fail("the probe comes before the RM"))
    url = closed_url()
    overrides = ["judge=llm", f"judge.model={MODEL}", f"judge.endpoint={url}", "prompts=personalized",
                 "model=tiny_llama", "rm=someid"]
    if task == "bon":
        from rlexp.tasks import bon as mod
    else:
        from rlexp.tasks import ppo as mod

        monkeypatch.setattr(mod, "check_generation_length", lambda *a: None)
        monkeypatch.setattr(mod, "_validate", lambda cfg: None)
    if task == "bon":
        monkeypatch.setattr(mod.inputs, "rm", _no_sampling)
    cfg = compose(task, *overrides)
    with pytest.raises(ConfigError, match=rf"judge.endpoint {re.escape(url)} is unreachable"):
        mod.run(cfg)


def test_a_judge_serving_another_model_fails_before_sampling(server: JudgeServer, tmp_path: Path,  # noqa: F811
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from rlexp import inputs
    from rlexp.tasks import bon

    monkeypatch.setattr(inputs, "pool", _no_sampling)
    monkeypatch.setattr(inputs, "rm", _no_sampling)
    cfg = compose("bon", "judge=llm", "judge.model=other", f"judge.endpoint={server.url}", "prompts=personalized",
                  "model=tiny_llama", "rm=someid")
    with pytest.raises(ConfigError, match="does not serve judge.model='other'"):
        bon.run(cfg)
    assert server.bodies == []  # a probe asks no completion
    # The right model passes the probe and the run goes on to its first step.
    ok = compose("bon", "judge=llm", f"judge.model={MODEL}", f"judge.endpoint={server.url}", "prompts=personalized",
                 "model=tiny_llama", "rm=someid")
    with pytest.raises(Sampled):
        bon.run(ok)


def test_no_probe_without_a_served_judge(tmp_path: Path) -> None:
    from rlexp.scoring.factory import probe_served_judges

    assert probe_served_judges(compose("bon", "prompts=personalized", "rm=x"), tmp_path) == []
    assert probe_served_judges(compose("sample", "prompts=personalized"), tmp_path) == []
    local = compose("bon", "judge=llm", "judge.model=some/model", "prompts=personalized", "rm=x")
    assert probe_served_judges(local, tmp_path) == []
