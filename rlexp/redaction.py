"""Secrets found by pattern and kept out of records, logs and Hydra's job folder.

Two rules decide what a secret is:

* **by key**: a key is split into words (``accessToken`` -> access, token; ``WANDB_API_KEY`` ->
  wandb, api, key) and names a credential when its *last* word does: ``token`` (but not a vocabulary
  entry such as ``pad_token``), ``secret``, ``password``, ``credentials``, ``auth``,
  ``authorization``, ``apikey``, or ``key`` after another word (``api_key``, ``openai_key``,
  ``aws_secret_access_key``; not ``key`` alone, IFEval's row id, nor ``sort_key``-like field names).
  ``max_new_tokens``, ``tokenizer``, ``api_key_env`` (a variable's *name*), ``keys`` and ``monkey``
  end in other words and are kept.
* **by value**, whatever the key: ``sk-...``, ``hf_...``, ``ghp_...``, ``AKIA...``, ``Bearer <token>``,
  a URL's password (``https://user:pw@host``) and long random-looking strings (see
  :func:`looks_random`: record ids, hashes, paths and hub ids never are).

Redaction only changes what is *written*: record ids are computed from the config before it is
redacted (``rlexp.runtime.execute``), so redacting more never changes an id.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import math
import os
import re
import tempfile
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

REDACTED = "***"

# Last words of a key that holds a credential.
_SECRET_WORDS = frozenset({"token", "secret", "secrets", "password", "passwd", "passphrase", "credential",
                           "credentials", "auth", "authorization", "apikey", "bearer", "cookie"})
# A ``*_token`` whose first part names a vocabulary entry (a model's special tokens), not a credential.
_VOCAB_WORDS = frozenset({"pad", "eos", "bos", "unk", "sep", "cls", "mask", "special", "chat", "image", "stop",
                          "start", "end", "eot", "begin", "placeholder", "vocab"})
# A ``*_key`` that names a field, a column or an index rather than a credential.
_FIELD_KEY_WORDS = frozenset({"sort", "cache", "hash", "primary", "foreign", "group", "join", "partition", "lookup",
                              "row", "column", "col", "field", "dict", "map", "index", "id", "text", "prompt",
                              "response", "chosen", "rejected", "label", "reward", "score", "metric", "record",
                              "sample", "data", "input", "output", "result", "message", "content", "question",
                              "answer", "completion", "context", "target", "instruction"})
_KEY_PIECES = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def key_words(key: str) -> list[str]:
    """A key's words, lower-cased: split on ``_``, ``-``, ``.`` and spaces, then on camelCase."""
    return [w.lower() for piece in re.split(r"[^A-Za-z0-9]+", key) for w in _KEY_PIECES.findall(piece)]


def is_secret_key(key: str) -> bool:
    """Whether a config key (or an override's dotted path, judged by its last part) names a credential."""
    words = key_words(key.rsplit(".", 1)[-1])
    if not words:
        return False
    last, before = words[-1], words[-2] if len(words) > 1 else None
    if last == "token":
        return before not in _VOCAB_WORDS
    if last == "key":
        # ``key`` alone is a row id (IFEval) or a dict key; ``<qualifier>_key`` a credential.
        return before is not None and before not in _FIELD_KEY_WORDS
    return last in _SECRET_WORDS


# Credentials recognisable by their shape, searched anywhere in a string. The part that is not
# secret stays in clear in :func:`redact_text`: the ``Bearer`` scheme (group ``keep``), a URL's
# scheme and user (group ``keep2``).
_SECRET_SPANS = re.compile(
    r"(?<![\w-])sk-(?=[\w-]*\d)[\w-]{20,}"  # OpenAI/Anthropic-style keys (a real one always has digits)
    r"|(?<!\w)hf_[A-Za-z0-9]{30,}"  # Hugging Face tokens
    r"|(?<!\w)(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{30,})"  # GitHub tokens
    r"|(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])"  # AWS access key ids
    r"|(?<![\w-])xox[abprs]-[A-Za-z0-9-]{10,}"  # Slack tokens
    r"|(?P<keep>\b[Bb]earer\s+)(?=[\w.~+/=-]*\d)[\w.~+/=-]{16,}"  # an Authorization header's token
    r"|(?P<keep2>://[^/\s:@]+:)[^/\s@]+(?=@)"  # a URL's password
)
# A value that is one whole ``sk-`` key, digits or not (the rule before value patterns were searched).
_WHOLE_SK = re.compile(r"sk-[\w-]{20,}")
# Candidates for :func:`looks_random` inside free text: no ``/`` (paths, hub ids), no whitespace.
_RANDOM_CANDIDATE = re.compile(r"(?<![\w.+-])[\w.+-]{32,}=*")
# Secret-named ``key=value`` / ``key: value`` inside free text (a log line, an override_dirname).
_KEY_SEP = re.compile(r"(?<![\w.@-])(?P<key>[A-Za-z_][\w.@-]*)['\"]?\s*[=:]\s*['\"]?")
# A value, with its scheme when it is an Authorization header's (``Authorization: Bearer abc``).
_VALUE = re.compile(r"(?:(?:[Bb]earer|[Bb]asic|[Tt]oken|[Dd]igest)\s+)?[^\s,'\"}\]]+")


def looks_random(text: str) -> bool:
    """Whether a string looks like a generated credential rather than a name, an id or a path.

    All of: at least 32 characters; no ``/`` or whitespace (paths, hub ids, prompts); not only hex
    digits and dashes (record ids, sha hashes, UUIDs); upper- and lower-case letters and digits; a
    run of at least 16 letters and digits (model and experiment names are short words joined by ``-``,
    ``_`` or ``.``); camelCase pieces 3 characters long or less on average (``ThisIsALongName2024``
    splits into words, a random string into pieces of ~1.9); above 3.5 bits of entropy per character.
    About 1 random 32-character string in 150 (1 in 30 of ``token_urlsafe(32)``) is missed: the key rule covers it.
    """
    if len(text) < 32 or re.search(r"[\s/]", text) or re.fullmatch(r"[0-9a-fA-F-]+", text):
        return False
    if not (re.search(r"[a-z]", text) and re.search(r"[A-Z]", text) and re.search(r"\d", text)):
        return False
    if max(len(run) for run in re.findall(r"[A-Za-z0-9]+", text)) < 16:
        return False
    pieces = _KEY_PIECES.findall(text)
    if sum(map(len, pieces)) / len(pieces) >= 3.0:
        return False
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values()) > 3.5


def is_secret_value(text: str) -> bool:
    """Whether a string holds a credential anywhere (a token, a header, a URL password) or is one."""
    return bool(_WHOLE_SK.fullmatch(text) or _SECRET_SPANS.search(text) or looks_random(text))


def redact(obj: Any) -> Any:
    """Copy of ``obj`` with every credential replaced by :data:`REDACTED`: values under a secret key
    (not ``None``, ``""`` or a boolean, which hide nothing: ``use_auth_token: true``), and strings that
    hold a credential under any key."""
    if isinstance(obj, Mapping):
        return {k: (REDACTED if is_secret_key(str(k)) and _hides_something(v) else redact(v)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact(v) for v in obj]
    if isinstance(obj, str) and is_secret_value(obj):
        return REDACTED
    return obj


def _hides_something(value: Any) -> bool:
    return value is not None and value != "" and not isinstance(value, bool)


def redact_text(text: str) -> str:
    """Free text (a log line) with each credential replaced in place: the value of a secret-named
    ``key=value`` or ``key: value``, and every span that looks like a credential."""

    # A key's match stops before its value, so a secret key inside another one's value
    # (``note: api_key=abc``) is still found.
    spans: list[tuple[int, int]] = []
    for m in _KEY_SEP.finditer(text):
        value = _VALUE.match(text, m.end())
        if value and is_secret_key(m["key"].split("@")[0]) and value[0].lower() not in ("null", "none", "true", "false"):
            if not spans or m.end() >= spans[-1][1]:
                spans.append((m.end(), value.end()))
    for start, end in reversed(spans):
        text = text[:start] + REDACTED + text[end:]
    text = _SECRET_SPANS.sub(lambda m: (m["keep"] or m["keep2"] or "") + REDACTED, text)
    return _RANDOM_CANDIDATE.sub(lambda m: REDACTED if looks_random(m[0]) else m[0], text)


def redact_override(line: str) -> str:
    """One Hydra override (``+judge.api_key=abc``, ``note=sk-...,sk-...``) with its value redacted when
    its key names a secret, or the secrets inside its value otherwise."""
    m = re.fullmatch(r"(?P<key>[^=]+)=(?P<value>.*)", line, flags=re.DOTALL)
    if m is None:  # ``~key`` deletes: no value
        return line
    key = m["key"].lstrip("+~").split("@")[0]
    if is_secret_key(key) and m["value"] not in ("", "null"):
        return f"{m['key']}={REDACTED}"
    return f"{m['key']}={redact_text(m['value'])}"


def _override_items(dirname: str, item_sep: str = ",", kv_sep: str = "=") -> list[str]:
    """``override_dirname``'s items; a piece without ``kv_sep`` continues the previous item (a value
    holding the separator: ``x=[1,2]``)."""
    items: list[str] = []
    for piece in dirname.split(item_sep) if dirname else []:
        if items and kv_sep not in piece:
            items[-1] += item_sep + piece
        else:
            items.append(piece)
    return items


def _is_secret_item(item: str, kv_sep: str = "=") -> bool:
    key, _, value = item.partition(kv_sep)
    return (is_secret_key(key.lstrip("+~").split("@")[0]) and value not in ("", "null")) or redact_text(value) != value


def redact_dirname(dirname: str, item_sep: str = ",", kv_sep: str = "=") -> str:
    """``hydra.job.override_dirname`` with each secret item's value redacted."""
    return item_sep.join(
        item.partition(kv_sep)[0] + kv_sep + REDACTED if _is_secret_item(item, kv_sep) else item
        for item in _override_items(dirname, item_sep, kv_sep)
    )


def sweep_subdir(dirname: str, seed: Any) -> str:
    """A sweep job's folder (``${rlexp_subdir:...}`` in conf/base.yaml): override_dirname (without seed
    and paths, and without any override that holds a secret, so a folder name never shows one), then
    the seed on its own. An empty override_dirname must not yield "/seed=1", which os.path.join treats
    as absolute. Items are split on base.yaml's ``item_sep: ","`` and ``kv_sep: "="``."""
    public = ",".join(item for item in _override_items(str(dirname or "")) if not _is_secret_item(item))
    public = "/".join(fit_name(part) for part in public.split("/"))
    return f"{public}/seed={seed}" if public else f"seed={seed}"


#: The filesystem's limit on one name (ext4, xfs, tmpfs, APFS), in bytes.
MAX_NAME_BYTES = 255


def fit_name(name: str, limit: int = MAX_NAME_BYTES) -> str:
    """``name`` as one folder name of at most ``limit`` bytes: a longer one (a sweep value of 300
    characters) keeps its start and ends in a hash of the whole, so jobs stay apart and a sweep never
    stops at a job whose folder the filesystem refuses ("File name too long")."""
    raw = name.encode("utf-8", "surrogateescape")
    if len(raw) <= limit:
        return name
    digest = hashlib.sha256(raw).hexdigest()[:16]
    head = raw[: limit - len(digest) - 1].decode("utf-8", "ignore")  # never half a character
    return f"{head}~{digest}"


def redact_hydra_config(obj: Any, parent: str | None = None) -> Any:
    """A config Hydra saved (``config.yaml``, ``hydra.yaml``, ``multirun.yaml``) redacted as a record's
    config is, and in it the override lists (``hydra.overrides.task``/``.hydra``) item by item and
    ``hydra.job.override_dirname``."""
    if isinstance(obj, Mapping):
        out: dict[Any, Any] = {}
        for k, v in obj.items():
            if is_secret_key(str(k)) and _hides_something(v):
                out[k] = REDACTED
            elif parent == "overrides" and k in ("task", "hydra") and isinstance(v, list):
                out[k] = [redact_override(str(line)) for line in v]
            elif k == "override_dirname" and isinstance(v, str):
                out[k] = redact_dirname(v)
            else:
                out[k] = redact_hydra_config(v, str(k))
        return out
    if isinstance(obj, list):
        return [redact_hydra_config(v) for v in obj]
    return redact(obj)


def redact_yaml_file(path: Path) -> bool:
    """Rewrite one of Hydra's YAML files redacted, atomically (a reader never sees half a file);
    ``overrides.yaml`` is a list of overrides. Returns whether anything changed."""
    path = Path(path)
    if not path.is_file():
        return False
    loaded = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    if isinstance(loaded, list):
        redacted: Any = [redact_override(str(line)) for line in loaded]
    else:
        redacted = redact_hydra_config(loaded)
    if redacted == loaded:
        return False
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(OmegaConf.to_yaml(OmegaConf.create(redacted)))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


def _redact_record(record: logging.LogRecord) -> None:
    """A log record's message with :func:`redact_text` applied (formatted first: the secret is
    usually in its arguments)."""
    try:
        message = record.getMessage()
    except Exception:  # a malformed record is its handler's to report (handleError), not ours
        return
    clean = redact_text(message)
    if clean != message:
        record.msg, record.args = clean, None


def install_log_redaction() -> None:
    """Redact every log record as it is created (``logging.setLogRecordFactory``), once per process.

    A record factory outlives Hydra's logging set-up, which replaces every handler (and with it any
    handler filter) when a launcher starts and again at each job: Hydra logs each sweep job's
    overrides (``#0 : +judge.api_key=...``) to the console, and a job's own log file gets what the
    task logs."""
    factory = logging.getLogRecordFactory()
    if getattr(factory, "rlexp_redacting", False):
        return

    def redacting_factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = factory(*args, **kwargs)
        _redact_record(record)
        return record

    redacting_factory.rlexp_redacting = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(redacting_factory)


class RedactSecrets(Callback):
    """Hydra callback (``hydra.callbacks.redaction`` in conf/base.yaml): Hydra writes the job's
    ``.hydra/{config,hydra,overrides}.yaml`` and a sweep's ``multirun.yaml`` itself, with every
    override in clear; this rewrites them redacted before the task starts (they are in clear for the
    milliseconds in between) and redacts log records. The folder name is kept clean by
    :func:`sweep_subdir`."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        install_log_redaction()

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        install_log_redaction()
        # A sweep that fails before its first job (a job's overrides do not compose) never reaches
        # on_job_start or on_multirun_end: the file is redacted at exit then.
        atexit.register(_redact_multirun_file, config)

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        install_log_redaction()  # again: a launcher's job may run in a worker process
        if config.hydra.output_subdir is not None:
            folder = Path(config.hydra.runtime.output_dir) / str(config.hydra.output_subdir)
            for name in ("config.yaml", "hydra.yaml", "overrides.yaml"):
                redact_yaml_file(folder / name)
        if config.hydra.mode == RunMode.MULTIRUN:
            _redact_multirun_file(config)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        _redact_multirun_file(config)


def _redact_multirun_file(config: DictConfig) -> None:
    """Redact ``<sweep dir>/multirun.yaml`` (the sweep dir's ``${now:}`` is cached on the config, so
    it is the folder the sweeper wrote to)."""
    try:
        redact_yaml_file(Path(str(config.hydra.sweep.dir)) / "multirun.yaml")
    except Exception as exc:  # at exit or in a callback, a failure must not hide the task's own outcome
        logging.getLogger("rlexp").warning("could not redact multirun.yaml: %s", exc)
