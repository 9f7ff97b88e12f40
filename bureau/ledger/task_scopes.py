"""Shared task scopes (issue 14): :class:`TaskScopeStore` (``ledger.task_scope_records``).

Scopes, members, keyed writes and inboxes. Each membership change and each write is one
transaction that reads the scope's rows (locked on the server), applies the pure rules of
:mod:`bureau.task_scopes` and writes the change, its inbox notices and its outward event
(:meth:`~bureau.ledger.events.EventStore.insert`, in the same transaction) together: two
processes can interleave their operations but never half of one. Like the rest of the ledger it
holds ids, names, versions and timestamps, never a text: the texts of writes live in the card
store (see :mod:`bureau.service.shared_scopes`).

Tables (:data:`bureau.ledger.schema.TASK_SCOPE_TABLES`):

* ``task_scopes``: one row per scope (owner, state);
* ``task_scope_members``: one row per (scope, role) ever invited, with its state;
* ``task_scope_writes``: every write, stale ones too (the history), with the card holding its text
  in the scope's log;
* ``task_scope_keys``: per key, the winning write and the searchable card that shows it;
* ``task_scope_inbox``: notices, numbered per role.
"""

from __future__ import annotations

import json
import time
from typing import Any

from ..errors import ScopeExistsError, UnknownScopeKeyError
from ..model import Event
from ..quotas import Quotas
from ..task_scopes.inbox import InboxItem, check_details
from ..task_scopes.membership import (
    Change,
    Membership,
    ScopeRow,
    TaskScope,
    plan,
    require_member,
    require_writable,
    scope_owner_id,
)
from ..task_scopes.versions import ScopeWrite, WriteResult, order_key
from .cases import live_case
from .connection import Connection, Tx
from .events import EventStore
from .schema import TASK_SCOPE_TABLES


def _scope_row(row: dict[str, Any] | None) -> ScopeRow | None:
    if row is None:
        return None
    return ScopeRow(row["case_id"], row["scope_name"], row["owner"], row["state"],
                    row["created_by"], float(row["created_at"]), float(row["updated_at"]))


def _write(row: dict[str, Any], win_seq: int | None = None) -> ScopeWrite:
    return ScopeWrite(
        seq=int(row["seq"]), scope=row["scope_name"], key=row["skey"], version=int(row["ver"]),
        writer=row["writer"], written_at=float(row["written_at"]),
        read_version=None if row["read_ver"] is None else int(row["read_ver"]),
        outcome=row["outcome"], card_id=str(row["card_id"]),
        current=win_seq is not None and int(row["seq"]) == int(win_seq))


class TaskScopeStore:
    """Scopes, members, keyed writes and inboxes; see the module docstring."""

    def __init__(self, conn: Connection, events: EventStore) -> None:
        self._conn = conn
        self.inbox_length: int | None = Quotas().inbox_length
        """Notices kept per role and case (``None``: all); the room sets it from the current
        settings (``quotas.inbox_length``) before each change."""
        self._events = events

    # -- rows --------------------------------------------------------------------------------
    def _scope(self, db: Tx, case_id: str, name: str, lock: bool = False) -> ScopeRow | None:
        return _scope_row(db.one(
            f"SELECT * FROM {self._conn.t('task_scopes')} WHERE case_id = ? AND scope_name = ?"
            f"{self._conn.for_update if lock else ''}", (case_id, name)))

    def _scope_members(self, db: Tx, case_id: str, name: str) -> dict[str, str]:
        return {r["member"]: r["state"] for r in db.all(
            f"SELECT member, state FROM {self._conn.t('task_scope_members')} WHERE case_id = ? AND"
            " scope_name = ?", (case_id, name))}

    def _set_member(self, db: Tx, case_id: str, name: str, role: str, state: str,
                    by: str | None, now: float) -> None:
        cur = db.run(f"UPDATE {self._conn.t('task_scope_members')} SET state = ?, updated_at = ?"
                     " WHERE case_id = ? AND scope_name = ? AND member = ?",
                     (state, now, case_id, name, role))
        if cur.rowcount == 0:
            db.run(f"INSERT INTO {self._conn.t('task_scope_members')} (case_id, scope_name, member,"
                   " state, invited_by, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                   (case_id, name, role, state, by, now))

    def _to_inbox(self, db: Tx, case_id: str, recipients: tuple[str, ...] | list[str],
                  kind: str, name: str, details: dict[str, Any], now: float) -> None:
        """One notice per recipient, numbered in that recipient's own inbox."""
        body = json.dumps(check_details(kind, details), sort_keys=True)
        for role in recipients:
            row = db.one(f"SELECT MAX(pos) AS n FROM {self._conn.t('task_scope_inbox')} WHERE"
                         " case_id = ? AND member = ?", (case_id, role))
            pos = int(row["n"] or 0) + 1 if row else 1
            db.run(f"INSERT INTO {self._conn.t('task_scope_inbox')} (case_id, member, pos, kind,"
                   " scope_name, payload, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                   (case_id, role, pos, kind, name, body, now))
            if self.inbox_length is not None and pos > self.inbox_length:  # bounded: oldest go
                db.run(f"DELETE FROM {self._conn.t('task_scope_inbox')} WHERE case_id = ? AND"
                       " member = ? AND pos <= ?", (case_id, role, pos - self.inbox_length))

    def _member_scope(self, db: Tx, case_id: str, name: str, role: str) -> ScopeRow:
        """The scope if ``role`` is an accepted member of it (else the one refusal)."""
        return require_member(case_id, name, self._scope(db, case_id, name),
                              self._scope_members(db, case_id, name), role)

    # -- membership --------------------------------------------------------------------------
    def create(self, case_id: str, token: str | None, name: str,
                          owner: str) -> tuple[TaskScope, list[Event]]:
        def run() -> tuple[TaskScope, list[Event]]:
            now = time.time()
            with self._conn.tx(write=True) as db:
                live_case(self._conn, db, case_id, token)
                if self._scope(db, case_id, name, lock=True) is not None:
                    raise ScopeExistsError(f"Case {case_id} already has or had a task scope "
                                           f"named {name!r}.")
                db.run(f"INSERT INTO {self._conn.t('task_scopes')} (case_id, scope_name, owner,"
                       " state, created_by, created_at, updated_at)"
                       " VALUES (?, ?, ?, 'active', ?, ?, ?)",
                       (case_id, name, owner, owner, now, now))
                self._set_member(db, case_id, name, owner, "member", owner, now)
                details = {"scope": name, "by": owner}
                self._to_inbox(db, case_id, [owner], "scope.created", name, details, now)
                events = self._events.insert(db, case_id, [("scope.created", details)])
                row = ScopeRow(case_id, name, owner, "active", owner, now, now)
                return TaskScope.of(row, {owner: "member"}), events

        return self._conn.retrying(run)

    def change(self, case_id: str, token: str | None, op: str, name: str,
                          actor: str, target: str | None = None,
                          ) -> tuple[Change, TaskScope, list[Event]]:
        """Apply one membership operation (see :func:`bureau.task_scopes.membership.plan`)."""
        def run() -> tuple[Change, TaskScope, list[Event]]:
            now = time.time()
            with self._conn.tx(write=True) as db:
                live_case(self._conn, db, case_id, token)
                scope = self._scope(db, case_id, name, lock=True)
                members = self._scope_members(db, case_id, name)
                change = plan(op, case_id, name, scope, members, actor, target)
                assert scope is not None
                for role, state in change.members.items():
                    self._set_member(db, case_id, name, role, state, actor, now)
                if change.owner is not None or change.state is not None:
                    db.run(f"UPDATE {self._conn.t('task_scopes')} SET owner = ?, state = ?,"
                           " updated_at = ? WHERE case_id = ? AND scope_name = ?",
                           (change.owner or scope.owner, change.state or scope.state, now,
                            case_id, name))
                if change.state == "deleted":  # the cards they name are purged next
                    for table in ("task_scope_writes", "task_scope_keys"):
                        db.run(f"DELETE FROM {self._conn.t(table)} WHERE case_id = ? AND"
                               " scope_name = ?", (case_id, name))
                self._to_inbox(db, case_id, change.recipients, change.notice, name,
                               change.details, now)
                events = self._events.insert(db, case_id, [(change.notice, change.details)])
                row = ScopeRow(case_id, name, change.owner or scope.owner,
                               change.state or scope.state, scope.created_by, scope.created_at,
                               now)
                return change, TaskScope.of(row, {**members, **change.members}), events

        return self._conn.retrying(run)

    # -- reads (as a member, or as the operator) -----------------------------------------------
    def access(self, case_id: str, name: str, role: str,
                          write: bool = False) -> ScopeRow:
        """The scope, if ``role`` may read (``write``: and write) it now; else the refusal."""
        with self._conn.tx() as db:
            scope = self._scope(db, case_id, name)
            members = self._scope_members(db, case_id, name)
        check = require_writable if write else require_member
        return check(case_id, name, scope, members, role)

    def info(self, case_id: str, name: str, role: str) -> TaskScope:
        with self._conn.tx() as db:
            scope = self._scope(db, case_id, name)
            members = self._scope_members(db, case_id, name)
        return TaskScope.of(require_member(case_id, name, scope, members, role), members)

    def all(self, case_id: str) -> list[TaskScope]:
        """Every scope of a case, deleted ones too (operator view)."""
        with self._conn.tx() as db:
            rows = db.all(f"SELECT * FROM {self._conn.t('task_scopes')} WHERE case_id = ?"
                          " ORDER BY scope_name", (case_id,))
            members = db.all(f"SELECT scope_name, member, state FROM"
                             f" {self._conn.t('task_scope_members')} WHERE case_id = ?", (case_id,))
        by_scope: dict[str, dict[str, str]] = {}
        for m in members:
            by_scope.setdefault(m["scope_name"], {})[m["member"]] = m["state"]
        out = []
        for r in rows:
            row = _scope_row(r)
            assert row is not None
            out.append(TaskScope.of(row, by_scope.get(row.name, {})))
        return out

    def memberships(self, case_id: str, role: str) -> list[Membership]:
        """The role's pending invitations and memberships of scopes that are not deleted."""
        with self._conn.tx() as db:
            rows = db.all(
                f"SELECT m.scope_name, m.state FROM {self._conn.t('task_scope_members')} m JOIN"
                f" {self._conn.t('task_scopes')} s ON s.case_id = m.case_id AND"
                " s.scope_name = m.scope_name WHERE m.case_id = ? AND m.member = ? AND"
                " m.state IN ('invited', 'member') AND s.state <> 'deleted'"
                " ORDER BY m.scope_name", (case_id, role))
        return [Membership(r["scope_name"], r["state"]) for r in rows]

    def member_view(self, case_id: str, role: str | None = None) -> dict[str, frozenset[str]]:
        """Store owner id -> ids of the cards showing its keys' current values, for every live
        scope ``role`` is an accepted member of (``None``: every live scope, operator view).

        One read, made on every request: a removal by any holder in any process takes effect
        on the next read. A card shows a value only while it holds the key's current winner:
        one that is being replaced, or left behind by a crash, is never returned.
        """
        sql = (f"SELECT s.scope_name, k.shown_card FROM {self._conn.t('task_scopes')} s"
               f" LEFT JOIN {self._conn.t('task_scope_keys')} k ON k.case_id = s.case_id AND"
               " k.scope_name = s.scope_name AND k.shown_seq = k.win_seq"
               " WHERE s.case_id = ? AND s.state IN ('active', 'archived')")
        params: tuple[Any, ...] = (case_id,)
        if role is not None:
            sql += (f" AND EXISTS (SELECT 1 FROM {self._conn.t('task_scope_members')} m WHERE"
                    " m.case_id = s.case_id AND m.scope_name = s.scope_name AND m.member = ?"
                    " AND m.state = 'member')")
            params += (role,)
        with self._conn.tx() as db:
            rows = db.all(sql, params)
        out: dict[str, set[str]] = {}
        for r in rows:
            ids = out.setdefault(scope_owner_id(r["scope_name"]), set())
            if r["shown_card"]:
                ids.add(str(r["shown_card"]))
        return {owner: frozenset(ids) for owner, ids in sorted(out.items())}

    def members_of(self, case_id: str) -> dict[str, frozenset[str]]:
        """Store owner id -> accepted members, for every live scope (operator view)."""
        with self._conn.tx() as db:
            rows = db.all(
                f"SELECT m.scope_name, m.member FROM {self._conn.t('task_scope_members')} m JOIN"
                f" {self._conn.t('task_scopes')} s ON s.case_id = m.case_id AND"
                " s.scope_name = m.scope_name WHERE m.case_id = ? AND m.state = 'member' AND"
                " s.state IN ('active', 'archived')", (case_id,))
        out: dict[str, set[str]] = {}
        for r in rows:
            out.setdefault(scope_owner_id(r["scope_name"]), set()).add(r["member"])
        return {k: frozenset(v) for k, v in out.items()}

    # -- keyed writes ----------------------------------------------------------------------------
    def record_write(
        self, case_id: str, token: str | None, name: str, writer: str, key: str, version: int,
        read_version: int | None, written_at: float, card_id: str,
    ) -> tuple[WriteResult, list[Event]]:
        """Record one write and decide, against the key's current winner, whether it wins.

        Stale writes are recorded too (history) and noticed to their writer; a winning write is
        noticed to the other members. Refused (nothing written) if the writer is no longer an
        accepted member or the scope stopped taking writes meanwhile.
        """
        def run() -> tuple[WriteResult, list[Event]]:
            now = time.time()
            with self._conn.tx(write=True) as db:
                live_case(self._conn, db, case_id, token)
                scope = self._scope(db, case_id, name, lock=True)
                members = self._scope_members(db, case_id, name)
                require_writable(case_id, name, scope, members, writer)
                krow = db.one(f"SELECT win_seq FROM {self._conn.t('task_scope_keys')} WHERE"
                              " case_id = ? AND scope_name = ? AND skey = ?"
                              f"{self._conn.for_update}",
                              (case_id, name, key))
                best = None if krow is None else db.one(
                    f"SELECT * FROM {self._conn.t('task_scope_writes')} WHERE seq = ?",
                    (krow["win_seq"],))
                mine = order_key(version, written_at, writer, card_id)
                won = best is None or mine > order_key(int(best["ver"]),
                                                       float(best["written_at"]),
                                                       best["writer"], str(best["card_id"]))
                cur = db.run(
                    f"INSERT INTO {self._conn.t('task_scope_writes')} (case_id, scope_name, skey,"
                    " ver, read_ver, writer, written_at, card_id, outcome)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (case_id, name, key, version, read_version, writer, written_at, card_id,
                     "won" if won else "stale"))
                seq = int(cur.lastrowid or 0)
                if krow is None:
                    db.run(f"INSERT INTO {self._conn.t('task_scope_keys')} (case_id, scope_name,"
                           " skey, win_seq, shown_seq, shown_card) VALUES (?, ?, ?, ?, NULL, NULL)",
                           (case_id, name, key, seq))
                elif won:
                    db.run(f"UPDATE {self._conn.t('task_scope_keys')} SET win_seq = ? WHERE"
                           " case_id = ? AND scope_name = ? AND skey = ?",
                           (seq, case_id, name, key))
                if won:
                    win_version, win_writer = version, writer
                    others = [r for r, s in sorted(members.items())
                              if s == "member" and r != writer]
                    self._to_inbox(db, case_id, others, "scope.write", name,
                                   {"scope": name, "key": key, "version": version,
                                    "writer": writer, "seq": seq}, now)
                else:
                    assert best is not None
                    win_version, win_writer = int(best["ver"]), best["writer"]
                    self._to_inbox(db, case_id, [writer], "scope.write.stale", name,
                                   {"scope": name, "key": key, "version": version,
                                    "winning_version": win_version,
                                    "winning_writer": win_writer, "seq": seq}, now)
                events = self._events.insert(db, case_id, [(
                    "scope.written", {"scope": name, "writer": writer, "version": version,
                                      "seq": seq, "stale": not won})])
            result = WriteResult(name, key, version, writer, written_at, not won, win_version,
                                 win_writer, seq, card_id)
            return result, events

        return self._conn.retrying(run)

    def value(self, case_id: str, name: str, role: str, key: str) -> ScopeWrite:
        """The key's winning write, as a member reads it."""
        with self._conn.tx() as db:
            self._member_scope(db, case_id, name, role)
            row = db.one(f"SELECT w.* FROM {self._conn.t('task_scope_keys')} k JOIN"
                         f" {self._conn.t('task_scope_writes')} w ON w.seq = k.win_seq WHERE"
                         " k.case_id = ? AND k.scope_name = ? AND k.skey = ?",
                         (case_id, name, key))
        if row is None:
            raise UnknownScopeKeyError(f"Task scope {name!r} has no key {key!r}.")
        return _write(row, row["seq"])

    def keys(self, case_id: str, name: str, role: str) -> list[str]:
        with self._conn.tx() as db:
            self._member_scope(db, case_id, name, role)
            rows = db.all(f"SELECT skey FROM {self._conn.t('task_scope_keys')} WHERE"
                          " case_id = ? AND scope_name = ? ORDER BY skey", (case_id, name))
        return [r["skey"] for r in rows]

    def key_winners(self, case_id: str, name: str, role: str) -> dict[str, str]:
        """Each key and the log card of its winning write, as a member reads them (the room
        drops keys whose value was revoked or expired)."""
        with self._conn.tx() as db:
            self._member_scope(db, case_id, name, role)
            rows = db.all(f"SELECT k.skey, w.card_id FROM {self._conn.t('task_scope_keys')} k"
                          f" JOIN {self._conn.t('task_scope_writes')} w ON w.seq = k.win_seq"
                          " WHERE k.case_id = ? AND k.scope_name = ? ORDER BY k.skey",
                          (case_id, name))
        return {r["skey"]: str(r["card_id"]) for r in rows}

    def history(self, case_id: str, name: str, role: str, key: str) -> list[ScopeWrite]:
        """Every write of a key, stale ones included, in the order they were recorded."""
        with self._conn.tx() as db:
            self._member_scope(db, case_id, name, role)
            krow = db.one(f"SELECT win_seq FROM {self._conn.t('task_scope_keys')} WHERE case_id = ?"
                          " AND scope_name = ? AND skey = ?", (case_id, name, key))
            rows = db.all(f"SELECT * FROM {self._conn.t('task_scope_writes')} WHERE case_id = ? AND"
                          " scope_name = ? AND skey = ? ORDER BY seq", (case_id, name, key))
        if krow is None:
            raise UnknownScopeKeyError(f"Task scope {name!r} has no key {key!r}.")
        return [_write(r, krow["win_seq"]) for r in rows]

    # -- the searchable copy of each key's value ------------------------------------------------
    def unsettled(self, case_id: str, name: str) -> list[dict[str, Any]]:
        """Keys whose searchable card does not (yet) show the current winner: ``skey``,
        ``win_seq``, ``win_card`` (its log card), ``writer``, ``shown_card``."""
        with self._conn.tx() as db:
            return db.all(
                f"SELECT k.skey, k.win_seq, k.shown_card, w.card_id AS win_card, w.writer"
                f" FROM {self._conn.t('task_scope_keys')} k"
                f" JOIN {self._conn.t('task_scope_writes')} w"
                " ON w.seq = k.win_seq WHERE k.case_id = ? AND k.scope_name = ? AND"
                " (k.shown_seq IS NULL OR k.shown_seq <> k.win_seq) ORDER BY k.skey",
                (case_id, name))

    def settle_key(self, case_id: str, name: str, key: str, win_seq: int,
                         expect_card: str | None, new_card: str) -> bool:
        """Let ``new_card`` show the key's value, if the winner is still ``win_seq`` and nobody
        replaced ``expect_card`` meanwhile (compare-and-set); False: the caller deletes it."""
        def run() -> bool:
            with self._conn.tx(write=True) as db:
                scope = self._scope(db, case_id, name, lock=True)
                if scope is None or scope.state == "deleted":
                    return False
                row = db.one(f"SELECT win_seq, shown_card FROM {self._conn.t('task_scope_keys')}"
                             f" WHERE case_id = ? AND scope_name = ? AND skey = ?"
                             f"{self._conn.for_update}", (case_id, name, key))
                if row is None or int(row["win_seq"]) != int(win_seq) \
                        or (row["shown_card"] or None) != expect_card:
                    return False
                db.run(f"UPDATE {self._conn.t('task_scope_keys')} SET shown_card = ?, shown_seq = ?"
                       " WHERE case_id = ? AND scope_name = ? AND skey = ?",
                       (new_card, win_seq, case_id, name, key))
                return True

        return self._conn.retrying(run)

    # -- inbox -----------------------------------------------------------------------------------
    def inbox_page(self, case_id: str, role: str, cursor: int, limit: int) -> list[InboxItem]:
        with self._conn.tx() as db:
            rows = db.all(f"SELECT pos, kind, scope_name, payload, at FROM"
                          f" {self._conn.t('task_scope_inbox')} WHERE case_id = ? AND"
                          " member = ? AND pos > ? ORDER BY pos LIMIT ?",
                          (case_id, role, cursor, limit))
        return [InboxItem(int(r["pos"]), r["kind"], r["scope_name"], float(r["at"]),
                          json.loads(r["payload"])) for r in rows]

    def clear_case(self, db: Tx, case_id: str) -> None:
        """Every scope of the case (they live in its namespace: purged with it)."""
        for table in TASK_SCOPE_TABLES:
            db.run(f"DELETE FROM {self._conn.t(table)} WHERE case_id = ?", (case_id,))
