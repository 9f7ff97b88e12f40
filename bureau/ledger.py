"""The ledger: cases, events, publish records and cleanup tasks, in SQLite under the data directory.

It holds ids and metadata only, never a card body, a question or an answer: it is what outward
views and other processes read. SQLite in WAL mode with a busy timeout is safe across processes;
every operation opens its own short connection so threads never share one.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from .model import Event

SCHEMA = """
CREATE TABLE IF NOT EXISTS cases (
  case_id TEXT PRIMARY KEY, scenario_id TEXT NOT NULL, title TEXT NOT NULL,
  created_at TEXT NOT NULL, epoch INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, case_id TEXT NOT NULL, type TEXT NOT NULL,
  payload TEXT NOT NULL, at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_case ON events(case_id, seq);
CREATE TABLE IF NOT EXISTS publications (
  case_id TEXT NOT NULL, source_id TEXT NOT NULL, source_role TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'ready', 'failed')),
  copy_id TEXT, attempts INTEGER NOT NULL DEFAULT 1,
  owner TEXT NOT NULL, lease_until REAL NOT NULL,
  created_at REAL NOT NULL, updated_at REAL NOT NULL, error TEXT,
  PRIMARY KEY (case_id, source_id)
);
CREATE TABLE IF NOT EXISTS cleanup_tasks (
  case_id TEXT NOT NULL, card_id TEXT NOT NULL, owner_role TEXT NOT NULL,
  reason TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, created_at REAL NOT NULL,
  PRIMARY KEY (case_id, card_id)
);
"""


@dataclass(frozen=True)
class CaseRecord:
    case_id: str
    scenario_id: str
    title: str
    created_at: str
    epoch: int


@dataclass(frozen=True)
class Publication:
    case_id: str
    source_id: str
    source_role: str
    status: str
    copy_id: str | None
    attempts: int
    owner: str
    lease_until: float
    created_at: float
    updated_at: float
    error: str | None


@dataclass(frozen=True)
class CleanupTask:
    case_id: str
    card_id: str
    owner_role: str
    reason: str
    attempts: int


PROCESS_TOKEN = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
"""Who owns a publish reservation: host, pid and a random part (pids get reused)."""


def owner_alive(owner: str) -> bool:
    """True unless we can tell the owner process is gone (only checkable on this host)."""
    try:
        host, pid, _ = owner.split(":", 2)
        if host != socket.gethostname():
            return True
        if int(pid) == os.getpid():
            # Our own pid under another token: an earlier process whose pid we inherited.
            return owner == PROCESS_TOKEN
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (ValueError, PermissionError):
        return True
    return True


class Ledger:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=30)
        try:
            db.execute("PRAGMA busy_timeout=30000")
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)
        finally:
            db.close()

    @contextmanager
    def connect(self, immediate: bool = False) -> Iterator[sqlite3.Connection]:
        """One short-lived connection; ``immediate`` takes the write lock up front."""
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        db.row_factory = sqlite3.Row
        try:
            db.execute("PRAGMA busy_timeout=30000")
            db.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        finally:
            db.close()

    # -- cases -------------------------------------------------------------------------------
    def add_case(self, case_id: str, scenario_id: str, title: str) -> CaseRecord:
        now = datetime.now().isoformat(timespec="seconds")
        with self.connect(immediate=True) as db:
            db.execute(
                "INSERT INTO cases (case_id, scenario_id, title, created_at) VALUES (?, ?, ?, ?)",
                (case_id, scenario_id, title, now),
            )
        return CaseRecord(case_id, scenario_id, title, now, 0)

    def get_case(self, case_id: str) -> CaseRecord | None:
        with self.connect() as db:
            row = db.execute("SELECT * FROM cases WHERE case_id = ?", (case_id,)).fetchone()
        return CaseRecord(**dict(row)) if row else None

    def list_cases(self) -> list[CaseRecord]:
        with self.connect() as db:
            rows = db.execute("SELECT * FROM cases ORDER BY created_at, case_id").fetchall()
        return [CaseRecord(**dict(r)) for r in rows]

    def bump_epoch(self, case_id: str) -> None:
        with self.connect(immediate=True) as db:
            db.execute("UPDATE cases SET epoch = epoch + 1 WHERE case_id = ?", (case_id,))
            db.execute("DELETE FROM publications WHERE case_id = ?", (case_id,))

    def delete_case(self, case_id: str) -> None:
        with self.connect(immediate=True) as db:
            for table in ("cases", "events", "publications", "cleanup_tasks"):
                db.execute(f"DELETE FROM {table} WHERE case_id = ?", (case_id,))

    # -- events ------------------------------------------------------------------------------
    def append_event(self, case_id: str, type_: str, payload: dict[str, Any]) -> Event:
        at = datetime.now().isoformat(timespec="milliseconds")
        with self.connect(immediate=True) as db:
            cur = db.execute(
                "INSERT INTO events (case_id, type, payload, at) VALUES (?, ?, ?, ?)",
                (case_id, type_, json.dumps(payload, sort_keys=True), at),
            )
            seq = int(cur.lastrowid or 0)
        return Event(seq=seq, case_id=case_id, type=type_, payload=payload, at=at)

    def events(self, case_id: str, since: int = 0, limit: int = 10_000) -> list[Event]:
        with self.connect() as db:
            rows = db.execute(
                "SELECT * FROM events WHERE case_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                (case_id, since, limit),
            ).fetchall()
        return [
            Event(seq=r["seq"], case_id=r["case_id"], type=r["type"],
                  payload=json.loads(r["payload"]), at=r["at"])
            for r in rows
        ]

    # -- publications ------------------------------------------------------------------------
    def publication(self, case_id: str, source_id: str) -> Publication | None:
        with self.connect() as db:
            row = db.execute(
                "SELECT * FROM publications WHERE case_id = ? AND source_id = ?",
                (case_id, source_id),
            ).fetchone()
        return Publication(**dict(row)) if row else None

    def publications(self, case_id: str | None = None) -> list[Publication]:
        with self.connect() as db:
            if case_id is None:
                rows = db.execute("SELECT * FROM publications").fetchall()
            else:
                rows = db.execute(
                    "SELECT * FROM publications WHERE case_id = ?", (case_id,)
                ).fetchall()
        return [Publication(**dict(r)) for r in rows]

    def reserve(
        self, case_id: str, source_id: str, source_role: str, lease_s: float
    ) -> tuple[str, Publication]:
        """Atomically claim the right to publish a card.

        Returns ("reserved" | "taken_over" | "ready" | "held", record). A pending record may be
        taken over when its owner process is gone or its lease ran out; a failed one always.
        """
        now = time.time()
        with self.connect(immediate=True) as db:
            row = db.execute(
                "SELECT * FROM publications WHERE case_id = ? AND source_id = ?",
                (case_id, source_id),
            ).fetchone()
            if row is None:
                db.execute(
                    "INSERT INTO publications (case_id, source_id, source_role, status, attempts,"
                    " owner, lease_until, created_at, updated_at)"
                    " VALUES (?, ?, ?, 'pending', 1, ?, ?, ?, ?)",
                    (case_id, source_id, source_role, PROCESS_TOKEN, now + lease_s, now, now),
                )
                outcome = "reserved"
            else:
                rec = Publication(**dict(row))
                if rec.status == "ready":
                    return "ready", rec
                stale = rec.lease_until < now or not owner_alive(rec.owner)
                if rec.status == "pending" and not stale:
                    return "held", rec
                db.execute(
                    "UPDATE publications SET status = 'pending', owner = ?, lease_until = ?,"
                    " attempts = attempts + 1, updated_at = ?, error = NULL"
                    " WHERE case_id = ? AND source_id = ?",
                    (PROCESS_TOKEN, now + lease_s, now, case_id, source_id),
                )
                outcome = "taken_over"
            row = db.execute(
                "SELECT * FROM publications WHERE case_id = ? AND source_id = ?",
                (case_id, source_id),
            ).fetchone()
        return outcome, Publication(**dict(row))

    def mark_ready(self, case_id: str, source_id: str, copy_id: str) -> bool:
        """Complete our own reservation; False if another process took it over meanwhile."""
        with self.connect(immediate=True) as db:
            cur = db.execute(
                "UPDATE publications SET status = 'ready', copy_id = ?, updated_at = ?"
                " WHERE case_id = ? AND source_id = ? AND owner = ? AND status = 'pending'",
                (copy_id, time.time(), case_id, source_id, PROCESS_TOKEN),
            )
            return cur.rowcount == 1

    def mark_failed(self, case_id: str, source_id: str, error: str) -> None:
        with self.connect(immediate=True) as db:
            db.execute(
                "UPDATE publications SET status = 'failed', error = ?, updated_at = ?"
                " WHERE case_id = ? AND source_id = ? AND owner = ?",
                (error[:500], time.time(), case_id, source_id, PROCESS_TOKEN),
            )

    def drop_publication(self, case_id: str, source_id: str) -> None:
        with self.connect(immediate=True) as db:
            db.execute(
                "DELETE FROM publications WHERE case_id = ? AND source_id = ?",
                (case_id, source_id),
            )

    # -- cleanup tasks -----------------------------------------------------------------------
    def add_cleanup(self, case_id: str, card_id: str, owner_role: str, reason: str) -> None:
        with self.connect(immediate=True) as db:
            db.execute(
                "INSERT OR IGNORE INTO cleanup_tasks (case_id, card_id, owner_role, reason,"
                " created_at) VALUES (?, ?, ?, ?, ?)",
                (case_id, card_id, owner_role, reason, time.time()),
            )

    def cleanup_tasks(self, case_id: str | None = None) -> list[CleanupTask]:
        with self.connect() as db:
            q = "SELECT case_id, card_id, owner_role, reason, attempts FROM cleanup_tasks"
            rows = (
                db.execute(q).fetchall()
                if case_id is None
                else db.execute(q + " WHERE case_id = ?", (case_id,)).fetchall()
            )
        return [CleanupTask(**dict(r)) for r in rows]

    def finish_cleanup(self, case_id: str, card_id: str, done: bool) -> None:
        with self.connect(immediate=True) as db:
            if done:
                db.execute(
                    "DELETE FROM cleanup_tasks WHERE case_id = ? AND card_id = ?",
                    (case_id, card_id),
                )
            else:
                db.execute(
                    "UPDATE cleanup_tasks SET attempts = attempts + 1"
                    " WHERE case_id = ? AND card_id = ?",
                    (case_id, card_id),
                )
