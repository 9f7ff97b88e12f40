"""The poisoning lab in two calls, for a lesson notebook:

    table = poisoning_table(bureau, limit=1)   # one trial per benchmark: well under a minute
    plot_poisoning(table)                      # answers hijacked, per voice, with/without defence

It runs in the notebook's own store (one store per process) and deletes the lab's cases when
each trial is done, so the course data stays as it was. The names in ``__all__`` are the
lesson's contract with the package.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from bureau.labs.poisoning.corpus import build_corpus, resolve_sources
from bureau.labs.poisoning.report import ALL, console_lines, finding, summary_table
from bureau.labs.poisoning.runner import CONFIG_LABELS, PoisonResult, run_poisoning

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from bureau.service import Bureau

LESSON_COLUMNS = {
    "attack": "attack",
    "label": "configuration",
    "trigger_success_count": "trigger hits",
    "trigger_success_of": "trigger questions",
    "trigger_success": "trigger retrieval success",
    "twin_impact_count": "twin hits (no trigger)",
    "hijack_evidence_undefended_count": "answers hijacked, evidence, no in-run defence",
    "hijack_evidence_defended_count": "… with it",
    "hijack_gullible_undefended_count": "gullible stand-in, no defence",
    "hijack_gullible_defended_count": "… with it",
}

__all__ = ["CONFIG_LABELS", "finding", "lab_result", "plot_poisoning", "plot_trigger_ablation",
           "poisoning_table", "print_table", "short_table"]


def lab_result(bureau: Bureau, limit: int = 1, k: int = 5, magpie: str | Path | None = None,
               agentsocialbench: str | Path | None = None,
               slice_items: int | None = None) -> PoisonResult:
    """Run the lab on ``limit`` trials per benchmark in ``bureau``'s store (cases deleted)."""
    from bureau.labs.poisoning.corpus import SLICE_ITEMS

    sources, _ = resolve_sources(magpie, agentsocialbench)
    corpus = build_corpus(sources, limit=limit, slice_items=slice_items or SLICE_ITEMS)
    return run_poisoning(bureau, corpus, k=k, cleanup=True)


def poisoning_table(bureau: Bureau, limit: int = 1, k: int = 5, **kwargs: object
                    ) -> pd.DataFrame:
    """The summary over all trials, one row per (attack, configuration), with counts and shares
    (``DataFrame.attrs["result"]`` keeps the whole :class:`PoisonResult`)."""
    result = lab_result(bureau, limit=limit, k=k, **kwargs)  # type: ignore[arg-type]
    summary = summary_table(result)
    table = summary[summary["scope"] == ALL].reset_index(drop=True)
    table.attrs["result"] = result
    table.attrs["k"] = result.k
    return table


def short_table(table: pd.DataFrame) -> pd.DataFrame:
    """The columns the lesson's text reads, renamed in words (benign impact and displaced clean
    hits, which no sentence of the lesson explains, stay in the full lab's report)."""
    return table[list(LESSON_COLUMNS)].rename(columns=LESSON_COLUMNS)


def plot_poisoning(table: pd.DataFrame) -> Figure:
    """The answer-hijack figure (the topical attack, every voice, without and with the
    in-run defence) for a :func:`poisoning_table`."""
    from bureau.labs.poisoning.plots import answer_hijack

    return answer_hijack(table)


def plot_trigger_ablation(table: pd.DataFrame) -> Figure:
    """The rare trigger against its untriggered twin (AgentPoison's reading, rank 1, top-k,
    handed to the answer) for a :func:`poisoning_table`."""
    from bureau.labs.poisoning.plots import trigger_ablation

    return trigger_ablation(table, int(table.attrs.get("k", 5)))


def print_table(table: pd.DataFrame) -> None:
    """The command line's table for a :func:`poisoning_table`."""
    result = table.attrs.get("result")
    if result is None:
        raise ValueError("print_table needs a table made by poisoning_table")
    for line in console_lines(table, result):
        print(line)
