"""A judge model behind an OpenAI-compatible endpoint (a vLLM server, say): the served twin of ChatLM.

:class:`EndpointLM` answers chat prompts through ``/v1/chat/completions`` with the interface of
:class:`~rlexp.models.chat_lm.ChatLM`, so every LLM judge can run against a server instead of a
local model. Requests run ``concurrency`` at a time; the openai client retries connection errors,
429 and 5xx with exponential backoff; and every answer is kept in an sqlite cache on disk, so a
rerun (or a second process on the same store) never pays for a request twice.

The API key is read from the environment at construction and sent only in the Authorization
header: it is not part of a cache key, a name, a log line or an error message.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import closing
from pathlib import Path
from typing import Any

from rlexp.errors import ConfigError, DataError
from rlexp.models.chat_lm import Messages

#: seconds the reachability probe waits: a server that is up answers /models at once.
PROBE_TIMEOUT = 5.0
CACHE_FILE = "responses.sqlite"


def request_key(model: str, messages: Messages, max_tokens: int, temperature: float, seed: int) -> str:
    """The cache key of one request: a hash of everything that determines the answer (never the key)."""
    payload = {"model": model, "messages": [dict(m) for m in messages], "max_tokens": max_tokens,
               "temperature": temperature, "seed": seed}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=True).encode()).hexdigest()


def request_seed(seed: int, messages: Messages) -> int:
    """The seed sent with one prompt: the call's seed mixed with the prompt.

    vLLM gives every request with the same seed the same random stream (reference note, vLLM), so
    one seed for a whole batch would correlate the samples of different prompts; mixing in the
    prompt keeps each prompt's answer independent of the batch it came in.
    """
    digest = hashlib.sha256(json.dumps([seed, [dict(m) for m in messages]], sort_keys=True).encode()).hexdigest()
    return int(digest[:8], 16) % (2**31 - 1)


def check_endpoint(endpoint: str) -> None:
    """Fail with one line unless ``endpoint`` is an http(s) URL (checked before any sampling)."""
    if not endpoint or not str(endpoint).startswith(("http://", "https://")):
        raise ConfigError(f"judge.endpoint must be an http(s) URL such as http://127.0.0.1:8000/v1, got {endpoint!r}")


class ResponseCache:
    """Answers by request key in one sqlite file; WAL, so processes sharing a store can read and write it."""

    def __init__(self, cache_dir: str | os.PathLike[str]) -> None:
        self.path = Path(cache_dir).expanduser() / CACHE_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(self.connect()) as con, con:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, text TEXT NOT NULL)")

    def connect(self) -> sqlite3.Connection:
        """A new connection to the cache file (sqlite connections are not shared across threads)."""
        # A generous busy timeout: another process's write holds the lock for milliseconds.
        return sqlite3.connect(self.path, timeout=60.0)

    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        """The cached answers among ``keys``."""
        found: dict[str, str] = {}
        with closing(self.connect()) as con:
            for start in range(0, len(keys), 500):  # below sqlite's limit on bound parameters
                chunk = list(keys[start:start + 500])
                marks = ",".join("?" * len(chunk))
                found.update(con.execute(f"SELECT key, text FROM responses WHERE key IN ({marks})", chunk).fetchall())
        return found

    def put(self, con: sqlite3.Connection, key: str, text: str) -> None:
        """Store one answer and commit it, so an interrupted run keeps what it paid for."""
        with con:
            con.execute("INSERT OR REPLACE INTO responses (key, text) VALUES (?, ?)", (key, text))


class EndpointLM:
    """A chat model behind an OpenAI-compatible endpoint, with ChatLM's ``generate`` interface.

    ``model`` is the name the server serves (vLLM: its ``--model`` or ``--served-model-name``); it
    names the judge and is part of every cache key. ``requests`` counts the HTTP requests made
    (the probe and the openai client's own retries included) and ``cache_hits`` the answers read
    from the cache instead.
    """

    def __init__(
        self,
        endpoint: str,
        *,
        model: str,
        cache_dir: str | os.PathLike[str],
        api_key_env: str = "OPENAI_API_KEY",
        concurrency: int = 8,
        max_retries: int = 5,
        request_timeout: float = 120.0,
        name: str | None = None,
    ) -> None:
        check_endpoint(endpoint)
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ConfigError(f"judge.concurrency must be a positive integer, got {concurrency!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ConfigError(f"judge.max_retries must be a non-negative integer, got {max_retries!r}")
        if not request_timeout > 0:
            raise ConfigError(f"judge.request_timeout must be positive, got {request_timeout!r}")
        import openai  # only a served judge needs the client

        self.endpoint = str(endpoint).rstrip("/")
        self.model = model
        self.name = name or model
        self.concurrency = concurrency
        #: prompts cut short: the server rejects an over-long prompt instead, so this stays 0.
        self.truncated = 0
        self.requests = 0
        self.cache_hits = 0
        self.cache = ResponseCache(cache_dir)
        self._key = os.environ.get(api_key_env) or "EMPTY"
        self._lock = threading.Lock()
        self._probed = False
        http = openai.DefaultHttpxClient(event_hooks={"request": [self._count]})
        self.client = openai.OpenAI(base_url=self.endpoint, api_key=self._key, max_retries=max_retries,
                                    timeout=float(request_timeout), http_client=http)

    def __repr__(self) -> str:
        # The default repr would show the client, and with it the key.
        return f"EndpointLM({self.endpoint!r}, model={self.model!r})"

    def _count(self, _request: Any) -> None:
        with self._lock:
            self.requests += 1

    def _redact(self, text: str) -> str:
        return text.replace(self._key, "***") if self._key != "EMPTY" else text

    def probe(self) -> None:
        """Fail with one line unless the endpoint answers ``GET /models`` and serves ``model``."""
        import openai

        try:
            served = [m.id for m in self.client.with_options(timeout=PROBE_TIMEOUT, max_retries=0).models.list()]
        except openai.APIConnectionError as exc:
            cause = type(exc.__cause__ or exc).__name__
            raise ConfigError(f"judge.endpoint {self.endpoint} is unreachable ({cause}): start the server "
                              "(rlexp judge serve ...) or fix judge.endpoint") from None
        except openai.APIStatusError as exc:
            hint = ": check the key in the variable judge.api_key_env names" if exc.status_code in (401, 403) else ""
            raise ConfigError(f"judge.endpoint {self.endpoint} answered GET /models with HTTP {exc.status_code}{hint}"
                              ) from None
        if self.model not in served:
            raise ConfigError(f"judge.endpoint {self.endpoint} does not serve judge.model={self.model!r}; "
                              f"it serves: {', '.join(served) or 'nothing'}")
        self._probed = True

    def _complete(self, messages: Messages, max_tokens: int, temperature: float, seed: int) -> str:
        import openai

        try:
            out = self.client.chat.completions.create(model=self.model, messages=messages,  # type: ignore[arg-type]
                                                      max_tokens=max_tokens, temperature=temperature, seed=seed)
        except openai.APIConnectionError as exc:
            cause = type(exc.__cause__ or exc).__name__
            raise ConfigError(f"judge.endpoint {self.endpoint} stopped answering ({cause}) after "
                              f"{self.client.max_retries} retries") from None
        except openai.APIStatusError as exc:
            detail = self._redact(" ".join(str(exc.message).split()))[:300]
            err = DataError if exc.status_code == 400 else ConfigError
            raise err(f"judge.endpoint {self.endpoint} refused a request (HTTP {exc.status_code}): {detail}") from None
        if not out.choices:
            return ""
        return (out.choices[0].message.content or "").strip()

    def generate(
        self,
        prompts: Sequence[Messages],
        max_new_tokens: int = 512,
        temperature: float = 0.0,
        seed: int = 0,
        batch_size: int | None = None,
    ) -> list[str]:
        """Answer each chat prompt (stripped text), from the cache where it can.

        ``batch_size`` is accepted for ChatLM's interface and ignored: the server batches, and
        ``concurrency`` bounds the requests in flight.
        """
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise ConfigError(f"served judge {self.name}: max_new_tokens must be a positive integer")
        if temperature < 0:
            raise ConfigError(f"served judge {self.name}: temperature must be >= 0, got {temperature}")
        requests = []
        for messages in prompts:
            msgs = [{"role": str(m["role"]), "content": str(m["content"])} for m in messages]
            rseed = request_seed(seed, msgs)
            requests.append((request_key(self.model, msgs, max_new_tokens, float(temperature), rseed), msgs, rseed))
        answers = self.cache.get_many([k for k, _, _ in requests])
        self.cache_hits += sum(k in answers for k, _, _ in requests)
        # One request per distinct missing prompt: duplicates in a batch share an answer.
        missing = {k: (msgs, rseed) for k, msgs, rseed in requests if k not in answers}
        if missing:
            if not self._probed:
                self.probe()
            answers.update(self._fetch(missing, max_new_tokens, float(temperature)))
        return [answers[k] for k, _, _ in requests]

    def _fetch(self, missing: dict[str, tuple[Messages, int]], max_tokens: int, temperature: float) -> dict[str, str]:
        """Answers for ``missing`` from the server, each cached as soon as it arrives."""
        out: dict[str, str] = {}
        pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="rlexp-judge")
        try:
            futures = {pool.submit(self._complete, msgs, max_tokens, temperature, rseed): key
                       for key, (msgs, rseed) in missing.items()}
            with closing(self.cache.connect()) as con:
                for future in as_completed(futures):
                    # The first failure ends the call (the rest is cancelled below); what came back is kept.
                    text = future.result()
                    out[futures[future]] = text
                    self.cache.put(con, futures[future], text)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return out
