"""Served judges: the LLM judges on an OpenAI-compatible endpoint (EndpointLM).

The endpoint is a small real HTTP server started here (stdlib ``ThreadingHTTPServer`` on a free
port of 127.0.0.1): it speaks ``GET /v1/models`` and ``POST /v1/chat/completions`` and answers
from a fixed rule, so the openai client, the retries, the thread pool and the cache under test
are the real ones.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rlexp.config.nodes import JudgeConfig
from rlexp.errors import ConfigError, DataError
from rlexp.models.endpoint_lm import CACHE_FILE, EndpointLM
from rlexp.scorer import ScoreInput
from rlexp.scoring.factory import judge_key, llm_judge
from rlexp.scoring.judges import LIST_SYSTEM, AspectLLMJudge, PRBListJudge
from rlexp.store import record_id

MODEL = "judge-model"
ASPECTS = [
    {"aspect": "brevity", "reason": "the user is busy", "evidence": "I have 5 minutes"},
    {"aspect": "examples", "reason": "learns by example", "evidence": "show me"},
]


class JudgeServer:
    """An OpenAI-compatible endpoint answering by rule; it records every completion request.

    Rule: a prompt containing ``GARBAGE`` gets unparsable text; ``FLAKY`` gets a 503 the first
    time; ``ECHO`` gets a 400 whose message repeats the Authorization header; a PRB list prompt
    gets ``[2, 1, 1, ...]`` (one per aspect); an aspect prompt gets match_score 2 for brevity and
    0 for anything else.
    """

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.lock = threading.Lock()
        self.bodies: list[dict[str, Any]] = []
        self.auth: list[str] = []
        self.in_flight = self.max_in_flight = 0
        self.flaked: set[str] = set()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet test output
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/") != "/v1/models":
                    return self._send(404, {"error": {"message": "not found"}})
                self._send(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "created": 0,
                                                             "owned_by": "test"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, content = server.answer(body, self.headers.get("Authorization", ""))
                if status != 200:
                    return self._send(status, {"error": {"message": content}})
                self._send(200, {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                                 "choices": [{"index": 0, "finish_reason": "stop",
                                              "message": {"role": "assistant", "content": content}}]})

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def answer(self, body: dict[str, Any], auth: str) -> tuple[int, str]:
        with self.lock:
            self.bodies.append(body)
            self.auth.append(auth)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            time.sleep(self.delay)
            system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
            if "FLAKY" in user and user not in self.flaked:
                self.flaked.add(user)
                return 503, "overloaded"
            if "ECHO" in user:
                return 400, f"bad request from {auth}"
            if "GARBAGE" in user:
                return 200, "I would rather not say"
            if system == LIST_SYSTEM:
                n = int(re.search(r"Aspects \((\d+)\)", user).group(1))
                return 200, json.dumps([2] + [1] * (n - 1))
            return 200, json.dumps({"match_score": 2 if "Aspect: brevity" in user else 0})
        finally:
            with self.lock:
                self.in_flight -= 1


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    srv = JudgeServer()
    srv.thread.start()
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()


def lm(server: JudgeServer, cache: Path, **kw: Any) -> EndpointLM:
    return EndpointLM(server.url, model=MODEL, cache_dir=cache, max_retries=kw.pop("max_retries", 2), **kw)


def item(response: str, aspects: list[dict[str, str]] = ASPECTS) -> ScoreInput:
    return ScoreInput(prompt="quick recipe?", response=response, hidden={"rubric_aspects": aspects, "narrative": "N"})


def test_served_judges_score_and_a_rerun_pays_nothing(server: JudgeServer, tmp_path: Path) -> None:
    items = [item("toast"), item("soup")]
    three = item("salad", [*ASPECTS, {"aspect": "tone"}])
    first = lm(server, tmp_path)
    assert AspectLLMJudge(first).score(items).tolist() == [0.5, 0.5]  # (2 + 0) / (2 * 2)
    assert PRBListJudge(first).score([three]).tolist() == [pytest.approx(4 / 3)]  # mean of [2, 1, 1]
    assert len(server.bodies) == 5 and first.requests == 6  # 4 aspects + 1 list, and the probe
    body = server.bodies[0]
    assert body["model"] == MODEL and body["temperature"] == 0.0 and body["max_tokens"] == 256
    assert isinstance(body["seed"], int)

    again = lm(server, tmp_path)
    aspect, prb = AspectLLMJudge(again), PRBListJudge(again)
    assert aspect.score(items).tolist() == [0.5, 0.5]
    assert prb.score([three]).tolist() == [pytest.approx(4 / 3)]
    assert again.requests == 0 and again.cache_hits == 5 and len(server.bodies) == 5
    assert aspect.stats.parse_failures == 0 and aspect.name == f"aspect-judge:{MODEL}"


def test_unparsable_replies_are_retried_then_counted(server: JudgeServer, tmp_path: Path) -> None:
    judge = AspectLLMJudge(lm(server, tmp_path))
    start = time.monotonic()
    assert judge.score([item("GARBAGE"), item("toast")]).tolist() == [0.0, 0.5]
    assert time.monotonic() - start < 10
    assert judge.stats.parse_failures == 2 and judge.stats.extra["retries"] == 4
    temperatures = sorted({b["temperature"] for b in server.bodies if "GARBAGE" in b["messages"][-1]["content"]})
    assert temperatures == [0.0, 0.1, 0.2]


def test_server_errors_are_retried_and_bad_requests_are_one_line(server: JudgeServer, tmp_path: Path) -> None:
    served = lm(server, tmp_path)
    assert AspectLLMJudge(served).score([item("FLAKY")]).tolist() == [0.5]
    assert len(server.bodies) == 4 and served.requests == 5  # each aspect 503s once, retried by the client; the probe
    with pytest.raises(DataError, match=r"refused a request \(HTTP 400\)") as err:
        served.generate([[{"role": "user", "content": "ECHO"}]], max_new_tokens=8)
    assert "\n" not in str(err.value)


def test_an_unreachable_endpoint_is_one_line_and_quick(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"  # closed: nothing listens once the socket is gone
    judge = AspectLLMJudge(EndpointLM(url, model=MODEL, cache_dir=tmp_path))
    start = time.monotonic()
    with pytest.raises(ConfigError, match=rf"judge.endpoint {re.escape(url)} is unreachable \(\w+\)") as err:
        judge.score([item("toast")])
    assert time.monotonic() - start < 10 and "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="must be an http"):
        EndpointLM("127.0.0.1:8000", model=MODEL, cache_dir=tmp_path)


def test_a_model_the_server_does_not_serve_is_one_line(server: JudgeServer, tmp_path: Path) -> None:
    other = EndpointLM(server.url, model="other-model", cache_dir=tmp_path)
    with pytest.raises(ConfigError, match=r"does not serve judge.model='other-model'; it serves: judge-model"):
        other.generate([[{"role": "user", "content": "hi"}]], max_new_tokens=8)


def test_concurrency_is_bounded(tmp_path: Path) -> None:
    srv = JudgeServer(delay=0.05)
    srv.thread.start()
    try:
        served = lm(srv, tmp_path, concurrency=3)
        prompts = [[{"role": "user", "content": f"prompt {i}"}] for i in range(12)]
        assert len(served.generate(prompts, max_new_tokens=8)) == 12
        assert 1 < srv.max_in_flight <= 3 and len(srv.bodies) == 12
        # A duplicate prompt in one call is asked once.
        assert served.generate([[{"role": "user", "content": "twin"}]] * 2, max_new_tokens=8) == ['{"match_score": 0}'] * 2
        assert len(srv.bodies) == 13
    finally:
        srv.httpd.shutdown()
        srv.httpd.server_close()


def test_the_api_key_is_sent_but_never_stored(server: JudgeServer, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-test-5ecret-do-not-store"
    monkeypatch.setenv("RLEXP_TEST_JUDGE_KEY", secret)
    served = lm(server, tmp_path, api_key_env="RLEXP_TEST_JUDGE_KEY")
    AspectLLMJudge(served).score([item("toast")])
    assert server.auth and set(server.auth) == {f"Bearer {secret}"}
    with pytest.raises(DataError) as err:
        served.generate([[{"role": "user", "content": "ECHO"}]], max_new_tokens=8)
    assert secret not in str(err.value) and "***" in str(err.value)
    assert secret not in repr(served)
    files = list(tmp_path.glob(f"{CACHE_FILE}*"))
    assert files and all(secret.encode() not in f.read_bytes() for f in files)


def test_a_served_judge_is_identified_by_model_not_url(tmp_path: Path) -> None:
    local = {"name": "llm", "model": MODEL, "variant": "prb"}
    served = {**local, "endpoint": "http://127.0.0.1:8000/v1"}
    moved = {**local, "endpoint": "http://10.0.0.2:9000/v1", "concurrency": 2, "max_retries": 1}
    assert judge_key(local, "personalized") == {"judge": "llm", "model": MODEL, "variant": "prb"}
    assert judge_key(served, "personalized") == {**judge_key(local, "personalized"), "served": True}
    assert judge_key(moved, "personalized") == judge_key(served, "personalized")
    ids = {name: record_id("bon", {"judge": cfg}) for name, cfg in
           [("local", local), ("served", served), ("moved", moved), ("unset", {**local, "endpoint": None})]}
    assert ids["served"] == ids["moved"] != ids["local"] == ids["unset"]

    with pytest.raises(ConfigError, match="judge.endpoint must be an http"):
        judge_key({**local, "endpoint": "localhost:8000"}, "personalized")  # before any sampling
    built = llm_judge(JudgeConfig(**served), lambda: pytest.fail("a served judge loads no local model"), tmp_path)
    assert isinstance(built, PRBListJudge) and isinstance(built.lm, EndpointLM) and built.lm.concurrency == 8


def test_judge_serve_execs_the_vllm_module_or_says_what_is_missing(monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    from rlexp import cli
    from rlexp.commands import judge as judge_cmd

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    assert cli.main(["judge", "serve", "Qwen/Qwen2.5-32B-Instruct"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs vllm" in err

    ran: list[list[str]] = []
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())
    monkeypatch.setattr(judge_cmd.os, "execv", lambda path, argv: ran.append(argv))
    cli.main(["judge", "serve", "M", "--port", "8011", "--tensor-parallel-size", "4"])
    assert ran == [[judge_cmd.sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", "M",
                    "--host", "127.0.0.1", "--port", "8011", "--tensor-parallel-size", "4"]]
    assert "judge.endpoint=http://127.0.0.1:8011/v1 judge.model=M" in capsys.readouterr().out


class PairServer(JudgeServer):
    """Prefers the output that says GOOD; answers an order whose outputs both say SILENT with nonsense."""

    def answer(self, body: dict[str, Any], auth: str) -> tuple[int, str]:
        user = body["messages"][-1]["content"]
        with self.lock:
            self.bodies.append(body)
        a = user.split("Output (a):\n", 1)[1].split("\n\nOutput (b):", 1)[0]
        if "SILENT" in user:
            return 200, "hmm"
        return 200, "a" if "GOOD" in a else "b"


def test_alpacaeval_preference_from_a_served_llm(tmp_path: Path) -> None:
    from rlexp.scoring.judges import PairwiseJudge
    from rlexp.scoring.suite_grader import SuiteGraderJudge

    srv = PairServer()
    srv.thread.start()
    try:
        judge = SuiteGraderJudge(PairwiseJudge(lm(srv, tmp_path)))
        hidden = {"task": "alpacaeval", "index": 0}
        items = [ScoreInput("tea?", "GOOD: boil water", hidden={**hidden, "reference": "steep it"}),
                 ScoreInput("tea?", "no idea", hidden={**hidden, "reference": "GOOD: steep it"}),
                 ScoreInput("tea?", "SILENT", hidden={**hidden, "reference": "SILENT too"})]
        assert judge.score(items).tolist() == [1.0, 0.0, 0.5]  # both orders asked; unparsable is a tie
        assert judge.stats.parse_failures == 2  # the SILENT pair, in each order, after its retries
        asked = len(srv.bodies)
        again = SuiteGraderJudge(PairwiseJudge(lm(srv, tmp_path)))
        assert again.score(items).tolist() == [1.0, 0.0, 0.5] and len(srv.bodies) == asked  # cached
    finally:
        srv.httpd.shutdown()
        srv.httpd.server_close()
