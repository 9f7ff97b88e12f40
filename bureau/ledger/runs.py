"""Runs of a role (trust tiers, issue 14): :class:`RunStore` (``ledger.run_records``).

Every ephemeral card has a run row to sweep by: the row is written before any of the run's
cards, and goes only once they are verified gone (see :mod:`bureau.service.runs`).
"""

from __future__ import annotations

import time

from .cases import live_case
from .connection import Connection, Tx
from .owners import process_token
from .rows import RunRecord


class RunStore:
    """The ``runs`` table."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def add(self, run_id: str, case_id: str, token: str | None, role: str) -> RunRecord:
        """Record a run owned by this process, while the case is still the incarnation ``token``
        (before any of its cards is written, so every ephemeral card has a row to sweep by)."""
        now, owner = time.time(), process_token()
        with self._conn.tx(write=True) as db:
            live_case(self._conn, db, case_id, token)
            db.run(f"INSERT INTO {self._conn.t('runs')} (run_id, case_id, token, role, owner,"
                   " started_at, ended_at) VALUES (?, ?, ?, ?, ?, ?, NULL)",
                   (run_id, case_id, token, role, owner, now))
        return RunRecord(run_id, case_id, token, role, owner, now, None)

    def get(self, run_id: str) -> RunRecord | None:
        with self._conn.tx() as db:
            row = db.one(f"SELECT * FROM {self._conn.t('runs')} WHERE run_id = ?", (run_id,))
        return RunRecord(**row) if row else None

    def all(self, case_id: str | None = None) -> list[RunRecord]:
        """Every recorded run (of one case), oldest first."""
        q = f"SELECT * FROM {self._conn.t('runs')}"
        with self._conn.tx() as db:
            rows = (db.all(q + " ORDER BY started_at") if case_id is None else
                    db.all(q + " WHERE case_id = ? ORDER BY started_at", (case_id,)))
        return [RunRecord(**r) for r in rows]

    def end(self, run_id: str) -> RunRecord | None:
        """Mark a run as ending (no more writes); the record, or None if it is gone."""
        with self._conn.tx(write=True) as db:
            db.run(f"UPDATE {self._conn.t('runs')} SET ended_at = ? WHERE run_id = ? AND"
                   " ended_at IS NULL", (time.time(), run_id))
            row = db.one(f"SELECT * FROM {self._conn.t('runs')} WHERE run_id = ?", (run_id,))
        return RunRecord(**row) if row else None

    def drop(self, run_id: str) -> bool:
        """Forget a run once its ephemeral cards are verified gone."""
        with self._conn.tx(write=True) as db:
            cur = db.run(f"DELETE FROM {self._conn.t('runs')} WHERE run_id = ?", (run_id,))
            return cur.rowcount == 1

    def clear_case(self, db: Tx, case_id: str) -> None:
        db.run(f"DELETE FROM {self._conn.t('runs')} WHERE case_id = ?", (case_id,))
