"""Cases and their retired store namespaces: :class:`CaseStore` (``ledger.cases``).

A case's other rows live in the other stores; a reset or a delete clears them in the same
transaction that moves or forgets the case, through each store's ``clear_case(db, case_id)``
(the :class:`CaseRows` the ledger hands the store when it composes them). Other stores check
that a case is still the incarnation they hold with :func:`live_case`, inside their own
transaction.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from ..errors import CaseExistsError, UnknownCaseError
from .connection import Connection, Tx
from .rows import CaseRecord


class CaseRows(Protocol):
    """A store holding rows that belong to one case."""

    def clear_case(self, db: Tx, case_id: str) -> None:
        """Delete the case's rows, inside ``db``."""


def case_row(conn: Connection, db: Tx, case_id: str, lock: bool = False) -> CaseRecord | None:
    """The case's record inside a transaction (``lock``: row-locked where the backend can)."""
    row = db.one(f"SELECT * FROM {conn.t('cases')} WHERE case_id = ?"
                 f"{conn.for_update if lock else ''}", (case_id,))
    return CaseRecord(**row) if row else None


def live_case(conn: Connection, db: Tx, case_id: str, token: str | None) -> CaseRecord:
    """The case's record inside a transaction, if it is still the incarnation ``token``."""
    rec = case_row(conn, db, case_id, lock=True)
    if rec is None or rec.token != token:
        raise UnknownCaseError(f"Case {case_id} no longer exists (it was deleted).")
    return rec


class CaseStore:
    """The ``cases`` and ``retired_spaces`` tables.

    ``reset_rows``: the stores a reset empties (their rows name cards of the purged namespace);
    ``case_rows``: the stores a delete empties (every one holding rows of the case).
    """

    def __init__(self, conn: Connection, *, reset_rows: Sequence[CaseRows] = (),
                 case_rows: Sequence[CaseRows] = ()) -> None:
        self._conn = conn
        self._reset_rows = tuple(reset_rows)
        self._case_rows = tuple(case_rows)

    def add(self, case_id: str, scenario_id: str, title: str, token: str | None = None,
            epoch: int = 0) -> CaseRecord:
        now = datetime.now().isoformat(timespec="seconds")
        try:
            with self._conn.tx(write=True) as db:
                db.run(
                    f"INSERT INTO {self._conn.t('cases')} (case_id, scenario_id, title,"
                    " created_at, epoch, token) VALUES (?, ?, ?, ?, ?, ?)",
                    (case_id, scenario_id, title, now, epoch, token),
                )
        except self._conn.integrity_errors as exc:
            raise CaseExistsError(f"A case with id {case_id!r} already exists.") from exc
        return CaseRecord(case_id, scenario_id, title, now, epoch, token)

    def get(self, case_id: str) -> CaseRecord | None:
        with self._conn.tx() as db:
            return case_row(self._conn, db, case_id)

    def all(self) -> list[CaseRecord]:
        with self._conn.tx() as db:
            rows = db.all(f"SELECT * FROM {self._conn.t('cases')} ORDER BY created_at, case_id")
        return [CaseRecord(**r) for r in rows]

    def _retire(self, db: Tx, rec: CaseRecord) -> None:
        db.run(
            f"{self._conn.insert_ignore} INTO {self._conn.t('retired_spaces')} (store_id,"
            " case_id, retired_at) VALUES (?, ?, ?)",
            (rec.space.store_id, rec.case_id, time.time()),
        )

    def bump_epoch(self, case_id: str, token: str | None = None) -> CaseRecord:
        """Reset: retire the case's store namespace and move it to a fresh, empty one.

        Returns the record before the reset (its space is the one to purge). In the same
        transaction every store of ``reset_rows`` forgets the case's rows: publish records and
        cleanup tasks, card limits, grants and budget (the cards they name are gone), task
        scopes (they live in the purged namespace too) and runs (a run started before the reset
        has ended: its next write sees no row and takes its card back, so it cannot refill the
        new space).
        """
        with self._conn.tx(write=True) as db:
            old = live_case(self._conn, db, case_id, token)
            if old.token:  # cases without a token keep their one namespace (purged in place)
                self._retire(db, old)
            db.run(f"UPDATE {self._conn.t('cases')} SET epoch = epoch + 1 WHERE case_id = ?",
                   (case_id,))
            for rows in self._reset_rows:
                rows.clear_case(db, case_id)
        return old

    def delete(self, case_id: str, token: str | None = None) -> CaseRecord:
        """Forget a case and retire its namespace in one transaction; returns the old record.

        The audit ledger keeps its entries: it is append-only and outlives the cases it
        describes.
        """
        with self._conn.tx(write=True) as db:
            old = live_case(self._conn, db, case_id, token)
            self._retire(db, old)
            db.run(f"DELETE FROM {self._conn.t('cases')} WHERE case_id = ?", (case_id,))
            for rows in self._case_rows:
                rows.clear_case(db, case_id)
        return old

    def retired_spaces(self) -> set[str]:
        with self._conn.tx() as db:
            return {r["store_id"] for r in db.all(
                f"SELECT store_id FROM {self._conn.t('retired_spaces')}")}

    def unretire(self, store_id: str) -> None:
        """A namespace reused by a legacy (token-less) case id is live again."""
        with self._conn.tx(write=True) as db:
            db.run(f"DELETE FROM {self._conn.t('retired_spaces')} WHERE store_id = ?",
                   (store_id,))
