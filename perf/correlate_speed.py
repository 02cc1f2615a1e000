"""The correlation table's bootstrap, evaluated as one stack of replicates per statistic, against the
per-replicate loop it replaced (kept here as the reference), on study-sized inputs; and, given a
finished study's store, the correlate step's parts timed on it.

    python perf/correlate_speed.py [STORE]   # STORE: e.g. runs/ of a `make study` (optional)

Both sides draw the same seeded resamples, so their CIs must be equal to the last bit.
"""

from __future__ import annotations

import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import stats

from rlexp.analysis.bootstrap import correlate
from rlexp.analysis.correlation import undefined_reason
from rlexp.analysis.ndcg import ndcg, ndcg_variants
from rlexp.errors import DataError

N_RMS, N_PAIRS, N_BOOT = 12, 40, 1000  # the default study: 12 RMs, 40 bootstrapped (benchmark, downstream) pairs
METHODS = ("spearman", "kendall", "pearson", "ndcg")


def _reference_value(name: str, x: np.ndarray, y: np.ndarray, variant: tuple[str, str, int | None] | None) -> float | None:
    """One replicate's value as the loop computed it before the stacked evaluation."""
    if variant is not None:
        try:
            return ndcg(x, y, relevance=variant[0], gain=variant[1], k=variant[2])
        except DataError:
            return None
    if undefined_reason(x, y) is not None:
        return None
    if name == "spearman":
        x, y = stats.rankdata(x), stats.rankdata(y)
    if name in ("spearman", "pearson"):
        value = np.corrcoef(x, y)[0, 1]
    else:
        sx, sy = np.sign(x[:, None] - x[None, :]), np.sign(y[:, None] - y[None, :])
        value = (sx * sy).sum() / math.sqrt((sx * sx).sum() * (sy * sy).sum())
    return None if math.isnan(value) else float(np.clip(value, -1.0, 1.0))


def _reference_cis(x: np.ndarray, y: np.ndarray, variants: list, seed: int = 0) -> list[tuple[float, float]]:
    stats_ = [(m, None) for m in METHODS[:3]] + [("ndcg", v) for v in variants]
    samples: list[list[float]] = [[] for _ in stats_]
    rng = np.random.default_rng(seed)
    for _ in range(N_BOOT):
        idx = rng.integers(0, x.size, size=x.size)
        for j, (name, variant) in enumerate(stats_):
            value = _reference_value(name, x[idx], y[idx], variant)
            if value is not None:
                samples[j].append(value)
    return [tuple(float(q) for q in np.quantile(s, [0.025, 0.975])) for s in samples]


def _inputs() -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(0)
    pairs = []
    for _ in range(N_PAIRS):
        bench = np.round(rng.random(N_RMS), 3)  # rounded: some tied benchmark scores, as accuracies tie
        pairs.append((bench, np.abs(0.5 * bench + rng.normal(scale=0.2, size=N_RMS))))
    return pairs


def _store_parts(store: str) -> None:
    """Time the correlate step's parts on a finished study (its record's settings; nothing recorded)."""
    import glob
    import json

    from omegaconf import OmegaConf

    from rlexp.analysis.correlation_table import correlation_table
    from rlexp.analysis.report import write_outputs
    from rlexp.store import Store
    from rlexp.tasks import correlate as step

    found = sorted(glob.glob(f"{store}/records/correlate/*.json"))
    if not found:
        sys.exit(f"correlate_speed: no correlate record under {store}/records")
    cfg = OmegaConf.create(json.loads(Path(found[-1]).read_text())["config"])
    settings = step._settings(cfg)
    t0 = time.perf_counter()
    study = step.build_table(step.collect(Store(store), **step._selection(cfg)), k=settings["k"],
                             profile_modes=settings["profile_modes"])
    t1 = time.perf_counter()
    corr = correlation_table(study, n_boot=settings["n_boot"], alpha=settings["alpha"], seed=settings["seed"],
                             ndcg=settings["ndcg"], boot_subsets=settings["boot_subsets"])
    t2 = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        write_outputs(Path(out), study, corr, {k: v for k, v in settings.items() if k != "ndcg"})
    t3 = time.perf_counter()
    print(f"{store}: table {t1 - t0:.2f} s, correlation table {t2 - t1:.2f} s, tables+figures+report {t3 - t2:.2f} s")


def main() -> None:
    variants = ndcg_variants()  # the study's: rank, minmax, raw relevance; linear gain
    pairs = _inputs()
    t0 = time.perf_counter()
    batched = [correlate(x, y, methods=METHODS, n_boot=N_BOOT, ndcg_variants=variants) for x, y in pairs]
    t_batched = time.perf_counter() - t0
    t0 = time.perf_counter()
    reference = [_reference_cis(x, y, variants) for x, y in pairs]
    t_reference = time.perf_counter() - t0
    same = all([(c.ci_low, c.ci_high) for c in got] == ref for got, ref in zip(batched, reference, strict=True))
    print(f"{N_PAIRS} pairs x {N_RMS} RMs x {N_BOOT} replicates x {3 + len(variants)} statistics")
    print(f"  stacked replicates   {t_batched:6.2f} s (point estimates and p-values included)")
    print(f"  per-replicate loop   {t_reference:6.2f} s (CIs only)")
    print(f"  ratio {t_reference / t_batched:.1f}x; every CI equal to the last bit: {same}")
    if len(sys.argv) > 1:
        _store_parts(sys.argv[1])
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
