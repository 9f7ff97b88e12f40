"""The outward event log of every case: :class:`EventStore` (``ledger.event_log``).

Other stores append events inside their own transaction with :meth:`EventStore.insert` (a task
scope's membership change and its event, a mediation's audit entries and its events, commit
together).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from ..model import Event
from .cases import live_case
from .connection import Connection, Tx


def _event(row: dict[str, Any]) -> Event:
    return Event(seq=int(row["seq"]), case_id=row["case_id"], type=row["type"],
                 payload=json.loads(row["payload"]), at=row["at"])


class EventStore:
    """The ``events`` table."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def insert(self, db: Tx, case_id: str, items: list[tuple[str, dict[str, Any]]]) -> list[Event]:
        """Append events inside the caller's transaction ``db``."""
        at = datetime.now().isoformat(timespec="milliseconds")
        out = []
        for type_, payload in items:
            cur = db.run(
                f"INSERT INTO {self._conn.t('events')} (case_id, type, payload, at)"
                " VALUES (?, ?, ?, ?)",
                (case_id, type_, json.dumps(payload, sort_keys=True), at),
            )
            out.append(Event(seq=int(cur.lastrowid or 0), case_id=case_id, type=type_,
                             payload=payload, at=at))
        return out

    def append(self, case_id: str, type_: str, payload: dict[str, Any]) -> Event:
        with self._conn.tx(write=True) as db:
            [event] = self.insert(db, case_id, [(type_, payload)])
        return event

    def append_many(
        self, case_id: str, items: list[tuple[str, dict[str, Any]]], token: Any = ...
    ) -> list[Event]:
        """Several events in one transaction (seeding writes one per card).

        With ``token``, only while the case is still that incarnation (checked in the same
        transaction, so an old holder of a deleted case cannot write into a new one's log).
        """
        with self._conn.tx(write=True) as db:
            if token is not ...:
                live_case(self._conn, db, case_id, token)
            return self.insert(db, case_id, items)

    def read(self, case_id: str, since: int = 0, limit: int = 10_000) -> list[Event]:
        """The case's events after ``since``, oldest first."""
        with self._conn.tx() as db:
            rows = db.all(
                f"SELECT * FROM {self._conn.t('events')} WHERE case_id = ? AND seq > ?"
                " ORDER BY seq LIMIT ?",
                (case_id, since, limit),
            )
        return [_event(r) for r in rows]

    def last(self, case_id: str, type_: str | None = None) -> Event | None:
        """The newest event of a case (of one type): one indexed query, however long the case."""
        where, params = "case_id = ?", (case_id,)
        if type_ is not None:
            where, params = where + " AND type = ?", (case_id, type_)
        with self._conn.tx() as db:
            row = db.one(
                f"SELECT * FROM {self._conn.t('events')} WHERE {where} ORDER BY seq DESC LIMIT 1",
                params,
            )
        return _event(row) if row else None

    def clear_case(self, db: Tx, case_id: str) -> None:
        db.run(f"DELETE FROM {self._conn.t('events')} WHERE case_id = ?", (case_id,))
