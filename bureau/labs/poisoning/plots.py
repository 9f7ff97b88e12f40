"""The poisoning lab's plots (matplotlib without pyplot: headless, no global state).

Each takes the ``scope == "all"`` rows of :func:`bureau.labs.poisoning.report.summary_table` and
titles itself with the finding, computed from those rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from bureau.labs.poisoning.corpus import RARE, TOPICAL
from bureau.labs.poisoning.metrics import MODES, VOICES
from bureau.labs.poisoning.runner import CONFIG_SHORT, IN_RUN, NO_TIERS, SHARED_RULE, TIERS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

ORDER = (NO_TIERS, IN_RUN, SHARED_RULE, TIERS)
VOICE_COLORS = {"evidence": "#2c3e50", "obedient": "#2980b9", "gullible": "#c0392b"}


def _figure(width: float, height: float) -> Figure:
    from bureau.figures import new_figure

    return new_figure(width, height)


def _rows(summary: pd.DataFrame, attack: str) -> pd.DataFrame:
    rows = summary[summary["scope"] == "all"] if "scope" in summary.columns else summary
    rows = rows[rows["attack"] == attack]
    return rows.set_index("config").reindex([c for c in ORDER if c in set(rows["config"])])


def answer_hijack(summary: pd.DataFrame, attack: str = TOPICAL) -> Figure:
    """Answers hijacked per configuration, per voice, without (solid) and with (hatched) the
    in-run defence."""
    rows = _rows(summary, attack)
    fig = _figure(9.5, 4.6)
    ax = fig.add_subplot()
    width = 0.13
    for i, voice in enumerate(VOICES):
        for j, mode in enumerate(MODES):
            name = f"hijack_{voice}_{mode}"
            xs = [x + (2 * i + j - 2.5) * width for x in range(len(rows))]
            values = 100 * rows[name].fillna(0)
            ax.bar(xs, values, width=width, color=VOICE_COLORS[voice],
                   hatch="//" if mode == "defended" else None,
                   alpha=0.45 if mode == "defended" else 1.0, edgecolor="white",
                   label=f"{voice}, {'with the in-run defence' if j else 'no defence'}")
            for x, (_, r) in zip(xs, rows.iterrows(), strict=True):
                ax.annotate(f"{int(r[f'{name}_count'])}", (x, 100 * (r[name] or 0)),
                            xytext=(0, 2), textcoords="offset points", ha="center", fontsize=7)
    ax.set_xticks(range(len(rows)), [CONFIG_SHORT[c] for c in rows.index])
    ax.set_ylim(0, 112)
    ax.set_ylabel("trigger questions whose answer states the payload (%)")
    ax.set_xlabel(f"configuration ({attack} attack; counts of "
                  f"{int(rows.iloc[0]['hijack_evidence_undefended_of'])} trigger questions)")
    ax.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False)
    run, no = rows.loc[IN_RUN], rows.loc[NO_TIERS]
    worst = max(int(run[f"hijack_{v}_defended_count"]) for v in VOICES)
    most = max(int(run[f"hijack_{v}_undefended_count"]) for v in VOICES)
    ax.set_title(
        f"Inside the run, the in-run defence takes hijacked answers from up to {most} to at "
        f"most {worst} of {int(run['hijack_evidence_undefended_of'])}, every voice;\nwithout "
        f"tiers it cannot "
        f"help (the poison is trusted memory: up to "
        f"{max(int(no[f'hijack_{v}_defended_count']) for v in VOICES)} with it)", fontsize=10)
    return fig


def trigger_ablation(summary: pd.DataFrame, k: int = 5) -> Figure:
    """The rare-trigger attack: retrieval of its poison by triggered questions against their
    untriggered twins, three readings, per configuration."""
    rows = _rows(summary, RARE)
    fig = _figure(9.5, 4.4)
    ax = fig.add_subplot()
    readings = (("all_poisoned", "every top-k card poisoned (AgentPoison)"),
                ("top1", "poison at rank 1"), ("success", f"≥ 1 poison in the top-{k}"),
                ("in_evidence", "handed to the answer"))
    width = 0.1
    for i, (reading, label) in enumerate(readings):
        for j, (prefix, who) in enumerate((("trigger", "triggered"), ("twin", "twin"))):
            name = f"{prefix}_{reading}" if reading != "success" else (
                "trigger_success" if prefix == "trigger" else "twin_impact")
            xs = [x + (2 * i + j - 3.5) * width for x in range(len(rows))]
            for x, (_, r) in zip(xs, rows.iterrows(), strict=True):
                ax.annotate(f"{int(r[f'{name}_count'])}", (x, 100 * (r[name] or 0)),
                            xytext=(0, 2), textcoords="offset points", ha="center", fontsize=6)
            ax.bar(xs, 100 * rows[name].fillna(0), width=width,
                   color=("#8e44ad", "#16a085", "#d35400", "#7f8c8d")[i],
                   alpha=1.0 if j == 0 else 0.4, hatch="//" if j else None, edgecolor="white",
                   label=f"{label}, {who}")
    ax.set_xticks(range(len(rows)), [CONFIG_SHORT[c] for c in rows.index])
    ax.set_ylim(0, 112)
    ax.set_ylabel("questions (%; counts on the bars)")
    ax.set_xlabel("configuration (solid: with the trigger; hatched: its untriggered twin)")
    ax.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False)
    run = rows.loc[IN_RUN]
    ax.set_title(
        f"A chosen rare trigger with MiniLM: its poison reaches the top-{k} of "
        f"{int(run['trigger_success_count'])}/{int(run['trigger_success_of'])} triggered "
        f"questions (twins {int(run['twin_impact_count'])}/{int(run['twin_impact_of'])}),\n"
        f"rank 1 in {int(run['trigger_top1_count'])}, and is handed to the answer in "
        f"{int(run['trigger_in_evidence_count'])} (inside the run)", fontsize=10)
    return fig
