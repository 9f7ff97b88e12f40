"""A learner's progress record inside their tenant (the classroom's half of
:mod:`bureau.course.progress`).

Out of a classroom the record is ``progress.sqlite3`` in the data directory. With a connection
file (``BUREAU_CLASSROOM``) the bureau registers the tenant for its data directory when it opens
(:func:`register_tenant`), and the lessons' calls, which still pass the data directory, land in
the table ``bureau_progress`` of the learner's own database: the instructor's page reads it
there, and the learner's account can write no other learner's record (the server's grants).
Same columns and rules as the SQLite record; only the connection differs.
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
    """Append one attempt ``(lesson, kind, item, ok, detail)``; the time is added here.

    A connection ended meanwhile (a learner's KILL, a restart) costs a retry
    (:mod:`bureau.storage.reconnect`); the insert is run again only when the row, found by its
    attempt and its exact time, is not there."""
    from ..storage.reconnect import retry

    at = time.time()
    key = (row[0], row[1], row[2], at)

    def insert() -> bool:
        conn = connect(server)
        try:
            with conn.cursor() as cur:
                cur.execute(SCHEMA)
                cur.execute(f"INSERT INTO {TABLE} (lesson, kind, item, ok, detail, at) "
                            "VALUES (%s, %s, %s, %s, %s, %s)", (*row, at))
            return True
        finally:
            conn.close()

    def landed() -> bool | None:
        conn = connect(server)
        try:
            with conn.cursor() as cur:
                cur.execute(f"SHOW TABLES LIKE '{TABLE}'")
                if not cur.fetchall():
                    return None
                cur.execute(f"SELECT 1 FROM {TABLE} WHERE lesson = %s AND kind = %s AND "
                            "item = %s AND at = %s", key)
                return True if cur.fetchall() else None
        finally:
            conn.close()

    retry(insert, "recording progress", landed)


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


def rows_in(cur: Any, database: str) -> list[tuple[Any, ...]]:
    """Every attempt in ``database`` (the learner's own read, ``detail`` included), through an
    open cursor. ``database`` is a tenant name (a checked identifier). The instructor's page
    reads :func:`page_query` instead."""
    cur.execute(f"SHOW TABLES FROM `{database}` LIKE %s", (TABLE,))
    if not cur.fetchall():
        return []
    cur.execute(f"SELECT {', '.join(COLUMNS)} FROM `{database}`.{TABLE} ORDER BY seq")
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


__all__ = ["COLUMNS", "PAGE_CAPS", "PAGE_COLUMNS", "PAGE_ROWS", "TABLE", "page_query", "record",
           "register_tenant", "rows", "rows_in", "tenant_for"]
