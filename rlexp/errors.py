"""User-facing errors.

Anything a user can fix (bad config, bad input file, missing record) raises a subclass of
:class:`RlexpError` with a one-line message that names the file/record/field. The CLI and the
task entry points print ``rlexp <task>: error: <message>`` and exit with code 2, no traceback.
"""


class RlexpError(Exception):
    """An error caused by user input; its message is one line and says what to fix."""

    exit_code = 2


class ConfigError(RlexpError):
    """A configuration value is invalid (names the key)."""


class DataError(RlexpError):
    """An input dataset is malformed (names the file, row id and field)."""


class StoreError(RlexpError):
    """The run store is unusable or a referenced record is missing."""
