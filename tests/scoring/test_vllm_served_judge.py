"""A served judge on a real vLLM OpenAI-compatible server (`rlexp judge serve` in the vLLM environment,
a tiny lineage's instruct model on 127.0.0.1): the judge's requests reach it, every answer is scored or
counted as a parse failure, and a rerun on the same cache makes no request. Skipped without vLLM."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from rlexp.models.endpoint_lm import EndpointLM
from rlexp.scorer import ScoreInput
from rlexp.scoring.judges import AspectLLMJudge
from rlexp.store import Store
from tests.conftest import NO_VLLM, REPO, env_with, vllm_python

pytestmark = pytest.mark.slow
VLLM_PY = vllm_python()
SERVED = "tiny-judge"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(VLLM_PY is None, reason=NO_VLLM)
def test_aspect_judge_on_a_real_vllm_server(world: Path, rms: dict[str, str], tmp_path: Path) -> None:
    lineages = [r for r in Store(world / "runs").records("lineage") if r.config.get("lineage") == "tiny_qwen"]
    model = Store(world / "runs").resolve(lineages[0].artifacts["instruct"])
    port = _free_port()
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(
        [VLLM_PY, "-m", "rlexp.cli", "judge", "serve", str(model), "--port", str(port), "--served-model-name", SERVED,
         "--max-model-len", "1024", "--enforce-eager"],
        env=env_with(VLLM_CPU_KVCACHE_SPACE="1", PYTHONPATH=str(REPO)), stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and server.poll() is None:
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2).status == 200:
                    break
            except OSError:
                time.sleep(1)
        assert server.poll() is None, (tmp_path / "server.log").read_text()[-2000:]
        items = [ScoreInput("How do I water a cactus?", answer, hidden={
            "rubric_aspects": [{"aspect": "watering frequency", "reason": "asks how often", "evidence": "water"}],
            "narrative": "I keep forgetting to water my plants."}) for answer in ("Once a month.", "Every day, a lot.")]
        url = f"http://127.0.0.1:{port}/v1"
        first_lm = EndpointLM(url, model=SERVED, cache_dir=tmp_path / "cache", concurrency=2)
        judge = AspectLLMJudge(first_lm, max_new_tokens=16, max_tries=2)
        scores = judge.score(items)
        assert first_lm.requests > 0
        assert np.all((scores >= 0) & (scores <= 1))
        # A tiny model rarely writes the JSON the judge asks for: what it could not parse is counted.
        assert judge.stats.parse_failures <= len(items)
        again_lm = EndpointLM(url, model=SERVED, cache_dir=tmp_path / "cache")
        again = AspectLLMJudge(again_lm, max_new_tokens=16, max_tries=2).score(items)
        assert again_lm.requests == 0 and np.array_equal(again, scores)
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
        log.close()
