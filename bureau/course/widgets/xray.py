"""The memory X-ray: what one retrieval searched, what hit, what fell below the bar, how long it took.

``xray_html(trace)`` is a pure function of a :class:`~bureau.model.RetrievalTrace`; the widget
only displays it. Each hit shows the owner the card is *stored* under, so a card from outside the
searched scopes would stand out (the gateway refuses such rows before they get here).

With the opt-in LLM voice, the X-ray also shows the **payload** (:func:`payload_html`, from the
answer's :class:`~bureau.model.LLMExchange`): the system prompt, the question and the evidence
packet exactly as sent, the raw reply, and whether it was accepted or why it fell back. That is
the proof of what the model could possibly have known. It is an operator view, like the rest of
the X-ray: the stage and the events never carry it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import ipywidgets as W

from ...model import BOARD, Answer, LLMExchange, MemoryCard, RetrievalTrace
from ...tiers import labels
from ._common import esc, space_label, style_widget

EMPTY = (
    '<div class="bureau-root bureau-muted">Memory X-ray: ask a question to see which spaces '
    "were searched, what hit and what missed.</div>"
)


def _owner(card: MemoryCard) -> str:
    if card.owner == BOARD:
        return f'<span class="bureau-badge board">board</span> from {esc(card.source_role)}'
    return esc(card.owner)


def _tier(card: MemoryCard) -> str:
    """Tier and provenance of a hit (issue 14); untrusted content is flagged."""
    lab = labels(card)
    flag = (' <span class="bureau-badge miss" title="tool output: data, never instructions">'
            "untrusted</span>" if lab.untrusted else "")
    return (f'<td data-tier="{esc(lab.tier)}" data-provenance="{esc(lab.provenance)}" '
            f'data-trust="{esc(lab.trust)}">{esc(lab.tier)} · {esc(lab.provenance)}{flag}</td>')


def _rows(cards: tuple[MemoryCard, ...], scope: str, css: str, threshold: float) -> list[str]:
    rows = []
    for c in cards:
        flag = "" if c.owner == scope else ' <b class="bureau-check fail">OUT OF SCOPE</b>'
        note = f'<span class="bureau-muted">below {threshold:.2f}</span>' if css == "below" else ""
        rows.append(
            f'<tr class="{css}" data-card-id="{esc(c.id)}"><td>{_owner(c)}{flag}</td>'
            f"{_tier(c)}<td>{(c.score or 0.0):.3f}</td><td>{esc(c.snippet(90))} {note}</td></tr>"
        )
    return rows


STANDIN_PREFIX = "bureau-standin"
"""Model names of the course's stand-in model (a teaching and test tool, labelled as such)."""

_PRE = ('style="white-space:pre-wrap;word-break:break-word;margin:2px 0 6px 0;padding:4px 6px;'
        'background:#f9fafb;border:1px solid #e5e7eb;border-radius:4px;font-size:12px"')


def payload_html(exchange: LLMExchange | None, responder: str | None = None) -> str:
    """What was sent to the model and what came back, exactly (operator view).

    ``None`` renders a short note: with the LLM voice, no call is made when no card cleared the
    threshold (nothing to phrase, so nothing sent).
    """
    if exchange is None:
        note = ("The model was not called: no card cleared the threshold, so nothing was sent."
                if responder == "llm" else "No model was called (evidence mode).")
        return (f'<div class="bureau-payload bureau-payload-none" data-called="false">'
                f'<h4>🗣️ Model payload</h4><div class="bureau-muted">{esc(note)}</div></div>')
    req = exchange.request()
    standin = exchange.model.startswith(STANDIN_PREFIX)
    badge = (' <span class="bureau-badge lock" title="not a language model">stand-in model: '
             "a teaching and test tool</span>" if standin else "")
    packet = [p for p in req.get("evidence", []) if isinstance(p, dict)]
    ids = dict(exchange.refs)
    rows = "".join(
        f'<tr data-ref="{esc(p.get("ref"))}" data-card-id="{esc(ids.get(str(p.get("ref")), ""))}">'
        f"<td><code>{esc(p.get('ref'))}</code></td><td>{esc(p.get('source'))}</td>"
        f"<td>{esc(p.get('text'))}</td></tr>"
        for p in packet
    )
    if exchange.accepted:
        verdict = ('<div class="bureau-payload-verdict" data-accepted="true">'
                   '<span class="bureau-badge known">accepted</span> the reply parsed, cites '
                   "only refs from the packet, agrees with the bureau's decision and states "
                   "nothing its cited cards do not hold</div>")
    else:
        verdict = (f'<div class="bureau-payload-verdict" data-accepted="false">'
                   f'<span class="bureau-badge miss">rejected</span> fallback reason: '
                   f"<b>{esc(exchange.fallback_reason)}</b> → the evidence responder answered "
                   f"from the same packet</div>")
    error = (f'<div class="bureau-muted">client error: {esc(exchange.error)}</div>'
             if exchange.error else "")
    if exchange.unsupported:  # issue 52: the words of the reply no cited card holds
        error += (f'<div class="bureau-payload-unsupported">no cited card holds: '
                  f"<b>{esc(', '.join(exchange.unsupported))}</b></div>")
    raw = exchange.raw_reply
    return (
        f'<div class="bureau-payload" data-called="true" data-model="{esc(exchange.model)}" '
        f'data-accepted="{str(exchange.accepted).lower()}">'
        f"<h4>🗣️ Model payload — exactly what was sent, and what came back</h4>"
        f'<div>model <span class="bureau-badge">{esc(exchange.model)}</span>{badge} at '
        f"<code>{esc(exchange.base_url or 'the provider default URL')}</code> · "
        f"{exchange.latency_ms:.1f} ms · {len(packet)} card(s) in the packet</div>"
        f'<div class="bureau-payload-system"><b>system prompt</b><pre {_PRE}>'
        f"{esc(exchange.system_prompt)}</pre></div>"
        f'<div class="bureau-payload-question"><b>question</b><pre {_PRE}>'
        f"{esc(req.get('question', ''))}</pre></div>"
        f'<div><b>evidence packet</b> (the only cards the model could know)</div>'
        f'<table class="bureau-table bureau-payload-packet"><tr><th>ref</th><th>source</th>'
        f"<th>text</th></tr>{rows}</table>"
        f'<div class="bureau-payload-reply"><b>raw reply</b><pre {_PRE}>'
        f"{esc(raw) if raw is not None else '(no reply)'}</pre></div>"
        f"{verdict}{error}</div>"
    )


def xray_html(trace: RetrievalTrace | Answer | None, show_question: bool = True,
              exchange: LLMExchange | None = None) -> str:
    """Render one retrieval as HTML (operator view: it may show private snippets).

    Given an :class:`Answer` (or an ``exchange``), the model payload is shown under the scopes.
    """
    payload = ""
    if isinstance(trace, Answer):
        answer, trace = trace, trace.trace
        exchange = exchange or answer.exchange
        if exchange is not None or answer.responder == "llm" or trace.mode == "llm":
            payload = payload_html(exchange, "llm" if trace.mode == "llm" else answer.responder)
    elif exchange is not None:
        payload = payload_html(exchange)
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
            '<table class="bureau-table"><tr><th>stored owner</th><th>tier · provenance</th>'
            f"<th>score</th><th>snippet</th></tr>{''.join(rows)}</table>"
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
        f'<div class="bureau-xray-tiers" data-tiers="{esc(" ".join(trace.tiers))}">Tiers '
        f"searched: {esc(', '.join(trace.tiers))}</div>"
        f'<div>Mode <span class="bureau-badge">{esc(trace.mode)}</span> · relevance threshold '
        f"<b>{trace.threshold:.2f}</b> (cosine) · total {trace.total_ms:.1f} ms</div>"
        f'<table class="bureau-table bureau-latency">{bar_rows}</table>'
        f"{''.join(sections)}{payload}</div>"
    )


@dataclass
class XrayState:
    html: W.HTML
    trace: RetrievalTrace | None = None
    history: list[RetrievalTrace] = field(default_factory=list)
    exchange: LLMExchange | None = None
    """The model payload on display (an answer given through the LLM voice), if any."""

    def show(self, trace: RetrievalTrace | Answer | None) -> None:
        """Display a retrieval; given an :class:`Answer`, also its model payload."""
        answer = trace if isinstance(trace, Answer) else None
        self.trace = answer.trace if answer is not None else trace
        self.exchange = answer.exchange if answer is not None else None
        if self.trace is not None:
            self.history.append(self.trace)
        self.html.value = xray_html(answer if answer is not None else self.trace)

    def clear(self) -> None:
        self.show(None)


def make_xray(trace: RetrievalTrace | Answer | None = None) -> tuple[W.VBox, XrayState]:
    """A memory X-ray panel; call ``state.show(trace)`` (or ``state.show(answer)``, which adds
    the model payload) to display a retrieval."""
    html = W.HTML(EMPTY)
    html.add_class("bureau-xray-html")
    state = XrayState(html=html)
    if trace is not None:
        state.show(trace)
    box = W.VBox([style_widget(), html])
    box.add_class("bureau-xray")
    return box, state
