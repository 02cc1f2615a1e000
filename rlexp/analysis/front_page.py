"""Page one of ``report.md``: the question, the grid in a sentence, the headline table with
verdicts, the key figure and the findings. No record ids: provenance lives in the appendices.

Reads ``study.context.headline`` (written by :func:`rlexp.analysis.headline.summarise`), so a
report re-rendered from its files alone has the same page one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rlexp.analysis.columns import DOWNSTREAM_RE
from rlexp.analysis.correlation import MAX_EXACT_SPEARMAN, MIN_TESTABLE
from rlexp.analysis.markdown import markdown_table
from rlexp.analysis.study_table import StudyTable
from rlexp.analysis.values import is_missing
from rlexp.data.schemas import USER_PAIR_SETS

TITLE = "# Do benchmark scores predict downstream gains?"
KEY_FIGURE = "fig_scatter"


def _f(v: Any, digits: int = 2) -> str:
    return "n/a" if is_missing(v) else f"{float(v):.{digits}f}"


def _p(v: Any) -> str:
    return "n/a" if is_missing(v) else f"{float(v):.2g}"


def _and(items: Sequence[str]) -> str:
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1] if items else "none"


def grid_sentence(study: StudyTable) -> str:
    """The study in one sentence: how many RMs from which factors, which benchmarks, which downstream."""
    table, context = study.frame, study.context
    n = len(table)
    external = int(table["external"].astype(bool).sum()) if "external" in table else 0
    varying = context.varying_factors
    plural = {"lineage": "lineages", "mix": "data mixes", "epochs": "epoch counts", "lr": "learning rates", "seed": "seeds"}
    factors = " × ".join(f"{len(v)} {plural.get(f, f) if len(v) != 1 else f} ({', '.join(map(str, v))})"
                         for f, v in varying.items() if f not in ("model", "checkpoint"))
    made = f" from {factors}" if factors else ""
    ext = f" plus {external} external" if external else ""
    benches = []
    if "rb2/overall" in table:
        benches.append("RewardBench 2")
    modes = context.profile_modes
    if modes:
        benches.append(f"Personalized RewardBench (profile modes {', '.join(modes)})")
    for bench, name in USER_PAIR_SETS.items():
        contexts = sorted({c.split("/")[1] for c in table.columns if c.startswith(f"{bench}/")})
        if contexts:
            benches.append(f"{name} (user context {', '.join(contexts)})")
    settings: dict[str, list[str]] = {}
    for col in context.columns.gain:
        m = DOWNSTREAM_RE.match(col)
        if m:
            settings.setdefault("Best-of-N" if m["task"] == "bon" else m["task"].upper(), []).append(m["setting"])
    down = "; ".join(f"{algo} on {_and(s)} prompts" for algo, s in settings.items()) or "no downstream result"
    trained = n - external
    if context.external:  # published numbers: neither trained here nor gold-judged here
        source = context.external["source"]
        who = f"{trained} trained reward models{made} and " if trained else ""
        return (f"{who}{context.external['rms']} reward models of external results ({source}), scored on "
                f"{_and(benches) if benches else 'no benchmark'}; downstream: {down}.")
    return (f"{trained} trained reward models{made}{ext}, scored on {_and(benches) if benches else 'no benchmark'}; "
            f"downstream: {down}, gold-judged.")


def _scope_cell(row: Mapping[str, Any], scope: str) -> str:
    hit = next((s for s in row.get("scopes", []) if s["scope"] == scope), None)
    if hit is None:
        return "–"
    reading = "not testable" if hit["verdict"].startswith("not testable") else hit["verdict"]
    return f"{_f(hit['spearman'])} (n = {hit['n']}, {reading})"


def headline_table(headline: Mapping[str, Any]) -> list[str]:
    """Page one's table: one row per headline pair (``headline``: :func:`~rlexp.analysis.headline.summarise`)."""
    alpha = float(headline.get("alpha", 0.05))
    level = f"{100 * (1 - alpha):g}%"
    has_seeds = any(r.get("seed_rho_range") for r in headline["rows"])
    rows = []
    for r in headline["rows"]:
        ci, pci = r["ci"], r["prompt_ci"]
        rho = f"{_f(r['spearman'])} [{_f(ci[0])}, {_f(ci[1])}]" if not is_missing(ci[0]) else _f(r["spearman"])
        if not is_missing(pci[0]):
            rho += f"; prompts [{_f(pci[0])}, {_f(pci[1])}]"
        p = f"not testable (n = {r['n']})" if r["n"] < MIN_TESTABLE else _p(r["pvalue"])
        nd = "n/a" if is_missing(r["ndcg"]) else f"{_f(r['ndcg'])} (chance {_f(r['ndcg_null_mean'])}, p = {_p(r['ndcg_null_p'])})"
        cells = [f"`{r['benchmark']}`", f"`{r['downstream']}`", r["n"], rho, p, nd, _f(r["ndcg_normalised"]),
                 _scope_cell(r, "without controls")]
        if has_seeds:
            sr = r.get("seed_rho_range")
            cells.append("–" if not sr else f"{_f(sr[0])} … {_f(sr[1])}")
        rows.append([*cells, f"**{r['verdict']}**"])
    header = ["benchmark", "downstream", "n", f"Spearman ρ [{level} CI over RMs]", "p", "NDCG (chance level, null p)",
              "normalised NDCG", "ρ without controls", *(["ρ per seed (range)"] if has_seeds else []), "verdict"]
    return [markdown_table(header, rows)] if rows else ["No headline pair: the study has no main benchmark or no gain column."]


def page_one(study: StudyTable) -> list[str]:
    """The report's first page, as Markdown lines."""
    headline = study.context.headline or {}
    spec = headline.get("spec") or {}
    alpha = float(headline.get("alpha", 0.05))
    lines = [
        TITLE, "",
        "**Question.** Across this study's reward models, does a reward model's benchmark score rank the models "
        "the way their downstream gains do (Best-of-N and PPO with the RM as reward, gold-judged)?", "",
        f"**Grid.** {grid_sentence(study)}", "",
    ]
    if spec:
        mode = spec.get("prb_mode")
        lines += [
            f"**Headline columns** (declared in `correlate.headline` before the numbers, not picked by result): "
            f"{_and([f'`{b}`' for b in spec['benchmarks']]) if spec['benchmarks'] else 'none'}"
            + (f" (PRB profile mode `{mode}`: {spec['prb_mode_source']})" if mode else "")
            + f" against every downstream gain. Controls: RMs of data mix {_and([f'`{c}`' for c in spec['controls']]) or 'none'}. "
            + (f"Secondary columns ({_and([f'`{c}`' for c in spec['secondary']])}) are in Appendix A." if spec.get("secondary") else ""),
            "",
            *headline_table(headline), "",
            f"Verdict: **predicts** when Spearman's ρ > 0 with p < {alpha:g} (exact permutation p for n ≤ "
            f"{MAX_EXACT_SPEARMAN}); **no evidence** otherwise; **not testable** below {MIN_TESTABLE} RMs, where even "
            "a perfect ranking is not significant. NDCG is shown with the mean NDCG of a random order of the same RMs "
            "and the share of random orders that do at least as well; normalised NDCG = (NDCG − chance) / (1 − chance). "
            "Definitions: `docs/tasks.md` (correlate).", "",
        ]
    lines += [f"![benchmark score vs downstream gain]({KEY_FIGURE}.png)", "",
              "*Each point is a reward model (colour: data mix; marker: lineage; bars: the gain's CI over prompts).*", ""]
    found = headline.get("findings") or []
    if found:
        lines += ["## Findings", "", *[f"{i}. {f}" for i, f in enumerate(found, 1)], ""]
    return lines
