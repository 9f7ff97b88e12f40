"""Purpose-bound mediation (issue 13): :class:`MediationStore` (``ledger.mediation``).

Card limits (expiries and revocations), disclosure grants, the requesters' spent budget and the
audit chain. An audit entry is appended in the transaction that makes the decision it records
(a revocation, a grant, one mediated invocation's charges and events), so the chain never
holds a decision that did not happen, nor misses one that did. The audit ledger is append-only
and outlives the cases it describes: a reset or a delete forgets limits, grants and budget, never
audit entries.

Nothing here trusts the ledger file alone (issue 19 §3). The chain is keyed (HMAC under the
audit key, :mod:`bureau.ledger.keys`) and anchored outside the file; every state row carries a
MAC; and every transaction that changes a case's state seals it: its last audit entry holds a
digest of the case's card limits, grants and budget (:func:`~bureau.mediation.audit.
state_digest`). Each read of state (:meth:`MediationStore.case_view`, :meth:`~MediationStore.
view`, every write) checks the rows' MACs and the digests against the latest seal, so a row
edited, deleted, inserted or restored from an older copy is refused with
:class:`~bureau.errors.StateTamperedError` naming it, before anything acts on it.
"""

from __future__ import annotations

import hmac
import json
import logging
import time
from datetime import datetime
from typing import Any

from ..errors import AuditKeyError, AuditTamperedError, StateTamperedError, UnknownGrantError
from ..mediation.audit import (
    EMPTY_DIGEST,
    GENESIS,
    STATE_KEYS,
    STATE_TABLES,
    canonical,
    entry_hash,
    legacy_hash,
    row_mac,
    state_digest,
    verify_chain,
)
from ..mediation.grants import Grant
from ..model import Event
from .cases import case_row, live_case
from .connection import Connection, Tx
from .events import EventStore
from .keys import Anchor, AuditKeys
from .rows import CaseRecord

log = logging.getLogger(__name__)

State = dict[str, list[dict[str, Any]]]
"""One case's state rows, checked: ``{"card_limits": [...], "grants": [...], "budget": [...]}``."""

AUDIT_ROW = "seq, case_id, token, kind, action, entry, prev_hash, hash, seal"


class MediationStore:
    """The ``card_limits``, ``grants``, ``budget``, ``audit`` and ``audit_head`` tables."""

    def __init__(self, conn: Connection, events: EventStore, keys: AuditKeys) -> None:
        self._conn = conn
        self._events = events
        self._keys = keys
        self._verified: dict[str, tuple[Any, ...]] = {}
        """MACs this process checked or computed, with what they cover: a row read again
        unchanged is not re-hashed on every read (its bytes are compared instead)."""
        self._key = self._open_key()

    def _remember(self, digest: str, covers: tuple[Any, ...]) -> None:
        if len(self._verified) > 50_000:
            self._verified.clear()
        self._verified[digest] = covers

    # -- the key, and ledgers from before it -------------------------------------------------
    def _open_key(self) -> bytes:
        """Load the audit key, or make it with a new ledger; an old (unkeyed) ledger is
        verified by its old rule, anchored at its head and its state rows signed, once."""
        key = self._keys.load()
        if key is None or self._keys.read_anchor() is None:
            # No key, or a key without its anchor: a ledger cut short, or another process
            # between linking the key and writing the anchor (both under the head lock).
            # Take that lock and look again before making a key or calling it tampering.
            key, made = self._create_key()
            if made:
                return key
        self._key = key
        if self._keys.anchor().migrating:  # a migration was interrupted: finish it
            self._migrate(key)
        return key

    def _create_key(self) -> tuple[bytes, bool]:
        """Under the head lock: ``(key, False)`` for the key another process made meanwhile,
        ``(key, True)`` once this one has made (and, for an old ledger, anchored and signed)
        a new key."""
        with self._conn.tx(write=True) as db:
            head = self._lock_head(db)  # held: no other process opens a new key meanwhile
            key = self._keys.load()  # another process made it while this one waited
            if key is not None:
                return key, False
            rows = db.all(f"SELECT seq, entry, prev_hash, hash FROM {self._conn.t('audit')}"
                          " ORDER BY seq")
            legacy = self._legacy_head(rows, head)
            has_state = any(db.one(f"SELECT 1 AS x FROM {self._conn.t(t)} LIMIT 1")
                            for t in STATE_TABLES)
            key, _ = self._keys.create()
            self._keys.write_anchor(Anchor(legacy[0], legacy[1], legacy[0],
                                           migrating=has_state))
        self._key = key
        if has_state:
            self._migrate(key)
        if legacy[0] or has_state:
            log.warning("audit ledger %r: %d entries and the state rows written before the "
                        "audit was keyed were verified, anchored and signed; from now on the "
                        "chain is keyed (%s)", self._conn, legacy[0], self._keys.key_path)
        return key, True

    def _legacy_head(self, rows: list[dict[str, Any]], head: tuple[int, str]) -> tuple[int, str]:
        """The head of a chain written before keys existed, checked by the old rule; a keyed
        chain without its key is refused (it cannot be checked, and a new key would hide it)."""
        prev = GENESIS
        for row in rows:
            seq = int(row["seq"])
            if legacy_hash(seq, str(row["prev_hash"]), str(row["entry"])) != row["hash"]:
                if seq == 1:
                    raise AuditKeyError(
                        f"The audit key {self._keys.key_path} is missing, but the ledger "
                        f"{self._conn!r} holds a keyed audit chain: it cannot be checked "
                        "without the key.",
                        "Restore the key file from a backup (it was made with the data "
                        "directory); a new key would hide any tampering.")
                raise AuditTamperedError(f"The audit ledger {self._conn!r} fails its hash "
                                         f"chain at entry {seq}; it is not re-anchored.")
            prev = str(row["hash"])
        last = (len(rows), prev)
        if rows and last != head:
            raise AuditTamperedError(f"The audit ledger {self._conn!r} ends at entry "
                                     f"{last[0]}, but its head records entry {head[0]}.")
        return last

    def _migrate(self, key: bytes) -> None:
        """Sign the unsigned state rows of an old ledger and seal each case with state."""
        with self._conn.tx(write=True) as db:
            cases: set[str] = set()
            for table in STATE_TABLES:
                for row in db.all(f"SELECT * FROM {self._conn.t(table)} WHERE mac IS NULL"):
                    where = " AND ".join(f"{c} = ?" for c in STATE_KEYS[table])
                    db.run(f"UPDATE {self._conn.t(table)} SET mac = ? WHERE {where}",
                           (row_mac(key, table, row), *(row[c] for c in STATE_KEYS[table])))
                    cases.add(str(row["case_id"]))
            for case_id in sorted(cases):
                rec = case_row(self._conn, db, case_id)
                state = self._rows(db, case_id)
                self._append_audit(db, case_id, None, [{"kind": "state", "action": "migrate"}],
                                   seal=_seal(rec.token if rec else None, rec is not None,
                                              state))
            anchor = self._keys.anchor()
            head = self._lock_head(db)
            db.on_commit.append(lambda: self._keys.write_anchor(
                Anchor(head[0], head[1], anchor.legacy)))

    # -- state rows: checked on every read ---------------------------------------------------
    def _rows(self, db: Tx, case_id: str) -> State:
        """The case's state rows, each checked against its MAC (not yet against the seal)."""
        state: State = {}
        for table in STATE_TABLES:
            rows = db.all(f"SELECT * FROM {self._conn.t(table)} WHERE case_id = ?", (case_id,))
            for row in rows:
                values = tuple(row[c] for c in STATE_TABLES[table])
                if self._verified.get(row["mac"]) == (table, values):
                    continue  # this very row was checked (or written) by this process
                if not hmac.compare_digest(str(row.get("mac")),
                                           row_mac(self._key, table, row)):
                    name = {c: row[c] for c in STATE_KEYS[table]}
                    raise StateTamperedError(
                        f"The {table} row {name} of case {case_id} was changed outside the "
                        f"bureau (its MAC does not hold); it is not used.", table, name)
                self._remember(row["mac"], (table, values))
            state[table] = rows
        return state

    def _state(self, db: Tx, rec: CaseRecord) -> State:
        """The case's state rows, checked row by row and as a whole against the latest seal in
        the audit chain: rows removed, added or restored from an older copy are refused."""
        state = self._rows(db, rec.case_id)
        row = db.one(f"SELECT {AUDIT_ROW} FROM {self._conn.t('audit')} WHERE case_id = ? AND"
                     " seal IS NOT NULL ORDER BY seq DESC LIMIT 1", (rec.case_id,))
        sealed: dict[str, Any] = {}
        if row is not None:
            if self._verified.get(row["hash"]) != ("audit", row["seq"], row["case_id"], row["seal"]) and \
                    not hmac.compare_digest(entry_hash(self._key, row), str(row["hash"])):
                raise AuditTamperedError(f"The audit ledger {self._conn!r}: entry {row['seq']} "
                                         "(a state seal) was changed after it was written.")
            self._remember(row["hash"], ("audit", row["seq"], row["case_id"], row["seal"]))
            sealed = json.loads(row["seal"])
            if sealed["live"] and sealed["token"] != rec.token:
                raise StateTamperedError(
                    f"The cases row of {rec.case_id} names incarnation {rec.token!r}, but the "
                    f"audit chain sealed the case's state for {sealed['token']!r} (entry "
                    f"{row['seq']}): the case row was changed outside the bureau.",
                    "cases", {"case_id": rec.case_id})
        for table, rows in state.items():
            want = sealed.get(table, EMPTY_DIGEST) if sealed.get("live") else EMPTY_DIGEST
            if state_digest(r["mac"] for r in rows) != want:
                where = f"audit entry {row['seq']}" if row is not None else "no audit entry"
                raise StateTamperedError(
                    f"The {table} rows of case {rec.case_id} do not match the state the audit "
                    f"chain sealed ({where}): a row was removed, added or restored from an "
                    "older copy outside the bureau.", table)
        return state

    @staticmethod
    def _dead(state: State, now: float) -> dict[str, tuple[str, str]]:
        return {r["card_id"]: (r["owner"], "revoked" if r["revoked_at"] is not None
                               else "expired")
                for r in state["card_limits"]
                if r["revoked_at"] is not None or (r["expires_at"] is not None
                                                   and r["expires_at"] <= now)}

    def _put(self, db: Tx, state: State, table: str, row: dict[str, Any]) -> None:
        """Write one state row with its MAC (insert or replace), and keep ``state`` current."""
        cols = STATE_TABLES[table]
        row = {c: row[c] for c in cols}
        row["mac"] = row_mac(self._key, table, row)
        self._remember(row["mac"], (table, tuple(row[c] for c in cols)))
        db.run(f"REPLACE INTO {self._conn.t(table)} ({', '.join(row)}) VALUES"
               f" ({', '.join('?' for _ in row)})", tuple(row.values()))
        keys = STATE_KEYS[table]
        state[table] = [r for r in state[table] if any(r[k] != row[k] for k in keys)] + [row]

    def case_view(
        self, case_id: str, now: float | None = None
    ) -> tuple[CaseRecord | None, dict[str, tuple[str, str]]]:
        """The case's record and its dead cards (``{card_id: (owner, "revoked"|"expired")}``),
        in one read transaction: what every read path checks first."""
        now = time.time() if now is None else now
        with self._conn.tx() as db:
            rec = case_row(self._conn, db, case_id)
            dead = self._dead(self._state(db, rec), now) if rec else {}
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
            state = self._state(db, rec)
        grants = [_grant(g) for g in state["grants"] if g["revoked_at"] is None]
        spent = {r["owner"]: float(r["spent"]) for r in state["budget"]
                 if r["requester"] == requester}
        return rec, self._dead(state, now), grants, spent

    def limit_cards(
        self, case_id: str, token: str | None, cards: list[tuple[str, str]], *,
        expires_at: float | None = None, revoke: bool = False, reason: str | None = None,
        audit: list[dict[str, Any]] | None = None,
    ) -> None:
        """Set the expiry and/or revoke (final) cards ``(card_id, owner)`` with their audit
        entries, in one transaction, while the case is still the incarnation ``token``: a card and
        every copy derived from it are limited together, never some of them (issue 19). An expiry
        only ever comes sooner; each row is signed and the case's state sealed like any other
        state change."""
        now = time.time()

        def run() -> None:
            with self._conn.tx(write=True) as db:
                rec = live_case(self._conn, db, case_id, token)
                state = self._state(db, rec)
                for card_id, owner in cards:
                    row = next((r for r in state["card_limits"] if r["card_id"] == card_id),
                               None)
                    if row is None:
                        new = {"case_id": case_id, "card_id": card_id, "owner": owner,
                               "expires_at": expires_at,
                               "revoked_at": now if revoke else None, "reason": reason}
                    else:  # an expiry only ever comes sooner; a revocation stays
                        at = row["expires_at"]
                        if expires_at is not None:
                            at = expires_at if at is None else min(float(at), expires_at)
                        new = {**row, "expires_at": at,
                               "revoked_at": row["revoked_at"] or (now if revoke else None),
                               "reason": reason or row["reason"]}
                    self._put(db, state, "card_limits", new)
                self._append_audit(db, case_id, token,
                                   audit or [{"kind": "state", "action": "limit"}],
                                   seal=_seal(token, True, state))

        self._conn.retrying(run)

    def card_limits(self, case_id: str) -> list[dict[str, Any]]:
        """Every expiry and revocation of a case (the audit view marks cards with them)."""
        with self._conn.tx() as db:
            rec = case_row(self._conn, db, case_id)
            rows = self._state(db, rec)["card_limits"] if rec else []
        return [{k: v for k, v in r.items() if k != "mac"} for r in rows]

    def add_grant(self, grant: Grant, token: str | None, audit: list[dict[str, Any]]) -> Grant:
        with self._conn.tx(write=True) as db:
            rec = live_case(self._conn, db, grant.case_id, token)
            state = self._state(db, rec)
            self._put(db, state, "grants", {**vars(grant), "revoked_at": None})
            self._append_audit(db, grant.case_id, token, audit or [{"kind": "grant"}],
                               seal=_seal(token, True, state))
        return grant

    def revoke_grant(self, case_id: str, token: str | None, grant_id: str,
                     audit: list[dict[str, Any]]) -> None:
        with self._conn.tx(write=True) as db:
            rec = live_case(self._conn, db, case_id, token)
            state = self._state(db, rec)
            row = next((g for g in state["grants"]
                        if g["grant_id"] == grant_id and g["revoked_at"] is None), None)
            if row is None:
                raise UnknownGrantError(f"Case {case_id} has no active grant {grant_id!r}.")
            self._put(db, state, "grants", {**row, "revoked_at": time.time()})
            self._append_audit(db, case_id, token, audit or [{"kind": "grant"}],
                               seal=_seal(token, True, state))

    def grants(self, case_id: str) -> list[Grant]:
        with self._conn.tx() as db:
            rec = case_row(self._conn, db, case_id)
            rows = self._state(db, rec)["grants"] if rec else []
        return sorted((_grant(r) for r in rows), key=lambda g: g.created_at)

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
                rec = live_case(self._conn, db, case_id, token)
                state = self._state(db, rec) if charges else None
                for owner, cost in charges.items():
                    assert state is not None
                    row = next((r for r in state["budget"] if r["requester"] == requester
                                and r["owner"] == owner), None)
                    now_spent = float(row["spent"]) if row else 0.0
                    if abs(now_spent - seen.get(owner, 0.0)) > 1e-9:
                        return None
                    self._put(db, state, "budget", {"case_id": case_id, "requester": requester,
                                                    "owner": owner, "spent": now_spent + cost})
                entries = audit or ([{"kind": "state", "action": "charge"}] if charges else [])
                self._append_audit(db, case_id, token, entries,
                                   seal=_seal(token, True, state) if state else None)
                return self._events.insert(db, case_id, events)

        return self._conn.retrying(run)

    # -- the chain ---------------------------------------------------------------------------
    def _lock_head(self, db: Tx) -> tuple[int, str]:
        """The head row, locked (it serialises appenders)."""
        db.run(f"{self._conn.insert_ignore} INTO {self._conn.t('audit_head')} (id, seq, hash)"
               " VALUES (1, 0, ?)", (GENESIS,))
        head = db.one(f"SELECT seq, hash FROM {self._conn.t('audit_head')} WHERE id = 1"
                      f"{self._conn.for_update}")
        assert head is not None
        return int(head["seq"]), str(head["hash"])

    def _append_audit(self, db: Tx, case_id: str, token: str | None,
                      entries: list[dict[str, Any]], seal: str | None = None) -> None:
        """Append entries to the keyed chain, ``seal`` on the last one; the anchor moves once
        the transaction commits. A head behind the anchor (the chain was cut short or wiped)
        is refused before anything is written."""
        if not entries:
            return
        seq, prev = self._lock_head(db)
        anchor = self._keys.anchor()
        if seq < anchor.seq or (anchor.seq and (db.one(
                f"SELECT hash FROM {self._conn.t('audit')} WHERE seq = ?", (anchor.seq,))
                or {}).get("hash") != anchor.hash):
            raise AuditTamperedError(
                f"The audit ledger {self._conn!r} no longer holds entry {anchor.seq} that the "
                f"audit anchor {self._keys.anchor_path} recorded (its head is entry {seq}): "
                "entries were cut off or wiped. Nothing was written.")
        at = datetime.now().astimezone().isoformat(timespec="milliseconds")
        for i, entry in enumerate(entries):
            seq += 1
            row = {"seq": seq, "case_id": case_id, "token": token,
                   "kind": entry.get("kind", "decision"), "action": entry.get("action"),
                   "entry": canonical({**entry, "case_id": case_id, "at": at}),
                   "prev_hash": prev, "seal": seal if i == len(entries) - 1 else None}
            row["hash"] = entry_hash(self._key, row)
            db.run(f"INSERT INTO {self._conn.t('audit')} ({', '.join(row)}) VALUES"
                   f" ({', '.join('?' for _ in row)})", tuple(row.values()))
            prev = row["hash"]
        db.run(f"UPDATE {self._conn.t('audit_head')} SET seq = ?, hash = ? WHERE id = 1",
               (seq, prev))
        db.on_commit.append(lambda: self._keys.advance(seq, prev))

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
        """Walk the whole chain under the key, up to (at least) the anchor; the number of
        entries, or ``AuditTamperedError`` naming the first entry that fails."""
        anchor = self._keys.anchor()
        with self._conn.tx() as db:
            rows = db.all(f"SELECT {AUDIT_ROW} FROM {self._conn.t('audit')} ORDER BY seq")
            head = db.one(f"SELECT seq, hash FROM {self._conn.t('audit_head')} WHERE id = 1")
        result = verify_chain(rows, (int(head["seq"]), str(head["hash"])) if head else None,
                              self._key, (anchor.seq, anchor.hash, anchor.legacy))
        if isinstance(result, str):
            raise AuditTamperedError(
                f"The audit ledger {self._conn!r} fails its hash chain: {result}.")
        return result

    def chain_lost(self) -> bool:
        """The ledger holds no audit entry, but the anchor records some (a lost ledger)."""
        with self._conn.tx() as db:
            row = db.one(f"SELECT 1 AS x FROM {self._conn.t('audit')} LIMIT 1")
        return row is None and self._keys.anchor().seq > 0

    def clear_case(self, db: Tx, case_id: str) -> None:
        """Limits, grants and budget (the cards they name are gone); never audit entries. A
        case whose state was sealed gets a new seal (empty; ``live`` unless it was deleted).

        Rows are not checked first: a reset or a delete discards them with the cards they
        name, so it is also the way out of a case whose state was tampered with."""
        rec = case_row(self._conn, db, case_id)  # None: a delete (its row is gone already)
        for table in STATE_TABLES:
            db.run(f"DELETE FROM {self._conn.t(table)} WHERE case_id = ?", (case_id,))
        last = db.one(f"SELECT seal FROM {self._conn.t('audit')} WHERE case_id = ? AND"
                      " seal IS NOT NULL ORDER BY seq DESC LIMIT 1", (case_id,))
        if last is not None and json.loads(last["seal"])["live"]:
            empty: State = {t: [] for t in STATE_TABLES}
            self._append_audit(db, case_id, None,
                               [{"kind": "state", "action": "reset" if rec else "delete"}],
                               seal=_seal(rec.token if rec else None, rec is not None, empty))


def _seal(token: str | None, live: bool, state: State) -> str:
    """The seal an audit entry carries: the incarnation and a digest per state table."""
    return canonical({"token": token, "live": live,
                      **{t: state_digest(r["mac"] for r in rows) for t, rows in state.items()}})


def _grant(row: dict[str, Any]) -> Grant:
    return Grant(**{c: row[c] for c in STATE_TABLES["grants"]})
