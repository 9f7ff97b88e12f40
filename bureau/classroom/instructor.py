"""The instructor's view of the room: one row per learner, numbers only.

Read with the classroom's administrative account from each learner's tenant: their progress
record (:mod:`bureau.classroom.progress`: checks passed, quiz answers right, per lesson), their
cases' scores (issue 49: cases solved, lost and open, moves used, rules kept; numbers the course
recorded, each case at its newest score) and the
outward stage counts of their current case (the one with the latest event; cards per role, board
copies, events), the same counts the projector's stage shows. Never a card's text, a question,
an answer, a prediction or a quiz choice: the statements below select ids, kinds, flags and
counts, and nothing else (the progress statement is :func:`progress.page_query`, without
``detail``).

Everything read here was written by the learner (their account has every right on their own
database), so it is hostile input, and so are the objects it sits in:

* every string is cut in SQL (``LEFT``) before it crosses the wire, and again here, and escaped
  on the page; counts are integers; at most :data:`progress.PAGE_ROWS` attempts and
  :data:`MAX_ROLES` roles are read;
* an object the page reads that is not a base table (a view that sleeps, or that would read
  something else) is not read: the row says ``not a table``;
* every statement runs under the server's statement timeout (``ob_query_timeout``, seekdb
  error 4012) set to the rest of that learner's budget (:data:`ROW_BUDGET_S`), and the learners are read in
  parallel by :data:`WORKERS` threads, one administrative connection each: one slow tenant
  delays only its own row (``timed out``), and a redraw returns within :data:`PAGE_BUDGET_S`
  whatever the tenants hold;
* one tenant's damage shows as that learner's row's error, never as the page's.
"""

from __future__ import annotations

import html
import threading
import time
import weakref
from collections import Counter, deque
from pathlib import Path
from typing import Any

import pymysql

from ..errors import ClassroomError
from ..ledger.rows import store_id_for
from ..model import BOARD
from ..settings import Settings
from ..storage.reconnect import is_lost
from ..tenancy.connection import tenant_name
from . import progress
from .guard import locked_learners, suspected_learners
from .tenants import Roster

CARDS_TABLE = Settings().collection
"""PowerMem's card table in each tenant (the default collection; lessons do not change it)."""
CASES_TABLE, EVENTS_TABLE = "bureau_cases", "bureau_events"
READ_TABLES = (progress.TABLE, progress.CASE_TABLE, CASES_TABLE, EVENTS_TABLE, CARDS_TABLE)
"""Every object of a tenant the page reads; each must be a base table."""
LESSONS = [f"{n:02d}" for n in range(9)]

ROW_BUDGET_S = 0.6
"""Longest time one learner's row may take (all its statements together, the cases' scores
among them): 0.4 s timed out 3 rows of 50 redraws while a learner KILLed every session on a
busy 2-core machine (a reconnect's login alone takes 60-380 ms there)."""
PAGE_BUDGET_S = 0.9
"""Longest time a redraw may take: a row not read by then says ``timed out``."""
WORKERS = 2
"""Threads (and administrative connections) reading the room in parallel. Two: each more costs
a login per redraw (60-380 ms measured on a loaded 2-core machine, most of it pymysql building a
TLS context) and GIL time; a room of 30 took 0.3-0.6 s with 2 workers, 0.4-0.9 s with 3, one
slow tenant holding one worker for its whole budget."""
CASE_ID_CHARS, TOKEN_CHARS = 64, 32
"""The widest case id and case token the bureau writes: a longer one is a learner's forgery."""
MAX_ROLES = 16
"""Roles shown per learner (a case has a handful; a forged card table may hold thousands)."""
MAX_LESSONS = len(LESSONS) + 3
"""Lessons shown per learner."""
MAX_CASE_MOVES, MAX_CASE_RULES = 1_000, 16
"""The most moves and rules one case's score may count for: a case has par 3 and a handful of
rules; a learner's forged 10**18 counts as this much, not more."""
TIMEOUT_CODE = 4012
"""seekdb/OceanBase: the statement reached its query timeout."""


def _cap(value: object, n: int = 64) -> str:
    text = str(value)
    return text if len(text) <= n else text[: n - 1] + "…"


class _RowError(Exception):
    """What a learner's row says instead of its figures (``timed out``, ``not a table: x``)."""


class _PageSessionLost(Exception):
    """The page's own session was ended (a learner's KILL, a server restart): the learner is
    read again on a new session, not shown as unreadable."""


_TIMEOUTS: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()
"""The statement timeout each administrative connection's session holds (seconds)."""
SLACK_S = 0.05
"""How far a statement may outlive its row's budget before the timeout is set again."""


def _select(cur: Any, deadline: float, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
    """``sql`` under the row's remaining budget. seekdb cuts a statement at the session's
    ``ob_query_timeout`` (microseconds), also inside a view and a ``SLEEP`` (measured on 1.4: a
    3 s view cut at 0.3 s, error 4012, the connection still usable). The timeout is set again
    only when the session's is more than :data:`SLACK_S` longer than what is left of the row's
    budget: a quick tenant costs one ``SET`` per row, not one per statement. A session
    variable, not a per-statement ``QUERY_TIMEOUT`` hint: a statement with a hint missed the
    plan cache (measured 0.3 ms -> 1.6 ms with a fixed hint, 18 ms with a changing one)."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise _RowError("timed out")
    conn = cur.connection
    if _TIMEOUTS.get(conn, float("inf")) - left > SLACK_S:
        cur.execute("SET ob_query_timeout = %s", (max(1000, int(left * 1e6)),))
        _TIMEOUTS[conn] = left
    cur.execute(sql, args or None)
    return list(cur.fetchall())


def _progress(attempts: list[tuple[Any, ...]]) -> dict[str, Any]:
    """Checks passed (distinct), quiz right/answered (latest answer per question), predictions
    written (distinct prompts: that a learner wrote one, never what), application questions
    right (distinct, at any try) of those tried, lessons with at least one passed check. ``attempts``: (lesson, kind, item, ok) newest first, as
    :func:`progress.page_query` reads them (no detail: the page never sees one)."""
    passed: set[tuple[str, str]] = set()
    quiz: dict[str, bool] = {}
    predicted: set[str] = set()
    applied: dict[str, bool] = {}
    for lesson, kind, item, ok in reversed(attempts):
        if kind == "check" and ok == 1:
            passed.add((_cap(lesson, progress.PAGE_CAPS["lesson"]),
                        _cap(item, progress.PAGE_CAPS["item"])))
        elif kind == "quiz":
            quiz[_cap(item, progress.PAGE_CAPS["item"])] = ok == 1
        elif kind == "prediction":
            predicted.add(_cap(item, progress.PAGE_CAPS["item"]))
        elif kind == "application":
            key = _cap(item, progress.PAGE_CAPS["item"])
            applied[key] = applied.get(key, False) or ok == 1
    lessons = sorted({lesson for lesson, _ in passed})
    return {
        "lessons": lessons[:MAX_LESSONS] + (["…"] if len(lessons) > MAX_LESSONS else []),
        "checks_passed": len(passed),
        "quiz_right": sum(quiz.values()),
        "quiz_answered": len(quiz),
        "predictions": len(predicted),
        "applications_right": sum(applied.values()),
        "applications_tried": len(applied),
    }


def _count(value: object, most: int) -> int:
    """A learner-written count (text of at most a few characters, see
    :data:`progress.CASE_PAGE_CAPS`) as an integer from 0 to ``most``; anything else is 0."""
    try:
        return max(0, min(most, int(str(value).strip())))
    except ValueError:
        return 0


def _cases(scores: list[tuple[Any, ...]]) -> dict[str, Any]:
    """Cases solved, lost and open, moves used and rules kept of all rules, each case counted
    once, at its newest score. ``scores``: (case_id, status, moves, rules_kept, rules) newest
    first, as :func:`progress.case_page_query` reads them; a status other than the three
    counts as none of them."""
    seen: set[str] = set()
    out = {"cases_solved": 0, "cases_lost": 0, "cases_open": 0, "case_moves": 0,
           "rules_kept": 0, "rules": 0}
    for case_id, status, moves, kept, rules in scores:
        key = str(case_id)[: progress.CASE_PAGE_CAPS["case_id"]]
        if key in seen:
            continue
        seen.add(key)
        status = str(status)
        if status in ("solved", "lost", "open"):
            out[f"cases_{status}"] += 1
        total = _count(rules, MAX_CASE_RULES)
        out["case_moves"] += _count(moves, MAX_CASE_MOVES)
        out["rules_kept"] += min(total, _count(kept, MAX_CASE_RULES))
        out["rules"] += total
    return out


def _table_types(cur: Any, database: str, deadline: float) -> dict[str, str]:
    """The type (``BASE TABLE``, ``VIEW``, ...) of each object the page reads that exists."""
    marks = ", ".join(["%s"] * len(READ_TABLES))
    found = _select(cur, deadline, "SELECT TABLE_NAME, TABLE_TYPE FROM "
                    "information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME IN "
                    f"({marks})", (database, *READ_TABLES))
    return {str(name).lower(): str(kind) for name, kind in found}


def _stage(cur: Any, database: str, tables: dict[str, str], deadline: float) -> dict[str, Any]:
    """Outward counts of the learner's most recent case (None fields: no case yet)."""
    none = {"case": None, "roles": {}, "board": 0, "events": 0}
    if CASES_TABLE not in tables:
        return none
    cut = f"LEFT(c.case_id, {CASE_ID_CHARS + 1}), LEFT(c.token, {TOKEN_CHARS + 1}), " \
          "CAST(c.epoch AS SIGNED)"
    # The current case: the one with the latest event (what the learner touched last; the
    # stage follows it the same way), else the newest created.
    if EVENTS_TABLE in tables:
        found = _select(cur, deadline, f"SELECT {cut} FROM `{database}`.{CASES_TABLE} c "
                        f"LEFT JOIN (SELECT case_id, MAX(seq) AS last FROM `{database}`."
                        f"{EVENTS_TABLE} GROUP BY case_id) e ON e.case_id = c.case_id ORDER BY "
                        "e.last IS NULL, e.last DESC, c.created_at DESC, c.case_id DESC LIMIT 1")
    else:
        found = _select(cur, deadline, f"SELECT {cut} FROM `{database}`.{CASES_TABLE} c "
                        "ORDER BY c.created_at DESC, c.case_id DESC LIMIT 1")
    if not found:
        return none
    case_id, token, epoch = str(found[0][0]), found[0][1], int(found[0][2] or 0)
    if len(case_id) > CASE_ID_CHARS or (token is not None and len(str(token)) > TOKEN_CHARS):
        return {**none, "case": _cap(case_id)}  # not an id the bureau wrote: nothing to count
    counts: Counter[str] = Counter()
    if CARDS_TABLE in tables:
        for agent, n in _select(cur, deadline, f"SELECT LEFT(agent_id, 33), COUNT(*) "
                                f"FROM `{database}`.`{CARDS_TABLE}` WHERE user_id = %s "
                                f"GROUP BY agent_id LIMIT {4 * MAX_ROLES}",
                                (store_id_for(case_id, token, epoch),)):
            counts[_cap(agent, 33)] += int(n)
    events = 0
    if EVENTS_TABLE in tables:
        events = int(_select(cur, deadline, f"SELECT COUNT(*) FROM `{database}`."
                             f"{EVENTS_TABLE} WHERE case_id = %s", (case_id,))[0][0])
    roles = [(a, n) for a, n in sorted(counts.items()) if a != BOARD and ":" not in a]
    return {"case": _cap(case_id), "roles": dict(roles[:MAX_ROLES]),
            "board": counts.get(BOARD, 0), "events": events}


def read_learner(cur: Any, learner: str, deadline: float) -> dict[str, Any]:
    """One learner's row, read through ``cur`` (an administrative cursor) by ``deadline``
    (``time.monotonic()``): their progress figures and stage counts, or ``error`` saying why
    not (``timed out``, ``not a table: <name>``, ``unreadable (error <code>)``). Never raises
    for anything the tenant holds."""
    database = tenant_name(learner)
    row: dict[str, Any] = {"learner": learner}
    try:
        tables = _table_types(cur, database, deadline)
        views = sorted(name for name, kind in tables.items() if kind != "BASE TABLE")
        if views:  # a view runs the learner's SQL on the page's connection: never read one
            raise _RowError(f"not a table: {views[0]}")
        attempts = (_select(cur, deadline, progress.page_query(database))
                    if progress.TABLE in tables else [])
        row.update(_progress(attempts))
        scores = (_select(cur, deadline, progress.case_page_query(database))
                  if progress.CASE_TABLE in tables else [])
        row.update(_cases(scores))
        row.update(_stage(cur, database, tables, deadline))
    except _RowError as exc:
        row = {"learner": learner, "error": _cap(exc)}
    except pymysql.err.Error as exc:
        code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
        if code != TIMEOUT_CODE and is_lost(exc):
            raise _PageSessionLost(learner) from exc
        row = {"learner": learner, "error": "timed out" if code == TIMEOUT_CODE
               else f"unreadable (error {code or type(exc).__name__})"}
    except Exception as exc:  # noqa: BLE001 - one damaged tenant is one row's problem
        row = {"learner": learner, "error": _cap(f"unreadable ({type(exc).__name__})")}
    return row


def room(directory: str | Path, *, workers: int = WORKERS, row_budget: float = ROW_BUDGET_S,
         page_budget: float = PAGE_BUDGET_S) -> list[dict[str, Any]]:
    """One dict per learner, in name order: name, progress figures, stage counts (or
    ``error``). Returns within about ``page_budget`` seconds whatever the tenants hold; a row
    not read by then says ``timed out``. Raises :class:`ClassroomError` only when no row could
    be read because the server refused every login."""
    roster = Roster.load(directory)
    learners = sorted(roster.learners)
    page_deadline = time.monotonic() + page_budget
    todo, rows, failures = deque(learners), {}, []
    lock = threading.Lock()

    def take() -> str | None:
        with lock:
            return todo.popleft() if todo and time.monotonic() < page_deadline else None

    def work() -> None:
        while todo and time.monotonic() < page_deadline:
            try:
                with roster.admin() as cur:
                    while (learner := take()) is not None:
                        try:
                            row = read_learner(cur, learner,
                                               min(page_deadline, time.monotonic() + row_budget))
                        except _PageSessionLost:
                            with lock:
                                todo.appendleft(learner)  # again, on a new session
                            break
                        with lock:
                            rows[learner] = row
                        if not cur.connection.open:  # a lost connection: open another
                            break
            except ClassroomError as exc:  # cannot log in: the other workers may
                failures.append(exc)
                return
            except pymysql.err.Error:  # closing a connection the server had cut
                continue

    threads = [threading.Thread(target=work, name=f"bureau-instructor-read-{i}", daemon=True)
               for i in range(min(workers, len(learners)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.0, page_deadline - time.monotonic()))
    with lock:
        if failures and not rows:
            raise failures[0]
        out = [rows.get(learner, {"learner": learner, "error": "timed out"})
               for learner in learners]
    locked = {x.get("learner") for x in locked_learners(directory)}
    named = {x.get("learner") for x in suspected_learners(directory)}
    for row in out:  # the room's guard locked (or, name-only, named) who ended others' sessions
        row["locked"] = row["learner"] in locked
        row["suspected"] = row["learner"] in named
    return out


STYLE = (".bureau-instructor-table{border-collapse:collapse}"
         ".bureau-instructor-table th,.bureau-instructor-table td{padding:4px 12px;"
         "border-bottom:1px solid #ddd;text-align:left}")


def room_html(rows: list[dict[str, Any]]) -> str:
    """The table the instructor's page shows (every learner-written string escaped)."""
    e = html.escape
    head = ("<tr><th>learner</th><th>lessons passed</th><th>checks passed</th><th>quiz</th>"
            "<th>predictions</th><th>applications</th><th>cases solved</th><th>lost</th>"
            "<th>open</th><th>moves</th><th>rules kept</th><th>current case</th>"
            "<th>cards per role</th><th>board</th><th>events</th></tr>")
    body = []
    for r in rows:
        if "error" in r:
            body.append(f'<tr data-learner="{e(r["learner"])}"><td>{e(r["learner"])}</td>'
                        f'<td colspan="14" class="bureau-muted">unreadable ({e(r["error"])})</td>'
                        "</tr>")
            continue
        roles = " · ".join(f'<span data-role="{e(a)}">{e(_cap(a, 32))} {int(n)}</span>'
                           for a, n in r["roles"].items()) or "—"
        body.append(
            f'<tr data-learner="{e(r["learner"])}"><td>{e(r["learner"])}'
            f'{" (locked by the guard)" if r.get("locked") else ""}'
            f'{" (ended others&#x27; sessions: proved by the guard)" if r.get("suspected") else ""}</td>'
            f'<td class="lessons">{e(", ".join(r["lessons"])) or "—"}</td>'
            f'<td class="checks">{int(r["checks_passed"])}</td>'
            f'<td class="quiz">{int(r["quiz_right"])}/{int(r["quiz_answered"])}</td>'
            f'<td class="predictions">{int(r.get("predictions", 0))}</td>'
            f'<td class="applications">{int(r.get("applications_right", 0))}/'
            f'{int(r.get("applications_tried", 0))}</td>'
            f'<td class="cases-solved">{int(r.get("cases_solved", 0))}</td>'
            f'<td class="cases-lost">{int(r.get("cases_lost", 0))}</td>'
            f'<td class="cases-open">{int(r.get("cases_open", 0))}</td>'
            f'<td class="moves">{int(r.get("case_moves", 0))}</td>'
            f'<td class="rules">{int(r.get("rules_kept", 0))}/{int(r.get("rules", 0))}</td>'
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
