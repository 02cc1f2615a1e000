"""HumanEval+ (``evalplus/humanevalplus``, split ``test``): complete a Python function.

Regime: OLMES's ``codex_humanevalplus::tulu`` (``oe_eval/configs/tasks.py``) over
``CodexHumanEvalPlus``'s defaults, which are ``CodexHumanEval``'s
(``oe_eval/tasks/oe_eval_tasks/codex_humaneval.py``, ``TASK_CONFIG_DEFAULTS``) with the dataset
and a 20 s timeout changed; the ``chat_overrides`` apply because ``::tulu`` sets
``use_chat_format`` (``base_task.py`` ``Task.__init__``, ``utils.py`` ``apply_chat_overrides``,
``utils.py`` ``get_dict_with_defaults``, which merges ``generation_kwargs`` key by key); OLMES at
commit 99cf8bb. Every value below is that merge's:

- user turn: the row's ``prompt`` (signature and docstring) followed by ``answer_prefix``, i.e.
  ``<prompt>Here is the completed function:\\n\\n```python\\n``. ``_process_doc`` builds the
  query as prompt + ``answer_prefix``; ``answer_prefix`` survives the chat overrides (they add
  ``assistant_prefix`` to ``context_kwargs``, they do not drop keys), and ``fewshot_context`` strips
  the ``assistant_prefix`` from the end of a user turn only when there are shots, never at 0 shots.
- prefill: ``Here is the completed function:\\n\\n```python\\n`` (``assistant_prefix``).
- stop: :data:`STOP`, the task's ``stop_sequences`` (a newline followed by ``class``, ``if``,
  ``print``, ``#`` or a fence; ``<|eot_id|>``); ``::tulu`` does not override them.
- no token ceiling: ``::tulu`` sets ``max_gen_toks: 999999`` ("arbitrary big num").
- grading (``_process_code_results``, ``code_execution_local.py``): the program is the row's
  ``prompt`` + the continuation, then the row's ``test`` and ``check(<entry_point>)``; it passes
  when that program runs to its end without raising, within 20 s.

Where rlexp deviates on purpose:

- ``::tulu`` samples 20 responses at temperature 0.8 and reports pass@10 (and pass@1 over the 20).
  Best-of-N selects one response per prompt, so rlexp grades that one response: pass@1 of the
  selected sample. Sampling settings are the run's own.
- The tests are the hub rows' ``test`` (EvalPlus's base and "plus" inputs, as
  ``evalplus/humanevalplus`` ships them), not EvalPlus's own harness with its per-input time limits.
- A response need not start with the prefill (a plain chat answer, another sampler): then the code
  is its first Python code block (```` ```python ````, ```` ```Python ````, ```` ```python3 ````,
  ```` ```py ````; an untagged block when no block is tagged Python; a ```` ```bash ```` block is
  skipped), or the text before its only fence (a continuation that holds its closing fence), or
  the whole text. The prompt is always put first, as OLMES does, so its imports (``from typing
  import List``) are there even when the response redefines the whole function.
- The sandbox is stricter than OLMES's ``unsafe_execute`` (see :func:`run`): exits, signals,
  process creation, file writes and the network all fail a sample, and the program runs as
  module ``__sample__`` (OLMES's ``exec`` into ``{}`` gives ``__name__ == "builtins"``: neither
  runs an ``if __name__ == "__main__":`` block).
"""

from __future__ import annotations

import functools
import math
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rlexp.suite.base import Row, SuiteTask, text

TIMEOUT_S = 20.0  # CodexHumanEvalPlus metric_kwargs timeout
#: ``answer_prefix`` and, under chat, ``assistant_prefix`` (codex_humaneval.py TASK_CONFIG_DEFAULTS).
PREFIX = "Here is the completed function:\n\n```python\n"
#: ``generation_kwargs.stop_sequences`` of codex_humaneval.py (kept by ``codex_humanevalplus::tulu``).
STOP = ("\nclass", "\nif", "\nprint", "\n#", "\n```", "\n```\n\n", "<|eot_id|>")

# An opening fence and its language tag; the block runs to the next fence (or the end: a response
# cut by the token limit).
_OPEN = re.compile(r"```[ \t]*([^\n`]*)\n")
_PYTHON_TAG = re.compile(r"py(?:thon)?3?", re.I)
_PROGRAM_FILE = "program.py"

# The child (``python -I -c _RUNNER <cpu seconds>``, cwd a fresh temporary directory).
#
# Threat model: the sample is untrusted policy output. It may exit in any way (``os._exit``,
# ``sys.exit``, ``SystemExit``, ``KeyboardInterrupt``, ``execv``), signal itself (``os.kill``,
# ``signal.alarm``, ``raise_signal``) or catch signals, print anything, read its argv, environment,
# stdin, globals and the frames and objects of its process, start processes, write files, open
# sockets. None of that may yield a pass: a pass is the parent's random nonce coming back on the
# child's stdout and a clean exit status, and only the runner writes the nonce, after the program
# (the tests and ``check(entry_point)`` at its end) returned.
#
# Where the nonce is meanwhile: in the kernel. The parent writes it into the child's stdin pipe;
# the runner moves that pipe to a private descriptor, puts /dev/null on fds 0-2 (so ``input()``,
# ``sys.stdin`` and ``print`` reach nothing) and reads the pipe only after the tests. No Python
# object holds the nonce while the sample runs, so no frame walk, ``gc`` search or ``print`` can
# reveal or fake it, and argv/env never carry it. What this does not stop is code aimed at the
# runner's own descriptors (``os.read`` on its private fd) or at the interpreter's memory:
# in-process, the sample shares every capability of the code that judges it (so do OLMES's and
# EvalPlus's in-process checks, whose success flag a sample can set through its caller's frame).
# The audit hook below closes the plain routes to other processes, files and the network (ctypes'
# library loading included), which EvalPlus's ``reliability_guard`` leaves open through ``posix``,
# ``_socket``, ``io.open`` and ``os.execv``, and tracing (a tracer can jump over the tests' lines).
# It is no sandbox either (CPython says as much of audit hooks). The CPU rlimit, the parent's timeout, the process
# group kill and the parent-death signal bound what is left. The sample runs as root here, where
# RLIMIT_NPROC is not enforced, so fork bombs are stopped by the guard (``os.fork = None``) and the
# hook (``os.fork``, ``os.posix_spawn``, ``os.exec`` ...), not by a process limit.
_RUNNER = r"""
import os, sys

BLOCKED = frozenset({
    "os.exec", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.system", "subprocess.Popen",
    "os.kill", "os.killpg", "sys.settrace", "sys.setprofile",
    "os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.truncate", "os.chmod", "os.chown", "os.link",
    "os.symlink", "socket.__new__", "socket.connect", "socket.bind", "socket.getaddrinfo",
    "socket.gethostbyname", "socket.gethostbyaddr", "ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle",
})
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _audit(event, args):
    if event in BLOCKED or (event == "open" and (
            (isinstance(args[2], int) and args[2] & WRITE_FLAGS)
            or (isinstance(args[1], str) and any(c in args[1] for c in "wax+")))):
        raise PermissionError(f"{event} is disabled while grading")


def _no_network(*args, **kwargs):
    raise OSError("network access is disabled while grading")


def _main(cpu_seconds):
    nonce_fd, marker_fd = os.dup(0), os.dup(1)  # not inheritable: gone if the sample execs
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    with open("program.py", encoding="utf-8") as f:
        program = f.read()
    os.unlink("program.py")
    # The (now empty) working directory goes too: nothing is left behind even when the grading
    # worker is killed, and a relative path the sample writes to leads nowhere.
    os.rmdir(os.getcwd())
    import resource, socket
    # CPU seconds: the kernel ends a loop even if every process above this one is gone.
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))
    socket.socket = socket.create_connection = _no_network
    from evalplus.eval.utils import reliability_guard  # imports numpy, which the hub's tests use
    read, write, exit_ = os.read, os.write, os._exit  # the guard and the sample may replace os's
    sys.dont_write_bytecode = True
    reliability_guard(maximum_memory_bytes=4 * 1024 ** 3)
    sys.addaudithook(_audit)  # irremovable, and last: the runner's own set-up needed what it blocks
    try:
        exec(compile(program, "<sample>", "exec"), {"__name__": "__sample__"})
    except BaseException:
        exit_(1)
    write(marker_fd, read(nonce_fd, 64))
    exit_(0)


_main(int(sys.argv[1]))
"""
# The child's whole environment: no tokens or paths of the parent's; one BLAS/OpenMP thread.
_ENV = {"PATH": os.defpath, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _prompt(row: Row) -> tuple[str, dict[str, Any]]:
    prompt = text(row, "prompt")
    hidden = {"prompt": prompt, "entry_point": text(row, "entry_point"), "test": text(row, "test")}
    return prompt + PREFIX, hidden


def _cut(continuation: str) -> str:
    """The continuation before its first stop sequence (what OLMES's generation returns)."""
    ends = [i for i in (continuation.find(s) for s in STOP) if i >= 0]
    return continuation[:min(ends)] if ends else continuation


def code_of(response: str) -> str:
    """The code a response holds (the part that follows the task prompt in the graded program)."""
    if response.lstrip().startswith(PREFIX):
        return _cut(response.lstrip()[len(PREFIX):])  # OLMES's continuation
    blocks: list[tuple[str, str]] = []  # (language tag, body), fences paired in order
    pos = 0
    while (opened := _OPEN.search(response, pos)) is not None:
        close = response.find("```", opened.end())
        end = len(response) if close < 0 else close
        blocks.append(((opened.group(1).split() or [""])[0], response[opened.end():end]))
        pos = end + 3
    for tag, body in blocks:
        if _PYTHON_TAG.fullmatch(tag):
            return body
    first = response.find("```")
    if response.count("```") == 1 and response[:first].strip():
        return response[:first]  # a continuation that holds its closing fence
    for tag, body in blocks:
        if not tag:
            return body
    return response


def program(response: str, hidden: Mapping[str, Any]) -> str:
    """The program a response stands for: the task prompt (with its imports), the response's code,
    the row's tests and ``check(entry_point)``, as OLMES's ``_process_code_results`` builds it. A
    full redefinition of the function after the prompt's stub is valid Python and replaces it."""
    prompt = str(hidden["prompt"])
    if not prompt.endswith("\n"):
        prompt += "\n"
    return f"{prompt}{code_of(response)}\n\n{hidden['test']}\n\ncheck({hidden['entry_point']})\n"


@functools.cache
def _prctl() -> Callable[..., int] | None:
    """libc's prctl, looked up in the parent: the child between fork and exec must not import (another
    thread of the parent may have held the import lock when it forked)."""
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL when the grading worker dies (a worker killed at its own
    timeout must not leave a looping sample behind), where Linux's prctl is there."""
    prctl = _prctl()
    if prctl is not None:
        prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _wait_exit(pid: int, timeout: float) -> bool:
    """Whether the child exited within ``timeout``, leaving it unreaped (a zombie keeps its pid and
    process group id, so the group kill that follows cannot hit a recycled id)."""
    deadline = time.monotonic() + timeout
    delay = 0.002
    while True:
        try:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
        except ChildProcessError:  # reaped by someone else: it exited
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(delay, left))
        delay = min(2 * delay, 0.05)


def run(source: str, timeout: float = TIMEOUT_S) -> str:
    """``passed``, ``failed`` or ``timeout`` for a program run in a guarded child process.

    ``passed`` needs both the per-run nonce back from the runner (written only after the program
    returned) and exit status 0; see the threat model above ``_RUNNER``.
    """
    nonce = secrets.token_hex(16).encode()
    cpu = str(max(1, math.ceil(timeout)) + 1)
    _prctl()  # resolved here, before the fork
    # A fresh directory as the child's cwd, which the runner removes once it has read the program (and
    # this removes if the runner did not get that far).
    with tempfile.TemporaryDirectory(prefix="rlexp-humanevalplus-", ignore_cleanup_errors=True) as tmp:
        Path(tmp, _PROGRAM_FILE).write_text(source, encoding="utf-8")
        # Its own session: one killpg ends the child and anything it managed to start.
        with subprocess.Popen([sys.executable, "-I", "-c", _RUNNER, cpu], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0, cwd=tmp, env=_ENV,
                              start_new_session=True, preexec_fn=_die_with_parent) as proc:
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(nonce)  # 32 bytes: the pipe takes them without blocking
                proc.stdin.close()
            except BrokenPipeError:
                pass
            exited = _wait_exit(proc.pid, timeout)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
            if not exited:
                return "timeout"
            # The runner wrote the nonce before it exited, so it is in the pipe now; don't wait for
            # an EOF that a descendant holding the pipe could delay.
            os.set_blocking(proc.stdout.fileno(), False)
            try:
                marker = os.read(proc.stdout.fileno(), 256)
            except BlockingIOError:
                marker = b""
    return "passed" if proc.returncode == 0 and secrets.compare_digest(marker, nonce) else "failed"


def grade(response: str, hidden: Mapping[str, Any]) -> float:
    """1.0 if the completed function passes every test (the program reached its end in the sandbox)."""
    return float(run(program(response, hidden), float(hidden.get("timeout", TIMEOUT_S))) == "passed")


TASK = SuiteTask(
    name="humanevalplus", hub_id="evalplus/humanevalplus", split="test",
    required=("task_id", "prompt", "entry_point", "test"), prompt=_prompt, grade=grade, id_field="task_id",
    regime="0-shot chat (OLMES codex_humanevalplus::tulu): prompt + 'Here is the completed function:' and a "
           "python fence, the same as prefill; the program is prompt + continuation + tests",
    max_new_tokens=None, stop=STOP, prefill=PREFIX,
)
