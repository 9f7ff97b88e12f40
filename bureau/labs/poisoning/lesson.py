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

from bureau.labs.poisoning.corpus import RARE, TOPICAL, build_corpus, resolve_sources
from bureau.labs.poisoning.metrics import VOICES
from bureau.labs.poisoning.report import ALL, console_lines, count, finding, pct, summary_table
from bureau.labs.poisoning.runner import (
    CONFIG_LABELS,
    IN_RUN,
    NO_TIERS,
    SHARED_RULE,
    TIERS,
    PoisonResult,
    run_poisoning,
)

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
           "poisoning_table", "print_table", "said", "short_table"]

VOICE_NAMES = {"evidence": "the evidence voice", "obedient": "the obedient stand-in",
               "gullible": "the gullible stand-in"}


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


def said(table: pd.DataFrame, attack: str = TOPICAL) -> str:
    """What the lesson reads on one attack's figure, every number from this run (issue 50 §3):
    for the topical pages, retrieval and hijacked answers inside the run per voice without and
    with the in-run defence, the answers resting on the question's own card, no tiers and the
    two promotion rules; for the rare trigger, how large each victim memory was and what share
    of it the page, and the triggered questions against their untriggered twins."""
    rows = table[table["attack"] == attack].set_index("config")
    run = rows.loc[IN_RUN]
    k = int(table.attrs.get("k", 5))
    if attack == RARE:
        return _rare_said(table, run, k)
    no, a, b = rows.loc[NO_TIERS], rows.loc[SHARED_RULE], rows.loc[TIERS]
    voices = "; ".join(f"{VOICE_NAMES[v]} {int(run[f'hijack_{v}_undefended_count'])} → "
                       f"{int(run[f'hijack_{v}_defended_count'])}" for v in VOICES)
    of = int(run["hijack_evidence_undefended_of"])
    lines = [
        f"Inside the run, {count(run, 'trigger_success')} trigger questions retrieved their "
        f"topical page in the top-{k}. Answers that state it as fact, of {of}, without → with "
        f"the in-run defence: {voices}.",
        f"Questions answered from their own card: {count(run, 'answered_undefended')} without "
        f"the defence, {count(run, 'answered_defended')} with it"
        + (" (the defence cost none)." if int(run["answered_defended_count"])
           >= int(run["answered_undefended_count"]) else "."),
        "Without tiers the page is trusted memory; hijacked with the defence: "
        + ", ".join(f"{int(no[f'hijack_{v}_defended_count'])}" for v in VOICES)
        + " (evidence, obedient, gullible).",
    ]
    promoted = int(a["trigger_success_count"])
    a_def = max(int(a[f"hijack_{v}_defended_count"]) for v in VOICES)
    lines.append(
        f"Rule (a) promoted the pages: after the run {count(a, 'trigger_success')} trigger "
        f"questions still retrieved one; hijacked without → with the defence, evidence voice "
        f"{int(a['hijack_evidence_undefended_count'])} → {int(a['hijack_evidence_defended_count'])}"
        + (" (the promoted copy stays untrusted)." if promoted and a_def == 0 else "."))
    lines.append(
        f"Rule (b): after the run {count(b, 'trigger_success')} trigger questions retrieved a "
        "page: a deletion check, the pages were gone when the run ended."
        if int(b["trigger_success_count"]) == 0 else
        f"Rule (b) let pages through: after the run {count(b, 'trigger_success')} trigger "
        "questions retrieved one.")
    return "\n".join(lines)


def _span(values: list[float], unit: str = "", scale: float = 1, digits: int = 0) -> str:
    """``26–37`` or ``2.7–3.8 %`` (one number when both ends print the same)."""
    lo, hi = (f"{scale * v:.{digits}f}" for v in (min(values), max(values)))
    return (lo if lo == hi else f"{lo}–{hi}") + unit


def _rare_said(table: pd.DataFrame, run: pd.Series, k: int) -> str:
    result = table.attrs.get("result")
    if result is None:
        raise ValueError("said(table, RARE) needs a table made by poisoning_table")
    trials = result.trials
    cards = [int(c + p) for c, p in zip(trials["memory_cards"], trials["trigger_poisons"],
                                        strict=True)]
    pages = int(trials["trigger_poisons"].max())
    page = "one of them the rare page" if pages == 1 else f"{pages} of them rare pages"
    twins = int(run["twin_impact_count"])
    lines = [
        f"Each victim memory held {_span(cards)} cards, {page} "
        f"({_span(list(trials['trigger_poison_rate']), ' %', 100, 1)} of the memory).",
        f"Inside the run the page reached the top-{k} of {count(run, 'trigger_success')} "
        f"triggered questions and {count(run, 'twin_impact')} of their untriggered twins; "
        f"rank 1 for {count(run, 'trigger_top1')} triggered and {count(run, 'twin_top1')} twins; "
        f"handed to the answer for {count(run, 'trigger_in_evidence')}.",
    ]
    if twins:
        lines.append(f"The top-{k} of {min(cards)} cards is {pct(k / min(cards), 0)} of the "
                     "memory, so a twin reaches the page without the trigger too: what the "
                     "trigger does is the difference between the two bars.")
    else:
        lines.append("No twin reached it: the trigger, not the topic, is what reaches the page.")
    return "\n".join(lines)


def print_table(table: pd.DataFrame) -> None:
    """The command line's table for a :func:`poisoning_table`."""
    result = table.attrs.get("result")
    if result is None:
        raise ValueError("print_table needs a table made by poisoning_table")
    for line in console_lines(table, result):
        print(line)
