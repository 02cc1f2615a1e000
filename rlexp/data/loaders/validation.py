"""Row validation shared by every loader: the location named in errors, typed field readers, ids, selections.

Every check raises a one-line :class:`~rlexp.errors.DataError` of the form
``<file>: <position> (id 'x'): field 'f': <problem>`` (see :class:`At`), so a user can find and
fix the row. Loading never drops rows on its own: these helpers either return the value or raise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from rlexp.data.loaders.sources import Chunk, one_line
from rlexp.data.schemas import ProfilePost, RubricAspect
from rlexp.errors import ConfigError, DataError

# Record kind -> (what its files are called in messages, the loader that reads them).
_KIND_NAMES = {
    "rb2": ("RewardBench 2", "load_rb2"),
    "prb": ("Personalized RewardBench", "load_prb"),
    "pairs": ("preference-pair", "load_pairs"),
    "prompts": ("prompt-set", "load_prompts"),
    "lampqa": ("LaMP-QA", "load_lampqa"),
    "tulu3_prefs": ("Tulu 3 preference-mixture", "load_tulu3_prefs"),
    "user_pairs": ("Chatbot Arena-/PRISM-Personalized", "load_user_pairs"),
}


class At:
    """The location of one row, for error messages: ``<file>: line 4 (id 'x'): field 'f': ...``."""

    def __init__(self, label: str, position: str) -> None:
        self.label = label
        self.position = position
        self.row_id: str | None = None

    def __str__(self) -> str:
        rid = f"id {self.row_id!r}" if self.row_id is not None else "no id"
        return f"{self.label}: {self.position} ({rid})"

    def error(self, field: str, problem: str) -> DataError:
        """The one-line error for ``field`` of this row (raise it)."""
        return DataError(one_line(f"{self}: field '{field}': {problem}", 400))


def show_value(value: Any) -> str:
    """A value as shown in a message: its repr, cut to 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def type_name(value: Any) -> str:
    """The type as a message names it (``null`` for None, as in JSON)."""
    return "null" if value is None else type(value).__name__


def required_value(row: Mapping[str, Any], field: str, at: At) -> Any:
    """A field that must be present and not null."""
    if field not in row:
        raise at.error(field, "missing")
    value = row[field]
    if value is None:
        raise at.error(field, "is null")
    return value


def string_field(row: Mapping[str, Any], field: str, at: At, *, nonempty: bool = True) -> str:
    """A required string field (non-blank unless ``nonempty=False``)."""
    value = required_value(row, field, at)
    if not isinstance(value, str):
        raise at.error(field, f"expected a string, got {type_name(value)} {show_value(value)}")
    if nonempty and not value.strip():
        raise at.error(field, "is empty")
    return value


def optional_string(row: Mapping[str, Any], field: str, at: At) -> str:
    """An optional string field: absent or null reads as ``""``."""
    value = row.get(field)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise at.error(field, f"expected a string, got {type_name(value)} {show_value(value)}")
    return value


def string_list(value: Any, field: str, at: At, *, nonempty: bool) -> tuple[str, ...]:
    """A list of strings; ``nonempty`` refuses an empty list and blank items."""
    if not isinstance(value, (list, tuple)):
        raise at.error(field, f"expected a list of strings, got {type_name(value)} {show_value(value)}")
    if nonempty and not value:
        raise at.error(field, "is an empty list")
    for j, item in enumerate(value):
        if not isinstance(item, str):
            raise at.error(f"{field}[{j}]", f"expected a string, got {type_name(item)} {show_value(item)}")
        if nonempty and not item.strip():
            raise at.error(f"{field}[{j}]", "is empty")
    return tuple(value)


def check_count(row: Mapping[str, Any], field: str, at: At, expected: int, what: str) -> None:
    """Check an optional count column (``num_correct`` ...) against the lists it counts."""
    value = row.get(field)
    if value is None:  # absent / null: derived from the lists, nothing to check
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise at.error(field, f"expected an integer, got {type_name(value)} {show_value(value)}")
    if value != expected:
        raise at.error(field, f"is {value} but {what} is {expected}")


def object_list(value: Any, field: str, at: At) -> list[Mapping[str, Any]]:
    """An optional list of objects (structs): absent or null reads as ``[]``."""
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise at.error(field, f"expected a list of objects, got {type_name(value)} {show_value(value)}")
    for j, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise at.error(f"{field}[{j}]", f"expected an object, got {type_name(item)} {show_value(item)}")
    return list(value)


def profile_posts(row: Mapping[str, Any], at: At, *, required: bool, category_required: bool = True
                  ) -> tuple[ProfilePost, ...]:
    """The ``profile`` column as posts; every post needs its text (``required``: the column too).
    ``category_required=False`` accepts a post without a category (missing or null: ``""``), as the ranked
    files LaMP-QA's ``retrieval/rank_dataset.py`` writes keep only ``{id, text}`` per post."""
    value = required_value(row, "profile", at) if required else row.get("profile")
    posts = []
    for j, item in enumerate(object_list(value, "profile", at)):
        text = item.get("text")
        if not isinstance(text, str) or not text.strip():
            if "text" not in item:
                problem = "missing: a profile post needs its text"
            elif text is None:
                problem = "is null: a profile post needs its text"
            elif isinstance(text, str):
                problem = "is empty: a profile post needs its text"
            else:
                problem = f"expected a string, got {type_name(text)} {show_value(text)}"
            raise at.error(f"profile[{j}].text", problem)
        category, post_id = item.get("category"), item.get("id")
        if category is None and not category_required:
            category = ""
        if not isinstance(category, str):
            raise at.error(
                f"profile[{j}].category", f"expected a string, got {type_name(category)} {show_value(category)}"
            )
        if not isinstance(post_id, str):
            raise at.error(f"profile[{j}].id", f"expected a string, got {type_name(post_id)} {show_value(post_id)}")
        posts.append(ProfilePost(category=category, id=post_id, text=text))
    return tuple(posts)


def rubric_aspects(row: Mapping[str, Any], at: At) -> tuple[RubricAspect, ...]:
    """The optional ``rubric_aspects`` column; ``evidence``/``reason`` default to ``""``."""
    aspects = []
    for j, item in enumerate(object_list(row.get("rubric_aspects"), "rubric_aspects", at)):
        aspect = item.get("aspect")
        if not isinstance(aspect, str) or not aspect.strip():
            raise at.error(f"rubric_aspects[{j}].aspect", f"expected a non-empty string, got {show_value(aspect)}")
        extra = {}
        for key in ("evidence", "reason"):
            val = item.get(key)
            if val is not None and not isinstance(val, str):
                raise at.error(
                    f"rubric_aspects[{j}].{key}", f"expected a string, got {type_name(val)} {show_value(val)}"
                )
            extra[key] = val or ""
        aspects.append(RubricAspect(aspect=aspect, **extra))
    return tuple(aspects)


def row_id(row: Mapping[str, Any], at: At, field: str = "id") -> str:
    """The row's id (``field``), which from then on names the row in errors."""
    value = row.get(field)
    if isinstance(value, str) and value.strip():
        at.row_id = value  # name the row by its id from now on
        return value
    return string_field(row, field, at)  # raises with the precise problem


class UniqueIds:
    """Duplicate-id detection across every file of one load."""

    def __init__(self, field: str = "id") -> None:
        self.field = field
        self.seen: dict[Any, str] = {}

    def add(self, key: Any, at: At) -> None:
        """Record ``key``; a key seen before (in any file of the load) is an error."""
        first = self.seen.get(key)
        if first is not None:
            raise at.error(self.field, f"duplicate id (first seen at {first})")
        self.seen[key] = f"{at.label} {at.position}"


def check_kind(chunk: Chunk, expected: str) -> None:
    """Refuse a file of another record kind with a message that says what it is."""
    cols = chunk.columns
    first = chunk.rows[0] if chunk.rows else {}
    guess: str | None = None
    if "prompt_id" in cols:
        guess = "prompts"
    elif {"user_id", "context"} <= cols:
        guess = "user_pairs"
    elif cols & {"num_correct", "num_incorrect", "total_completions"}:
        guess = "rb2"
    elif {"question", "profile"} <= cols:
        guess = "prb"
    elif (
        "subset" in cols
        and isinstance(first.get("chosen"), list)
        and all(isinstance(c, str) for c in first.get("chosen") or [])
    ):
        guess = "rb2"  # a list of *strings* (not messages) under `chosen` is RB2's layout
    # A PRB row is a LaMP-QA row plus chosen/rejected: LaMP-QA accepts either (PRB rejects a
    # LaMP-QA file later, at its missing `chosen`).
    if guess is not None and guess != expected and (guess, expected) != ("prb", "lampqa"):
        name, loader = _KIND_NAMES[guess]
        shown = ", ".join(sorted(cols)[:10])
        raise DataError(
            f"{chunk.label}: this is a {name} file (columns: {shown}), not a {_KIND_NAMES[expected][0]} file; "
            f"load it with {loader}()"
        )


def check_limit(limit: int | None) -> None:
    """``limit`` must be None or a non-negative integer (not a bool)."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ConfigError(f"limit must be a non-negative integer or None, got {limit!r}")


def check_selection(values: Sequence[str] | None, valid: Iterable[str], what: str) -> list[str] | None:
    """Validate an explicit selection (``subsets`` / ``domains``) against what exists."""
    if values is None:
        return None
    if isinstance(values, str):  # a bare string would be iterated character by character
        values = [values]
    valid = list(valid)
    if not values:
        raise ConfigError(f"an empty {what} selection selects nothing; pass None for all of: {', '.join(valid)}")
    unknown = [v for v in values if v not in valid]
    if unknown:
        raise ConfigError(f"unknown {what} {unknown[0]!r}; valid: {', '.join(valid)}")
    return list(values)


def validated_rows(chunks: Sequence[Chunk], expected: str, convert: Callable[[dict[str, Any], At], Any]) -> list[Any]:
    """Every row of ``chunks`` through ``convert``, after refusing files of another record kind."""
    out = []
    for chunk in chunks:
        check_kind(chunk, expected)
        for row, position in zip(chunk.rows, chunk.positions, strict=True):
            out.append(convert(row, At(chunk.label, position)))
    return out


class LoadedRows(list):
    """Loaded items, and the rows left out as reason -> count (``skipped``): rows that are well formed but
    cannot be scored (an empty answer, chosen identical to rejected), which a published set is used
    without. A slice keeps the counts."""

    skipped: dict[str, int]

    def __init__(self, items: Any = (), skipped: Mapping[str, int] | None = None) -> None:
        super().__init__(items)
        self.skipped = dict(skipped or {})

    def __getitem__(self, index: Any) -> Any:  # type: ignore[override]
        out = super().__getitem__(index)
        return type(self)(out, self.skipped) if isinstance(index, slice) else out
