"""User-facing errors.

Anything a user can fix (bad config, bad input file, missing record) raises a subclass of
:class:`RlexpError` with a one-line message that names the file/record/field. The CLI and the
task entry points print ``rlexp <task>: error: <message>`` and exit with code 2, no traceback.
"""

from pathlib import Path


class RlexpError(Exception):
    """An error caused by user input; its message is one line and says what to fix."""

    exit_code = 2


class ConfigError(RlexpError):
    """A configuration value is invalid (names the key)."""


class DataError(RlexpError):
    """An input dataset is malformed (names the file, row id and field)."""


class StoreError(RlexpError):
    """The run store is unusable or a referenced record is missing."""


class DamagedRecord(StoreError):
    """A record file that cannot be read, or whose artifact is missing or cut short: ``path`` is the
    record file, ``problem`` what is wrong with it (the message says what to delete)."""

    def __init__(self, message: str, path: Path, problem: str) -> None:
        super().__init__(message)
        self.path = path
        self.problem = problem


def misread_as_number(ref: str, quoted: str = "rm='3476e31901852042'") -> str:
    """A hint for a record reference Hydra turned into a number (empty when ``ref`` is not one);
    ``quoted`` shows the override it came from, quoted."""
    try:
        float(ref)
    except ValueError:
        return ""
    if ref.isdigit():
        return ""  # all-digit ids keep their digits
    return ("; an unquoted id of digits and one 'e' (e.g. 3476e31901852042) is read as a number: "
            f"quote it, {quoted}")


def rlexp_cause(exc: BaseException) -> RlexpError | None:
    """The RlexpError behind ``exc``, if one caused it: OmegaConf wraps an error a resolver raised (an
    empty RLEXP_ROOT) in one InterpolationResolutionError per interpolation level."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, RlexpError):
            return cur
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return None
