"""The poisoning lab's plots (matplotlib without pyplot: headless, no global state).

Each takes the ``scope == "all"`` rows of :func:`bureau.poisoning.report.summary_table` and
titles itself with what it shows, computed from those rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from bureau.poisoning.anchors import AGENTPOISON, GATING, UNDEFENDED
from bureau.poisoning.runner import CONFIG_SHORT, IN_RUN, NO_TIERS, OVER_EAGER, TIERS

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

ORDER = (NO_TIERS, TIERS, OVER_EAGER, IN_RUN)
COLORS = {NO_TIERS: "#c0392b", TIERS: "#1e8449", OVER_EAGER: "#e67e22", IN_RUN: "#95a5a6"}


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _rows(summary: pd.DataFrame) -> pd.DataFrame:
    rows = summary[summary["scope"] == "all"] if "scope" in summary.columns else summary
    return rows.set_index("config").reindex([c for c in ORDER if c in set(rows["config"])])


def _bars(ax: Axes, rows: pd.DataFrame, name: str, offset: float = 0.0, width: float = 0.6,
          label_counts: bool = True, **style: object) -> None:
    """Bars of one figure per configuration, 95 % interval whiskers, counts on top."""
    xs = [i + offset for i in range(len(rows))]
    values = 100 * rows[name].fillna(0)
    lo = (values - 100 * rows[f"{name}_lo"].fillna(rows[name])).clip(lower=0)
    hi = (100 * rows[f"{name}_hi"].fillna(rows[name]) - values).clip(lower=0)
    colors = style.pop("color", [COLORS[c] for c in rows.index])
    ax.bar(xs, values, width=width, color=colors, yerr=[lo, hi], capsize=4,
           error_kw={"elinewidth": 1}, **style)
    if label_counts:
        for x, top, (_, r) in zip(xs, values + hi, rows.iterrows(), strict=True):
            ax.annotate(f"{int(r[f'{name}_count'])}/{int(r[f'{name}_of'])}", (x, top),
                        xytext=(0, 3), textcoords="offset points", ha="center", fontsize=8)


def trigger_success(summary: pd.DataFrame, k: int = 5) -> Figure:
    """Trigger retrieval success per configuration, beside the published anchors."""
    rows = _rows(summary)
    fig = _figure(7.4, 4.4)
    ax = fig.add_subplot()
    _bars(ax, rows, "trigger_success")
    for anchor, style in ((AGENTPOISON, ":"), (UNDEFENDED, "--"), (GATING, "-.")):
        figure = anchor.figure.split(",")[0].split("(")[0].strip()
        ax.axhline(100 * anchor.value, color="#34495e", linestyle=style, linewidth=1.2,
                   label=f"{figure}: {100 * anchor.value:.1f} % ({anchor.source.split(', ')[-1]})")
    ax.legend(title="published (other setups: see report.md)", loc="upper center",
              bbox_to_anchor=(0.5, -0.16), fontsize=7.5, title_fontsize=8, frameon=False)
    ax.set_xticks(range(len(rows)), [CONFIG_SHORT[c] for c in rows.index])
    ax.set_ylim(0, 112)
    ax.set_ylabel(f"trigger questions with a poisoned card in the top-{k} (%)")
    ax.set_xlabel("configuration (bars: 95 % bootstrap interval over trials)")
    no, tiers = rows.loc[NO_TIERS], rows.loc[TIERS]
    ax.set_title(
        f"Tiers keep planted tool output out of later retrievals: "
        f"{int(tiers['trigger_success_count'])}/{int(tiers['trigger_success_of'])} trigger "
        f"questions hit a poison\n(no tiers: {int(no['trigger_success_count'])}/"
        f"{int(no['trigger_success_of'])}; an over-eager promotion rule undoes it)",
        fontsize=10)
    return fig


def benign_displacement(summary: pd.DataFrame, k: int = 5) -> Figure:
    """Benign impact (same topic / other questions) and displaced clean hits per configuration."""
    rows = _rows(summary)
    fig = _figure(10.5, 4.2)
    left, right = fig.subplots(1, 2)
    _bars(left, rows, "twin_impact", offset=-0.2, width=0.4, label_counts=True)
    _bars(left, rows, "other_impact", offset=0.2, width=0.4, label_counts=True,
          color="#7f8c8d", hatch="//")
    left.set_xticks(range(len(rows)), [CONFIG_SHORT[c] for c in rows.index], fontsize=8)
    left.set_ylim(0, 112)
    left.set_ylabel(f"benign questions with a poisoned card in the top-{k} (%)")
    left.set_xlabel("left bar: same topic, no trigger · right bar (hatched): other questions")
    left.set_title("Benign impact", fontsize=10)
    _bars(right, rows, "displaced_share")
    right.set_xticks(range(len(rows)), [CONFIG_SHORT[c] for c in rows.index], fontsize=8)
    right.set_ylim(0, 112)
    right.set_ylabel(f"clean top-{k} cards pushed out (%)")
    right.set_xlabel("configuration (counts: displaced / clean top-k slots)")
    right.set_title("Legitimate hits displaced", fontsize=10)
    no, tiers = rows.loc[NO_TIERS], rows.loc[TIERS]
    fig.suptitle(
        f"Poison also reaches benign questions and crowds out real memories without tiers\n"
        f"({int(no['benign_impact_count'])}/{int(no['benign_impact_of'])} benign questions, "
        f"{int(no['displaced_share_count'])} cards displaced); with tiers "
        f"{int(tiers['benign_impact_count'])} and {int(tiers['displaced_share_count'])}",
        fontsize=10)
    return fig
