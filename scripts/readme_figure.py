"""The README's key figure: PRB's comparison of benchmarks, redrawn from a finished study's report.

Reads the newest `correlate` record of an experiment (default: the embedded study, `sandbox_study`) in a
run store, rebuilds the report's benchmark-comparison rows from the tables that record wrote
(``table.csv``, ``correlations.csv``) with the report's own code (``comparison_rows``,
``fig_benchmark_ranking``), and writes

    docs/images/benchmark_ranking.png    the figure (what the report's fig_benchmark_ranking.png shows)
    docs/images/benchmark_ranking.json   the rows it was drawn from, and the record they came from

`tests/docs/test_readme_figure.py` checks that the figure is what the report draws from the same study, and
that the committed PNG is the drawing of the committed rows with today's plotting code.

    make study && make figure             # or: .venv/bin/python scripts/readme_figure.py [--store runs] [--experiment E]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

NAME = "benchmark_ranking"
OUT = ROOT / "docs" / "images"


def _experiment(record: Any) -> str:
    config = record.config
    return str(config.get("select_experiment") or config.get("experiment_name") or "")


def newest_report(store: Any, experiment: str) -> Any:
    """The newest correlate record that reports on ``experiment``."""
    found = [r for r in store.records("correlate") if _experiment(r) == experiment and "table" in r.artifacts]
    if not found:
        raise SystemExit(f"no correlate record of experiment {experiment!r} in {store.root}: run `make study` first")
    return max(found, key=lambda r: r.ended)


def rows_of(store: Any, record: Any) -> tuple[list[dict[str, Any]], str | None]:
    """The report's benchmark-comparison rows, from the tables the correlate record wrote."""
    import pandas as pd

    from rlexp.analysis.benchmark_comparison import comparison_rows

    table = pd.read_csv(store.resolve(record.artifacts["table"]), index_col=0)
    corr = pd.read_csv(store.resolve(record.artifacts["correlations"]))
    ndcg = next((s for s in dict.fromkeys(corr["statistic"].tolist()) if str(s).startswith("ndcg")), None)
    return comparison_rows(table, corr, ndcg), ndcg


def draw(rows: list[dict[str, Any]], png: Path) -> Path:
    """``rows`` drawn by the report's ``fig_benchmark_ranking`` into ``png``."""
    from rlexp.analysis.benchmark_comparison import FIGURE, fig_benchmark_ranking

    with tempfile.TemporaryDirectory() as tmp:
        fig_benchmark_ranking(rows, Path(tmp))
        png.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(tmp) / f"{FIGURE}.png", png)
    return png


def write(store_root: Path, experiment: str, out_dir: Path) -> tuple[Path, Path]:
    from rlexp.store import Store

    store = Store(store_root)
    record = newest_report(store, experiment)
    rows, ndcg = rows_of(store, record)
    png, sidecar = out_dir / f"{NAME}.png", out_dir / f"{NAME}.json"
    draw(rows, png)
    sidecar.write_text(json.dumps({
        "experiment": experiment, "correlate_record": record.id, "git_commit": record.git_commit,
        "ndcg_statistic": ndcg, "rows": rows,
    }, indent=1, sort_keys=True) + "\n")
    return png, sidecar


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, default=None,
                        help="the run store (default: the one rlexp uses here: $RLEXP_ROOT/runs or ./runs)")
    parser.add_argument("--experiment", default="sandbox_study")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if args.store is None:
        from rlexp.config import data_root

        args.store = Path(data_root()) / "runs"
    png, sidecar = write(args.store, args.experiment, args.out)
    print(f"wrote {png} and {sidecar}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
