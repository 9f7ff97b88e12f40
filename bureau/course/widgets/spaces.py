"""The spaces view: every role's private cards, locked for everyone else, and the board.

Two ways to look:

* as the bureau chief (``viewer=None``): every card of every space, each private card marked with
  who alone can read it, each board copy with its source;
* as one role (``viewer="suspect"``): built only from what that role may read
  (:meth:`Case.cards`) plus the outward counts of :meth:`Case.stage`, so other roles' cards appear
  as locked tiles whose text was never fetched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import ipywidgets as W

from ...model import BOARD, Event, MemoryCard
from ...service import Bureau, Case
from ._common import esc, safe_listener, space_label, style_widget

CHIEF = ""
"""The ``view_as`` value of the privileged operator view."""


def _card_html(c: MemoryCard, published: set[str]) -> str:
    if c.owner == BOARD:
        badge = (
            f'<span class="bureau-badge board">copy</span> from <b>{esc(c.source_role)}</b> '
            f'<span class="bureau-muted">(source card {esc(c.source_id)})</span>'
        )
    else:
        badge = f'<span class="bureau-badge lock">🔒 only {esc(c.owner)}</span>'
        if c.id in published:
            badge += '<span class="bureau-badge board">📌 copied to board</span>'
    return (
        f'<div class="bureau-card" data-card-id="{esc(c.id)}" data-owner="{esc(c.owner)}">'
        f'{badge} <span class="bureau-muted">{esc(c.topic)} · {esc(c.kind)}</span>'
        f"<div>{esc(c.content)}</div></div>"
    )


def _locked_html(owner: str, n: int) -> str:
    tiles = "".join(
        f'<div class="bureau-card locked" data-owner="{esc(owner)}">🔒 private to '
        f"{esc(owner)}</div>"
        for _ in range(min(n, 12))
    )
    more = f'<div class="bureau-muted">… and {n - 12} more</div>' if n > 12 else ""
    return tiles + more


def _column(space: str, title: str, body: str, n: int) -> str:
    css = "bureau-space board" if space == BOARD else "bureau-space"
    return (
        f'<div class="{css}" data-space="{esc(space)}"><h4>{esc(title)} '
        f'<span class="bureau-badge">{n}</span></h4>'
        f"{body or '<div class=bureau-muted>(empty)</div>'}</div>"
    )


def spaces_html(case: Case, viewer: str | None = None) -> str:
    """Render the spaces of ``case`` as the chief (``viewer=None``) or as one role."""
    titles = {r.name: r.title for r in case.scenario.roles}
    cols = []
    if not viewer:
        spaces = case.spaces()
        published = {c.source_id for c in spaces.get(BOARD, []) if c.source_id}
        for role in case.role_names:
            cards = spaces.get(role, [])
            body = "".join(_card_html(c, published) for c in cards)
            cols.append(_column(role, f"{titles.get(role, role)} ({role})", body, len(cards)))
        board = spaces.get(BOARD, [])
        heading = "Everything, as the bureau chief sees it"
    else:
        visible = case.cards(viewer)  # the role's own read path: own cards + board
        counts = case.stage()["private_counts"]  # outward: numbers only
        own = [c for c in visible if c.owner == viewer]
        board = [c for c in visible if c.owner == BOARD]
        published = {c.source_id for c in board if c.source_id}
        for role in case.role_names:
            if role == viewer:
                body = "".join(_card_html(c, published) for c in own)
                n = len(own)
            else:
                n = counts.get(role, 0)
                body = _locked_html(role, n)
            cols.append(_column(role, f"{titles.get(role, role)} ({role})", body, n))
        heading = f"What {viewer} can read"
    board_body = "".join(_card_html(c, set()) for c in board)
    cols.append(_column(BOARD, f"📌 {space_label(BOARD)}", board_body, len(board)))
    return (
        f'<div class="bureau-root bureau-spaces-body" data-viewer="{esc(viewer or "chief")}">'
        f"<h3>🗂 Memory spaces — {esc(heading)}</h3>"
        f'<div class="bureau-spaces-grid">{"".join(cols)}</div></div>'
    )


@dataclass
class SpacesState:
    case: Case | None
    html: W.HTML
    view_as: W.Dropdown
    refreshes: int = 0
    _quiet: bool = field(default=False, repr=False)
    _unsubscribe: Callable[[], None] | None = field(default=None, repr=False)

    @property
    def viewer(self) -> str | None:
        return self.view_as.value or None

    def refresh(self) -> None:
        if self.case is None:
            self.html.value = '<div class="bureau-muted">No case open.</div>'
            return
        self.html.value = spaces_html(self.case, self.viewer)
        self.refreshes += 1

    def set_case(self, case: Case | None) -> None:
        self.case = case
        options = [("the bureau chief (everything)", CHIEF)]
        if case is not None:
            options += [(f"{r.title} ({r.name})", r.name) for r in case.scenario.roles]
        self._quiet = True
        try:
            self.view_as.options = options
            self.view_as.value = CHIEF
        finally:
            self._quiet = False
        self.refresh()

    def _on_view_as(self, _change: object) -> None:
        if not self._quiet:
            self.refresh()

    def on_event(self, event: Event) -> None:
        if self.case is not None and event.case_id == self.case.id:
            self.refresh()

    def close(self) -> None:
        if self._unsubscribe:
            self._unsubscribe()
            self._unsubscribe = None


def make_spaces(
    case: Case | None,
    viewer: str | None = None,
    live: bool = True,
    bureau: Bureau | None = None,
) -> tuple[W.VBox, SpacesState]:
    """A spaces view of ``case``; with ``live`` it refreshes on every event of its case.

    ``viewer`` picks the initial "view as" (``None``: the bureau chief). ``bureau`` is only needed
    when ``case`` is ``None`` and a case will be set later with ``state.set_case``.
    """
    html = W.HTML()
    html.add_class("bureau-spaces-html")
    view_as = W.Dropdown(description="View as", options=[("", CHIEF)], value=CHIEF)
    view_as.add_class("bureau-view-as")
    state = SpacesState(case=None, html=html, view_as=view_as)
    state.set_case(case)
    view_as.observe(state._on_view_as, names="value")
    if viewer:
        view_as.value = viewer
    bureau = bureau or (case.bureau if case is not None else None)
    if live and bureau is not None:
        state._unsubscribe = bureau.subscribe(safe_listener(state.on_event))
    box = W.VBox([style_widget(), view_as, html])
    box.add_class("bureau-spaces")
    return box, state
