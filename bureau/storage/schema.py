"""The store's schema beside PowerMem's card table: the case and scope indexes, the scope
versions table, and the one way the bureau runs DDL -- only when something is missing, and never
without a bound (issue 47).

Every function takes an open connection (the caller holds :data:`.setup.LOCK`); nothing here
imports the storage SDKs or :mod:`.setup`.
"""

from __future__ import annotations

import threading
from typing import Any

from sqlalchemy import text

from ..bounds import is_timeout
from ..settings import Settings
from .engine_state import Rows, explain_ddl_timeout


def scope_index(table: str) -> str:
    """The name of the (case, role) index: searches name it in a hint (:func:`index_cases`)."""
    return f"idx_{table}_scope"[:64]


def index_cases(conn: Any, table: str, settings: Settings, side_rows: Rows) -> None:
    """Index the case column, so a scoped search reads one case's rows, not the whole table.

    Every read the gateway makes filters on ``user_id`` (the case). Without an index seekdb's
    pre-filtered vector scan evaluates that filter on every row of every case: a search got
    slower with each case the store held (the MAGPIE lab writes 200). With it the scan reads
    only the case's range and returns the same cards (checked against exact top-k in the tests).
    A second index on (case, role) narrows each scope's scan to that scope's own rows. Without
    it a role's search time grew with the cards *other roles* of its case held (a detective's
    own-scope search: 1.0 ms beside a suspect with 4 cards, 2.0 ms beside one with 304), and
    that time reaches the role's X-ray: a count it must not learn. Every gateway search asks one
    scope per sub-query (one equality range; seekdb's scan over *two* ranges of such an index,
    ``agent_id IN (...)``, once returned fewer rows than asked for, which is why each scope has
    its own sub-query). seekdb's planner leaves the index unused for the gateway's statement
    (a union of ordered sub-queries), so each sub-query names it in a hint; with the hint the
    same search costs the same beside 4 or 304 cards of another role, and returns the same
    cards (the tests compare it with PowerMem's search and with an exact top-k).
    """
    wanted = {f"idx_{table}_case"[:64]: "`user_id`",
              scope_index(table): "`user_id`, `agent_id`"}
    # Key_name is SHOW INDEX's third column (embedded seekdb names result columns column_N).
    have = {str(row[2]) for row in conn.execute(text(f"SHOW INDEX FROM `{table}`"))}
    for name, columns in wanted.items():
        if name in have:
            continue
        try:
            ddl(conn, settings, f"CREATE INDEX `{name}` ON `{table}` ({columns})",
                f"creating the index {name}", side_rows)
        except Exception as exc:  # noqa: BLE001 - another instance created it first
            if "Duplicate key name" not in str(exc):
                raise
    conn.commit()


def versions_table(table: str) -> str:
    """The table of per-scope write versions beside the card table (:func:`create_versions`)."""
    return f"{table}_scope_versions"[:64]


def create_versions(conn: Any, table: str, settings: Settings, side_rows: Rows) -> None:
    """Create the scope versions table: one row per (case, role) scope, bumped by every write
    the gateway makes to that scope, so an in-process copy of a scope's vectors
    (:mod:`bureau.storage.scope_index`) can tell in the same statement as its search whether
    any process has written to the scope since the copy was made. It lives in the store, beside
    the cards it counts, so every process sharing the store (embedded or server) sees it.

    Created only when it is missing: ``CREATE TABLE IF NOT EXISTS`` is a DDL statement even when
    the table exists, and a DDL waits on the tenant's lock (issue 47: a reopen hung here for as
    long as seekdb let it, behind a lock an earlier process had left)."""
    name = versions_table(table)
    if table_exists(conn, name):
        return
    ddl(conn, settings,
        f"CREATE TABLE IF NOT EXISTS `{name}` ("
        "`user_id` VARCHAR(128) NOT NULL, `agent_id` VARCHAR(128) NOT NULL, "
        "`version` BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (`user_id`, `agent_id`))",
        f"creating the table {name}", side_rows)
    conn.commit()


def table_exists(conn: Any, name: str) -> bool:
    """Whether ``name`` is a table of the connection's database (a read: no lock taken)."""
    pattern = name.replace("\\", "\\\\").replace("_", "\\_").replace("%", "\\%")
    rows = conn.execute(text("SHOW TABLES LIKE :pattern"), {"pattern": pattern}).fetchall()
    return any(str(r[0]) == name for r in rows)


DDL_GRACE_S = 5.0
"""How much longer than ``Settings.ddl_timeout_s`` the bureau itself waits for a DDL statement.
seekdb's bound does not cover every wait: a ``CREATE INDEX`` behind another session's open
transaction outlived ``_ob_ddl_timeout`` and ``ob_query_timeout`` alike (still waiting at 60 s
with both at 5 and 10 s, measured on seekdb 1.4), and neither ``KILL QUERY`` nor ``KILL`` ended
it. So the statement runs in a thread of its own, and the open gives up on it here."""
_STUCK: str | None = None
"""What this process's store connection is still waiting on, after a DDL was given up on: the
connection is not safe to use again in this process (the open says so, typed)."""


def stuck() -> str | None:
    """What this process gave up on (:data:`_STUCK`), or None: its store connection is usable."""
    return _STUCK


def ddl(conn: Any, settings: Settings, sql: str, what: str, side_rows: Rows) -> None:
    """Run one DDL statement within ``Settings.ddl_timeout_s`` (+ :data:`DDL_GRACE_S`), else
    :class:`~bureau.errors.StoreTimeoutError` saying what held the lock when the bureau can
    tell (:func:`.engine_state.explain_ddl_timeout`)."""
    global _STUCK
    box: dict[str, BaseException] = {}

    def run() -> None:
        try:
            conn.execute(text(sql))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = exc

    worker = threading.Thread(target=run, name="bureau-ddl", daemon=True)
    worker.start()
    worker.join(settings.ddl_timeout_s + DDL_GRACE_S)
    if worker.is_alive():
        _STUCK = what
        err = explain_ddl_timeout(side_rows, settings, what)
        raise type(err)(f"{err.message} This Python process's connection to the store is "
                        "still waiting on it and cannot be used again.",
                        "Restart the kernel (Kernel → Restart) once the other process has "
                        "ended or the cause above is fixed.")
    exc = box.get("error")
    if exc is None:
        return
    if not is_timeout(exc):
        raise exc
    rows = lambda q: conn.exec_driver_sql(q).fetchall()  # noqa: E731
    raise explain_ddl_timeout(rows, settings, what) from exc


__all__ = ["DDL_GRACE_S", "create_versions", "ddl", "index_cases", "scope_index", "stuck",
           "table_exists", "versions_table"]
