"""The default ledger backend: one SQLite file under the data directory.

:class:`SqliteConnection` is the connection every store works over; :class:`Ledger` composes the
stores on it (see :mod:`bureau.ledger.base`).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..bounds import SQLITE_BUSY_S
from ..errors import DiskFullError, LedgerDamagedError, StoreTimeoutError
from ..storage.diskspace import check_writable
from .base import BaseLedger
from .connection import Connection, Tx
from .keys import KEY_FILE, AuditKeys
from .schema import ADDED_COLUMNS, SQLITE_SCHEMA


class SqliteConnection(Connection):
    """One SQLite file: WAL mode with a busy timeout, safe across processes; one connection per
    thread."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.create_schema()
        # Held open, never used: while one connection stays open, closing the short ones does
        # not checkpoint the WAL and delete it (an fsync each time: ~5-15 ms per event on a busy
        # 2-core machine, 0.3-1.8 ms with this connection open).
        self._keeper = sqlite3.connect(self.path, timeout=SQLITE_BUSY_S, check_same_thread=False)
        self._keeper.execute("SELECT count(*) FROM sqlite_master").fetchall()
        self._local = threading.local()

    def create_schema(self) -> None:
        from ..storage.files import private_file

        # Owner-only before SQLite opens it: the -wal/-shm files it creates take this mode.
        private_file(self.path, companions=("-wal", "-shm"))
        db = sqlite3.connect(self.path, timeout=SQLITE_BUSY_S)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SQLITE_SCHEMA)
            for table, column, kind, _ in ADDED_COLUMNS:  # a ledger from an older version
                if column not in {r[1] for r in db.execute(f"PRAGMA table_info({table})")}:
                    db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
            db.commit()
        except sqlite3.DatabaseError as exc:
            raise _damaged(self.path, exc) from exc
        finally:
            db.close()

    def __repr__(self) -> str:  # the ledger's name in messages (see Ledger.__repr__)
        return f"<Ledger sqlite {self.path}>"

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=SQLITE_BUSY_S, isolation_level=None)
        db.row_factory = sqlite3.Row
        # WAL + NORMAL: a commit survives a process crash (what the saga must survive) without
        # an fsync per event; an OS crash may lose the last commits, which recover() repairs.
        db.execute("PRAGMA synchronous=NORMAL")
        return db

    def _idle_connection(self) -> tuple[sqlite3.Connection, bool]:
        """This thread's connection (opened once: ~1 ms a transaction saved), or a fresh one.

        A fresh, short-lived one serves a transaction opened inside another on the same thread
        and a process forked with a ledger in hand (SQLite connections must not cross a fork).
        """
        mine = getattr(self._local, "conn", None)
        if mine is not None and mine[0] == os.getpid() and not self._local.busy:
            return mine[1], True
        if mine is None or mine[0] != os.getpid():
            self._local.conn = (os.getpid(), self._open())
            self._local.busy = False
            return self._local.conn[1], True
        return self._open(), False

    @contextmanager
    def connect(self, immediate: bool = False) -> Iterator[sqlite3.Connection]:
        """A transaction on this thread's connection; ``immediate`` takes the write lock up front."""
        if immediate:  # a write: refused up front when the disk is full, nothing half-done
            check_writable(self.path.parent)
        db, kept = self._idle_connection()
        if kept:
            self._local.busy = True
        try:
            db.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:  # a kept connection must come back clean
                    db.execute("ROLLBACK")
                raise
        except sqlite3.DatabaseError as exc:
            if type(exc) is sqlite3.DatabaseError:  # "malformed", "not a database": not a race
                raise _damaged(self.path, exc) from exc
            if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
                raise DiskFullError(f"The ledger {self.path} could not be written: the disk "
                                    f"is full ({exc}). Nothing of this call was kept.") from exc
            if getattr(exc, "sqlite_errorcode", None) in (sqlite3.SQLITE_BUSY,
                                                          sqlite3.SQLITE_LOCKED):
                raise StoreTimeoutError(
                    f"The ledger {self.path} stayed locked by another process for "
                    f"{SQLITE_BUSY_S} s ({exc}); nothing of this call was kept.",
                    "Run the cell again; if it keeps failing, another program holds the ledger "
                    "open in a transaction: close it, or restart the kernel.") from exc
            raise
        finally:
            if kept:
                self._local.busy = False
            else:
                db.close()

    @contextmanager
    def tx(self, write: bool = False) -> Iterator[Tx]:
        with self.connect(immediate=write) as db:
            t = Tx(db.cursor(), "qmark")
            yield t
        t.committed()


class Ledger(BaseLedger):
    """The default backend: the stores over one SQLite file under the data directory."""

    connection: SqliteConnection

    def __init__(self, path: Path, key_path: Path | None = None) -> None:
        """``key_path``: the audit key (default ``audit.key`` beside the ledger file)."""
        self.path = Path(path)
        super().__init__(SqliteConnection(self.path),
                         AuditKeys(key_path or self.path.with_name(KEY_FILE)))


def _damaged(path: Path, exc: BaseException) -> LedgerDamagedError:
    return LedgerDamagedError(
        f"The ledger {path} is damaged and cannot be read ({exc}).",
        "Move it aside and run `python -m bureau repair --adopt` to rebuild it from the card "
        "store and the case snapshots (see docs/threat-model.md, 'Repairing a data directory').",
    )
