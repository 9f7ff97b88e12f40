"""The ledger on a seekdb/OceanBase server, for deployments where several service instances share
one card store (``settings.store == "server"``).

Same tables, keys and rules as the SQLite ledger (everything lives in :class:`BaseLedger`); only
the connection differs: MySQL protocol through ``pymysql`` (already a dependency of pyseekdb and
pyobvector), one connection per thread, ``SELECT … FOR UPDATE`` inside a transaction for claims,
and the ``(case_id, source_id)`` primary key so two instances can never both reserve a card.
Tables are prefixed ``bureau_`` because they share the database with PowerMem's card table.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pymysql
import pymysql.cursors

from ..errors import ConfigurationError
from ..settings import ServerSettings
from .base import BaseLedger, Tx
from .task_scopes import TASK_SCOPE_SERVER_SCHEMA

SERVER_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS {p}cases (
      case_id VARCHAR(128) NOT NULL PRIMARY KEY, scenario_id VARCHAR(128) NOT NULL,
      title VARCHAR(512) NOT NULL, created_at VARCHAR(32) NOT NULL, epoch INT NOT NULL DEFAULT 0,
      token VARCHAR(32)
    )""",
    """CREATE TABLE IF NOT EXISTS {p}snapshots (
      case_id VARCHAR(128) NOT NULL PRIMARY KEY, token VARCHAR(32), body LONGTEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS {p}retired_spaces (
      store_id VARCHAR(128) NOT NULL PRIMARY KEY, case_id VARCHAR(128) NOT NULL,
      retired_at DOUBLE NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS {p}events (
      seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, case_id VARCHAR(128) NOT NULL,
      type VARCHAR(64) NOT NULL, payload LONGTEXT NOT NULL, at VARCHAR(32) NOT NULL,
      KEY {p}events_case (case_id, seq)
    )""",
    """CREATE TABLE IF NOT EXISTS {p}publications (
      case_id VARCHAR(128) NOT NULL, source_id VARCHAR(64) NOT NULL,
      source_role VARCHAR(128) NOT NULL, status VARCHAR(8) NOT NULL, copy_id VARCHAR(64),
      attempts INT NOT NULL DEFAULT 1, owner VARCHAR(255) NOT NULL, lease_until DOUBLE NOT NULL,
      created_at DOUBLE NOT NULL, updated_at DOUBLE NOT NULL, error VARCHAR(500),
      PRIMARY KEY (case_id, source_id)
    )""",
    """CREATE TABLE IF NOT EXISTS {p}cleanup_tasks (
      case_id VARCHAR(128) NOT NULL, card_id VARCHAR(64) NOT NULL,
      owner_role VARCHAR(128) NOT NULL, reason VARCHAR(255) NOT NULL,
      attempts INT NOT NULL DEFAULT 0, created_at DOUBLE NOT NULL,
      PRIMARY KEY (case_id, card_id)
    )""",
    """CREATE TABLE IF NOT EXISTS {p}card_limits (
      case_id VARCHAR(128) NOT NULL, card_id VARCHAR(64) NOT NULL, owner VARCHAR(128) NOT NULL,
      expires_at DOUBLE, revoked_at DOUBLE, reason VARCHAR(255),
      PRIMARY KEY (case_id, card_id)
    )""",
    """CREATE TABLE IF NOT EXISTS {p}grants (
      grant_id VARCHAR(64) NOT NULL PRIMARY KEY, case_id VARCHAR(128) NOT NULL,
      card_id VARCHAR(64) NOT NULL, requester VARCHAR(128), recipient VARCHAR(32),
      purpose VARCHAR(128), action VARCHAR(16) NOT NULL, created_at DOUBLE NOT NULL,
      expires_at DOUBLE, revoked_at DOUBLE, KEY {p}grants_case (case_id, card_id)
    )""",
    """CREATE TABLE IF NOT EXISTS {p}budget (
      case_id VARCHAR(128) NOT NULL, requester VARCHAR(128) NOT NULL,
      owner VARCHAR(128) NOT NULL, spent DOUBLE NOT NULL,
      PRIMARY KEY (case_id, requester, owner)
    )""",
    """CREATE TABLE IF NOT EXISTS {p}audit (
      seq BIGINT NOT NULL PRIMARY KEY, case_id VARCHAR(128) NOT NULL, token VARCHAR(32),
      kind VARCHAR(32) NOT NULL, action VARCHAR(32), entry LONGTEXT NOT NULL,
      prev_hash CHAR(64) NOT NULL, hash CHAR(64) NOT NULL, KEY {p}audit_case (case_id, seq)
    )""",
    """CREATE TABLE IF NOT EXISTS {p}runs (
      run_id VARCHAR(32) NOT NULL PRIMARY KEY, case_id VARCHAR(128) NOT NULL,
      token VARCHAR(32), role VARCHAR(64) NOT NULL, owner VARCHAR(255) NOT NULL,
      started_at DOUBLE NOT NULL, ended_at DOUBLE, KEY {p}runs_case (case_id, role)
    )""",
    """CREATE TABLE IF NOT EXISTS {p}audit_head (
      id INT NOT NULL PRIMARY KEY, seq BIGINT NOT NULL, hash CHAR(64) NOT NULL
    )""",
)

_LOCK_CONFLICT = {1205, 1213, 6002, 6005}
"""Lock wait timeout, deadlock, and OceanBase's transaction-rollback/row-lock-conflict codes."""


class _Retryable(Exception):
    """A lock conflict worth running the whole transaction again for."""


class ServerLedger(BaseLedger):
    prefix = "bureau_"
    for_update = " FOR UPDATE"
    insert_ignore = "INSERT IGNORE"
    integrity_errors = (pymysql.err.IntegrityError,)
    retry_errors = (_Retryable,)

    def __init__(self, server: ServerSettings, connect_timeout: float = 10.0) -> None:
        self.server = server
        self.connect_timeout = connect_timeout
        self._local = threading.local()
        try:
            with self.tx(write=True) as db:
                for ddl in (*SERVER_SCHEMA, *TASK_SCOPE_SERVER_SCHEMA):
                    try:
                        db.run(ddl.format(p=self.prefix))
                    except pymysql.err.OperationalError as exc:
                        if exc.args[0] != 1050:  # created by another instance meanwhile
                            raise
                try:  # tables made before case tokens existed
                    db.run(f"ALTER TABLE {self.prefix}cases ADD COLUMN token VARCHAR(32)")
                except pymysql.err.OperationalError as exc:
                    if exc.args[0] != 1060:  # duplicate column: already there
                        raise
        except pymysql.err.OperationalError as exc:
            raise ConfigurationError(
                f"Cannot use the ledger tables on {server.host}:{server.port}/{server.db_name}: "
                f"{exc}",
                "Check that the seekdb/OceanBase server runs and the database exists.",
            ) from exc

    case_tables = (*BaseLedger.case_tables, "snapshots")

    # -- case snapshots: instances on one server share no data directory -----------------------
    def put_snapshot(self, case_id: str, token: str | None, body: str) -> None:
        with self.tx(write=True) as db:
            db.run(f"DELETE FROM {self._t('snapshots')} WHERE case_id = ?", (case_id,))
            db.run(f"INSERT INTO {self._t('snapshots')} (case_id, token, body) VALUES (?, ?, ?)",
                   (case_id, token, body))

    def get_snapshot(self, case_id: str) -> str | None:
        with self.tx() as db:
            row = db.one(f"SELECT body FROM {self._t('snapshots')} WHERE case_id = ?", (case_id,))
        return None if row is None else str(row["body"])

    def __repr__(self) -> str:
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
                yield Tx(cur, "format")
        except pymysql.err.OperationalError as exc:
            _rollback(conn)
            if exc.args and exc.args[0] in _LOCK_CONFLICT:
                raise _Retryable(str(exc)) from exc
            raise
        except BaseException:
            _rollback(conn)
            raise
        conn.commit()

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            self._local.conn = None
            conn.close()


def _rollback(conn: pymysql.connections.Connection) -> None:
    try:
        conn.rollback()
    except pymysql.err.Error:
        pass
