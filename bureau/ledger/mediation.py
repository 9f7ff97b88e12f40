"""Purpose-bound mediation (issue 13): :class:`MediationStore` (``ledger.mediation``).

Card limits (expiries and revocations), disclosure grants, the requesters' spent budget and the
audit chain. An audit entry is appended in the transaction that makes the decision it records
(a revocation, a grant, one mediated invocation's charges and events), so the chain never
holds a decision that did not happen, nor misses one that did. The audit ledger is append-only
and outlives the cases it describes: a reset or a delete forgets limits, grants and budget, never
audit entries.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any

from ..errors import AuditTamperedError, UnknownGrantError
from ..mediation.audit import GENESIS, canonical, entry_hash, verify_chain
from ..mediation.grants import Grant
from ..model import Event
from .cases import case_row, live_case
from .connection import Connection, Tx
from .events import EventStore
from .rows import CaseRecord


class MediationStore:
    """The ``card_limits``, ``grants``, ``budget``, ``audit`` and ``audit_head`` tables."""

    def __init__(self, conn: Connection, events: EventStore) -> None:
        self._conn = conn
        self._events = events

    def _dead(self, db: Tx, case_id: str, now: float) -> dict[str, tuple[str, str]]:
        rows = db.all(
            f"SELECT card_id, owner, expires_at, revoked_at FROM {self._conn.t('card_limits')}"
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
        with self._conn.tx() as db:
            rec = case_row(self._conn, db, case_id)
            dead = self._dead(db, case_id, now) if rec else {}
        return rec, dead

    def view(
        self, case_id: str, requester: str, now: float | None = None
    ) -> tuple[CaseRecord | None, dict[str, tuple[str, str]], list[Grant], dict[str, float]]:
        """Record, dead cards, grants and this requester's spent budget: one transaction."""
        now = time.time() if now is None else now
        with self._conn.tx() as db:
            rec = case_row(self._conn, db, case_id)
            if rec is None:
                return None, {}, [], {}
            dead = self._dead(db, case_id, now)
            grants = [Grant(**g) for g in db.all(
                f"SELECT * FROM {self._conn.t('grants')} WHERE case_id = ? AND revoked_at IS NULL",
                (case_id,))]
            spent = {r["owner"]: float(r["spent"]) for r in db.all(
                f"SELECT owner, spent FROM {self._conn.t('budget')} WHERE case_id = ? AND"
                " requester = ?",
                (case_id, requester))}
        return rec, dead, grants, spent

    def limit_card(
        self, case_id: str, token: str | None, card_id: str, owner: str, *,
        expires_at: float | None = None, revoke: bool = False, reason: str | None = None,
        audit: list[dict[str, Any]] | None = None,
    ) -> None:
        """Set a card's expiry and/or revoke it (final), with its audit entries, in one
        transaction, while the case is still the incarnation ``token``."""
        now = time.time()

        def run() -> None:
            with self._conn.tx(write=True) as db:
                live_case(self._conn, db, case_id, token)
                row = db.one(f"SELECT * FROM {self._conn.t('card_limits')} WHERE case_id = ? AND"
                             f" card_id = ?{self._conn.for_update}", (case_id, card_id))
                if row is None:
                    db.run(f"INSERT INTO {self._conn.t('card_limits')} (case_id, card_id, owner,"
                           " expires_at, revoked_at, reason) VALUES (?, ?, ?, ?, ?, ?)",
                           (case_id, card_id, owner, expires_at, now if revoke else None, reason))
                else:
                    db.run(f"UPDATE {self._conn.t('card_limits')} SET expires_at = ?,"
                           " revoked_at = ?, reason = ? WHERE case_id = ? AND card_id = ?",
                           (expires_at if expires_at is not None else row["expires_at"],
                            row["revoked_at"] or (now if revoke else None),
                            reason or row["reason"], case_id, card_id))
                self._append_audit(db, case_id, token, audit or [])

        self._conn.retrying(run)

    def limit_cards(
        self, case_id: str, token: str | None, cards: list[tuple[str, str]], *,
        expires_at: float | None = None, revoke: bool = False, reason: str | None = None,
        audit: list[dict[str, Any]] | None = None,
    ) -> None:
        """:meth:`limit_card` for several cards ``(card_id, owner)`` at once: a card and every
        copy derived from it are limited in one transaction, never some of them (issue 19)."""
        now = time.time()
        t = self._conn.t("card_limits")

        def run() -> None:
            with self._conn.tx(write=True) as db:
                live_case(self._conn, db, case_id, token)
                for card_id, owner in cards:
                    row = db.one(f"SELECT * FROM {t} WHERE case_id = ? AND card_id = ?"
                                 f"{self._conn.for_update}", (case_id, card_id))
                    if row is None:
                        db.run(f"INSERT INTO {t} (case_id, card_id, owner, expires_at,"
                               " revoked_at, reason) VALUES (?, ?, ?, ?, ?, ?)",
                               (case_id, card_id, owner, expires_at, now if revoke else None,
                                reason))
                    else:  # an expiry only ever comes sooner; a revocation stays
                        at = row["expires_at"]
                        if expires_at is not None:
                            at = expires_at if at is None else min(float(at), expires_at)
                        db.run(f"UPDATE {t} SET expires_at = ?, revoked_at = ?, reason = ?"
                               " WHERE case_id = ? AND card_id = ?",
                               (at, row["revoked_at"] or (now if revoke else None),
                                reason or row["reason"], case_id, card_id))
                self._append_audit(db, case_id, token, audit or [])

        self._conn.retrying(run)

    def card_limits(self, case_id: str) -> list[dict[str, Any]]:
        """Every expiry and revocation of a case (the audit view marks cards with them)."""
        with self._conn.tx() as db:
            return db.all(f"SELECT * FROM {self._conn.t('card_limits')} WHERE case_id = ?",
                          (case_id,))

    def add_grant(self, grant: Grant, token: str | None, audit: list[dict[str, Any]]) -> Grant:
        with self._conn.tx(write=True) as db:
            live_case(self._conn, db, grant.case_id, token)
            db.run(f"INSERT INTO {self._conn.t('grants')} (grant_id, case_id, card_id, requester,"
                   " recipient, purpose, action, created_at, expires_at, revoked_at)"
                   " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
                   (grant.grant_id, grant.case_id, grant.card_id, grant.requester,
                    grant.recipient, grant.purpose, grant.action, grant.created_at,
                    grant.expires_at))
            self._append_audit(db, grant.case_id, token, audit)
        return grant

    def revoke_grant(self, case_id: str, token: str | None, grant_id: str,
                     audit: list[dict[str, Any]]) -> None:
        with self._conn.tx(write=True) as db:
            live_case(self._conn, db, case_id, token)
            cur = db.run(f"UPDATE {self._conn.t('grants')} SET revoked_at = ? WHERE case_id = ? AND"
                         " grant_id = ? AND revoked_at IS NULL", (time.time(), case_id, grant_id))
            if cur.rowcount != 1:
                raise UnknownGrantError(f"Case {case_id} has no active grant {grant_id!r}.")
            self._append_audit(db, case_id, token, audit)

    def grants(self, case_id: str) -> list[Grant]:
        with self._conn.tx() as db:
            rows = db.all(f"SELECT * FROM {self._conn.t('grants')} WHERE case_id = ?"
                          " ORDER BY created_at", (case_id,))
        return [Grant(**r) for r in rows]

    def commit(
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
            with self._conn.tx(write=True) as db:
                live_case(self._conn, db, case_id, token)
                for owner, cost in charges.items():
                    row = db.one(f"SELECT spent FROM {self._conn.t('budget')} WHERE case_id = ? AND"
                                 f" requester = ? AND owner = ?{self._conn.for_update}",
                                 (case_id, requester, owner))
                    now_spent = float(row["spent"]) if row else 0.0
                    if abs(now_spent - seen.get(owner, 0.0)) > 1e-9:
                        return None
                    if row is None:
                        db.run(f"INSERT INTO {self._conn.t('budget')} (case_id, requester, owner,"
                               " spent) VALUES (?, ?, ?, ?)", (case_id, requester, owner, cost))
                    else:
                        db.run(f"UPDATE {self._conn.t('budget')} SET spent = ? WHERE"
                               " case_id = ? AND requester = ? AND owner = ?",
                               (now_spent + cost, case_id, requester, owner))
                self._append_audit(db, case_id, token, audit)
                return self._events.insert(db, case_id, events)

        return self._conn.retrying(run)

    def _append_audit(self, db: Tx, case_id: str, token: str | None,
                      entries: list[dict[str, Any]]) -> None:
        """Append entries to the hash chain (the head row serialises appenders)."""
        if not entries:
            return
        db.run(f"{self._conn.insert_ignore} INTO {self._conn.t('audit_head')} (id, seq, hash)"
               " VALUES (1, 0, ?)", (GENESIS,))
        head = db.one(f"SELECT seq, hash FROM {self._conn.t('audit_head')} WHERE id = 1"
                      f"{self._conn.for_update}")
        assert head is not None
        seq, prev = int(head["seq"]), str(head["hash"])
        at = datetime.now().astimezone().isoformat(timespec="milliseconds")
        for entry in entries:
            seq += 1
            body = canonical({**entry, "case_id": case_id, "at": at})
            digest = entry_hash(seq, prev, body)
            db.run(f"INSERT INTO {self._conn.t('audit')} (seq, case_id, token, kind, action, entry,"
                   " prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                   (seq, case_id, token, entry.get("kind", "decision"), entry.get("action"),
                    body, prev, digest))
            prev = digest
        db.run(f"UPDATE {self._conn.t('audit_head')} SET seq = ?, hash = ? WHERE id = 1",
               (seq, prev))

    def append_audit(self, case_id: str, token: str | None,
                     entries: list[dict[str, Any]]) -> None:
        """Append entries on their own (the mediation paths append inside their transaction)."""
        with self._conn.tx(write=True) as db:
            self._append_audit(db, case_id, token, entries)

    def audit_entries(self, case_id: str, token: str | None) -> list[dict[str, Any]]:
        """One incarnation's entries, oldest first, each with its ``seq``."""
        with self._conn.tx() as db:
            rows = db.all(f"SELECT seq, entry FROM {self._conn.t('audit')} WHERE case_id = ? AND"
                          " token = ? ORDER BY seq", (case_id, token))
        return [{"seq": int(r["seq"]), **json.loads(r["entry"])} for r in rows]

    def audit_counts(self, case_id: str, token: str | None) -> dict[str, int]:
        """Entries per action (withhold, abstract, reveal, revoke, ...): one grouped query."""
        with self._conn.tx() as db:
            rows = db.all(f"SELECT action, COUNT(*) AS n FROM {self._conn.t('audit')} WHERE"
                          " case_id = ? AND token = ? GROUP BY action", (case_id, token))
        return {str(r["action"]): int(r["n"]) for r in rows}

    def verify_audit(self) -> int:
        """Walk the whole chain; the number of entries, or ``AuditTamperedError`` naming the
        first entry that fails."""
        with self._conn.tx() as db:
            rows = db.all(f"SELECT seq, entry, prev_hash, hash FROM {self._conn.t('audit')}"
                          " ORDER BY seq")
            head = db.one(f"SELECT seq, hash FROM {self._conn.t('audit_head')} WHERE id = 1")
        result = verify_chain(rows, (int(head["seq"]), str(head["hash"])) if head else None)
        if isinstance(result, str):
            raise AuditTamperedError(
                f"The audit ledger {self._conn!r} fails its hash chain: {result}.")
        return result

    def clear_case(self, db: Tx, case_id: str) -> None:
        """Limits, grants and budget (the cards they name are gone); never audit entries."""
        for table in ("card_limits", "grants", "budget"):
            db.run(f"DELETE FROM {self._conn.t(table)} WHERE case_id = ?", (case_id,))
