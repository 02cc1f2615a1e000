"""HumanEval+ grades like Tulu 3's OLMES regime and cannot be gamed: a sample passes only when the
program ran its tests to the end in the sandbox; exits, signals, processes, files and the network
score 0, while correct code passes whatever fence, prefill or ``__main__`` block it comes with."""

from __future__ import annotations

import json
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rlexp.config.nodes import SuiteTaskConfig
from rlexp.scorer import ScoreInput
from rlexp.scoring.suite_grader import SuiteGraderJudge
from rlexp.suite import humanevalplus as he
from rlexp.suite.loading import load_task

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "suite" / "humanevalplus"
PREFILL = "Here is the completed function:\n\n```python\n"
ADD = "def add(x: int, y: int):\n    return x + y\n"
WRONG = "def add(x: int, y: int):\n    return x - y\n"

# HumanEval/0 in the hub's own format: the prompt imports List, the tests import numpy.
TYPED_ROW = {
    "task_id": "HumanEval/0",
    "prompt": 'from typing import List\n\n\ndef has_close_elements(numbers: List[float], threshold: float) -> bool:\n'
              '    """ Check if in given list of numbers, are any two numbers closer to each other than\n'
              '    given threshold.\n    >>> has_close_elements([1.0, 2.0, 3.0], 0.5)\n    False\n    """\n',
    "canonical_solution": "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) "
                          "for b in numbers[i + 1:])\n",
    "entry_point": "has_close_elements",
    "test": "import numpy as np\n\ndef is_floats(x) -> bool:\n    if isinstance(x, float):\n        return True\n"
            "    if isinstance(x, (list, tuple)):\n        return all(isinstance(i, float) for i in x)\n"
            "    if isinstance(x, np.ndarray):\n        return x.dtype == np.float64 or x.dtype == np.float32\n"
            "    return False\n\ndef assertion(out, exp, atol):\n    exact_match = out == exp\n\n"
            "    if atol == 0 and is_floats(exp):\n        atol = 1e-6\n    if not exact_match and atol != 0:\n"
            "        assert np.allclose(out, exp, rtol=1e-07, atol=atol)\n    else:\n        assert exact_match\n\n\n"
            "def check(candidate):\n    inputs = [[[1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3], [[1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05],"
            " [[1.1, 2.2, 3.1, 4.1, 5.1], 1.0], [[1.1, 2.2, 3.1, 4.1, 5.1], 0.5]]\n"
            "    results = [True, False, True, False]\n"
            "    for i, (inp, exp) in enumerate(zip(inputs, results)):\n        assertion(candidate(*inp), exp, 0)\n",
}
TYPED_FUNCTION = ("def has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
                  "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])\n")


@pytest.fixture(scope="module")
def add():
    """HumanEval/53 of the fixture rows: ``add(x, y)``; a 3 s timeout keeps hanging samples short."""
    item = load_task("humanevalplus", SuiteTaskConfig(source=str(FIXTURES)))[0]
    assert item.hidden["entry_point"] == "add"
    return {**item.hidden, "timeout": 3}


@pytest.fixture(scope="module")
def typed(tmp_path_factory):
    path = tmp_path_factory.mktemp("humanevalplus") / "test.jsonl"
    path.write_text(json.dumps(TYPED_ROW) + "\n")
    return load_task("humanevalplus", SuiteTaskConfig(source=str(path)))[0]


def _py(code: str, tag: str = "python") -> str:
    return f"```{tag}\n{code}```"


def _scores(hidden, *responses: str) -> list[float]:
    """The grades of ``responses``, four at a time (each runs in its own child process)."""
    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(lambda r: he.grade(r, hidden), responses))


# --------------------------------------------------------------------------- the regime


def test_regime_is_olmes_codex_humanevalplus_tulu(typed) -> None:
    """User turn: prompt + answer_prefix (0-shot chat keeps it); prefill: assistant_prefix; the
    default stop_sequences; max_gen_toks 999999 is no ceiling."""
    assert he.TASK.prefill == PREFILL
    assert he.TASK.stop == ("\nclass", "\nif", "\nprint", "\n#", "\n```", "\n```\n\n", "<|eot_id|>")
    assert he.TASK.max_new_tokens is None
    assert typed.prompt == TYPED_ROW["prompt"] + PREFILL
    assert (typed.prefill, typed.stop, typed.max_new_tokens) == (he.TASK.prefill, he.TASK.stop, None)
    assert set(typed.hidden) >= {"prompt", "entry_point", "test"}
    # The canonical solution passes as OLMES grades it: prompt + continuation.
    assert he.grade(PREFILL + TYPED_ROW["canonical_solution"] + "```", typed.hidden) == 1.0


# --------------------------------------------------------------------------- exploits score 0


def test_exit_before_the_tests_fails(add) -> None:
    """os._exit(0) passed every task: the exit status alone no longer counts."""
    assert _scores(add,
                   _py("import os; os._exit(0)\n"),
                   _py(WRONG + "import os\nos._exit(0)\n"),
                   _py(ADD + "import os\nos._exit(0)\n"),  # right, but the tests never ran
                   _py(WRONG + "import sys\nsys.exit(0)\n"),
                   _py(WRONG + "raise SystemExit\n"),
                   _py("def add(x, y):\n    raise SystemExit(0)\n"),
                   _py(WRONG + "raise KeyboardInterrupt\n"),
                   _py(WRONG + "exit(0)\n"),
                   _py(WRONG + "import atexit, os\natexit.register(os._exit, 0)\nos._exit(0)\n"),
                   ) == [0.0] * 9


def test_exec_into_another_program_fails(add) -> None:
    """os.execv replaced the sample by a program that exits 0."""
    assert _scores(add, _py(WRONG + "import os, sys\nos.execv(sys.executable, [sys.executable, '-c', 'pass'])\n"),
                   _py(WRONG + "import os\nos.execv('/bin/true', ['true'])\n")) == [0.0, 0.0]


def test_signals_fail(add) -> None:
    """Killing itself, or an exit from a signal handler, never passes; nor may it signal others."""
    start = time.monotonic()
    assert _scores(add,
                   _py(ADD + "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n"),
                   _py(ADD + "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"),
                   _py(ADD + "import signal\nsignal.raise_signal(signal.SIGTERM)\n"),
                   _py(ADD + "import signal\nsignal.raise_signal(signal.SIGKILL)\n"),
                   _py(WRONG + "import os, signal\nsignal.signal(signal.SIGTERM, lambda *a: os._exit(0))\n"
                               "signal.raise_signal(signal.SIGTERM)\n"),
                   _py(WRONG + "import os, posix, signal\nsignal.signal(signal.SIGUSR1, lambda *a: os._exit(0))\n"
                               "posix.kill(os.getpid(), signal.SIGUSR1)\n"),
                   _py(ADD + "import os, posix\nposix.kill(os.getppid(), 0)\n"),  # the grader: off limits
                   _py(WRONG + "import signal\nsignal.alarm(1)\nwhile True:\n    pass\n"),
                   _py(WRONG + "import os, signal\nsignal.signal(signal.SIGALRM, lambda *a: os._exit(0))\n"
                               "signal.alarm(1)\nwhile True:\n    pass\n"),
                   ) == [0.0] * 9
    assert time.monotonic() - start < 15  # the alarms end their loops, not the 3 s timeout


def test_processes_fail(add) -> None:
    """fork (also through posix, which the guard misses), spawn, subprocess, ctypes' libc: 0. The
    loop is bounded so that a broken sandbox costs 16 short processes, not a fork bomb."""
    assert _scores(add,
                   _py(ADD + "import os\nos.fork()\n"),
                   _py(ADD + "import posix\nfor _ in range(4):\n    posix.fork()\n"),
                   _py(ADD + "import os, sys\nos.posix_spawn(sys.executable, [sys.executable, '-c', 'pass'], {})\n"),
                   _py(ADD + "import subprocess\nsubprocess.run(['true'])\n"),
                   _py(ADD + "import os\nos.system('true')\n"),
                   _py(ADD + "import ctypes\nctypes.CDLL(None).getpid()\n"),
                   _py(ADD + "import multiprocessing\nmultiprocessing.Process(target=print).start()\n"),
                   ) == [0.0] * 7


def test_file_writes_fail_and_leave_nothing(add, tmp_path, monkeypatch) -> None:
    """A write anywhere fails the sample; the child's working directory is a fresh one, removed."""
    target = tmp_path / "written.txt"
    work = tmp_path / "tmp"
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(work))
    assert _scores(add,
                   _py(ADD + "open('written.txt', 'w').write('x')\n"),
                   _py(ADD + f"import pathlib\npathlib.Path({str(target)!r}).write_text('x')\n"),
                   _py(ADD + f"import io\nio.open({str(target)!r}, 'a').close()\n"),
                   _py(ADD + "import os\nos.close(os.open('written.txt', os.O_CREAT | os.O_WRONLY))\n"),
                   _py(ADD + f"import posix\nposix.mkdir({str(tmp_path / 'dir')!r})\n"),
                   ) == [0.0] * 5
    assert not target.exists() and not (tmp_path / "dir").exists()
    assert not Path("written.txt").exists()
    assert list(work.iterdir()) == []  # every per-run directory is gone


def test_network_fails(add) -> None:
    assert _scores(add,
                   _py(ADD + "import socket\nsocket.create_connection(('127.0.0.1', 9))\n"),
                   _py(ADD + "import _socket\n_socket.socket()\n"),
                   _py(ADD + "import socket\nsocket.getaddrinfo('localhost', 80)\n"),
                   ) == [0.0] * 3


def test_marker_cannot_be_faked(add, monkeypatch) -> None:
    """Printing anything, guessed markers included, is not a pass; the sample finds the run's nonce
    nowhere it can look (argv, environment, stdin, globals, frames, gc) before the tests ran."""
    assert _scores(add,
                   _py(WRONG + "print('passed')\nprint('0' * 32)\nimport os\nos.write(1, b'passed\\n')\nos._exit(0)\n"),
                   _py(WRONG + "import os, sys\nprint(sys.stdin.read(), sys.argv, dict(os.environ))\nos._exit(0)\n"),
                   _py(WRONG + "import os\nfor fd in (1, 2):\n    os.write(fd, b'1' * 32)\nos._exit(0)\n"),
                   ) == [0.0] * 3
    nonce = "5ca1ab1e" * 4
    monkeypatch.setattr(he.secrets, "token_hex", lambda n: nonce)
    # The seeker builds the nonce at run time (no literal of it in its source or constants) and looks
    # for it from a function, so that its own local is the one place it may find it.
    seeker = ADD + (
        "import gc, os, sys\n"
        "def _seek():\n"
        f"    n = ''.join([{nonce[:8]!r}] * 4)\n"
        "    seen = [sys.argv, dict(os.environ), [sys.stdin.read()]]\n"
        "    f = sys._getframe(1)\n"
        "    while f is not None:\n"
        "        seen += [f.f_locals, f.f_globals]\n"
        "        f = f.f_back\n"
        "    seen += [o for o in gc.get_objects() if isinstance(o, (dict, list, tuple))]\n"
        "    for o in seen:\n"  # the base types' own iteration: a subclass's may run code
        "        base = dict if isinstance(o, dict) else tuple if isinstance(o, tuple) else list\n"
        "        for x in list(base.__iter__(o)) + (list(dict.values(o)) if base is dict else []):\n"
        "            if isinstance(x, str) and n in x or isinstance(x, bytes) and n.encode() in x:\n"
        "                raise RuntimeError('the nonce is visible to the sample')\n"
        "_seek()\n"
    )
    assert he.grade(_py(seeker), add) == 1.0  # a correct sample: it would raise if it saw the nonce


def test_loops_and_memory_fail_within_the_timeout(add) -> None:
    start = time.monotonic()
    assert _scores({**add, "timeout": 1.5}, _py("def add(x, y):\n    while True:\n        pass\n"),
                   _py(ADD + "x = bytearray(64 * 1024 ** 3)\n")) == [0.0, 0.0]
    assert time.monotonic() - start < 10


# --------------------------------------------------------------------------- correct code scores 1


def test_fences_and_prose(add) -> None:
    bash_first = ("Install nothing:\n\n```bash\npip install --upgrade pip\n```\n\nThen define it:\n\n"
                  f"```python\n{ADD}```\n\nThat's all.")
    assert _scores(add,
                   _py(ADD),
                   _py(ADD, "Python"),
                   _py(ADD, "python3"),
                   _py(ADD, "py"),
                   bash_first,
                   f"Sure! The sum is easy.\n\n```python\n{ADD}```\n\nIt returns x plus y.",
                   f"```python\n{ADD}",  # cut by the token limit before the closing fence
                   f"```\n{ADD}```",
                   ADD,  # no fence at all
                   ) == [1.0] * 9
    assert _scores(add, _py(WRONG, "Python"), f"```bash\necho hi\n```\n\n```python\n{WRONG}```") == [0.0, 0.0]


def test_tulu_prefill_and_continuations(add) -> None:
    """prompt + continuation, cut at OLMES's stop sequences (the closing fence, a top-level if ...)."""
    assert _scores(add,
                   PREFILL + "    return x + y\n```\n\nThis adds the two numbers.",
                   PREFILL + ADD + "```",
                   PREFILL + "    return x + y\n\n\nif __name__ == '__main__':\n    print(add(int(input()), 1))\n",
                   PREFILL + "    return x + y\n# try it\nprint(add(1, 2))\nassert add(1, 1) == 3\n",
                   "    return x + y\n",  # the continuation alone
                   "    return x + y\n```\n\nThis adds the two numbers.",
                   ) == [1.0] * 6
    assert _scores(add, PREFILL + "    return x - y\n```", "    return x - y\n") == [0.0, 0.0]


def test_full_function_gets_the_prompts_imports(typed) -> None:
    """A whole function that uses List without importing it passes after the prompt, as in Tulu."""
    assert _scores(typed.hidden, _py(TYPED_FUNCTION), PREFILL + TYPED_FUNCTION + "```",
                   f"```python\nfrom typing import List\n\n\n{TYPED_FUNCTION}```") == [1.0] * 3
    assert he.grade(_py(TYPED_FUNCTION.replace("< threshold", "> threshold")), typed.hidden) == 0.0


def test_main_block_does_not_run(add) -> None:
    """The program is not __main__: a script's entry block (input(), sys.exit(main()), doctest) stays idle."""
    assert _scores(add,
                   _py(ADD + "\n\nif __name__ == \"__main__\":\n    x, y = map(int, input().split())\n"
                             "    print(add(x, y))\n"),
                   _py("import sys\n\n\n" + ADD + "\n\ndef main():\n    print(add(2, 3))\n    return 1\n\n\n"
                       "if __name__ == \"__main__\":\n    sys.exit(main())\n"),
                   _py(ADD + "\n\nif __name__ == '__main__':\n    import doctest\n    doctest.testmod()\n"
                             "    raise SystemExit(1)\n"),
                   ) == [1.0] * 3


def test_through_the_grader_pool(add) -> None:
    """The same verdicts from SuiteGraderJudge's worker processes (the gold judge's path)."""
    judge = SuiteGraderJudge(workers=2, timeout=20.0)
    hidden = {**add, "task": "humanevalplus"}
    responses = [_py(ADD), _py("import os; os._exit(0)\n"), PREFILL + "    return x + y\n```",
                 _py(WRONG + "import os\nos._exit(0)\n")]
    got = judge.score([ScoreInput("p", r, (), hidden) for r in responses]).tolist()
    assert got == [1.0, 0.0, 1.0, 0.0]
