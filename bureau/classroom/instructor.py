"""The instructor's view of the room: one row per learner, numbers only.

Read with the classroom's administrative account from each learner's tenant: their progress
record (:mod:`bureau.classroom.progress`: checks passed, quiz answers right, per lesson) and the
outward stage counts of their current case (the one with the latest event; cards per role, board copies, events), the same
counts the projector's stage shows. Never a card's text, a question, an answer, a prediction or
a quiz choice: the queries below select ids, kinds, flags and counts, and nothing else.

Everything read here was written by the learner (their account has every right on their own
database), so it is treated as hostile input: strings are length-capped and escaped, counts are
integers, and one tenant's damage shows as that learner's row's error, never as the page's.
"""

from __future__ import annotations

import html
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from ..ledger.rows import store_id_for
from ..model import BOARD
from ..settings import Settings
from .connection import tenant_name
from .progress import rows_in as progress_rows
from .tenants import Roster

CARDS_TABLE = Settings().collection
"""PowerMem's card table in each tenant (the default collection; lessons do not change it)."""
LESSONS = [f"{n:02d}" for n in range(9)]


def _cap(value: object, n: int = 64) -> str:
    text = str(value)
    return text if len(text) <= n else text[: n - 1] + "…"


def _progress(attempts: list[tuple[Any, ...]]) -> dict[str, Any]:
    """Checks passed (distinct), quiz right/answered (latest answer per question), predictions
    written (distinct prompts: that a learner wrote one, never what), lessons with at least one
    passed check. ``attempts``: (lesson, kind, item, ok, detail, at); the detail
    (a quiz choice, a prediction) is never looked at."""
    passed: set[tuple[str, str]] = set()
    quiz: dict[str, bool] = {}
    predicted: set[str] = set()
    for lesson, kind, item, ok, _detail, _at in attempts:
        if kind == "check" and ok == 1:
            passed.add((str(lesson), str(item)))
        elif kind == "quiz":
            quiz[str(item)] = ok == 1
        elif kind == "prediction":
            predicted.add(str(item))
    return {
        "lessons": sorted({lesson for lesson, _ in passed}),
        "checks_passed": len(passed),
        "quiz_right": sum(quiz.values()),
        "quiz_answered": len(quiz),
        "predictions": len(predicted),
    }


def _stage(cur: Any, database: str) -> dict[str, Any]:
    """Outward counts of the learner's most recent case (None fields: no case yet)."""
    cur.execute(f"SHOW TABLES FROM `{database}` LIKE 'bureau_cases'")
    if not cur.fetchall():
        return {"case": None, "roles": {}, "board": 0, "events": 0}
    # The current case: the one with the latest event (what the learner touched last; the
    # stage follows it the same way), else the newest created.
    cur.execute(f"SELECT c.case_id, c.token, c.epoch FROM `{database}`.bureau_cases c "
                f"LEFT JOIN (SELECT case_id, MAX(seq) AS last FROM `{database}`.bureau_events "
                "GROUP BY case_id) e ON e.case_id = c.case_id "
                "ORDER BY e.last IS NULL, e.last DESC, c.created_at DESC, c.case_id DESC LIMIT 1")
    row = cur.fetchone()
    if row is None:
        return {"case": None, "roles": {}, "board": 0, "events": 0}
    case_id, token, epoch = row
    counts: Counter[str] = Counter()
    cur.execute(f"SHOW TABLES FROM `{database}` LIKE %s", (CARDS_TABLE,))
    if cur.fetchall():
        cur.execute(f"SELECT agent_id, COUNT(*) FROM `{database}`.`{CARDS_TABLE}` "
                    "WHERE user_id = %s GROUP BY agent_id",
                    (store_id_for(str(case_id), token, int(epoch or 0)),))
        counts.update({str(a): int(n) for a, n in cur.fetchall()})
    cur.execute(f"SELECT COUNT(*) FROM `{database}`.bureau_events WHERE case_id = %s",
                (case_id,))
    events = int(cur.fetchone()[0])
    roles = {a: n for a, n in sorted(counts.items()) if a != BOARD and ":" not in a}
    return {"case": _cap(case_id), "roles": roles, "board": counts.get(BOARD, 0),
            "events": events}


def room(directory: str | Path) -> list[dict[str, Any]]:
    """One dict per learner: name, progress figures, stage counts (or ``error``)."""
    roster = Roster.load(directory)
    out = []
    with roster.admin() as cur:
        for learner in sorted(roster.learners):
            database = tenant_name(learner)
            row: dict[str, Any] = {"learner": learner}
            try:
                row.update(_progress(progress_rows(cur, database)))
                row.update(_stage(cur, database))
            except Exception as exc:  # noqa: BLE001 - one damaged tenant is one row's problem
                row["error"] = _cap(type(exc).__name__)
            out.append(row)
    return out


STYLE = (".bureau-instructor-table{border-collapse:collapse}"
         ".bureau-instructor-table th,.bureau-instructor-table td{padding:4px 12px;"
         "border-bottom:1px solid #ddd;text-align:left}")


def room_html(rows: list[dict[str, Any]]) -> str:
    """The table the instructor's page shows (every learner-written string escaped)."""
    e = html.escape
    head = ("<tr><th>learner</th><th>lessons passed</th><th>checks passed</th><th>quiz</th>"
            "<th>predictions</th><th>current case</th><th>cards per role</th><th>board</th><th>events</th></tr>")
    body = []
    for r in rows:
        if "error" in r:
            body.append(f'<tr data-learner="{e(r["learner"])}"><td>{e(r["learner"])}</td>'
                        f'<td colspan="8" class="bureau-muted">unreadable ({e(r["error"])})</td>'
                        "</tr>")
            continue
        roles = " · ".join(f'<span data-role="{e(a)}">{e(_cap(a, 32))} {int(n)}</span>'
                           for a, n in r["roles"].items()) or "—"
        body.append(
            f'<tr data-learner="{e(r["learner"])}"><td>{e(r["learner"])}</td>'
            f'<td class="lessons">{e(", ".join(r["lessons"])) or "—"}</td>'
            f'<td class="checks">{int(r["checks_passed"])}</td>'
            f'<td class="quiz">{int(r["quiz_right"])}/{int(r["quiz_answered"])}</td>'
            f'<td class="predictions">{int(r.get("predictions", 0))}</td>'
            f'<td class="case">{e(r["case"] or "—")}</td><td class="roles">{roles}</td>'
            f'<td class="board">{int(r["board"])}</td><td class="events">{int(r["events"])}</td>'
            "</tr>")
    return (f'<div class="bureau-root bureau-instructor"><style>{STYLE}</style>'
            f"<h3>The room: {len(rows)} learners</h3>"
            f'<table class="bureau-instructor-table">{head}{"".join(body)}</table></div>')


def room_view(directory: str | Path, poll_seconds: float = 5.0) -> Any:
    """An ipywidgets HTML of :func:`room_html`, redrawn every ``poll_seconds`` (Voilà page)."""
    import ipywidgets as W

    view = W.HTML(room_html(room(directory)))
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(poll_seconds):
            try:
                view.value = room_html(room(directory))
            except Exception as exc:  # noqa: BLE001 - keep the page alive; say why it is stale
                view.value = f'<div class="bureau-muted">not refreshed: {html.escape(str(exc))}</div>'

    threading.Thread(target=loop, name="bureau-instructor-poll", daemon=True).start()
    view.stop = stop.set  # type: ignore[attr-defined]
    return view


NO_ROOM = ('<div class="bureau-root bureau-instructor bureau-muted">No classroom given: serve this '
           "page with BUREAU_CLASSROOM_DIR set to the classroom folder (`make instructor`).</div>")


def room_page(directory: str | Path | None, poll_seconds: float = 5.0) -> Any:
    """What notebooks/instructor.ipynb shows: the room, or why there is none."""
    import ipywidgets as W

    from ..errors import ClassroomError

    if directory is None:
        return W.HTML(NO_ROOM)
    try:
        return room_view(directory, poll_seconds)
    except ClassroomError as exc:
        return W.HTML(f'<div class="bureau-root bureau-instructor bureau-muted">'
                      f"{html.escape(str(exc))}</div>")


__all__ = ["room", "room_html", "room_page", "room_view"]
