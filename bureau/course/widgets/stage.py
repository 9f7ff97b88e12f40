"""The stage: what a classroom projector may show while the chief operates the case.

Built from the outward read paths, :meth:`Case.stage` and :meth:`Case.events`: private card
counts per role, the board, the last retrieval's summary and a ticker of recent events. It
never fetches a question or an answer, so it cannot show one.

One exception, and what it may show (issue 49): when the case's scenario has a case file, the
stage shows the case's goal and question (scenario text, public like its title) and the score's
observer numbers, :meth:`bureau.game.Score.numbers` (status, moves used, rules kept of all). The
scorer reads the case's cards to decide (the answer must be in the cited evidence); only those
numbers leave it, never a card's text, a rule, or the answer.

It stays current two ways: in-process it subscribes to the bureau's events; for changes made by
another process (the stage served by Voilà while the console runs in JupyterLab) it polls
``case.events(since)`` on a background thread every ``poll_seconds``.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import ipywidgets as W

from ...errors import BureauError
from ...game import score
from ...model import BOARD, Event
from ...service import Bureau, Case
from ._common import error_html, esc, safe_listener, space_label, style_widget
from .case_file import stage_case_html

log = logging.getLogger("bureau.course.widgets.stage")

TICKER_SIZE = 8
_TICKER_TEXT = {
    "case.created": "case opened",
    "case.seeded": "opening memories written",
    "case.reset": "case reset",
    "memory.created": "opening memory",
    "memory.whispered": "whispered to",
    "retrieval.completed": "searched by",
    "answer.completed": "answered by",
    "memory.publishing": "publishing from",
    "memory.published": "published from",
    "memory.publish_failed": "publish failed",
    "memory.reconciled": "publish reconciled",
    "publish.taken_over": "publish taken over",
    "cleanup.scheduled": "cleanup scheduled",
    "cleanup.done": "cleanup done",
}


def latest_case_id(bureau: Bureau) -> str | None:
    """The most recently created case (ties within a second: the one with the latest event)."""
    cases = bureau.cases()
    if not cases:
        return None
    newest = max(c.created_at for c in cases)
    tied = [c.case_id for c in cases if c.created_at == newest]
    if len(tied) == 1:
        return tied[0]

    def last_seq(case_id: str) -> int:
        event = bureau.last_event(case_id)
        return event.seq if event else 0

    return max(tied, key=last_seq)


def _who(event: Event) -> str:
    p = event.payload
    who = p.get("role") or p.get("source_role") or p.get("owner")
    return str(who) if isinstance(who, str) else ""


def _ticker_line(event: Event) -> str:
    """Event type and role only: no topics, ids or anything a person typed."""
    text = _TICKER_TEXT.get(event.type, event.type)
    who = _who(event)
    if event.type == "answer.completed":
        known = "known" if event.payload.get("known") else "unknown"
        text += f" {who} ({known})"
    elif who:
        text += f" {who}"
    time = event.at[11:19] if len(event.at) >= 19 else ""
    return f'<li data-seq="{event.seq}"><span class="bureau-muted">{esc(time)}</span> {esc(text)}</li>'


def _retrieval_html(last: dict[str, Any] | None) -> str:
    if not last:
        return '<div class="bureau-muted">No question asked yet.</div>'
    hits = last.get("hits_by_scope", {})
    lat = {k: float(v) for k, v in (last.get("latency_ms") or {}).items()}
    scopes = last.get("searched_scopes", [])
    top = max([lat.get(s, 0.0) for s in scopes] + [0.001])
    miss = ' <span class="bureau-badge miss">miss</span>'
    rows = "".join(
        f'<tr data-scope="{esc(s)}"><td>{esc(space_label(s))}</td>'
        f"<td>{int(hits.get(s, 0))} hit(s){miss if s in last.get('misses', []) else ''}"
        f'</td><td class="bureau-barcell"><span class="bureau-bar" style="width:'
        f'{max(2, round(170 * lat.get(s, 0.0) / top))}px"></span></td>'
        f"<td>{lat.get(s, 0.0):.1f} ms</td></tr>"
        for s in scopes
    )
    return (
        f"<div><b>{esc(last.get('role', '?'))}</b> searched "
        f"{' + '.join(esc(space_label(s)) for s in scopes)} · mode "
        f'<span class="bureau-badge">{esc(last.get("mode", "?"))}</span></div>'
        f'<table class="bureau-table">{rows}</table>'
    )


def stage_game(case: Case) -> dict[str, Any] | None:
    """What the stage shows of ``case``'s case file: its goal and question, and the score's
    :meth:`~bureau.game.Score.numbers` (None: the scenario has no case file)."""
    cf = case.scenario.case_file
    if cf is None:
        return None
    return {"goal": cf.goal, "question": cf.question, "numbers": score(case).numbers()}


def stage_html(snapshot: dict[str, Any], events: Iterable[Event] = (),
               game: dict[str, Any] | None = None) -> str:
    """Render the outward snapshot of :meth:`Case.stage` plus recent events, and ``game``
    (:func:`stage_game`) when the case has a case file."""
    counts = snapshot.get("private_counts", {})
    count_tiles = "".join(
        f'<div class="bureau-space" data-role="{esc(role)}"><div>{esc(role)}</div>'
        f'<div class="bureau-count">🔒 {int(n)}</div>'
        f'<div class="bureau-muted">private card(s)</div></div>'
        for role, n in counts.items()
    )
    board = snapshot.get("board", [])
    board_cards = "".join(
        f'<div class="bureau-card" data-card-id="{esc(c["id"])}">'
        f'<span class="bureau-badge board">from {esc(c.get("source_role"))}</span>'
        f'<span class="bureau-muted">{esc(c.get("topic", ""))}</span>'
        f"<div>{esc(c['content'])}</div></div>"
        for c in board
    ) or '<div class="bureau-muted">(nothing published yet)</div>'
    ticker = "".join(_ticker_line(e) for e in reversed(list(events)))
    mediation = snapshot.get("mediation") or {}
    mediation_line = (
        '<div class="bureau-stage-mediation bureau-muted">🛡️ mediation decisions: '
        + " · ".join(f"{esc(action)} {int(n)}" for action, n in sorted(mediation.items()))
        + "</div>"
    ) if mediation else ""
    case_line = (stage_case_html(game["goal"], game["question"], game["numbers"])
                 if game else "")
    return (
        f'<div class="bureau-root bureau-stage-body" data-case-id="{esc(snapshot.get("case_id"))}">'
        f"<h3>🎭 {esc(snapshot.get('title', ''))} "
        f'<span class="bureau-muted">case {esc(snapshot.get("case_id", ""))}</span></h3>'
        f"{case_line}"
        f'<div class="bureau-stage-grid">{count_tiles}</div>{mediation_line}'
        f"<h4>📌 {esc(space_label(BOARD))} ({len(board)})</h4>"
        f'<div class="bureau-stage-board">{board_cards}</div>'
        f'<h4>Last retrieval</h4><div class="bureau-stage-retrieval">'
        f"{_retrieval_html(snapshot.get('last_retrieval'))}</div>"
        f'<h4>Recent events</h4><ul class="bureau-stage-ticker">{ticker}</ul></div>'
    )


WAITING = (
    '<div class="bureau-root bureau-stage-body bureau-muted">Waiting for a case… '
    "(open one in the console; this view picks it up by itself)</div>"
)


@dataclass
class StageState:
    bureau: Bureau
    html: W.HTML
    case: Case | None = None
    follow: bool = False
    """Switch to each newly created case (when no particular case was asked for)."""
    last_seq: int = 0
    refreshes: int = 0
    recent: deque[Event] = field(default_factory=lambda: deque(maxlen=TICKER_SIZE))
    snapshot: dict[str, Any] | None = None
    game: dict[str, Any] | None = None
    """What the stage last showed of the case file (:func:`stage_game`)."""
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)
    _unsubscribe: Callable[[], None] | None = field(default=None, repr=False)

    @property
    def case_id(self) -> str | None:
        return self.case.id if self.case is not None else None

    def set_case(self, case: Case | str | None) -> None:
        with self._lock:
            if isinstance(case, str):
                case = self.bureau.case(case)
            self.case = case
            self.last_seq = 0
            self.recent.clear()
            self.update(force=True)

    def update(self, force: bool = False) -> bool:
        """Read new events since the last one seen; re-render if there were any."""
        with self._lock:
            if self.case is None:
                self.html.value = WAITING
                return False
            new = self.case.events(since=self.last_seq)
            if not new and not force:
                return False
            self.recent.extend(new)
            if new:
                self.last_seq = new[-1].seq
            try:
                self.snapshot = self.case.stage()
                self.game = stage_game(self.case)
            except BureauError as exc:  # e.g. the case was deleted meanwhile
                self.html.value = error_html(exc)
                return True
            self.html.value = stage_html(self.snapshot, self.recent, self.game)
            self.refreshes += 1
            return True

    def poll_once(self) -> bool:
        """One polling step: follow a newer case if asked to, then pick up new events."""
        if self.follow:
            latest = latest_case_id(self.bureau)
            if latest and latest != self.case_id:
                self.set_case(latest)
                return True
        return self.update()

    def on_event(self, event: Event) -> None:
        if self.case is not None and event.case_id == self.case.id:
            if event.seq > self.last_seq:
                self.update()
        elif self.follow and event.type in ("case.created", "case.seeded"):
            self.set_case(event.case_id)  # a new case opened in this process: show it

    def start_polling(self, seconds: float = 1.0) -> None:
        """Poll for changes made by other processes every ``seconds`` (a daemon thread)."""
        if self._thread is not None:
            return
        self._stop.clear()

        def loop() -> None:
            while not self._stop.wait(seconds):
                try:
                    self.poll_once()
                except Exception:  # noqa: BLE001 - keep the projector alive, log the cause
                    log.exception("stage poll failed")

        self._thread = threading.Thread(target=loop, name="bureau-stage-poll", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def close(self) -> None:
        self.stop()
        if self._unsubscribe:
            self._unsubscribe()
            self._unsubscribe = None


def make_stage(
    bureau: Bureau,
    case: Case | str | None = None,
    poll_seconds: float | None = None,
    follow: bool | None = None,
) -> tuple[W.VBox, StageState]:
    """The projector view of ``case`` (a Case or a case id; default: the most recent case).

    ``poll_seconds`` starts a background poller for other processes' changes (Voilà);
    ``follow`` (default: on when no case is given) switches to each newly created case.
    """
    html = W.HTML()
    html.add_class("bureau-stage-html")
    state = StageState(bureau=bureau, html=html, follow=case is None if follow is None else follow)
    if case is None:
        case = latest_case_id(bureau)
    try:
        state.set_case(case)
    except BureauError as exc:  # e.g. BUREAU_CASE names a case that does not exist
        state.case = None
        html.value = error_html(exc)
    state._unsubscribe = bureau.subscribe(safe_listener(state.on_event))
    refresh = W.Button(description="Refresh", icon="refresh", tooltip="Re-read the stage now")
    refresh.add_class("bureau-refresh")
    refresh.on_click(lambda _b: state.update(force=True))
    if poll_seconds:
        state.start_polling(poll_seconds)
    box = W.VBox([style_widget(), html, refresh])
    box.add_class("bureau-stage")
    return box, state
