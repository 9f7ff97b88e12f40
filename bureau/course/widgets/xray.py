"""The memory X-ray: what one retrieval searched, what hit, what fell below the bar, how long it took.

``xray_html(trace)`` is a pure function of a :class:`~bureau.model.RetrievalTrace`; the widget
only displays it. Each hit shows the owner the card is *stored* under, so a card from outside the
searched scopes would stand out (the gateway refuses such rows before they get here).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import ipywidgets as W

from ...model import BOARD, MemoryCard, RetrievalTrace
from ._common import esc, space_label, style_widget

EMPTY = (
    '<div class="bureau-root bureau-muted">Memory X-ray: ask a question to see which spaces '
    "were searched, what hit and what missed.</div>"
)


def _owner(card: MemoryCard) -> str:
    if card.owner == BOARD:
        return f'<span class="bureau-badge board">board</span> from {esc(card.source_role)}'
    return esc(card.owner)


def _rows(cards: tuple[MemoryCard, ...], scope: str, css: str, threshold: float) -> list[str]:
    rows = []
    for c in cards:
        flag = "" if c.owner == scope else ' <b class="bureau-check fail">OUT OF SCOPE</b>'
        note = f'<span class="bureau-muted">below {threshold:.2f}</span>' if css == "below" else ""
        rows.append(
            f'<tr class="{css}" data-card-id="{esc(c.id)}"><td>{_owner(c)}{flag}</td>'
            f"<td>{(c.score or 0.0):.3f}</td><td>{esc(c.snippet(90))} {note}</td></tr>"
        )
    return rows


def xray_html(trace: RetrievalTrace | None, show_question: bool = True) -> str:
    """Render one retrieval as HTML (operator view: it may show private snippets)."""
    if trace is None:
        return EMPTY
    lat = trace.latency_by_scope()
    top = max([*lat.values(), trace.embed_ms, 0.001])
    if trace.shared_query:  # one filtered query searched every scope: one bar, honestly labelled
        names = " + ".join(space_label(s) for s in trace.searched_scopes)
        searches = [(f"search {names} (one query)", max(lat.values(), default=0.0))]
    else:
        searches = [(f"search {space_label(s)}", ms) for s, ms in lat.items()]
    bars = [("embed question", trace.embed_ms), *searches]
    bar_rows = "".join(
        f'<tr><td>{esc(name)}</td><td class="bureau-barcell"><span class="bureau-bar" '
        f'style="width:{max(2, round(170 * ms / top))}px"></span></td><td>{ms:.1f} ms</td></tr>'
        for name, ms in bars
    )
    scopes = " ".join(
        f'<span class="bureau-badge{" board" if s == BOARD else ""}">{esc(space_label(s))}</span>'
        for s in trace.searched_scopes
    )
    misses = (
        " ".join(f'<span class="bureau-badge miss">{esc(space_label(s))}</span>' for s in trace.misses)
        or '<span class="bureau-muted">none</span>'
    )
    question = (
        f'<div>Question: “{esc(trace.question)}”</div>' if show_question else ""
    )
    sections = []
    for s in trace.scopes:
        rows = _rows(s.hits, s.scope, "hit", trace.threshold) + _rows(
            s.below_threshold, s.scope, "below", trace.threshold
        )
        status = (
            f'<span class="bureau-badge known">{len(s.hits)} hit(s)</span>'
            if s.hits
            else '<span class="bureau-badge miss">miss</span>'
        )
        table = (
            '<table class="bureau-table"><tr><th>stored owner</th><th>score</th><th>snippet</th>'
            f"</tr>{''.join(rows)}</table>"
            if rows
            else '<div class="bureau-muted">(this space is empty)</div>'
        )
        sections.append(
            f'<div class="bureau-xray-scope" data-scope="{esc(s.scope)}">'
            f"<h4>{esc(space_label(s.scope))} {status} "
            f'<span class="bureau-muted">{len(s.below_threshold)} below threshold'
            f"{'' if trace.shared_query else f' · {s.latency_ms:.1f} ms'}</span></h4>{table}</div>"
        )
    return (
        f'<div class="bureau-root bureau-xray-body" data-request-id="{esc(trace.request_id)}">'
        f"<h3>🩻 Memory X-ray — {esc(trace.role)}</h3>"
        f"{question}"
        f"<div>Scopes searched: {scopes} · misses: {misses}</div>"
        f'<div>Mode <span class="bureau-badge">{esc(trace.mode)}</span> · relevance threshold '
        f"<b>{trace.threshold:.2f}</b> (cosine) · total {trace.total_ms:.1f} ms</div>"
        f'<table class="bureau-table bureau-latency">{bar_rows}</table>'
        f"{''.join(sections)}</div>"
    )


@dataclass
class XrayState:
    html: W.HTML
    trace: RetrievalTrace | None = None
    history: list[RetrievalTrace] = field(default_factory=list)

    def show(self, trace: RetrievalTrace | None) -> None:
        self.trace = trace
        if trace is not None:
            self.history.append(trace)
        self.html.value = xray_html(trace)

    def clear(self) -> None:
        self.show(None)


def make_xray(trace: RetrievalTrace | None = None) -> tuple[W.VBox, XrayState]:
    """A memory X-ray panel; call ``state.show(trace)`` to display a retrieval."""
    html = W.HTML(EMPTY)
    html.add_class("bureau-xray-html")
    state = XrayState(html=html)
    if trace is not None:
        state.show(trace)
    box = W.VBox([style_widget(), html])
    box.add_class("bureau-xray")
    return box, state
