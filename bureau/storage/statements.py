"""Statements written out in full (no bind parameters), run on the store's own connection.

The search and version statements (:mod:`.scope_search`) are built from validated names and
numbers only, so they need nothing from SQLAlchemy but a way to the database. On embedded
seekdb that way is long: SQLAlchemy's connection and result, pyobvector's cursor (which scans
the ~10 kB statement for pyformat placeholders and turns every result row into a dict and back)
and pyseekdb's client (which upper-cases the statement to decide whether it returns rows).
The leak lab runs ~35,000 such statements and spent ~25 s of its single storage thread's CPU in
those layers (a sampling profile of the full sealed lab, issue 31 §4), time taken from the
encoder on a 2-core laptop.

Embedded, a statement here goes straight to the ``pylibseekdb`` connection every one of those
layers ends at (pyseekdb's ``get_raw_connection``; pyobvector's ``commit`` is a no-op there,
each statement commits by itself): the same statement text, the same rows (tuples of the same
values: ``tests/test_scope_topk.py`` compares both ways). On a server store the statements go
through SQLAlchemy's connection as before (its pool, its reconnects, its commit).
The caller holds :data:`.setup.LOCK`, as for every statement on the one embedded connection.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .setup import quick_vector, replace_statement, sql_engine


class _Embedded:
    def __init__(self, conn: Any, dialect: Any) -> None:
        self._conn = conn
        self._dialect = dialect

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        cursor = self._conn.cursor()
        try:
            cursor.execute(sql)
            return [tuple(r) for r in cursor.fetchall()]
        finally:
            cursor.close()

    def run(self, sql: str) -> None:
        cursor = self._conn.cursor()
        try:
            cursor.execute(sql)
        finally:
            cursor.close()

    def commit(self) -> None:
        """Each embedded statement commits by itself (as pyobvector's connection assumes)."""

    def replace(self, table: Any, rows: list[dict[str, Any]]) -> None:
        """The ``REPLACE`` SQLAlchemy would compile, written out by
        :func:`.setup.replace_statement` (the text the SQLAlchemy/pyseekdb way would send)."""
        self.run(replace_statement(table, self._dialect, rows))


class _Engine:
    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self._conn.exec_driver_sql(sql).fetchall()]

    def run(self, sql: str) -> None:
        self._conn.exec_driver_sql(sql)

    def commit(self) -> None:
        self._conn.commit()

    def replace(self, table: Any, rows: list[dict[str, Any]]) -> None:
        from pyobvector.schema import ReplaceStmt

        self._conn.execute(ReplaceStmt(table).values(rows))
        self._conn.commit()


@contextmanager
def statements(memory: Any, through_engine: bool = False) -> Iterator[_Embedded | _Engine]:
    """A connection that runs written-out statements: ``rows(sql)`` for a SELECT (a list of
    tuples), ``run(sql)`` for anything else, ``commit()``. ``through_engine``: SQLAlchemy's way
    even when embedded (the comparison in the tests)."""
    engine = sql_engine(memory)
    server = None if through_engine else engine.get_execution_options().get("seekdb_server")
    if server is not None:
        yield _Embedded(server.get_raw_connection(), engine.dialect)
        return
    with engine.connect() as conn:
        yield _Engine(conn)


def replace_rows(memory: Any, records: list[dict[str, Any]]) -> None:
    """PowerMem's own ``REPLACE`` of whole rows, keyed by their ids (running it again adds
    nothing); the caller holds :data:`.setup.LOCK`."""
    vs = memory.storage.vector_store
    field = vs.vector_field
    vector = quick_vector()
    rows = [{**r, field: vector(r[field])} if r.get(field) is not None else r for r in records]
    with statements(memory) as conn:
        conn.replace(vs.table, rows)


__all__ = ["replace_rows", "statements"]
