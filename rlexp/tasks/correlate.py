"""`rlexp correlate`: do benchmark scores (RB2, PRB, Arena/PRISM) predict downstream gains (BoN, PPO) across RMs?

Reads records only (never a model, never Hydra output folders): the study's train_rm, evaluate,
bon and ppo records, chosen by ``records`` (ids), ``rms`` (every record of these RMs) or
``select_experiment`` (default: ``experiment_name``). Writes ``table.csv``, ``correlations.csv``,
``correlations.md``, ``correlations.tex``, six figures (PNG + PDF) and ``report.md`` into the
record's artifact folder. The record's inputs are the ids of every record read, so the same
study is a cache hit and a new or re-run record makes a new correlate record.
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

from rlexp.analysis.correlation_table import correlation_table, downstream_gain_differences, summary
from rlexp.analysis.external import ExternalTable, group_correlations, read_external
from rlexp.analysis.headline import summarise
from rlexp.analysis.ndcg import PRB_VARIANT, ndcg_variants
from rlexp.analysis.ppo_lineage import lineage_gains
from rlexp.analysis.records import Collection, collect
from rlexp.analysis.report import write_outputs
from rlexp.analysis.study_table import StudyTable
from rlexp.analysis.table import build_table
from rlexp.errors import ConfigError
from rlexp.runtime import RunContext, execute, existing_record, hydra_entry
from rlexp.store import Record, Store


def _list(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    container = OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value
    return [str(v) for v in container]


def _selection(cfg: DictConfig) -> dict[str, Any]:
    records, rms = _list(cfg.records), _list(cfg.rms)
    chosen = [name for name, v in (("records", records), ("rms", rms), ("select_experiment", cfg.select_experiment)) if v]
    if len(chosen) > 1:
        raise ConfigError(f"give only one of records, rms and select_experiment (got {', '.join(chosen)})")
    if records:
        return {"record_ids": records}
    if rms:
        return {"rms": rms}
    return {"experiment": str(cfg.select_experiment or cfg.experiment_name)}


def _settings(cfg: DictConfig) -> dict[str, Any]:
    if isinstance(cfg.n_boot, bool) or int(cfg.n_boot) < 0:
        raise ConfigError(f"n_boot must be a non-negative integer, got {cfg.n_boot!r}")
    if not 0.0 < float(cfg.alpha) < 1.0:
        raise ConfigError(f"alpha must be in (0, 1), got {cfg.alpha!r}")
    modes = _list(cfg.profile_modes)  # ProfileMode values: the schema rejected anything else
    variants = ndcg_variants(_list(cfg.ndcg.relevance) or [], _list(cfg.ndcg.gain) or [], cfg.ndcg.cutoff)
    if cfg.ndcg.get("prb", True):  # first: the benchmark comparison table reads the first NDCG variant
        variants = [PRB_VARIANT, *(v for v in variants if v != PRB_VARIANT)]
    prb_mode = cfg.headline.prb_mode
    return {"n_boot": int(cfg.n_boot), "alpha": float(cfg.alpha), "seed": int(cfg.seed), "k": cfg.k,
            "profile_modes": modes, "boot_subsets": bool(cfg.boot_subsets), "ndcg": variants,
            "headline_prb_mode": None if prb_mode is None else str(prb_mode),
            "controls": _list(cfg.headline.controls) or []}


def _correlate(ctx: RunContext, study: StudyTable, settings: dict[str, Any]) -> dict[str, Any]:
    corr = correlation_table(study, n_boot=settings["n_boot"], alpha=settings["alpha"], seed=settings["seed"],
                             ndcg=settings["ndcg"], boot_subsets=settings["boot_subsets"])
    differences = downstream_gain_differences(study, n_boot=settings["n_boot"], alpha=settings["alpha"], seed=settings["seed"])
    context = study.context
    context.gain_differences = differences
    context.ppo_lineage = lineage = lineage_gains(study, controls=settings["controls"], n_boot=settings["n_boot"],
                                                  alpha=settings["alpha"], seed=settings["seed"])
    context.headline = headline = summarise(study, corr, prb_mode=settings["headline_prb_mode"],
                                            controls=settings["controls"], alpha=settings["alpha"])
    if context.external:
        spec = headline["spec"]
        context.external_groups = group_correlations(
            study.frame, context.external["names"], context.external["groups"], [(b, d) for b in spec["benchmarks"] for d in spec["downstream"]],
            n_boot=settings["n_boot"], seed=settings["seed"], alpha=settings["alpha"])
    paths = write_outputs(ctx.work_dir, study, corr, {k: v for k, v in settings.items() if k != "ndcg"})
    for name, path in paths.items():
        ctx.add_artifact(name, path)
    rows = corr.astype(object).where(corr.notna(), None).values.tolist()
    ctx.tracker.table("correlations", [str(c) for c in corr.columns], rows)
    table = study.frame
    ctx.tracker.table("rm_table", ["rm_id", *[str(c) for c in table.columns]],
                      [[str(i), *[None if v != v else v for v in r]] for i, r in zip(table.index, table.values.tolist(), strict=True)])
    figures = [p for n, p in paths.items() if n.startswith("fig_")]
    for path in figures:
        ctx.tracker.artifact(f"correlate-{ctx.rid}-{path.name}", "figure", path, reference=False)
    ctx.tracker.artifact(f"correlate-{ctx.rid}-report", "report", paths["report"], reference=False)
    ctx.tracker.images({p.stem: p for p in figures if p.suffix == ".png"})
    ctx.info.update({"selection": context.selection, "duplicates": context.duplicates,
                     "missing": context.missing, "warnings": context.warnings})
    prb_column = next((b for b in headline["spec"]["benchmarks"] if b.startswith("prb/")), None)
    return {**summary(study, corr, prb_column), "gain_differences": differences, "ppo_lineage": lineage,
            "headline": [{k: r[k] for k in ("benchmark", "downstream", "n", "spearman", "pvalue", "ndcg",
                                            "ndcg_normalised", "ndcg_null_p", "verdict")} for r in headline["rows"]]}


def _collection(cfg: DictConfig, store: Store, external: ExternalTable | None) -> Collection:
    """The selected records; none when external results come alone (no records, rms or select_experiment)."""
    if external is not None and not (cfg.records or cfg.rms or cfg.select_experiment):
        return Collection(store=store, selection=f"external results {external.path}", records=[])
    return collect(store, **_selection(cfg))


def run(cfg: DictConfig) -> Record:
    """Correlate (or find the correlation of) the study's benchmark scores and downstream gains."""
    settings = _settings(cfg)
    store = Store(cfg.paths.store)
    external = read_external(cfg.external) if cfg.get("external") else None
    collection = _collection(cfg, store, external)
    used = {r.id: r for r in [*collection.records, *collection.rm_records.values()]}  # + train_rm records read for factors
    inputs = {f"{r.task}/{r.id}": r.id for r in sorted(used.values(), key=lambda r: (r.task, r.id))}
    if external is not None:  # its content, not its path: an edited file is a new correlation
        inputs["external"] = external.sha256[:16]
    found = existing_record("correlate", cfg, inputs)
    if found is not None:
        return found  # already on record: no table to build (a finished study's rerun)
    # Built before the run starts, so a study that cannot be tabulated fails before any output exists.
    study = build_table(collection, k=settings["k"], profile_modes=settings["profile_modes"], external=external)
    return execute("correlate", cfg, lambda ctx: _correlate(ctx, study, settings), inputs)


main = hydra_entry("correlate", run)

if __name__ == "__main__":
    main()
