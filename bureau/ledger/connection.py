"""The ledger's connection layer: transactions, table names, retries and the schema.

Every store of the ledger works over one :class:`Connection`, and so do operations that span
stores: a store's public helpers that take a ``db: Tx`` (e.g.
:meth:`~bureau.ledger.events.EventStore.insert`) write inside a transaction another store
opened, so a mediation's budget, audit entries and events, or a reset's deletions in every
store, commit together or not at all.

Two backends implement it: :class:`~bureau.ledger.sqlite.SqliteConnection` (SQLite under the
data directory) and :class:`~bureau.ledger.server.ServerConnection` (the seekdb/OceanBase
server). They differ only in how they connect and in the few SQL spellings below.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, TypeVar

T = TypeVar("T")


class Tx:
    """One transaction: ``?`` placeholders, rows as dicts."""

    def __init__(self, cursor: Any, paramstyle: str) -> None:
        self._cur = cursor
        self._format = paramstyle == "format"
        self.on_commit: list[Callable[[], None]] = []
        """Run once the transaction committed (never after a rollback): e.g. moving the audit
        anchor, which must not run ahead of the ledger."""

    def committed(self) -> None:
        for fn in self.on_commit:
            fn()

    def run(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        if self._format:
            sql = sql.replace("?", "%s")
        self._cur.execute(sql, params)
        return self._cur

    def all(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        return [dict(r) for r in self.run(sql, params).fetchall()]

    def one(self, sql: str, params: tuple[Any, ...] = ()) -> dict[str, Any] | None:
        row = self.run(sql, params).fetchone()
        return dict(row) if row is not None else None


class Connection:
    """A connection to the ledger's tables (see the subclasses); shared by every store."""

    prefix = ""
    """Table name prefix (the server backend shares a database with PowerMem's tables)."""
    for_update = ""
    """Row-lock suffix for SELECTs inside a write transaction (SQLite locks the whole file)."""
    insert_ignore = "INSERT OR IGNORE"
    integrity_errors: tuple[type[BaseException], ...] = (sqlite3.IntegrityError,)
    """A primary key refused an insert (a lost insert race, or a duplicate)."""
    retry_errors: tuple[type[BaseException], ...] = ()
    """A lock conflict worth running the whole transaction again for."""

    def tx(self, write: bool = False) -> AbstractContextManager[Tx]:
        """A transaction; ``write`` takes the write lock up front where the backend has one."""
        raise NotImplementedError

    def create_schema(self) -> None:
        """Create the tables of :mod:`bureau.ledger.schema` that do not exist yet."""
        raise NotImplementedError

    def close(self) -> None:
        """Close this thread's connection, if the backend keeps one open."""

    def t(self, name: str) -> str:
        """A table's name on this backend."""
        return self.prefix + name

    def retrying(self, fn: Callable[[], T], tries: int = 8) -> T:
        """Run ``fn`` (one whole transaction) again after a lost insert race or a lock timeout."""
        for i in range(tries):
            try:
                return fn()
            except self.integrity_errors + self.retry_errors:
                if i == tries - 1:
                    raise
                time.sleep(0.01 * (i + 1))
        raise AssertionError("unreachable")
