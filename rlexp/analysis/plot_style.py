"""How the figures tell reward models apart and keep their labels readable.

Every RM gets one colour per data mix, one marker per lineage and one line style per remaining
combination of factors (epochs, learning rate, seed, ...), so 12 RMs never share a colour *and* a
marker *and* a line style the way a 10-colour cycle made two RMs share blue. Point labels are
placed greedily where they overlap neither another label nor a point.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

#: Colour-blind-safe (Okabe-Ito), then tab10 for more mixes.
MIX_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000",
               "#8c564b", "#7f7f7f")
LINEAGE_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINE_STYLES = ("-", "--", ":", "-.", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)))
#: Factors that separate RMs of one mix and lineage (line style / marker fill).
OTHER_FACTORS = ("epochs", "lr", "train_profile", "seed")


def _key(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "external"
    return f"{v:g}" if isinstance(v, float) else str(v)


@dataclass(frozen=True)
class RMStyle:
    """How one RM is drawn: colour (data mix), marker (lineage), line style and fill (other factors)."""

    colour: str
    marker: str
    linestyle: Any
    filled: bool
    mix: str
    lineage: str


def rm_styles(table: pd.DataFrame) -> dict[str, RMStyle]:
    """RM id -> its style: colour by data mix, marker by lineage, line style/fill by the other factors."""
    mixes = table["mix"].map(_key) if "mix" in table else pd.Series("external", index=table.index)
    lineages = table["lineage"].map(_key) if "lineage" in table else pd.Series("external", index=table.index)
    others = [f for f in OTHER_FACTORS if f in table and table[f].map(_key).nunique() > 1]
    rest = table[others].apply(lambda r: " ".join(_key(v) for v in r), axis=1) if others else pd.Series("", index=table.index)
    mix_ix = {m: i for i, m in enumerate(sorted(set(mixes) - {"external"}))}
    lin_ix = {m: i for i, m in enumerate(sorted(set(lineages) - {"external"}))}
    rest_ix = {r: i for i, r in enumerate(sorted(set(rest)))}
    out = {}
    for rm in table.index:
        m, lin, r = mixes[rm], lineages[rm], rest[rm]
        out[str(rm)] = RMStyle(
            colour="0.5" if m == "external" else MIX_COLOURS[mix_ix[m] % len(MIX_COLOURS)],
            marker="x" if lin == "external" else LINEAGE_MARKERS[lin_ix[lin] % len(LINEAGE_MARKERS)],
            linestyle=LINE_STYLES[rest_ix[r] % len(LINE_STYLES)],
            filled=rest_ix[r] % 2 == 0,
            mix=m, lineage=lin,
        )
    return out


def legend_handles(styles: dict[str, RMStyle]) -> list[Any]:
    """One handle per data mix (colour) and one per lineage (marker), instead of one per RM."""
    from matplotlib.lines import Line2D

    mixes = dict.fromkeys((s.mix, s.colour) for s in styles.values())
    lineages = dict.fromkeys((s.lineage, s.marker) for s in styles.values())
    handles = [Line2D([], [], color=c, marker="s", ls="", ms=6, label=f"mix: {m}") for m, c in mixes]
    handles += [Line2D([], [], color="0.3", marker=mk, ls="", ms=5, label=lin) for lin, mk in lineages]
    return handles


# Offsets (points) tried in order for a label: right-up, right-down, left-up, left-down, further out.
_OFFSETS = ((4, 3), (4, -9), (-4, 3), (-4, -9), (4, 10), (4, -16), (-4, 10), (-4, -16), (10, -3), (-10, -3))


def place_labels(ax: Any, xs: Sequence[float], ys: Sequence[float], labels: Sequence[str], fontsize: float = 6) -> None:
    """Annotate points so that no two labels overlap and no label covers a point (greedy, in display space).

    A label that finds no free spot among the candidate offsets is left out; the legend and the RM table
    still identify every point.
    """
    if not len(xs):
        return
    ax.autoscale_view()
    fig = ax.figure
    dpi_scale = fig.dpi / 72.0
    pts = ax.transData.transform(np.column_stack([np.asarray(xs, float), np.asarray(ys, float)]))
    taken: list[tuple[float, float, float, float]] = [(x - 3, y - 3, x + 3, y + 3) for x, y in pts]
    for (px, py), text in zip(pts, labels, strict=True):
        w, h = 0.6 * fontsize * len(text) * dpi_scale, fontsize * 1.2 * dpi_scale
        for dx, dy in _OFFSETS:
            x0 = px + dx * dpi_scale - (w if dx < 0 else 0)
            y0 = py + dy * dpi_scale
            box = (x0, y0, x0 + w, y0 + h)
            if not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in taken):
                taken.append(box)
                ax.annotate(text, ax.transData.inverted().transform((px, py)), xytext=(dx, dy), textcoords="offset points",
                            fontsize=fontsize, color="0.3", ha="right" if dx < 0 else "left", va="bottom")
                break
