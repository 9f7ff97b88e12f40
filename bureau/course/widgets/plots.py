"""Figures for the lessons: labelled axes and a title that states what the data shows.

Each function returns a :class:`bureau.figures.CourseFigure` built without pyplot (it renders itself as
PNG), so a notebook shows it exactly once, as the cell's value, and tests can inspect it without a
display.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from matplotlib.figure import Figure

from ...embedding import Encoder
from ...figures import (
    ABSTRACTED,
    LEAKED,
    PRIVATE,
    PROTECTED,
    SHARED,
    CourseFigure,
    integer_ticks,
    new_figure,
    share_label,
)
from ...model import BOARD, RetrievalTrace
from ...service import Case

BLUE, GREY, GREEN, RED, AMBER = SHARED, PRIVATE, PROTECTED, LEAKED, ABSTRACTED
"""The course palette (:mod:`bureau.figures`) under the names these plots used before it."""


LessonFigure = CourseFigure
"""The course's one figure type (:mod:`bureau.figures`), under the name this module had for it."""


def _fig(width: float = 7.0, height: float = 3.2) -> tuple[Figure, Any]:
    fig = new_figure(width, height)
    return fig, fig.add_subplot()


def cards_per_space(case: Case) -> Figure:
    """How many cards each private space and the board hold right now."""
    spaces = case.spaces()
    names = [*case.role_names, BOARD]
    counts = [len(spaces.get(n, [])) for n in names]
    fig, ax = _fig()
    ax.bar(names, counts, color=[GREY] * len(case.role_names) + [BLUE])
    ax.set_xlabel("memory space")
    ax.set_ylabel("cards")
    private = sum(counts[:-1])
    ax.set_title(
        f"{private} private cards in {len(case.role_names)} spaces; the board holds {counts[-1]}"
    )
    ax.yaxis.get_major_locator().set_params(integer=True)
    return fig


def disclosures(counts: Sequence[tuple[str, int, int]]) -> Figure:
    """Lesson 06's injection run: for each memory, how many injections disclosed something, of
    how many tried (``(memory, disclosed, tried)``); the bars are counts, labelled ``k/n``."""
    fig, ax = _fig(6.0, 2.6)
    names = [name for name, _, _ in counts]
    shown = [k for _, k, _ in counts]
    bars = ax.barh(names, shown, color=[PROTECTED if k == 0 else LEAKED for k in shown])
    ax.bar_label(bars, labels=[share_label(k, n) for _, k, n in counts], padding=3)
    ax.set_xlim(0, max([n for _, _, n in counts] + [1]) * 1.15)
    integer_ticks(ax.xaxis)
    ax.set_xlabel("injections that disclosed a card the attacker may not read")
    ax.set_ylabel("memory")
    ax.invert_yaxis()
    worst = max(counts, key=lambda c: c[1])
    best = min(counts, key=lambda c: c[1])
    ax.set_title(f"{best[0]}: {share_label(best[1], best[2])} disclosed; "
                 f"{worst[0]}: {share_label(worst[1], worst[2])}")
    return fig


def best_scores(case: Case, question: str) -> tuple[Figure, list[RetrievalTrace]]:
    """Interrogate every role (search only) and plot each scope's best score against the bar."""
    traces = [case.retrieve(role, question) for role in case.role_names]
    own = [max([c.score or 0 for c in (*t.scopes[0].hits, *t.scopes[0].below_threshold)],
               default=0.0) for t in traces]
    board = [max([c.score or 0 for c in (*t.scopes[1].hits, *t.scopes[1].below_threshold)],
                 default=0.0) for t in traces]
    threshold = traces[0].threshold if traces else 0.0
    fig, ax = _fig()
    x = range(len(traces))
    ax.bar([i - 0.2 for i in x], own, width=0.4, label="own private space", color=GREY)
    ax.bar([i + 0.2 for i in x], board, width=0.4, label="board", color=BLUE)
    ax.axhline(threshold, color=RED, linestyle="--", label=f"threshold {threshold:.2f}")
    ax.set_xticks(list(x), case.role_names)
    ax.set_xlabel("role asked")
    ax.set_ylabel("best cosine score in scope")
    ax.set_ylim(min(0.0, *own, *board) - 0.02, 1.0)
    fig.legend(loc="outside lower center", ncols=3, fontsize=8)
    knowers = [t.role for t in traces if t.hits]
    if not knowers:
        title = "No role finds a card above the threshold"
    elif len(knowers) == len(traces):
        title = f"All {len(traces)} roles find a card above the threshold"
    else:
        title = f"Only {' and '.join(knowers)} find(s) a card above the threshold"
    ax.set_title(title, fontsize=11)
    return fig, traces


def latency_by_scope(traces: Sequence[RetrievalTrace]) -> Figure:
    """Median time per step of a retrieval: embedding the question, then the search.

    By default one filtered query covers the role's own space and the board, so it is one step;
    with ``query_per_scope`` each scope's query is its own step.
    """
    steps: dict[str, list[float]] = {"embed question": [t.embed_ms for t in traces]}
    if all(t.shared_query for t in traces):
        steps["search own space + board\n(one SQL statement)"] = [
            t.scopes[0].latency_ms for t in traces]
    else:
        steps["search own space"] = [t.scopes[0].latency_ms for t in traces]
        steps["search board"] = [t.scopes[1].latency_ms for t in traces]
    medians = [statistics.median(v) for v in steps.values()]
    fig, ax = _fig()
    ax.barh(list(steps), medians, color=[AMBER, BLUE, GREY][: len(steps)])
    for i, values in enumerate(steps.values()):
        ax.plot(values, [i] * len(values), "k.", alpha=0.5)
    ax.set_xlabel(f"milliseconds (median bar, dots = {len(traces)} runs)")
    ax.set_ylabel("step")
    searches = [v for k, vs in steps.items() if k != "embed question" for v in vs]
    ax.set_title(
        f"A whole retrieval takes ~{statistics.median(t.total_ms for t in traces):.0f} ms; "
        f"its search ~{statistics.median(searches):.0f} ms"
    )
    return fig


def board_copies(steps: Sequence[tuple[str, int]], pending: Sequence[int] | None = None) -> Figure:
    """Board copies (and pending cleanups) after each step of a publish story."""
    labels = [s for s, _ in steps]
    copies = [n for _, n in steps]
    fig, ax = _fig()
    ax.plot(labels, copies, "o-", color=BLUE, label="board copies")
    if pending is not None:
        ax.plot(labels, pending, "s--", color=RED, label="pending cleanup tasks")
    ax.set_xlabel("step")
    ax.set_ylabel("count")
    ax.set_ylim(-0.2, max([*copies, *(pending or []), 1]) + 0.5)
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.legend(fontsize=8)
    ax.tick_params(axis="x", labelsize=8)
    worst = max(pending or [0])
    if worst and not (pending or [0])[-1]:
        title = (f"The crash left {worst} stray copy to clean up; recover() removed it; "
                 f"the board ends with exactly {copies[-1]}")
    else:
        title = f"The board ends with {copies[-1]} copy(ies)"
    ax.set_title(title, fontsize=10)
    return fig


def similarities(encoder: Encoder, question: str, cards: Sequence[tuple[str, str]],
                 threshold: float) -> tuple[Figure, list[float]]:
    """The cosine of ``question`` with each card text (``(label, text)``), against the threshold.

    Lesson 02's primer: the same arithmetic a search does, on a handful of sentences. Texts are
    embedded with ``cache=False``, as every question is (nothing here reads or fills the shared
    cache). Returns the figure and the scores, in the order of ``cards``.
    """
    vectors = encoder.embed([question, *(text for _, text in cards)], cache=False)
    scores = [float(vectors[0] @ v) for v in vectors[1:]]
    order = sorted(range(len(cards)), key=lambda i: scores[i])
    labels = [cards[i][0] for i in order]
    values = [scores[i] for i in order]
    fig, ax = _fig(7.0, 0.4 * len(cards) + 1.4)
    ax.barh(labels, values, color=[BLUE if v >= threshold else GREY for v in values])
    ax.axvline(threshold, color=RED, linestyle="--", label=f"relevance threshold {threshold:.2f}")
    ax.set_xlabel("cosine similarity with the question")
    ax.set_ylabel("card")
    ax.set_xlim(min(0.0, *values) - 0.02, 1.0)
    ax.legend(fontsize=8, loc="lower right")
    ax.tick_params(axis="y", labelsize=8)
    above = [lab for lab, v in zip(labels, values, strict=True) if v >= threshold]
    if len(above) == 1 and len(values) > 1:
        title = (f"Only '{above[0]}' clears the threshold ({values[-1]:.2f}; "
                 f"the next best {values[-2]:.2f})")
    else:
        title = f"{len(above)} of {len(values)} cards clear the threshold {threshold:.2f}"
    ax.set_title(title, fontsize=10)
    return fig, scores
