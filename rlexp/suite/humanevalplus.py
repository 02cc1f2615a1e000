"""HumanEval+ (``evalplus/humanevalplus``, split ``test``): complete a Python function.

Regime (Tulu 3 ``codex_humanevalplus::tulu``): zero-shot, the function's signature and docstring
in a Python code block. Grading runs the completed function against the row's ``test`` (EvalPlus's
base and "plus" inputs, as the hub data ships them) and ``check(entry_point)`` in a separate Python
process with a timeout, EvalPlus's ``reliability_guard`` (no destructive os/shutil/subprocess
calls, a memory cap) and no sockets: an infinite loop, a crash or an escape attempt is a failed
sample, never a hung or damaged run.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

from rlexp.suite.base import Row, SuiteTask, text

TIMEOUT_S = 20.0  # OLMES's per-sample timeout
_FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)(?:```|$)", re.S)

# Runs in the child: sockets off, EvalPlus's guard on, then the program (read from stdin). Only a
# program that runs to its end passes: ``raise SystemExit(0)`` in a sample is a failure too.
_RUNNER = """
import os, resource, socket, sys
program = sys.stdin.read()
_exit = os._exit
# CPU seconds: the kernel ends a loop even if every process above this one is gone.
resource.setrlimit(resource.RLIMIT_CPU, (int(sys.argv[1]) + 1, int(sys.argv[1]) + 1))
def _no_network(*a, **k):
    raise OSError("network access is disabled while grading")
socket.socket = socket.create_connection = _no_network
from evalplus.eval.utils import reliability_guard
reliability_guard(maximum_memory_bytes=4 * 1024 ** 3)
try:
    exec(compile(program, "<sample>", "exec"), {"__name__": "__main__"})
except BaseException:
    _exit(1)
_exit(0)
"""


def _prompt(row: Row) -> tuple[str, dict[str, Any]]:
    prompt = text(row, "prompt")
    hidden = {"prompt": prompt, "entry_point": text(row, "entry_point"), "test": text(row, "test")}
    return ("Complete the following Python function. Answer with the whole function in a Python code block.\n\n"
            f"```python\n{prompt}```"), hidden


def program(response: str, hidden: Mapping[str, Any]) -> str:
    """The program a response stands for: its first code block (or the whole text), prefixed with the
    prompt when the response holds only the function's body."""
    match = _FENCE.search(response)
    code = match.group(1) if match else response
    if f"def {hidden['entry_point']}" not in code:
        code = str(hidden["prompt"]) + code
    return f"{code}\n\n{hidden['test']}\n\ncheck({hidden['entry_point']})\n"


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL when the grading worker dies (a worker killed at its own
    timeout must not leave a looping sample behind), where Linux's prctl is there."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def run(source: str, timeout: float = TIMEOUT_S) -> str:
    """``passed``, ``failed`` or ``timeout`` for a program run in a guarded child process."""
    try:
        done = subprocess.run([sys.executable, "-I", "-c", _RUNNER, str(max(1, math.ceil(timeout)))], input=source,
                              capture_output=True, text=True, timeout=timeout, preexec_fn=_die_with_parent)
    except subprocess.TimeoutExpired:
        return "timeout"
    return "passed" if done.returncode == 0 else "failed"


def grade(response: str, hidden: Mapping[str, Any]) -> float:
    """1.0 if the completed function passes every test."""
    return float(run(program(response, hidden), float(hidden.get("timeout", TIMEOUT_S))) == "passed")


TASK = SuiteTask(
    name="humanevalplus", hub_id="evalplus/humanevalplus", split="test",
    required=("task_id", "prompt", "entry_point", "test"), prompt=_prompt, grade=grade, id_field="task_id",
    regime="0-shot, the signature in a code block",
)
