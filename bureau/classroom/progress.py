"""A learner's progress record inside their tenant (the classroom's half of
:mod:`bureau.course.progress`).

Out of a classroom the record is ``progress.sqlite3`` in the data directory. With a connection
file (``BUREAU_CLASSROOM``) the bureau registers the tenant for its data directory when it opens
(:func:`register_tenant`), and the lessons' calls, which still pass the data directory, land in
the table ``bureau_progress`` of the learner's own database: the instructor's page reads it
there, and the learner's account can write no other learner's record (the server's grants).
Same columns and rules as the SQLite record; only the connection differs. The cases' scores
(issue 49) sit beside the attempts in ``bureau_case_progress``, numbers only.
"""

from __future__ import annotations

import time
from typing import Any

from ..bounds import session_sql
from ..settings import ServerSettings
from ..tenancy.registry import register_tenant, tenant_for

TABLE = "bureau_progress"
COLUMNS = ("lesson", "kind", "item", "ok", "detail", "at")
SCHEMA = f"""CREATE TABLE IF NOT EXISTS {TABLE} (
    seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    lesson VARCHAR(8) NOT NULL, kind VARCHAR(16) NOT NULL, item VARCHAR(64) NOT NULL,
    ok TINYINT, detail TEXT, at DOUBLE NOT NULL)"""

def connect(server: ServerSettings, database: str | None = None) -> Any:
    """A short-lived connection (progress writes are a few per lesson). pymysql is imported
    here, not with the module: every lesson imports this module through its progress record,
    and a learner outside a classroom never needs the driver (~60 ms of start-up)."""
    import pymysql

    return pymysql.connect(host=server.host, port=int(server.port), user=server.user,
                           password=server.password, database=database or server.db_name,
                           autocommit=True, charset="utf8mb4", connect_timeout=10,
                           init_command=session_sql(), read_timeout=30, write_timeout=30)


def record(server: ServerSettings, row: tuple[str, str, str, int | None, str | None]) -> None:
    """Append one attempt ``(lesson, kind, item, ok, detail)``; the time is added here."""
    _append(server, TABLE, SCHEMA, COLUMNS, row, "recording progress")


def _append(server: ServerSettings, table: str, schema: str, columns: tuple[str, ...],
            row: tuple[Any, ...], what: str) -> None:
    """Append ``row`` (every column but the last, ``at``, which is added here) to ``table``.

    A connection ended meanwhile (a learner's KILL, a restart) costs a retry
    (:mod:`bureau.storage.reconnect`); the insert is run again only when the row, found by its
    first three columns and its exact time, is not there."""
    from ..storage.reconnect import retry

    at = time.time()
    key = (*row[:3], at)
    names = ", ".join(columns)
    marks = ", ".join(["%s"] * len(columns))
    found = " AND ".join(f"{c} = %s" for c in (*columns[:3], columns[-1]))

    def insert() -> bool:
        conn = connect(server)
        try:
            with conn.cursor() as cur:
                cur.execute(schema)
                cur.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})", (*row, at))
            return True
        finally:
            conn.close()

    def landed() -> bool | None:
        conn = connect(server)
        try:
            with conn.cursor() as cur:
                cur.execute(f"SHOW TABLES LIKE '{table}'")
                if not cur.fetchall():
                    return None
                cur.execute(f"SELECT 1 FROM {table} WHERE {found}", key)
                return True if cur.fetchall() else None
        finally:
            conn.close()

    retry(insert, what, landed)


def rows(server: ServerSettings) -> list[tuple[Any, ...]]:
    """Every attempt in this learner's own tenant, oldest first (none: no table yet)."""
    from ..storage.reconnect import retry

    def read() -> list[tuple[Any, ...]]:
        conn = connect(server)
        try:
            with conn.cursor() as cur:
                return rows_in(cur, server.db_name)
        finally:
            conn.close()

    return retry(read, "reading progress")


def rows_in(cur: Any, database: str, table: str = TABLE,
            columns: tuple[str, ...] = COLUMNS) -> list[tuple[Any, ...]]:
    """Every row of ``table`` in ``database`` (the learner's own read, ``detail`` included),
    through an open cursor. ``database`` is a tenant name (a checked identifier). The
    instructor's page reads :func:`page_query` and :func:`case_page_query` instead."""
    cur.execute(f"SHOW TABLES FROM `{database}` LIKE %s", (table,))
    if not cur.fetchall():
        return []
    cur.execute(f"SELECT {', '.join(columns)} FROM `{database}`.{table} ORDER BY seq")
    return list(cur.fetchall())


PAGE_CAPS = {"lesson": 8, "kind": 16, "item": 64}
"""Longest value of each column the instructor's page reads: the schema's own widths. The
learner owns the table and may widen a column to hold 200,000 characters; ``LEFT`` in the
statement keeps such a cell from ever crossing the wire in full."""
PAGE_ROWS = 5_000
"""The newest attempts the page reads per learner (a whole course is a few hundred; a learner
who writes a million rows slows only their own row)."""
PAGE_COLUMNS = ("lesson", "kind", "item", "ok")
"""What the page reads of an attempt: never ``detail`` (a quiz choice, a prediction) nor ``at``."""


def page_query(database: str) -> str:
    """The instructor page's statement over ``database``'s progress table: the newest
    :data:`PAGE_ROWS` attempts, newest first, as ``(lesson, kind, item, ok)`` with every string
    cut in SQL to :data:`PAGE_CAPS` and ``ok`` reduced to 1/0/NULL by the server (a learner may
    have retyped it as text). No ``detail``, no ``at``."""
    cols = ", ".join(f"LEFT(`{c}`, {n})" for c, n in PAGE_CAPS.items())
    return (f"SELECT {cols}, (`ok` = 1) FROM `{database}`.`{TABLE}` "
            f"ORDER BY seq DESC LIMIT {PAGE_ROWS}")


# -- the cases' scores ---------------------------------------------------------------------------
CASE_TABLE = "bureau_case_progress"
CASE_COLUMNS = ("case_id", "scenario", "status", "moves", "rules_kept", "rules", "at")
CASE_SCHEMA = f"""CREATE TABLE IF NOT EXISTS {CASE_TABLE} (
    seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    case_id VARCHAR(64) NOT NULL, scenario VARCHAR(64) NOT NULL, status VARCHAR(8) NOT NULL,
    moves INT NOT NULL, rules_kept INT NOT NULL, rules INT NOT NULL, at DOUBLE NOT NULL)"""
"""A case's score each time it changed (issue 49): the numbers an observer may see of it
(``bureau.game``'s ``Score.numbers()``), keyed by case id, append-only like the attempts. The
course computes them; the classroom only stores and counts them (it imports neither)."""


def record_case(server: ServerSettings, row: tuple[str, str, str, int, int, int]) -> None:
    """Append one score ``(case_id, scenario, status, moves, rules_kept, rules)``."""
    _append(server, CASE_TABLE, CASE_SCHEMA, CASE_COLUMNS, row, "recording a case's score")


def case_rows(server: ServerSettings) -> list[tuple[Any, ...]]:
    """Every score recorded in this learner's own tenant, oldest first (none: no table yet)."""
    from ..storage.reconnect import retry

    def read() -> list[tuple[Any, ...]]:
        conn = connect(server)
        try:
            with conn.cursor() as cur:
                return rows_in(cur, server.db_name, CASE_TABLE, CASE_COLUMNS)
        finally:
            conn.close()

    return retry(read, "reading the cases' scores")


CASE_PAGE_CAPS = {"case_id": 65, "status": 8, "moves": 12, "rules_kept": 12, "rules": 12}
"""What the page reads of a score, each cut in SQL to this many characters: the case id (one
more than the widest the bureau writes, so a forgery shows as one), the status, and the counts
as text (a learner may have retyped them; the page parses and bounds them). Never the scenario
nor the time."""


def case_page_query(database: str) -> str:
    """The instructor page's statement over ``database``'s scores: the newest
    :data:`PAGE_ROWS`, newest first, every column cut by ``LEFT`` (:data:`CASE_PAGE_CAPS`)."""
    cols = ", ".join(f"LEFT(`{c}`, {n})" for c, n in CASE_PAGE_CAPS.items())
    return (f"SELECT {cols} FROM `{database}`.`{CASE_TABLE}` "
            f"ORDER BY seq DESC LIMIT {PAGE_ROWS}")


__all__ = ["CASE_COLUMNS", "CASE_PAGE_CAPS", "CASE_TABLE", "COLUMNS", "PAGE_CAPS", "PAGE_COLUMNS",
           "PAGE_ROWS", "TABLE", "case_page_query", "case_rows", "page_query", "record",
           "record_case", "register_tenant", "rows", "rows_in", "tenant_for"]
