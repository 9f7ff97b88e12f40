"""The ledger: cases, events, publish records and cleanup tasks.

It holds ids and metadata only, never a card body, a question or an answer: it is what outward
views and other processes read. Two backends share every query and rule below:

* :class:`~bureau.ledger.sqlite.Ledger` (default): SQLite under the data directory, WAL mode
  with a busy timeout, safe across processes; one connection per thread.
* :class:`~bureau.ledger.server.ServerLedger` (``settings.store == "server"``): the same tables
  on the seekdb/OceanBase server that holds the cards, so several service instances share one
  truth (and the case snapshots, since they share no data directory).

Publish records are keyed by (case, source card). A record's ``attempts`` counter is its fencing
token: every state change after a reservation names the attempt it belongs to, so a publisher
whose reservation was taken over can no longer complete or fail it.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
import uuid
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..errors import AuditTamperedError, CaseExistsError, UnknownCaseError, UnknownGrantError
from ..mediation.audit import GENESIS, canonical, entry_hash, verify_chain
from ..mediation.grants import Grant
from ..model import CaseSpace, Event
from .task_scopes import TASK_SCOPE_SCHEMA, TASK_SCOPE_TABLES, TaskScopeLedger

if TYPE_CHECKING:
    pass

SCHEMA = """
CREATE TABLE IF NOT EXISTS cases (
  case_id TEXT PRIMARY KEY, scenario_id TEXT NOT NULL, title TEXT NOT NULL,
  created_at TEXT NOT NULL, epoch INTEGER NOT NULL DEFAULT 0, token TEXT
);
CREATE TABLE IF NOT EXISTS retired_spaces (
  store_id TEXT PRIMARY KEY, case_id TEXT NOT NULL, retired_at REAL NOT NULL
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
CREATE TABLE IF NOT EXISTS card_limits (
  case_id TEXT NOT NULL, card_id TEXT NOT NULL, owner TEXT NOT NULL,
  expires_at REAL, revoked_at REAL, reason TEXT,
  PRIMARY KEY (case_id, card_id)
);
CREATE TABLE IF NOT EXISTS grants (
  grant_id TEXT PRIMARY KEY, case_id TEXT NOT NULL, card_id TEXT NOT NULL,
  requester TEXT, recipient TEXT, purpose TEXT, action TEXT NOT NULL,
  created_at REAL NOT NULL, expires_at REAL, revoked_at REAL
);
CREATE INDEX IF NOT EXISTS grants_case ON grants(case_id, card_id);
CREATE TABLE IF NOT EXISTS budget (
  case_id TEXT NOT NULL, requester TEXT NOT NULL, owner TEXT NOT NULL, spent REAL NOT NULL,
  PRIMARY KEY (case_id, requester, owner)
);
CREATE TABLE IF NOT EXISTS audit (
  seq INTEGER PRIMARY KEY, case_id TEXT NOT NULL, token TEXT, kind TEXT NOT NULL,
  action TEXT, entry TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_case ON audit(case_id, seq);
CREATE TABLE IF NOT EXISTS audit_head (
  id INTEGER PRIMARY KEY, seq INTEGER NOT NULL, hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY, case_id TEXT NOT NULL, token TEXT, role TEXT NOT NULL,
  owner TEXT NOT NULL, started_at REAL NOT NULL, ended_at REAL
);
CREATE INDEX IF NOT EXISTS runs_case ON runs(case_id, role);
CREATE TRIGGER IF NOT EXISTS audit_append_only_update BEFORE UPDATE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit ledger is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_append_only_delete BEFORE DELETE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit ledger is append-only'); END;
"""
SCHEMA += TASK_SCOPE_SCHEMA  # shared task scopes (issue 14): bureau/ledger/task_scopes.py


@dataclass(frozen=True)
class CaseRecord:
    case_id: str
    scenario_id: str
    title: str
    created_at: str
    epoch: int
    token: str | None = None
    """Made when the case is created; a holder whose token differs holds a deleted case. Cases
    made before tokens existed have none and keep their original store namespace."""

    @property
    def space(self) -> CaseSpace:
        return CaseSpace(self.case_id, store_id_for(self.case_id, self.token, self.epoch))


def store_id_for(case_id: str, token: str | None, epoch: int) -> str:
    """The store namespace (PowerMem ``user_id``) of one incarnation and epoch of a case."""
    if not token:
        return f"case:{case_id}"
    return f"case:{case_id}#{token}:{epoch}"


def parse_store_id(store_id: str) -> tuple[str, str | None, int] | None:
    """(case id, token, epoch) of a namespace :func:`store_id_for` made, else None."""
    if not store_id.startswith("case:"):
        return None
    rest = store_id[5:]
    if "#" not in rest:
        return rest, None, 0
    case_id, _, tail = rest.rpartition("#")
    token, _, epoch = tail.partition(":")
    return (case_id, token, int(epoch)) if epoch.isdigit() and token else None


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
class RunRecord:
    """One run of a role (issue 14): its ephemeral cards live under ``run:<run_id>:<role>``.

    ``owner`` is the process that started it (:data:`PROCESS_TOKEN`): when that process is gone,
    the next open sweeps the run. ``ended_at`` is set when an end began: from then on the run
    accepts no more writes, and its row goes once its cards are verified gone.
    """

    run_id: str
    case_id: str
    token: str | None
    role: str
    owner: str
    started_at: float
    ended_at: float | None = None


@dataclass(frozen=True)
class CleanupTask:
    case_id: str
    card_id: str
    owner_role: str
    reason: str
    attempts: int


def _new_token() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


PROCESS_TOKEN = _new_token()
"""Who owns a publish reservation: host, pid and a random part (pids get reused)."""


def _after_fork() -> None:  # a forked child is another owner, not its parent
    global PROCESS_TOKEN
    PROCESS_TOKEN = _new_token()


os.register_at_fork(after_in_child=_after_fork)


def _event(row: dict[str, Any]) -> Event:
    return Event(seq=int(row["seq"]), case_id=row["case_id"], type=row["type"],
                 payload=json.loads(row["payload"]), at=row["at"])


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


def is_stale(rec: Publication, now: float | None = None) -> bool:
    """A pending reservation nobody is working on any more: lease over or owner process gone."""
    now = time.time() if now is None else now
    return rec.lease_until < now or not owner_alive(rec.owner)


class Tx:
    """One transaction: ``?`` placeholders, rows as dicts."""

    def __init__(self, cursor: Any, paramstyle: str) -> None:
        self._cur = cursor
        self._format = paramstyle == "format"

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


class BaseLedger(TaskScopeLedger):
    """Every rule of the ledger, over any DB-API backend (see the subclasses for connections)."""

    prefix = ""
    """Table name prefix (the server backend shares a database with PowerMem's tables)."""
    for_update = ""
    """Row-lock suffix for SELECTs inside a write transaction (SQLite locks the whole file)."""
    insert_ignore = "INSERT OR IGNORE"
    case_tables: tuple[str, ...] = ("cases", "events", "publications", "cleanup_tasks",
                                    "card_limits", "grants", "budget", "runs",
                                    *TASK_SCOPE_TABLES)
    """Tables whose rows belong to one case (deleted with it). The audit ledger is not one of
    them: it is append-only and outlives the cases it describes."""
    integrity_errors: tuple[type[BaseException], ...] = (sqlite3.IntegrityError,)
    retry_errors: tuple[type[BaseException], ...] = ()

    def tx(self, write: bool = False) -> AbstractContextManager[Tx]:
        """A transaction; ``write`` takes the write lock up front where the backend has one."""
        raise NotImplementedError

    def _t(self, name: str) -> str:
        return self.prefix + name

    def _retrying(self, fn: Any, tries: int = 8) -> Any:
        """Run ``fn`` (one whole transaction) again after a lost insert race or a lock timeout."""
        for i in range(tries):
            try:
                return fn()
            except self.integrity_errors + self.retry_errors:
                if i == tries - 1:
                    raise
                time.sleep(0.01 * (i + 1))
        raise AssertionError("unreachable")

    # -- cases -------------------------------------------------------------------------------
    def add_case(
        self, case_id: str, scenario_id: str, title: str, token: str | None = None,
        epoch: int = 0,
    ) -> CaseRecord:
        now = datetime.now().isoformat(timespec="seconds")
        try:
            with self.tx(write=True) as db:
                db.run(
                    f"INSERT INTO {self._t('cases')} (case_id, scenario_id, title, created_at,"
                    " epoch, token) VALUES (?, ?, ?, ?, ?, ?)",
                    (case_id, scenario_id, title, now, epoch, token),
                )
        except self.integrity_errors as exc:
            raise CaseExistsError(f"A case with id {case_id!r} already exists.") from exc
        return CaseRecord(case_id, scenario_id, title, now, epoch, token)

    def get_case(self, case_id: str) -> CaseRecord | None:
        with self.tx() as db:
            row = db.one(f"SELECT * FROM {self._t('cases')} WHERE case_id = ?", (case_id,))
        return CaseRecord(**row) if row else None

    def list_cases(self) -> list[CaseRecord]:
        with self.tx() as db:
            rows = db.all(f"SELECT * FROM {self._t('cases')} ORDER BY created_at, case_id")
        return [CaseRecord(**r) for r in rows]

    def _live(self, db: Tx, case_id: str, token: str | None) -> CaseRecord:
        """The case's record inside a transaction, if it is still the incarnation ``token``."""
        row = db.one(f"SELECT * FROM {self._t('cases')} WHERE case_id = ?{self.for_update}",
                     (case_id,))
        if row is None or row["token"] != token:
            raise UnknownCaseError(f"Case {case_id} no longer exists (it was deleted).")
        return CaseRecord(**row)

    def _retire(self, db: Tx, rec: CaseRecord) -> None:
        db.run(
            f"{self.insert_ignore} INTO {self._t('retired_spaces')} (store_id, case_id,"
            " retired_at) VALUES (?, ?, ?)",
            (rec.space.store_id, rec.case_id, time.time()),
        )

    def bump_epoch(self, case_id: str, token: str | None = None) -> CaseRecord:
        """Reset: retire the case's store namespace and move it to a fresh, empty one.

        Returns the record before the reset (its space is the one to purge).
        """
        with self.tx(write=True) as db:
            old = self._live(db, case_id, token)
            if old.token:  # cases without a token keep their one namespace (purged in place)
                self._retire(db, old)
            db.run(f"UPDATE {self._t('cases')} SET epoch = epoch + 1 WHERE case_id = ?", (case_id,))
            db.run(f"DELETE FROM {self._t('publications')} WHERE case_id = ?", (case_id,))
            db.run(f"DELETE FROM {self._t('cleanup_tasks')} WHERE case_id = ?", (case_id,))
            for table in ("card_limits", "grants", "budget"):  # the cards they name are gone
                db.run(f"DELETE FROM {self._t(table)} WHERE case_id = ?", (case_id,))
            for table in TASK_SCOPE_TABLES:  # task scopes live in the purged namespace too
                db.run(f"DELETE FROM {self._t(table)} WHERE case_id = ?", (case_id,))
            # and so do the runs' ephemeral cards: a run started before the reset has ended (its
            # next write sees no row and takes its card back), so it cannot refill the new space
            db.run(f"DELETE FROM {self._t('runs')} WHERE case_id = ?", (case_id,))
        return old

    def delete_case(self, case_id: str, token: str | None = None) -> CaseRecord:
        """Forget a case and retire its namespace in one transaction; returns the old record."""
        with self.tx(write=True) as db:
            old = self._live(db, case_id, token)
            self._retire(db, old)
            for table in self.case_tables:
                db.run(f"DELETE FROM {self._t(table)} WHERE case_id = ?", (case_id,))
        return old

    def retired_spaces(self) -> set[str]:
        with self.tx() as db:
            return {r["store_id"] for r in db.all(
                f"SELECT store_id FROM {self._t('retired_spaces')}")}

    def unretire(self, store_id: str) -> None:
        """A namespace reused by a legacy (token-less) case id is live again."""
        with self.tx(write=True) as db:
            db.run(f"DELETE FROM {self._t('retired_spaces')} WHERE store_id = ?", (store_id,))

    def restore_publication(self, case_id: str, source_id: str, source_role: str,
                            copy_id: str) -> None:
        """Repair: a ready record for a board copy found in the store (see bureau.service.repair)."""
        now = time.time()
        with self.tx(write=True) as db:
            db.run(
                f"{self.insert_ignore} INTO {self._t('publications')} (case_id, source_id,"
                " source_role, status, copy_id, attempts, owner, lease_until, created_at,"
                " updated_at, error) VALUES (?, ?, ?, 'ready', ?, 1, 'repair', 0, ?, ?, NULL)",
                (case_id, source_id, source_role, copy_id, now, now),
            )

    # -- events ------------------------------------------------------------------------------
    def append_event(self, case_id: str, type_: str, payload: dict[str, Any]) -> Event:
        at = datetime.now().isoformat(timespec="milliseconds")
        with self.tx(write=True) as db:
            cur = db.run(
                f"INSERT INTO {self._t('events')} (case_id, type, payload, at) VALUES (?, ?, ?, ?)",
                (case_id, type_, json.dumps(payload, sort_keys=True), at),
            )
            seq = int(cur.lastrowid or 0)
        return Event(seq=seq, case_id=case_id, type=type_, payload=payload, at=at)

    def append_events(
        self, case_id: str, items: list[tuple[str, dict[str, Any]]], token: Any = ...
    ) -> list[Event]:
        """Several events in one transaction (seeding writes one per card).

        With ``token``, only while the case is still that incarnation (checked in the same
        transaction, so an old holder of a deleted case cannot write into a new one's log).
        """
        at = datetime.now().isoformat(timespec="milliseconds")
        out = []
        with self.tx(write=True) as db:
            if token is not ...:
                self._live(db, case_id, token)
            for type_, payload in items:
                cur = db.run(
                    f"INSERT INTO {self._t('events')} (case_id, type, payload, at)"
                    " VALUES (?, ?, ?, ?)",
                    (case_id, type_, json.dumps(payload, sort_keys=True), at),
                )
                out.append(Event(seq=int(cur.lastrowid or 0), case_id=case_id, type=type_,
                                 payload=payload, at=at))
        return out

    def events(self, case_id: str, since: int = 0, limit: int = 10_000) -> list[Event]:
        with self.tx() as db:
            rows = db.all(
                f"SELECT * FROM {self._t('events')} WHERE case_id = ? AND seq > ?"
                " ORDER BY seq LIMIT ?",
                (case_id, since, limit),
            )
        return [_event(r) for r in rows]

    def last_event(self, case_id: str, type_: str | None = None) -> Event | None:
        """The newest event of a case (of one type): one indexed query, however long the case."""
        where, params = "case_id = ?", (case_id,)
        if type_ is not None:
            where, params = where + " AND type = ?", (case_id, type_)
        with self.tx() as db:
            row = db.one(
                f"SELECT * FROM {self._t('events')} WHERE {where} ORDER BY seq DESC LIMIT 1",
                params,
            )
        return _event(row) if row else None

    # -- publications ------------------------------------------------------------------------
    def _pub_where(self) -> str:
        return f"{self._t('publications')} WHERE case_id = ? AND source_id = ?"

    def publication(self, case_id: str, source_id: str) -> Publication | None:
        with self.tx() as db:
            row = db.one(f"SELECT * FROM {self._pub_where()}", (case_id, source_id))
        return Publication(**row) if row else None

    def publications(self, case_id: str | None = None) -> list[Publication]:
        with self.tx() as db:
            if case_id is None:
                rows = db.all(f"SELECT * FROM {self._t('publications')}")
            else:
                rows = db.all(
                    f"SELECT * FROM {self._t('publications')} WHERE case_id = ?", (case_id,)
                )
        return [Publication(**r) for r in rows]

    def reserve(
        self, case_id: str, source_id: str, source_role: str, lease_s: float
    ) -> tuple[str, Publication]:
        """Atomically claim the right to publish a card.

        Returns ("reserved" | "taken_over" | "ready" | "held", record). A pending record may be
        taken over when its owner process is gone or its lease ran out; a failed one always.
        A plain read answers "ready" and "held" without taking any lock; only a claim takes the
        write lock (SQLite) or the row lock (server), and two instances inserting the same key
        at once cannot both succeed: the primary key refuses the second, which then looks again.
        """
        seen = self.publication(case_id, source_id)
        if seen is not None:
            if seen.status == "ready":
                return "ready", seen
            if seen.status == "pending" and not is_stale(seen):
                return "held", seen
        return self._retrying(lambda: self._claim(case_id, source_id, source_role, lease_s))

    def _claim(
        self, case_id: str, source_id: str, source_role: str, lease_s: float
    ) -> tuple[str, Publication]:
        now = time.time()
        with self.tx(write=True) as db:
            row = db.one(
                f"SELECT * FROM {self._pub_where()}{self.for_update}", (case_id, source_id)
            )
            if row is None:
                db.run(
                    f"INSERT INTO {self._t('publications')} (case_id, source_id, source_role,"
                    " status, copy_id, attempts, owner, lease_until, created_at, updated_at, error)"
                    " VALUES (?, ?, ?, 'pending', NULL, 1, ?, ?, ?, ?, NULL)",
                    (case_id, source_id, source_role, PROCESS_TOKEN, now + lease_s, now, now),
                )
                outcome = "reserved"
            else:
                rec = Publication(**row)
                if rec.status == "ready":
                    return "ready", rec
                if rec.status == "pending" and not is_stale(rec, now):
                    return "held", rec
                db.run(
                    f"UPDATE {self._t('publications')} SET status = 'pending', owner = ?,"
                    " lease_until = ?, attempts = attempts + 1, updated_at = ?, error = NULL"
                    " WHERE case_id = ? AND source_id = ?",
                    (PROCESS_TOKEN, now + lease_s, now, case_id, source_id),
                )
                outcome = "taken_over"
            row = db.one(f"SELECT * FROM {self._pub_where()}", (case_id, source_id))
        assert row is not None
        return outcome, Publication(**row)

    def _fenced(self, sql_set: str, params: tuple[Any, ...], case_id: str, source_id: str,
                attempt: int, status: str = "pending", owner: str | None = None) -> bool:
        """Change a record only if it is still in the state the caller saw (compare-and-set)."""
        where = " AND attempts = ? AND status = ?"
        extra: tuple[Any, ...] = (attempt, status)
        if owner is not None:
            where += " AND owner = ?"
            extra += (owner,)
        with self.tx(write=True) as db:
            cur = db.run(
                f"UPDATE {self._t('publications')} SET {sql_set}"
                f" WHERE case_id = ? AND source_id = ?{where}",
                (*params, case_id, source_id, *extra),
            )
            return cur.rowcount == 1

    def renew(self, case_id: str, source_id: str, attempt: int, lease_s: float) -> bool:
        """Extend our own reservation; False if it was taken over (we no longer own it)."""
        now = time.time()
        return self._fenced("lease_until = ?, updated_at = ?", (now + lease_s, now),
                            case_id, source_id, attempt, owner=PROCESS_TOKEN)

    def mark_ready(self, case_id: str, source_id: str, copy_id: str, attempt: int) -> bool:
        """Complete our own reservation; False if another publisher took it over meanwhile."""
        return self._fenced("status = 'ready', copy_id = ?, updated_at = ?",
                            (copy_id, time.time()), case_id, source_id, attempt,
                            owner=PROCESS_TOKEN)

    def mark_failed(self, case_id: str, source_id: str, attempt: int, error: str) -> bool:
        """Fail our own reservation; False if it is no longer ours."""
        return self._fenced("status = 'failed', error = ?, updated_at = ?",
                            (error[:500], time.time()), case_id, source_id, attempt,
                            owner=PROCESS_TOKEN)

    def force_ready(self, rec: Publication, copy_id: str) -> bool:
        """Recovery: complete someone else's abandoned record, if nobody changed it since."""
        return self._fenced("status = 'ready', copy_id = ?, updated_at = ?, error = NULL",
                            (copy_id, time.time()), rec.case_id, rec.source_id, rec.attempts,
                            status=rec.status)

    def abandon(self, rec: Publication, error: str) -> bool:
        """Recovery: fail someone else's abandoned pending record, if nobody changed it since."""
        return self._fenced("status = 'failed', error = ?, updated_at = ?",
                            (error[:500], time.time()), rec.case_id, rec.source_id, rec.attempts,
                            status=rec.status)

    def drop_publication(self, case_id: str, source_id: str, rec: Publication | None = None) -> bool:
        """Forget a record (only if it is still ``rec``, when given)."""
        sql = f"DELETE FROM {self._pub_where()}"
        params: tuple[Any, ...] = (case_id, source_id)
        if rec is not None:
            sql += " AND attempts = ? AND status = ?"
            params += (rec.attempts, rec.status)
        with self.tx(write=True) as db:
            return db.run(sql, params).rowcount == 1

    # -- cleanup tasks -----------------------------------------------------------------------
    def add_cleanup(self, case_id: str, card_id: str, owner_role: str, reason: str) -> None:
        with self.tx(write=True) as db:
            db.run(
                f"{self.insert_ignore} INTO {self._t('cleanup_tasks')} (case_id, card_id,"
                " owner_role, reason, attempts, created_at) VALUES (?, ?, ?, ?, 0, ?)",
                (case_id, card_id, owner_role, reason, time.time()),
            )

    def cleanup_tasks(self, case_id: str | None = None) -> list[CleanupTask]:
        q = f"SELECT case_id, card_id, owner_role, reason, attempts FROM {self._t('cleanup_tasks')}"
        with self.tx() as db:
            rows = db.all(q) if case_id is None else db.all(q + " WHERE case_id = ?", (case_id,))
        return [CleanupTask(**r) for r in rows]

    def finish_cleanup(self, case_id: str, card_id: str, done: bool) -> None:
        where = " WHERE case_id = ? AND card_id = ?"
        with self.tx(write=True) as db:
            if done:
                db.run(f"DELETE FROM {self._t('cleanup_tasks')}{where}", (case_id, card_id))
            else:
                db.run(
                    f"UPDATE {self._t('cleanup_tasks')} SET attempts = attempts + 1{where}",
                    (case_id, card_id),
                )

    # -- purpose-bound mediation: card limits, grants, budget, audit (issue 13) ----------------
    def _dead(self, db: Tx, case_id: str, now: float) -> dict[str, tuple[str, str]]:
        rows = db.all(
            f"SELECT card_id, owner, expires_at, revoked_at FROM {self._t('card_limits')}"
            " WHERE case_id = ? AND (revoked_at IS NOT NULL OR expires_at <= ?)",
            (case_id, now),
        )
        return {r["card_id"]: (r["owner"], "revoked" if r["revoked_at"] is not None
                               else "expired") for r in rows}

    def case_view(
        self, case_id: str, now: float | None = None
    ) -> tuple[CaseRecord | None, dict[str, tuple[str, str]]]:
        """The case's record and its dead cards (``{card_id: (owner, "revoked"|"expired")}``),
        in one read transaction: what every read path checks first."""
        now = time.time() if now is None else now
        with self.tx() as db:
            row = db.one(f"SELECT * FROM {self._t('cases')} WHERE case_id = ?", (case_id,))
            dead = self._dead(db, case_id, now) if row else {}
        return (CaseRecord(**row) if row else None), dead

    def mediation_view(
        self, case_id: str, requester: str, now: float | None = None
    ) -> tuple[CaseRecord | None, dict[str, tuple[str, str]], list[Grant], dict[str, float]]:
        """Record, dead cards, grants and this requester's spent budget: one transaction."""
        now = time.time() if now is None else now
        with self.tx() as db:
            row = db.one(f"SELECT * FROM {self._t('cases')} WHERE case_id = ?", (case_id,))
            if row is None:
                return None, {}, [], {}
            dead = self._dead(db, case_id, now)
            grants = [Grant(**g) for g in db.all(
                f"SELECT * FROM {self._t('grants')} WHERE case_id = ? AND revoked_at IS NULL",
                (case_id,))]
            spent = {r["owner"]: float(r["spent"]) for r in db.all(
                f"SELECT owner, spent FROM {self._t('budget')} WHERE case_id = ? AND requester = ?",
                (case_id, requester))}
        return CaseRecord(**row), dead, grants, spent

    def limit_card(
        self, case_id: str, token: str | None, card_id: str, owner: str, *,
        expires_at: float | None = None, revoke: bool = False, reason: str | None = None,
        audit: list[dict[str, Any]] | None = None,
    ) -> None:
        """Set a card's expiry and/or revoke it (final), with its audit entries, in one
        transaction, while the case is still the incarnation ``token``."""
        now = time.time()

        def run() -> None:
            with self.tx(write=True) as db:
                self._live(db, case_id, token)
                row = db.one(f"SELECT * FROM {self._t('card_limits')} WHERE case_id = ? AND"
                             f" card_id = ?{self.for_update}", (case_id, card_id))
                if row is None:
                    db.run(f"INSERT INTO {self._t('card_limits')} (case_id, card_id, owner,"
                           " expires_at, revoked_at, reason) VALUES (?, ?, ?, ?, ?, ?)",
                           (case_id, card_id, owner, expires_at, now if revoke else None, reason))
                else:
                    db.run(f"UPDATE {self._t('card_limits')} SET expires_at = ?, revoked_at = ?,"
                           " reason = ? WHERE case_id = ? AND card_id = ?",
                           (expires_at if expires_at is not None else row["expires_at"],
                            row["revoked_at"] or (now if revoke else None),
                            reason or row["reason"], case_id, card_id))
                self._append_audit(db, case_id, token, audit or [])

        self._retrying(run)

    def card_limits(self, case_id: str) -> list[dict[str, Any]]:
        """Every expiry and revocation of a case (the audit view marks cards with them)."""
        with self.tx() as db:
            return db.all(f"SELECT * FROM {self._t('card_limits')} WHERE case_id = ?", (case_id,))

    def add_grant(self, grant: Grant, token: str | None, audit: list[dict[str, Any]]) -> Grant:
        with self.tx(write=True) as db:
            self._live(db, grant.case_id, token)
            db.run(f"INSERT INTO {self._t('grants')} (grant_id, case_id, card_id, requester,"
                   " recipient, purpose, action, created_at, expires_at, revoked_at)"
                   " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
                   (grant.grant_id, grant.case_id, grant.card_id, grant.requester,
                    grant.recipient, grant.purpose, grant.action, grant.created_at,
                    grant.expires_at))
            self._append_audit(db, grant.case_id, token, audit)
        return grant

    def revoke_grant(self, case_id: str, token: str | None, grant_id: str,
                     audit: list[dict[str, Any]]) -> None:
        with self.tx(write=True) as db:
            self._live(db, case_id, token)
            cur = db.run(f"UPDATE {self._t('grants')} SET revoked_at = ? WHERE case_id = ? AND"
                         " grant_id = ? AND revoked_at IS NULL", (time.time(), case_id, grant_id))
            if cur.rowcount != 1:
                raise UnknownGrantError(f"Case {case_id} has no active grant {grant_id!r}.")
            self._append_audit(db, case_id, token, audit)

    def grants(self, case_id: str) -> list[Grant]:
        with self.tx() as db:
            rows = db.all(f"SELECT * FROM {self._t('grants')} WHERE case_id = ?"
                          " ORDER BY created_at", (case_id,))
        return [Grant(**r) for r in rows]

    def commit_mediation(
        self, case_id: str, token: str | None, requester: str, seen: dict[str, float],
        charges: dict[str, float], audit: list[dict[str, Any]],
        events: list[tuple[str, dict[str, Any]]],
    ) -> list[Event] | None:
        """Budget charges, audit entries and events of one invocation, in one transaction.

        Optimistic: if another holder (any process) spent this requester's budget for one of
        these owners since ``seen`` was read, nothing is written and ``None`` comes back; the
        caller decides again on fresh figures. So two processes can never both spend the last
        of a budget.
        """
        def run() -> list[Event] | None:
            with self.tx(write=True) as db:
                self._live(db, case_id, token)
                for owner, cost in charges.items():
                    row = db.one(f"SELECT spent FROM {self._t('budget')} WHERE case_id = ? AND"
                                 f" requester = ? AND owner = ?{self.for_update}",
                                 (case_id, requester, owner))
                    now_spent = float(row["spent"]) if row else 0.0
                    if abs(now_spent - seen.get(owner, 0.0)) > 1e-9:
                        return None
                    if row is None:
                        db.run(f"INSERT INTO {self._t('budget')} (case_id, requester, owner,"
                               " spent) VALUES (?, ?, ?, ?)", (case_id, requester, owner, cost))
                    else:
                        db.run(f"UPDATE {self._t('budget')} SET spent = ? WHERE case_id = ? AND"
                               " requester = ? AND owner = ?",
                               (now_spent + cost, case_id, requester, owner))
                self._append_audit(db, case_id, token, audit)
                return self._insert_events(db, case_id, events)

        return self._retrying(run)  # type: ignore[no-any-return]

    def _insert_events(self, db: Tx, case_id: str,
                       items: list[tuple[str, dict[str, Any]]]) -> list[Event]:
        at = datetime.now().isoformat(timespec="milliseconds")
        out = []
        for type_, payload in items:
            cur = db.run(
                f"INSERT INTO {self._t('events')} (case_id, type, payload, at) VALUES (?, ?, ?, ?)",
                (case_id, type_, json.dumps(payload, sort_keys=True), at),
            )
            out.append(Event(seq=int(cur.lastrowid or 0), case_id=case_id, type=type_,
                             payload=payload, at=at))
        return out

    def _append_audit(self, db: Tx, case_id: str, token: str | None,
                      entries: list[dict[str, Any]]) -> None:
        """Append entries to the hash chain (the head row serialises appenders)."""
        if not entries:
            return
        db.run(f"{self.insert_ignore} INTO {self._t('audit_head')} (id, seq, hash)"
               " VALUES (1, 0, ?)", (GENESIS,))
        head = db.one(f"SELECT seq, hash FROM {self._t('audit_head')} WHERE id = 1"
                      f"{self.for_update}")
        assert head is not None
        seq, prev = int(head["seq"]), str(head["hash"])
        at = datetime.now().astimezone().isoformat(timespec="milliseconds")
        for entry in entries:
            seq += 1
            body = canonical({**entry, "case_id": case_id, "at": at})
            digest = entry_hash(seq, prev, body)
            db.run(f"INSERT INTO {self._t('audit')} (seq, case_id, token, kind, action, entry,"
                   " prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                   (seq, case_id, token, entry.get("kind", "decision"), entry.get("action"),
                    body, prev, digest))
            prev = digest
        db.run(f"UPDATE {self._t('audit_head')} SET seq = ?, hash = ? WHERE id = 1", (seq, prev))

    def append_audit(self, case_id: str, token: str | None,
                     entries: list[dict[str, Any]]) -> None:
        """Append entries on their own (the mediation paths append inside their transaction)."""
        with self.tx(write=True) as db:
            self._append_audit(db, case_id, token, entries)

    def audit_entries(self, case_id: str, token: str | None) -> list[dict[str, Any]]:
        """One incarnation's entries, oldest first, each with its ``seq``."""
        with self.tx() as db:
            rows = db.all(f"SELECT seq, entry FROM {self._t('audit')} WHERE case_id = ? AND"
                          " token = ? ORDER BY seq", (case_id, token))
        return [{"seq": int(r["seq"]), **json.loads(r["entry"])} for r in rows]

    def audit_counts(self, case_id: str, token: str | None) -> dict[str, int]:
        """Entries per action (withhold, abstract, reveal, revoke, ...): one grouped query."""
        with self.tx() as db:
            rows = db.all(f"SELECT action, COUNT(*) AS n FROM {self._t('audit')} WHERE"
                          " case_id = ? AND token = ? GROUP BY action", (case_id, token))
        return {str(r["action"]): int(r["n"]) for r in rows}

    def verify_audit(self) -> int:
        """Walk the whole chain; the number of entries, or ``AuditTamperedError`` naming the
        first entry that fails."""
        with self.tx() as db:
            rows = db.all(f"SELECT seq, entry, prev_hash, hash FROM {self._t('audit')}"
                          " ORDER BY seq")
            head = db.one(f"SELECT seq, hash FROM {self._t('audit_head')} WHERE id = 1")
        result = verify_chain(rows, (int(head["seq"]), str(head["hash"])) if head else None)
        if isinstance(result, str):
            raise AuditTamperedError(f"The audit ledger {self!r} fails its hash chain: {result}.")
        return result

    # -- trust tiers: runs (issue 14) ----------------------------------------------------------
    def add_run(self, run_id: str, case_id: str, token: str | None, role: str) -> RunRecord:
        """Record a run owned by this process, while the case is still the incarnation ``token``
        (before any of its cards is written, so every ephemeral card has a row to sweep by)."""
        now = time.time()
        with self.tx(write=True) as db:
            self._live(db, case_id, token)
            db.run(f"INSERT INTO {self._t('runs')} (run_id, case_id, token, role, owner,"
                   " started_at, ended_at) VALUES (?, ?, ?, ?, ?, ?, NULL)",
                   (run_id, case_id, token, role, PROCESS_TOKEN, now))
        return RunRecord(run_id, case_id, token, role, PROCESS_TOKEN, now, None)

    def run_record(self, run_id: str) -> RunRecord | None:
        with self.tx() as db:
            row = db.one(f"SELECT * FROM {self._t('runs')} WHERE run_id = ?", (run_id,))
        return RunRecord(**row) if row else None

    def runs(self, case_id: str | None = None) -> list[RunRecord]:
        """Every recorded run (of one case), oldest first."""
        q = f"SELECT * FROM {self._t('runs')}"
        with self.tx() as db:
            rows = (db.all(q + " ORDER BY started_at") if case_id is None else
                    db.all(q + " WHERE case_id = ? ORDER BY started_at", (case_id,)))
        return [RunRecord(**r) for r in rows]

    def end_run(self, run_id: str) -> RunRecord | None:
        """Mark a run as ending (no more writes); the record, or None if it is gone."""
        with self.tx(write=True) as db:
            db.run(f"UPDATE {self._t('runs')} SET ended_at = ? WHERE run_id = ? AND"
                   " ended_at IS NULL", (time.time(), run_id))
            row = db.one(f"SELECT * FROM {self._t('runs')} WHERE run_id = ?", (run_id,))
        return RunRecord(**row) if row else None

    def drop_run(self, run_id: str) -> bool:
        """Forget a run once its ephemeral cards are verified gone."""
        with self.tx(write=True) as db:
            return db.run(f"DELETE FROM {self._t('runs')} WHERE run_id = ?", (run_id,)).rowcount == 1
