"""The ledger on a seekdb/OceanBase server, for deployments where several service instances share
one card store (``settings.store == "server"``).

Same tables, keys and rules as the SQLite ledger (every store works over either connection); only
the connection (:class:`ServerConnection`) differs: MySQL protocol through ``pymysql`` (already a
dependency of pyseekdb and pyobvector), one connection per thread, ``SELECT … FOR UPDATE`` inside
a transaction for claims, and the ``(case_id, source_id)`` primary key so two instances can
never both reserve a card.
Tables are prefixed ``bureau_`` because they share the database with PowerMem's card table.
:class:`ServerLedger` adds one store of its own, the case snapshots (:class:`SnapshotStore`,
``ledger.snapshots``): instances on one server share no data directory.
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pymysql
import pymysql.cursors

from ..bounds import STATEMENT_S, session_sql
from ..errors import ConfigurationError, ServerUnavailableError, TenantAccessError
from ..settings import ServerSettings, default_data_dir
from ..storage import reconnect
from .base import BaseLedger
from .connection import Connection, Tx
from .keys import KEY_FILE, AuditKeys
from .schema import ADDED_COLUMNS, SERVER_SCHEMA

READ_TIMEOUT_S = STATEMENT_S + 20
"""The client's own bound on an answer (the session's statement bound, plus the server's time
to say so): a server that stops answering mid-statement ends the wait here, typed."""
_LOCK_CONFLICT = {1205, 1213, 6002, 6005}
"""Lock wait timeout, deadlock, and OceanBase's transaction-rollback/row-lock-conflict codes."""


class _Retryable(Exception):
    """A lock conflict worth running the whole transaction again for."""


MARKS_DDL = """CREATE TABLE IF NOT EXISTS {p}commit_marks (
  mark CHAR(32) NOT NULL PRIMARY KEY, at DOUBLE NOT NULL)"""
"""One row per write transaction, written inside it: when the connection dies during ``COMMIT``
the mark says whether the transaction committed (see :class:`_ReplayTx`)."""
MARKS_KEEP_S = 3600.0
MARKS_SWEEP_EVERY = 256
"""Every so many write transactions of a connection, marks older than an hour go."""
_AUTO_SEQ = re.compile(r"^(INSERT(?: IGNORE)? INTO \S+ \()(.*?\) VALUES \()", re.S)
MAX_REPLAYS = 20
"""Replays of one transaction whose sessions keep being ended (see
:data:`bureau.storage.reconnect.LOST_BUDGET_S`); then it fails typed, with nothing written."""
_SEQ_TABLES = ("events", "task_scope_writes")
"""The tables whose ``seq`` is AUTO_INCREMENT: a replayed insert takes the value the first
attempt was given (the server rolled that attempt back; the value is free, and the body may
already have used it, e.g. as ``win_seq``)."""


class _ReplayTx(Tx):
    """A transaction that survives its connection dying once (a learner's KILL, a restart).

    Every statement is kept with what it returned. A session that is killed has its open
    transaction rolled back by the server, so when a statement fails with a lost connection the
    transaction is run again on a new connection from its journal: each earlier statement must
    return exactly what it returned the first time (rows, affected-row count), else the body's
    decisions might not hold and the call fails typed (:class:`ServerUnavailableError`), with
    nothing written. Auto-increment inserts take their first value again (:data:`_SEQ_TABLES`).
    """

    def __init__(self, owner: ServerConnection, conn: pymysql.connections.Connection) -> None:
        self._owner = owner
        self.conn = conn
        super().__init__(conn.cursor(), "format")
        self.journal: list[tuple[str, tuple[Any, ...], list[Any], int, int]] = []
        self.wrote = False
        self.replays = 0

    def run(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        sql = sql.replace("?", "%s")
        try:
            self._cur.execute(sql, params)
        except Exception as exc:
            if not reconnect.is_lost(exc):
                raise
            self.replay(exc)
            self._execute_lost(sql, params)
        self.journal.append((sql, tuple(params), list(self._cur._rows or ()),
                             int(self._cur.rowcount), int(self._cur.lastrowid or 0)))
        if sql.lstrip()[:4].upper() not in ("SELE", "SHOW"):
            self.wrote = True
        return self._cur

    def _execute_lost(self, sql: str, params: tuple[Any, ...]) -> None:
        """The statement that failed, on the replayed connection (which may be ended too)."""
        while True:
            try:
                self._cur.execute(sql, params)
                return
            except Exception as exc:
                if not reconnect.is_lost(exc):
                    raise
                self.replay(exc)

    def replay(self, first: BaseException) -> None:
        """A new connection, the journal run again on it (:data:`MAX_REPLAYS` at most)."""
        if self.replays >= MAX_REPLAYS:
            raise reconnect.unavailable("using the ledger", first) from None
        self.replays += 1
        try:
            self.conn = self._owner._fresh()
            self.conn.begin()
            self._cur = self.conn.cursor()
            self._rerun()
        except ServerUnavailableError:
            raise
        except Exception as exc:
            if reconnect.is_lost(exc):
                self.replay(exc)  # ended again while replaying: once more, within the budget
                return
            raise

    def _rerun(self) -> None:
        for sql, params, rows, count, lastrowid in self.journal:
            if lastrowid and any(f"{self._owner.prefix}{t} " in sql for t in _SEQ_TABLES):
                sql = _AUTO_SEQ.sub(r"\1seq, \2%s, ", sql, count=1)
                params = (lastrowid, *params)
            self._cur.execute(sql, params)
            if list(self._cur._rows or ()) != rows or int(self._cur.rowcount) != count:
                _rollback(self.conn)
                raise ServerUnavailableError(
                    "The database server dropped the connection in the middle of a ledger "
                    "transaction, and the data it had read changed meanwhile; nothing of "
                    "that call was written.")


class ServerConnection(Connection):
    """MySQL protocol to the server, one connection per thread."""

    prefix = "bureau_"
    for_update = " FOR UPDATE"
    insert_ignore = "INSERT IGNORE"
    integrity_errors = (pymysql.err.IntegrityError,)
    retry_errors = (_Retryable,)

    def __init__(self, server: ServerSettings, connect_timeout: float = 10.0) -> None:
        self.server = server
        self.connect_timeout = connect_timeout
        self._local = threading.local()
        self._writes = 0
        self.create_schema()

    def create_schema(self) -> None:
        server = self.server
        try:
            with self.tx(write=True) as db:
                for ddl in SERVER_SCHEMA:
                    try:
                        db.run(ddl.format(p=self.prefix))
                    except pymysql.err.OperationalError as exc:
                        if exc.args[0] != 1050:  # created by another instance meanwhile
                            raise
                db.run(MARKS_DDL.format(p=self.prefix))
                for table, column, _, kind in ADDED_COLUMNS:  # tables from an older version
                    try:
                        db.run(f"ALTER TABLE {self.prefix}{table} ADD COLUMN {column} {kind}")
                    except pymysql.err.OperationalError as exc:
                        if exc.args[0] != 1060:  # duplicate column: already there
                            raise
        except pymysql.err.OperationalError as exc:
            raise ConfigurationError(
                f"Cannot use the ledger tables on {server.host}:{server.port}/{server.db_name}: "
                f"{exc}",
                "Check that the seekdb/OceanBase server runs and the database exists.",
            ) from exc

    def __repr__(self) -> str:  # the ledger's name in messages (see ServerLedger.__repr__)
        s = self.server
        return f"<ServerLedger {s.user}@{s.host}:{s.port}/{s.db_name}>"

    def _conn(self) -> pymysql.connections.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            try:
                conn.ping(reconnect=True)  # a session killed while idle: a new one, silently
                return conn
            except pymysql.err.Error:
                self._local.conn = None
        return self._fresh()

    def _fresh(self) -> pymysql.connections.Connection:
        """A new connection for this thread (the old one, if any, is dropped); a server that
        does not answer is :class:`ServerUnavailableError`, after one more try."""
        old = getattr(self._local, "conn", None)
        self._local.conn = None
        if old is not None:
            try:
                old.close()
            except Exception:  # noqa: BLE001 - already dead
                pass
        s = self.server

        def connect() -> pymysql.connections.Connection:
            return pymysql.connect(
                host=s.host, port=int(s.port), user=s.user, password=s.password,
                database=s.db_name, autocommit=False, charset="utf8mb4",
                cursorclass=pymysql.cursors.DictCursor, connect_timeout=self.connect_timeout,
                init_command=session_sql(), read_timeout=READ_TIMEOUT_S,
                write_timeout=READ_TIMEOUT_S,
            )

        conn = reconnect.retry(connect, "connecting to the ledger")
        self._local.conn = conn
        return conn

    @contextmanager
    def tx(self, write: bool = False) -> Iterator[Tx]:
        conn = self._conn()
        try:
            conn.begin()
        except Exception as exc:
            if not reconnect.is_lost(exc):
                raise
            conn = self._fresh()
            conn.begin()
        t = _ReplayTx(self, conn)
        try:
            yield t
            if t.wrote:
                self._mark(t)
        except pymysql.err.OperationalError as exc:
            _rollback(t.conn)
            if exc.args and exc.args[0] in _LOCK_CONFLICT:
                raise _Retryable(str(exc)) from exc
            raise
        except BaseException:
            _rollback(t.conn)
            raise
        finally:
            t._cur.close()
        self._commit(t)
        t.committed()

    def _mark(self, t: _ReplayTx) -> None:
        """Write this transaction's commit mark (and now and then sweep old marks)."""
        t.mark = secrets.token_hex(16)  # type: ignore[attr-defined]
        self._writes += 1
        if self._writes % MARKS_SWEEP_EVERY == 0:
            t.run(f"DELETE FROM {self.prefix}commit_marks WHERE at < ?",
                  (time.time() - MARKS_KEEP_S,))
        t.run(f"INSERT INTO {self.prefix}commit_marks (mark, at) VALUES (?, ?)",
              (t.mark, time.time()))  # type: ignore[attr-defined]

    def _commit(self, t: _ReplayTx) -> None:
        """COMMIT; if the connection dies during it, the mark says whether it happened, and a
        transaction that did not is replayed and committed once more."""
        try:
            t.conn.commit()
            return
        except Exception as exc:
            if not reconnect.is_lost(exc):
                raise
            first = exc
        if not t.wrote:
            self._local.conn = None  # a read: its answers were already read
            return
        if self._committed(t, first):
            return
        t.replay(first)
        try:
            t.conn.commit()
        except Exception as exc:
            if not reconnect.is_lost(exc) or not self._committed(t, exc):
                raise reconnect.unavailable("committing to the ledger", exc) from None

    def _committed(self, t: _ReplayTx, exc: BaseException) -> bool:
        try:
            conn = self._fresh()
            with conn.cursor() as cur:
                cur.execute(f"SELECT 1 FROM {self.prefix}commit_marks WHERE mark = %s",
                            (t.mark,))  # type: ignore[attr-defined]
                found = cur.fetchone() is not None
            conn.commit()
            return found
        except ServerUnavailableError:
            raise
        except Exception as exc2:
            if reconnect.is_lost(exc2):
                raise reconnect.unavailable("committing to the ledger", exc2) from None
            raise

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            self._local.conn = None
            conn.close()


class SnapshotStore:
    """The ``snapshots`` table: the scenario each case was created from (server store only)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def put(self, case_id: str, token: str | None, body: str) -> None:
        with self._conn.tx(write=True) as db:
            db.run(f"DELETE FROM {self._conn.t('snapshots')} WHERE case_id = ?", (case_id,))
            db.run(f"INSERT INTO {self._conn.t('snapshots')} (case_id, token, body)"
                   " VALUES (?, ?, ?)", (case_id, token, body))

    def get(self, case_id: str) -> str | None:
        with self._conn.tx() as db:
            row = db.one(f"SELECT body FROM {self._conn.t('snapshots')} WHERE case_id = ?",
                         (case_id,))
        return None if row is None else str(row["body"])

    def clear_case(self, db: Tx, case_id: str) -> None:
        db.run(f"DELETE FROM {self._conn.t('snapshots')} WHERE case_id = ?", (case_id,))


class ServerLedger(BaseLedger):
    """The stores over one seekdb/OceanBase server, plus the case snapshots."""

    connection: ServerConnection

    def __init__(self, server: ServerSettings, connect_timeout: float = 10.0,
                 key_path: Path | None = None) -> None:
        """``key_path``: the audit key, outside the server's tables (default: ``audit.key`` in
        the default data directory); every instance on one server needs the same key."""
        self.server = server
        connection = ServerConnection(server, connect_timeout)
        self.snapshots = SnapshotStore(connection)
        super().__init__(connection, AuditKeys(key_path or default_data_dir() / KEY_FILE),
                         case_rows=(self.snapshots,))


_LOGIN_REFUSED = {1045, 1044, 3118}
"""Access denied: a wrong password or an unknown account (1045), no rights on the database
(1044), or an account the room's guard locked (3118)."""


def check_login(server: ServerSettings, learner: str, connect_timeout: float = 10.0) -> None:
    """Log in to a classroom tenant once, before anything opens, so a wrong password or a
    removed learner is one clear :class:`TenantAccessError` instead of a PowerMem stack trace.

    The message names the learner, the server and the database, never the password (the
    server's own wording is not passed on: it names the client's address, not the learner).
    """
    try:
        pymysql.connect(host=server.host, port=int(server.port), user=server.user,
                        password=server.password, database=server.db_name,
                        connect_timeout=connect_timeout).close()
    except pymysql.err.OperationalError as exc:
        code = exc.args[0] if exc.args else None
        where = f"{server.host}:{server.port}"
        if code in _LOGIN_REFUSED:
            raise TenantAccessError(
                f"Learner {learner!r} cannot log in to the classroom server {where} "
                f"(database {server.db_name}): the password is not the current one, the "
                "learner was removed, or the room's guard locked the account.",
                "Ask the instructor for a new connection file (`python -m bureau classroom "
                "reset` issues one) and point BUREAU_CLASSROOM at it.") from None
        raise ConfigurationError(
            f"Cannot reach the classroom server {where} (MySQL error {code}).",
            "Check that the instructor's server is running and that host and port are right.",
        ) from None


def _rollback(conn: pymysql.connections.Connection) -> None:
    try:
        conn.rollback()
    except pymysql.err.Error:
        pass
