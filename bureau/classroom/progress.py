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

import threading
import time
from pathlib import Path
from typing import Any

import pymysql

from ..settings import ServerSettings

TABLE = "bureau_progress"
COLUMNS = ("lesson", "kind", "item", "ok", "detail", "at")
SCHEMA = f"""CREATE TABLE IF NOT EXISTS {TABLE} (
    seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    lesson VARCHAR(8) NOT NULL, kind VARCHAR(16) NOT NULL, item VARCHAR(64) NOT NULL,
    ok TINYINT, detail TEXT, at DOUBLE NOT NULL)"""

_TENANTS: dict[Path, ServerSettings] = {}
_LOCK = threading.Lock()


def register_tenant(data_dir: Path, server: ServerSettings) -> None:
    """From now on, the progress record of ``data_dir`` lives in ``server``'s database."""
    with _LOCK:
        _TENANTS[Path(data_dir)] = server


def tenant_for(data_dir: str | Path) -> ServerSettings | None:
    with _LOCK:
        return _TENANTS.get(Path(data_dir).absolute())


def connect(server: ServerSettings, database: str | None = None) -> Any:
    """A short-lived connection (progress writes are a few per lesson)."""
    return pymysql.connect(host=server.host, port=int(server.port), user=server.user,
                           password=server.password, database=database or server.db_name,
                           autocommit=True, charset="utf8mb4", connect_timeout=10)


def record(server: ServerSettings, row: tuple[str, str, str, int | None, str | None]) -> None:
    """Append one attempt ``(lesson, kind, item, ok, detail)``; the time is added here."""
    conn = connect(server)
    try:
        with conn.cursor() as cur:
            cur.execute(SCHEMA)
            cur.execute(f"INSERT INTO {TABLE} (lesson, kind, item, ok, detail, at) "
                        "VALUES (%s, %s, %s, %s, %s, %s)", (*row, time.time()))
    finally:
        conn.close()


def rows(server: ServerSettings, database: str | None = None) -> list[tuple[Any, ...]]:
    """Every attempt, oldest first, as tuples of :data:`COLUMNS` (none: no table yet).
    ``database``: another tenant's, for the instructor's administrative account."""
    conn = connect(server, database)
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW TABLES LIKE %s", (TABLE,))
            if not cur.fetchall():
                return []
            cur.execute(f"SELECT {', '.join(COLUMNS)} FROM {TABLE} ORDER BY seq")
            return list(cur.fetchall())
    finally:
        conn.close()


__all__ = ["COLUMNS", "TABLE", "record", "register_tenant", "rows", "tenant_for"]
