"""Non-Hydra commands of the `rlexp` CLI."""

from __future__ import annotations

import argparse
from typing import NoReturn

from rlexp.errors import ConfigError


class CommandParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, as every other `rlexp` error: argparse's own
    print a usage block and then the error (two lines or more, and ``cmd`` for a missing subcommand)."""

    def error(self, message: str) -> NoReturn:
        usage = " ".join(self.format_usage().split())
        raise ConfigError(f"{self.prog}: {message} ({usage}; `{self.prog} --help` says more)")
