"""External results: per-RM numbers from outside the store (a paper's table, another lab's runs) that
`rlexp correlate external=<file>` reads beside or instead of store records.

The format is a CSV whose first lines are ``# key: value`` metadata, one of them ``# source: ...``
(where the numbers come from: a paper, its table, its version), then a header and one row per RM::

    # source: RewardBench 2 (arXiv 2506.01937 v1), appendix Table 8
    name,lineage,group,rb2/overall,ppo/tulu3_eval/score,bon/rb2_suite/score
    on-policy-1,tulu3_8b_sft,on-policy,68.7,59.8,52.4

Columns: ``name`` (required, unique: the RM's id in the report), ``group`` (optional: a label the
report correlates within, e.g. the paper's on-/off-policy groups), any factor column
(:data:`rlexp.analysis.columns.FACTORS`: ``lineage``, ``mix``, ...), benchmark columns named as the
store's (``rb2/overall``, ``rb2/<subset>``, ``prb/<mode>/accuracy``, ...) and downstream columns
(``<bon|ppo|grpo|rloo>/<setting>/gain``, ``gain@<k>``, ``ngain@<k>``, or ``score`` for a published
absolute downstream score: a correlation across RMs is the same for a score and for its gain over a
shared baseline), and ``<algorithm>/<setting>/lineage_match`` (true/false). An empty cell is a missing
value. Values are read as written; beside store records, give benchmark columns on the store's scale
(RB2 accuracy in [0, 1]). Every problem is one line naming the file, the line and the column.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlexp.analysis.columns import DOWNSTREAM_RE, FACTORS, benchmark_columns
from rlexp.config.choices import ProfileMode, UserContextMode
from rlexp.data.schemas import RB2_SUBSETS
from rlexp.errors import DataError

NUMERIC_FACTORS = ("epochs", "lr", "seed", "heldout_accuracy")


@dataclass
class ExternalTable:
    """The rows of an external results file, ready to sit in the RM table beside store RMs."""

    path: str
    source: str
    sha256: str
    meta: dict[str, str]
    rows: dict[str, dict[str, Any]]  # RM name -> column -> value (factors, benchmarks, downstream)
    groups: dict[str, str] = field(default_factory=dict)  # RM name -> group label (rows that have one)

    def provenance(self) -> dict[str, Any]:
        """What the report's provenance says of the file (``context.external``)."""
        return {"path": self.path, "source": self.source, "sha256": self.sha256, "rms": len(self.rows),
                "names": list(self.rows), "groups": dict(self.groups), "meta": dict(self.meta)}


def _column_kind(column: str) -> str | None:
    """``factor``, ``benchmark``, ``downstream`` or ``match`` for a column the format allows; else None."""
    if column in FACTORS:
        return "factor"
    if benchmark_columns([column]):
        bench, _, rest = column.partition("/")
        if bench == "rb2":  # a misspelt subset must not become a column of its own
            return "benchmark" if rest in ("overall", *RB2_SUBSETS) else None
        mode = rest.split("/", 1)[0]
        modes = {m.value for m in (ProfileMode if bench == "prb" else UserContextMode)}
        return "benchmark" if mode in modes and "/" in rest else None
    if DOWNSTREAM_RE.match(column):
        return "downstream"
    if column.endswith("/lineage_match") and DOWNSTREAM_RE.match(column.rsplit("/", 1)[0] + "/gain"):
        return "match"
    return None


def _value(kind: str, column: str, text: str, where: str) -> Any:
    text = text.strip()
    if text == "":
        return None if kind in ("factor", "match") else math.nan
    if kind == "match":
        if text.lower() not in ("true", "false"):
            raise DataError(f"{where}: column {column!r} must be true or false, got {text!r}")
        return text.lower() == "true"
    if kind == "factor" and column not in NUMERIC_FACTORS:
        return text
    try:
        value = float(text)
    except ValueError:
        raise DataError(f"{where}: column {column!r} must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise DataError(f"{where}: column {column!r} must be a finite number, got {text!r}")
    return value


def _split(path: Path, raw: str) -> tuple[dict[str, str], int, str]:
    """The ``# key: value`` lines, the line number of the header, and the CSV text from the header on."""
    meta: dict[str, str] = {}
    lines = raw.splitlines(keepends=True)
    i = 0
    while i < len(lines) and (lines[i].startswith("#") or not lines[i].strip()):
        body = lines[i].lstrip("#").strip()
        if body:
            key, sep, value = body.partition(":")
            if not sep or not key.strip():
                raise DataError(f"{path}:{i + 1}: a metadata line must read '# key: value', got {lines[i].strip()!r}")
            meta[key.strip().lower()] = value.strip()
        i += 1
    if not meta.get("source"):
        raise DataError(f"{path}: no '# source: ...' line before the header (say where the numbers come from)")
    if i == len(lines):
        raise DataError(f"{path}: no header and no rows after the metadata lines")
    return meta, i + 1, "".join(lines[i:])


def read_external(path: str | Path) -> ExternalTable:
    """Read and check an external results file (format: this module's docstring).

    Raises:
        DataError: the file is missing or unreadable, or has no source line, no ``name`` column, an
            unknown column, a repeated or empty name, a non-numeric score, or no score column at all.
    """
    path = Path(path).expanduser()
    try:
        data = path.read_bytes()
        raw = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"external results {path}: cannot read ({type(exc).__name__}: {exc})") from None
    meta, header_line, text = _split(path, raw)
    reader = csv.reader(io.StringIO(text))
    header = [h.strip() for h in next(reader)]
    if "name" not in header:
        raise DataError(f"{path}:{header_line}: the header has no 'name' column (got {', '.join(header)})")
    kinds: dict[str, str] = {}
    for column in header:
        if column in ("name", "group"):
            continue
        kind = _column_kind(column)
        if kind is None:
            raise DataError(f"{path}:{header_line}: unknown column {column!r}; allowed: name, group, the factors "
                            f"({', '.join(FACTORS)}), benchmark columns (rb2/overall, prb/<mode>/accuracy, ...), "
                            "downstream columns (<algorithm>/<setting>/gain|gain@<k>|ngain@<k>|score)")
        kinds[column] = kind
    if len(set(header)) != len(header):
        raise DataError(f"{path}:{header_line}: a column is named twice")
    if not any(k in ("benchmark", "downstream") for k in kinds.values()):
        raise DataError(f"{path}:{header_line}: no benchmark and no downstream column: nothing to correlate")
    rows: dict[str, dict[str, Any]] = {}
    groups: dict[str, str] = {}
    for offset, cells in enumerate(reader, start=1):
        line = header_line + offset
        if not any(c.strip() for c in cells):
            continue
        if len(cells) != len(header):
            raise DataError(f"{path}:{line}: {len(cells)} cells, the header has {len(header)}")
        record = dict(zip(header, cells, strict=True))
        name = record["name"].strip()
        if not name:
            raise DataError(f"{path}:{line}: empty name")
        if name in rows:
            raise DataError(f"{path}:{line}: name {name!r} repeats line {rows[name]['_line']}")
        row: dict[str, Any] = {"_line": line}
        for column, kind in kinds.items():
            row[column] = _value(kind, column, record[column], f"{path}:{line}")
        if record.get("group", "").strip():
            groups[name] = record["group"].strip()
        rows[name] = row
    if not rows:
        raise DataError(f"{path}: no rows after the header")
    for row in rows.values():
        row.pop("_line")
    return ExternalTable(path=str(path.resolve()), source=meta["source"], sha256=hashlib.sha256(data).hexdigest(),
                         meta=meta, rows=rows, groups=groups)


def group_correlations(frame: Any, names: list[str], groups: dict[str, str], pairs: list[tuple[str, str]], *,
                       n_boot: int, seed: int, alpha: float) -> list[dict[str, Any]]:
    """Pearson r and Spearman ρ (value, bootstrap CI over RMs, p) of each (benchmark, downstream) pair over
    the external file's RMs (``names``), then within each of their groups: the paper-table view (e.g. RewardBench 2's on- and
    off-policy RMs). The statistics are :func:`rlexp.analysis.bootstrap.correlate`'s, as everywhere else."""
    from rlexp.analysis.bootstrap import correlate

    external = [rm for rm in names if rm in frame.index]
    scopes = [("all", external)] + [(g, [rm for rm in external if groups.get(rm) == g])
                                    for g in dict.fromkeys(groups.get(rm) for rm in external) if g]  # file order
    rows: list[dict[str, Any]] = []
    for b, d in pairs:
        for scope, members in scopes:
            pair = frame.loc[members, [b, d]].astype(float).dropna()
            row: dict[str, Any] = {"benchmark": b, "downstream": d, "scope": scope, "n": len(pair)}
            if len(pair) >= 3:
                for c in correlate(pair[b].to_numpy(), pair[d].to_numpy(), methods=("pearson", "spearman"),
                                   n_boot=n_boot, seed=seed, alpha=alpha):
                    row[c.name] = {"value": c.value, "pvalue": c.pvalue, "ci": [c.ci_low, c.ci_high]}
            rows.append(row)
    return rows


def group_section(context: Any) -> list[str]:
    """Page one's table of :func:`group_correlations`, and the file's source (empty without external results)."""
    ext, rows = context.external, context.external_groups
    if not ext or not rows:
        return []

    def cell(stat: Any) -> str:
        if not stat or stat.get("value") is None:
            return "n/a (n < 3)"
        lo, hi = stat["ci"]
        ci = f" [{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None else ""
        p = "" if stat.get("pvalue") is None else f", p = {stat['pvalue']:.2g}"
        return f"{stat['value']:.3f}{ci}{p}"

    lines = ["## External results: over all their RMs and within each group", "",
             f"Source: {ext['source']} (`{ext['path']}`, {ext['rms']} RMs). Pearson r and Spearman ρ with bootstrap "
             "CIs over RMs; p: Pearson's from scipy's t-test, Spearman's exact permutation p up to 10 RMs (scipy's "
             "t-approximation above); no p below 5 RMs. A group of fewer than 3 RMs has no statistic.", "",
             "| benchmark | downstream | RMs | n | Pearson r [CI], p | Spearman ρ [CI], p |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| `{r['benchmark']}` | `{r['downstream']}` | {r['scope']} | {r['n']} | {cell(r.get('pearson'))} | "
                     f"{cell(r.get('spearman'))} |")
    return [*lines, ""]
