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
    to = "0" if worst == 0 else f"at most {worst}"
    ax.set_title(
        f"Inside the run, the in-run defence takes hijacked answers from up to {most} to {to} "
        f"of {int(run['hijack_evidence_undefended_of'])}, every voice;\nwithout tiers it "
        f"cannot help (the poison is trusted memory: up to "
        f"{max(int(no[f'hijack_{v}_defended_count']) for v in VOICES)} with it)", fontsize=10)
    return fig


READINGS = ("all_poisoned", "top1", "success", "in_evidence")
"""The rare trigger's four readings, AgentPoison's own first."""


def _reading_label(reading: str, k: int) -> str:
    return {"all_poisoned": "every top-k card poisoned (AgentPoison)", "top1": "poison at rank 1",
            "success": f"≥ 1 poison in the top-{k}", "in_evidence": "handed to the answer"}[reading]


def _reading_columns(reading: str) -> tuple[str, str]:
    """The summary columns of one reading: (triggered, twin)."""
    if reading == "success":
        return "trigger_success", "twin_impact"
    return f"trigger_{reading}", f"twin_{reading}"


def drawn_readings(rows: pd.DataFrame) -> tuple[list[str], list[str]]:
    """The readings with a bar above zero somewhere (triggered or twin, any configuration), and
    those at 0 everywhere: a figure draws the first and names the second in a sentence, so its
    legend lists no bar it never draws (issue 50 §5)."""
    drawn, zero = [], []
    for reading in READINGS:
        counts = [int(rows[f"{c}_count"].fillna(0).sum()) for c in _reading_columns(reading)]
        (drawn if any(counts) else zero).append(reading)
    return drawn, zero


def _at(what: str, n: int) -> str:
    """``never at rank 1`` / ``at rank 1 in 3``."""
    return f"never {what}" if n == 0 else f"{what} in {n}"


def trigger_ablation(summary: pd.DataFrame, k: int = 5) -> Figure:
    """The rare-trigger attack: retrieval of its poison by triggered questions against their
    untriggered twins, per configuration, for each reading that is above zero somewhere; the
    readings at zero everywhere are named under the axis instead of drawn as empty bars."""
    rows = _rows(summary, RARE)
    fig = _figure(9.5, 4.4)
    ax = fig.add_subplot()
    drawn, zero = drawn_readings(rows)
    colours = dict(zip(READINGS, ("#8e44ad", "#16a085", "#d35400", "#7f8c8d"), strict=True))
    width = min(0.2, 0.8 / max(2 * len(drawn), 1))
    for i, reading in enumerate(drawn):
        for j, (name, who) in enumerate(zip(_reading_columns(reading), ("triggered", "twin"),
                                            strict=True)):
            xs = [x + (2 * i + j - (2 * len(drawn) - 1) / 2) * width for x in range(len(rows))]
            for x, (_, r) in zip(xs, rows.iterrows(), strict=True):
                ax.annotate(f"{int(r[f'{name}_count'])}", (x, 100 * (r[name] or 0)),
                            xytext=(0, 2), textcoords="offset points", ha="center", fontsize=7)
            ax.bar(xs, 100 * rows[name].fillna(0), width=width, color=colours[reading],
                   alpha=1.0 if j == 0 else 0.4, hatch="//" if j else None, edgecolor="white",
                   label=f"{_reading_label(reading, k)}, {who}")
    ax.set_xticks(range(len(rows)), [CONFIG_SHORT[c] for c in rows.index])
    ax.set_ylim(0, 112)
    ax.set_ylabel("questions (%; counts on the bars)")
    none = ("" if not zero else "\n0 everywhere, not drawn: "
            + "; ".join(_reading_label(r, k) for r in zero))
    ax.set_xlabel(f"configuration (solid: with the trigger; hatched: its untriggered twin){none}")
    if drawn:
        ax.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.2 if zero
                                                                          else -0.14),
                  frameon=False)
    run = rows.loc[IN_RUN]
    ax.set_title(
        f"A chosen rare trigger with MiniLM: its poison reaches the top-{k} of "
        f"{int(run['trigger_success_count'])}/{int(run['trigger_success_of'])} triggered "
        f"questions (twins {int(run['twin_impact_count'])}/{int(run['twin_impact_of'])}),\n"
        f"{_at('at rank 1', int(run['trigger_top1_count']))}, "
        f"{_at('handed to the answer', int(run['trigger_in_evidence_count']))} "
        f"(inside the run)", fontsize=10)
    return fig
