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

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pymysql
import pymysql.cursors

from ..errors import ConfigurationError, TenantAccessError
from ..settings import ServerSettings, default_data_dir
from .base import BaseLedger
from .connection import Connection, Tx
from .keys import KEY_FILE, AuditKeys
from .schema import ADDED_COLUMNS, SERVER_SCHEMA

_LOCK_CONFLICT = {1205, 1213, 6002, 6005}
"""Lock wait timeout, deadlock, and OceanBase's transaction-rollback/row-lock-conflict codes."""


class _Retryable(Exception):
    """A lock conflict worth running the whole transaction again for."""


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
                conn.ping(reconnect=True)
                return conn
            except pymysql.err.Error:
                self._local.conn = None
        s = self.server
        conn = pymysql.connect(
            host=s.host, port=int(s.port), user=s.user, password=s.password, database=s.db_name,
            autocommit=False, charset="utf8mb4", cursorclass=pymysql.cursors.DictCursor,
            connect_timeout=self.connect_timeout,
        )
        self._local.conn = conn
        return conn

    @contextmanager
    def tx(self, write: bool = False) -> Iterator[Tx]:
        conn = self._conn()
        conn.begin()
        try:
            with conn.cursor() as cur:
                t = Tx(cur, "format")
                yield t
        except pymysql.err.OperationalError as exc:
            _rollback(conn)
            if exc.args and exc.args[0] in _LOCK_CONFLICT:
                raise _Retryable(str(exc)) from exc
            raise
        except BaseException:
            _rollback(conn)
            raise
        conn.commit()
        t.committed()

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


_LOGIN_REFUSED = {1045, 1044}
"""Access denied: a wrong password or an unknown account (1045), or no rights on the database
(1044)."""


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
                f"(database {server.db_name}): the password is not the current one, or the "
                "learner was removed.",
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
