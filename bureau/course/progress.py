"""A learner's progress: which exercise checks passed, which quiz questions were answered right,
the predictions written before a reveal (issue 21 §4), and the application questions (a number
read from the lesson's own output) answered right (issue 34 §3).

Kept in the learner's own data directory (``progress.sqlite3``, beside the ledger; the directory
is owner-only), so it survives a kernel restart and a ``make lab`` the next day. In a classroom
(``BUREAU_CLASSROOM``) it lives in the learner's tenant instead (:mod:`bureau.classroom.progress`),
where the instructor's page reads it; the lessons pass the data directory either way. Only the learner's own notebook writes
it; it holds exercise and question ids, right or wrong, and the learner's own prediction text,
never a card or a question put to the bureau.

Every attempt is a row (append-only): the table shows the latest state, and "tried three times
before it passed" stays visible to the learner.

The cases the learner plays (issue 49) are recorded beside the attempts: each time a case's
score changes, its numbers (status, moves, rules kept; :func:`record_case`), keyed by case id.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Mapping
from contextlib import closing
from pathlib import Path
from typing import Any

import pandas as pd

from ..classroom import progress as tenant_progress

FILE = "progress.sqlite3"
KINDS = ("check", "quiz", "prediction", "application")
MAX_DETAIL = 2000
"""A prediction longer than this is cut (it is a sentence or two, not an essay)."""

_SCHEMA = """CREATE TABLE IF NOT EXISTS progress (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    lesson TEXT NOT NULL, kind TEXT NOT NULL, item TEXT NOT NULL,
    ok INTEGER, detail TEXT, at REAL NOT NULL)"""


_CASE_SCHEMA = """CREATE TABLE IF NOT EXISTS case_progress (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    case_id TEXT NOT NULL, scenario TEXT NOT NULL, status TEXT NOT NULL,
    moves INTEGER NOT NULL, rules_kept INTEGER NOT NULL, rules INTEGER NOT NULL, at REAL NOT NULL)"""
CASE_COLUMNS = ["case_id", "scenario", "status", "moves", "rules_kept", "rules", "at"]
STATUSES = ("open", "solved", "lost")


def progress_path(data_dir: str | Path) -> Path:
    return Path(data_dir) / FILE


def _connect(data_dir: str | Path) -> sqlite3.Connection:
    path = progress_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    new = not path.exists()
    conn = sqlite3.connect(path, timeout=10)
    if new:
        path.chmod(0o600)
    conn.execute(_SCHEMA)
    conn.execute(_CASE_SCHEMA)
    return conn


COURSE = ("00", "01", "02", "03", "04", "04b", "05", "05b", "05c", "06", "06b", "07", "07b",
          "08", "08b", "09")
"""Every notebook of the course by its number, deep dives (a letter after the lesson's number)
beside their lesson: the rows :func:`progress_table` shows even before anything is recorded
(``tests/test_progress.py`` holds it to ``notebooks/``)."""
DEEP_DIVES = tuple(n for n in COURSE if not n.isdigit())
_LESSON = re.compile(r"q?(\d{2}[a-z]?)-")


def lesson_of(item: str) -> str:
    """``"03-footprint"`` and ``"q03-2"`` both belong to lesson ``"03"``; a deep dive's ids
    carry its letter (``"q05b-1"``, ``"04b-timing"``) and belong to it, not to its lesson."""
    m = _LESSON.match(item)
    if m:
        return m.group(1)
    digits = item.lstrip("q")[:2]
    return digits if digits.isdigit() else "?"


def record(data_dir: str | Path, kind: str, item: str, ok: bool | None,
           detail: str | None = None) -> None:
    """Append one attempt. Never raises on a full disk or a read-only directory: progress is a
    convenience, and a lesson must still run top to bottom without it."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    row = (lesson_of(item), kind, item, None if ok is None else int(bool(ok)),
           None if detail is None else str(detail)[:MAX_DETAIL])
    server = tenant_progress.tenant_for(data_dir)
    if server is not None:
        try:
            tenant_progress.record(server, row)
        except Exception:  # noqa: BLE001 - pymysql errors; progress must never break a lesson
            pass
        return
    try:
        with closing(_connect(data_dir)) as conn, conn:
            conn.execute(
                "INSERT INTO progress (lesson, kind, item, ok, detail, at) VALUES (?, ?, ?, ?, ?, ?)",
                (*row, time.time()))
    except (sqlite3.Error, OSError):
        pass


def attempts(data_dir: str | Path) -> pd.DataFrame:
    """Every attempt, oldest first (columns ``lesson, kind, item, ok, detail, at``)."""
    path = progress_path(data_dir)
    cols = ["lesson", "kind", "item", "ok", "detail", "at"]
    server = tenant_progress.tenant_for(data_dir)
    if server is not None:
        return frame(tenant_progress.rows(server))
    if not path.exists():
        return pd.DataFrame(columns=cols)
    with closing(sqlite3.connect(path, timeout=10)) as conn:
        return pd.read_sql_query(f"SELECT {', '.join(cols)} FROM progress ORDER BY seq", conn)


def frame(rows: list[tuple[object, ...]]) -> pd.DataFrame:
    """Attempts as :func:`attempts` returns them, from rows of (lesson, kind, item, ok, detail,
    at)."""
    df = pd.DataFrame(rows, columns=["lesson", "kind", "item", "ok", "detail", "at"])
    df["ok"] = df["ok"].astype("float").astype("Int64")
    return df


def progress_table(data_dir: str | Path, lessons: list[str] | None = None) -> pd.DataFrame:
    """One row per lesson and deep dive (:data:`COURSE`, and any other lesson an attempt names):
    exercise checks passed, quiz questions right (latest answer per question), predictions
    written, application questions answered right (at any try: each is a reading of that run's
    output, tried until right). ``lessons``: the rows to show instead, even when empty."""
    df = attempts(data_dir)
    if lessons is None:  # course order: "04b" sorts after "04", an unknown "?" last
        lessons = sorted(set(COURSE) | set(df["lesson"]))
    return summarise(df, lessons)


def summarise(df: pd.DataFrame, lessons: list[str] | None = None) -> pd.DataFrame:
    """:func:`progress_table` of attempts already read (the instructor's page reads a tenant's);
    without ``lessons``, the lessons the attempts name."""
    rows = []
    names = lessons or sorted(set(df["lesson"]))
    for lesson in names:
        mine = df[df["lesson"] == lesson]
        checks = mine[mine["kind"] == "check"]
        quiz = mine[mine["kind"] == "quiz"].drop_duplicates("item", keep="last")
        applied = mine[mine["kind"] == "application"]
        rows.append({
            "lesson": lesson,
            "checks passed": int(checks[checks["ok"] == 1]["item"].nunique()),
            "check attempts": len(checks),
            "quiz right": int((quiz["ok"] == 1).sum()),
            "quiz answered": len(quiz),
            "predictions": int(mine[mine["kind"] == "prediction"]["item"].nunique()),
            "applications": int(applied[applied["ok"] == 1]["item"].nunique()),
        })
    return pd.DataFrame(rows, columns=["lesson", "checks passed", "check attempts",
                                       "quiz right", "quiz answered", "predictions",
                                       "applications"])


# -- the cases' scores (issue 49) -----------------------------------------------------------------
def record_case(data_dir: str | Path, case_id: str, numbers: Mapping[str, Any]) -> bool:
    """Append a case's score: the numbers an observer may see of it (``Score.numbers()`` of
    :mod:`bureau.game`: scenario, status, moves, rules kept of rules), never a text. True when
    written; like :func:`record`, never raises on a full disk or a server gone."""
    status = str(numbers["status"])
    if status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}, not {status!r}")
    moves, kept, rules = (int(numbers[k]) for k in ("moves", "rules_kept", "rules"))
    if min(moves, kept, rules) < 0 or kept > rules:
        raise ValueError("moves and rules are counts, rules kept at most rules: "
                         f"{moves}, {kept}, {rules}")
    row = (str(case_id), str(numbers["scenario"]), status, moves, kept, rules)
    server = tenant_progress.tenant_for(data_dir)
    if server is not None:
        try:
            tenant_progress.record_case(server, row)
        except Exception:  # noqa: BLE001 - pymysql errors; progress must never break a lesson
            return False
        return True
    try:
        with closing(_connect(data_dir)) as conn, conn:
            conn.execute(f"INSERT INTO case_progress ({', '.join(CASE_COLUMNS)}) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?)", (*row, time.time()))
    except (sqlite3.Error, OSError):
        return False
    return True


def case_scores(data_dir: str | Path) -> pd.DataFrame:
    """Every score recorded, oldest first (columns :data:`CASE_COLUMNS`)."""
    server = tenant_progress.tenant_for(data_dir)
    if server is not None:
        return pd.DataFrame(tenant_progress.case_rows(server), columns=CASE_COLUMNS)
    path = progress_path(data_dir)
    if not path.exists():
        return pd.DataFrame(columns=CASE_COLUMNS)
    with closing(sqlite3.connect(path, timeout=10)) as conn:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'case_progress'").fetchall():
            return pd.DataFrame(columns=CASE_COLUMNS)
        return pd.read_sql_query(f"SELECT {', '.join(CASE_COLUMNS)} FROM case_progress "
                                 "ORDER BY seq", conn)


def cases_table(data_dir: str | Path) -> pd.DataFrame:
    """One row per case played, at its newest score, oldest case first: scenario, status,
    moves used, rules kept (the learner's own view; the instructor's page counts the same
    rows)."""
    df = case_scores(data_dir).drop_duplicates("case_id", keep="last")
    return pd.DataFrame({
        "case": df["case_id"], "scenario": df["scenario"], "status": df["status"],
        "moves": df["moves"].astype(int),
        "rules kept": [f"{int(k)}/{int(n)}" for k, n in zip(df["rules_kept"], df["rules"],
                                                             strict=True)],
    }, columns=["case", "scenario", "status", "moves", "rules kept"]).reset_index(drop=True)


__all__ = ["CASE_COLUMNS", "COURSE", "DEEP_DIVES", "FILE", "STATUSES", "attempts", "case_scores", "cases_table", "frame",
           "lesson_of", "progress_path", "progress_table", "record", "record_case", "summarise"]
