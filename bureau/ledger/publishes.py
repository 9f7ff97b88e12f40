"""Publish records and cleanup tasks: :class:`PublishStore` (``ledger.publishes``).

Publish records are keyed by (case, source card). A record's ``attempts`` counter is its fencing
token: every state change after a reservation names the attempt it belongs to, so a publisher
whose reservation was taken over can no longer complete or fail it. Cleanup tasks name board
copies a failed or compensated publish left behind (:mod:`bureau.service.publish` works them off).
"""

from __future__ import annotations

import time
from typing import Any

from .connection import Connection, Tx
from .owners import is_stale, process_token
from .rows import BLOCKED, CleanupTask, Publication


class PublishStore:
    """The ``publications`` and ``cleanup_tasks`` tables."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def _pub_where(self) -> str:
        return f"{self._conn.t('publications')} WHERE case_id = ? AND source_id = ?"

    def get(self, case_id: str, source_id: str) -> Publication | None:
        with self._conn.tx() as db:
            row = db.one(f"SELECT * FROM {self._pub_where()}", (case_id, source_id))
        return Publication(**row) if row else None

    def all(self, case_id: str | None = None) -> list[Publication]:
        with self._conn.tx() as db:
            if case_id is None:
                rows = db.all(f"SELECT * FROM {self._conn.t('publications')}")
            else:
                rows = db.all(
                    f"SELECT * FROM {self._conn.t('publications')} WHERE case_id = ?", (case_id,)
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
        seen = self.get(case_id, source_id)
        if seen is not None:
            if seen.blocked:
                return "revoked", seen
            if seen.status == "ready":
                return "ready", seen
            if seen.status == "pending" and not is_stale(seen):
                return "held", seen
        return self._conn.retrying(lambda: self._claim(case_id, source_id, source_role, lease_s))

    def _claim(
        self, case_id: str, source_id: str, source_role: str, lease_s: float
    ) -> tuple[str, Publication]:
        now = time.time()
        with self._conn.tx(write=True) as db:
            row = db.one(
                f"SELECT * FROM {self._pub_where()}{self._conn.for_update}",
                (case_id, source_id),
            )
            if row is None:
                db.run(
                    f"INSERT INTO {self._conn.t('publications')} (case_id, source_id,"
                    " source_role, status, copy_id, attempts, owner, lease_until, created_at,"
                    " updated_at, error)"
                    " VALUES (?, ?, ?, 'pending', NULL, 1, ?, ?, ?, ?, NULL)",
                    (case_id, source_id, source_role, process_token(), now + lease_s, now, now),
                )
                outcome = "reserved"
            else:
                rec = Publication(**row)
                if rec.blocked:
                    return "revoked", rec
                if rec.status == "ready":
                    return "ready", rec
                if rec.status == "pending" and not is_stale(rec, now):
                    return "held", rec
                db.run(
                    f"UPDATE {self._conn.t('publications')} SET status = 'pending', owner = ?,"
                    " lease_until = ?, attempts = attempts + 1, updated_at = ?, error = NULL"
                    " WHERE case_id = ? AND source_id = ?",
                    (process_token(), now + lease_s, now, case_id, source_id),
                )
                outcome = "taken_over"
            row = db.one(f"SELECT * FROM {self._pub_where()}", (case_id, source_id))
        assert row is not None
        return outcome, Publication(**row)

    def _fenced(self, sql_set: str, params: tuple[Any, ...], case_id: str, source_id: str,
                attempt: int, status: str = "pending", owner: str | None = None) -> bool:
        """Change a record only if it is still in the state the caller saw (compare-and-set)."""
        where = " AND attempts = ? AND status = ? AND (error IS NULL OR error <> ?)"
        extra: tuple[Any, ...] = (attempt, status, BLOCKED)
        if owner is not None:
            where += " AND owner = ?"
            extra += (owner,)
        with self._conn.tx(write=True) as db:
            cur = db.run(
                f"UPDATE {self._conn.t('publications')} SET {sql_set}"
                f" WHERE case_id = ? AND source_id = ?{where}",
                (*params, case_id, source_id, *extra),
            )
            return cur.rowcount == 1

    def renew(self, case_id: str, source_id: str, attempt: int, lease_s: float) -> bool:
        """Extend our own reservation; False if it was taken over (we no longer own it)."""
        now = time.time()
        return self._fenced("lease_until = ?, updated_at = ?", (now + lease_s, now),
                            case_id, source_id, attempt, owner=process_token())

    def mark_ready(self, case_id: str, source_id: str, copy_id: str, attempt: int) -> bool:
        """Complete our own reservation; False if another publisher took it over meanwhile."""
        return self._fenced("status = 'ready', copy_id = ?, updated_at = ?",
                            (copy_id, time.time()), case_id, source_id, attempt,
                            owner=process_token())

    def mark_failed(self, case_id: str, source_id: str, attempt: int, error: str) -> bool:
        """Fail our own reservation; False if it is no longer ours."""
        return self._fenced("status = 'failed', error = ?, updated_at = ?",
                            (error[:500], time.time()), case_id, source_id, attempt,
                            owner=process_token())

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

    def drop(self, case_id: str, source_id: str, rec: Publication | None = None) -> bool:
        """Forget a record (only if it is still ``rec``, when given)."""
        sql = f"DELETE FROM {self._pub_where()} AND (error IS NULL OR error <> ?)"
        params: tuple[Any, ...] = (case_id, source_id, BLOCKED)
        if rec is not None:
            sql += " AND attempts = ? AND status = ?"
            params += (rec.attempts, rec.status)
        with self._conn.tx(write=True) as db:
            return db.run(sql, params).rowcount == 1

    def block(self, case_id: str, source_id: str, source_role: str) -> Publication | None:
        """Revocation: the card ``source_id`` may never be published again (issue 19).

        The record, in whatever state (pending, failed, ready, or none yet), becomes *blocked*
        (``failed`` with error :data:`~bureau.ledger.rows.BLOCKED`) and its attempt counter moves
        on, so a publisher still at work can neither mark it ready nor fail it, ``recover()``
        cannot complete it, and no later publish reserves it. Returns the record as it was
        (its ``copy_id`` names a copy to revoke too)."""
        now = time.time()

        def run() -> Publication | None:
            with self._conn.tx(write=True) as db:
                row = db.one(f"SELECT * FROM {self._pub_where()}{self._conn.for_update}",
                             (case_id, source_id))
                if row is None:
                    db.run(
                        f"INSERT INTO {self._conn.t('publications')} (case_id, source_id,"
                        " source_role, status, copy_id, attempts, owner, lease_until,"
                        " created_at, updated_at, error)"
                        " VALUES (?, ?, ?, 'failed', NULL, 1, 'revoked', 0, ?, ?, ?)",
                        (case_id, source_id, source_role, now, now, BLOCKED))
                    return None
                db.run(f"UPDATE {self._conn.t('publications')} SET status = 'failed',"
                       " error = ?, attempts = attempts + 1, updated_at = ?"
                       " WHERE case_id = ? AND source_id = ?",
                       (BLOCKED, now, case_id, source_id))
                return Publication(**row)

        return self._conn.retrying(run)

    def restore(self, case_id: str, source_id: str, source_role: str, copy_id: str) -> None:
        """Repair: a ready record for a board copy found in the store (bureau.service.repair)."""
        now = time.time()
        with self._conn.tx(write=True) as db:
            db.run(
                f"{self._conn.insert_ignore} INTO {self._conn.t('publications')} (case_id,"
                " source_id, source_role, status, copy_id, attempts, owner, lease_until,"
                " created_at, updated_at, error)"
                " VALUES (?, ?, ?, 'ready', ?, 1, 'repair', 0, ?, ?, NULL)",
                (case_id, source_id, source_role, copy_id, now, now),
            )

    # -- cleanup tasks -----------------------------------------------------------------------
    def add_cleanup(self, case_id: str, card_id: str, owner_role: str, reason: str) -> None:
        with self._conn.tx(write=True) as db:
            db.run(
                f"{self._conn.insert_ignore} INTO {self._conn.t('cleanup_tasks')} (case_id,"
                " card_id, owner_role, reason, attempts, created_at) VALUES (?, ?, ?, ?, 0, ?)",
                (case_id, card_id, owner_role, reason, time.time()),
            )

    def cleanup_tasks(self, case_id: str | None = None) -> list[CleanupTask]:
        q = ("SELECT case_id, card_id, owner_role, reason, attempts FROM"
             f" {self._conn.t('cleanup_tasks')}")
        with self._conn.tx() as db:
            rows = db.all(q) if case_id is None else db.all(q + " WHERE case_id = ?",
                                                             (case_id,))
        return [CleanupTask(**r) for r in rows]

    def finish_cleanup(self, case_id: str, card_id: str, done: bool) -> None:
        where = " WHERE case_id = ? AND card_id = ?"
        with self._conn.tx(write=True) as db:
            if done:
                db.run(f"DELETE FROM {self._conn.t('cleanup_tasks')}{where}",
                       (case_id, card_id))
            else:
                db.run(
                    f"UPDATE {self._conn.t('cleanup_tasks')} SET attempts = attempts + 1{where}",
                    (case_id, card_id),
                )

    def clear_case(self, db: Tx, case_id: str) -> None:
        db.run(f"DELETE FROM {self._conn.t('publications')} WHERE case_id = ?", (case_id,))
        db.run(f"DELETE FROM {self._conn.t('cleanup_tasks')} WHERE case_id = ?", (case_id,))
