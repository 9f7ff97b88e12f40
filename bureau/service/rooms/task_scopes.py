"""The task-scopes room: shared task scopes on the card store and the ledger.

The rules are in :mod:`bureau.task_scopes` and are applied inside ledger transactions
(:mod:`bureau.ledger.task_scopes`); this module adds the texts, which live in the card store like
every other card of the case, under two owner ids per scope:

* ``task:<name>:log`` -- one card per write, stale writes included: the scope's history. Never
  searched by anyone; read only through :meth:`TaskScopes.read` / :meth:`TaskScopes.history`,
  by id, after the ledger said the reader is a member.
* ``task:<name>`` -- one card per key, showing the key's current value (a copy of the winning
  write's text, labelled with the writer as ``source_role``): what members' searches, card
  lists and exports see. Losers never show up there, so a search returns each key's winner only
  and a scope's search cost does not grow with its history.

A write: check membership (refused before anything is stored), store the text in the log,
record the write in one ledger transaction (the version decides winner or stale there), then
*settle*: make the searchable card show the key's winner. Settling is a compare-and-set in the
ledger, so writers in several processes that settle the same key at once leave one card; one
that crashes halfway leaves at most a card that shows no current value, which every read path
filters out (the ledger names the cards that do) and the next write to the scope settles.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...errors import (
    BoundaryViolation,
    DamagedDataError,
    InvalidArgumentError,
    UnknownScopeKeyError,
)
from ...model import BOARD, CaseSpace, MemoryCard
from ...task_scopes.inbox import InboxPage, check_cursor, check_page
from ...task_scopes.membership import (
    Membership,
    TaskScope,
    check_scope_name,
    log_owner_id,
    scope_owner_id,
)
from ...task_scopes.versions import (
    ScopeValue,
    ScopeWrite,
    WriteResult,
    check_key,
    next_version,
)
from ...text import card_id_text, clean_text, short_repr
from ...tiers import run_owner
from ...tiers.inheritance import inherited_meta
from .context import CaseContext, live

if TYPE_CHECKING:
    from ...ledger.runs import RunStore
    from ...ledger.task_scopes import TaskScopeStore
    from ...model import Event

MAX_SETTLE_ROUNDS = 8
"""Settle attempts per write; past them a later write (or reader's write) settles the key."""


class TaskScopes:
    """The store and ledger work behind one case's task scopes.

    Operations take the acting role first (an agent's handle fills it in: ``agent.scopes``);
    the operator's own view is :meth:`all` and :meth:`memberships`.
    """

    def __init__(self, ctx: CaseContext, store: TaskScopeStore,
                 runs: RunStore | None = None) -> None:
        self._ctx = ctx
        self.gateway = ctx.gateway
        self.store = store
        self._runs = runs
        self.case_id = ctx.case_id
        self.token = ctx.token
        self.forget: Callable[[str], list[str]] | None = None
        """Forgets a card with every copy (the case's disclosure room sets it)."""

    def _notify(self, events: list[Event]) -> None:
        self._ctx.notify(events)

    # -- membership --------------------------------------------------------------------------
    def create(self, owner: str, name: object) -> TaskScope:
        """Create a scope owned by the role ``owner`` (its first member). Its cards are stored
        under ``task:<name>``; names are case-wide and never reused (``ScopeExistsError``)."""
        owner = self._ctx.role(owner)
        name = check_scope_name(name)
        self._ctx.space()
        self.store.inbox_length = self._ctx.quotas().inbox_length
        scope, events = self.store.create(self.case_id, self.token, name, owner)
        self._notify(events)
        return scope

    def invite(self, name: object, by: str, role: str) -> TaskScope:
        """The owner ``by`` invites ``role``; it reads and writes nothing until it accepts."""
        return self._change("invite", name, by, role)

    def accept(self, name: object, role: str) -> TaskScope:
        """Accept a pending invitation: from now on the scope is searched for ``role``."""
        return self._change("accept", name, role)

    def decline(self, name: object, role: str) -> TaskScope:
        return self._change("decline", name, role)

    def remove(self, name: object, by: str, role: str, *, forget_values: bool = False
               ) -> TaskScope:
        """The owner removes a member (or withdraws an invitation): it loses access on every
        read path at once, in every process (membership is read on every request).

        ``forget_values``: the values the member wrote go with it -- each of its writes in the
        scope's history and the value it shows, forgotten like ``case.forget`` (revoked with
        every copy, and with sealing their keys destroyed, so the store's files keep noise). A
        key whose current value was the member's then has none until someone writes it again.
        The membership changes first (only the owner may do this); a crash before the writes
        are forgotten leaves them, and ``case.forget`` of each finishes the job."""
        scope = self._change("remove", name, by, role)
        if forget_values:
            self._forget_writes(check_scope_name(name), self._ctx.role(role))
        return scope

    def _forget_writes(self, name: str, role: str) -> list[str]:
        """Forget every live write ``role`` made in the scope (and what derives from it)."""
        if self.forget is None:
            raise InvalidArgumentError("This task-scope room cannot forget values.")
        space, dead = self._ctx.view()
        gone: set[str] = set(dead)
        for card in self.gateway.list(space, log_owner_id(name)):
            if card.source_role == role and card.id not in gone:
                gone.update(self.forget(card.id))
        return sorted(gone - set(dead))

    def transfer(self, name: object, by: str, to: str) -> TaskScope:
        """The owner hands the scope to ``to``, who must be an accepted member."""
        return self._change("transfer", name, by, to)

    def archive(self, name: object, by: str) -> TaskScope:
        """Members still read an archived scope; no writes or membership changes."""
        return self._change("archive", name, by)

    def delete(self, name: object, by: str) -> TaskScope:
        """Delete the scope for everyone: its cards are purged (verified), its name retired."""
        return self._change("delete", name, by)

    def _change(self, op: str, name: object, actor: str, target: str | None = None) -> TaskScope:
        """One membership operation; ``delete`` also purges the scope's cards (verified)."""
        actor = self._ctx.role(actor)
        if op in ("invite", "remove", "transfer") or target is not None:
            target = self._ctx.role(target)  # None is no role: refused like any other
        name = check_scope_name(name)
        space = self._ctx.space()
        self.store.inbox_length = self._ctx.quotas().inbox_length
        _, scope, events = self.store.change(self.case_id, self.token, op,
                                                         name, actor, target)
        self._notify(events)
        if op == "delete":
            deleted = self._purge(space, name)
            self._ctx.emit("scope.purged", {"scope": name, "deleted": deleted})
        return scope

    def memberships(self, role: str) -> list[Membership]:
        """The role's memberships and pending invitations (of scopes not deleted)."""
        role = self._ctx.role(role)
        self._ctx.space()
        return self.store.memberships(self.case_id, role)

    def all(self) -> list[TaskScope]:
        """Every task scope of the case, deleted ones too (operator view)."""
        self._ctx.space()
        return self.store.all(self.case_id)

    def _purge(self, space: CaseSpace, name: str, rounds: int = 100) -> int:
        """Delete every card of the scope (values and log) and verify none is left."""
        gw = self.gateway
        deleted = 0
        for owner in (scope_owner_id(name), log_owner_id(name)):
            for _ in range(rounds):
                cards = gw.list(space, owner)
                if not cards:
                    break
                deleted += sum(1 for c in cards if gw.delete(space, owner, c.id))
            left = gw.count(space, owner)
            if left:
                raise BoundaryViolation(f"{left} cards of task scope {name!r} survived deletion.")
        return deleted

    # -- reads -------------------------------------------------------------------------------
    def view(self, role: str | None) -> dict[str, frozenset[str]]:
        """Store owner id -> ids of the cards showing current values, for the live scopes
        ``role`` is an accepted member of (read from the ledger now); ``None``: every live
        scope (the operator's view)."""
        role = None if role is None else self._ctx.role(role)
        return self.store.member_view(self.case_id, role)

    def members_of(self) -> dict[str, frozenset[str]]:
        """Store owner id -> accepted members, for every live scope (operator view)."""
        return self.store.members_of(self.case_id)

    def hidden(self, space: CaseSpace, view: dict[str, frozenset[str]]) -> int:
        if not isinstance(space, CaseSpace) or not isinstance(view, dict):
            raise InvalidArgumentError("hidden() takes the namespace and a member view.")
        """How many cards in these scopes show no current value (being replaced, or left by a
        crash): a search asks for that many more, so each scope still gets its top-k."""
        return sum(max(0, self.gateway.count(space, owner) - len(ids))
                   for owner, ids in view.items())

    def read(self, name: object, role: str, key: object) -> ScopeValue:
        role = self._ctx.role(role)
        name = check_scope_name(name)
        key = check_key(key)
        space, dead = self._ctx.view()
        win = self.store.value(self.case_id, name, role, key)
        card = None if win.card_id in dead else self.gateway.get(space, log_owner_id(name),
                                                                  win.card_id)
        if win.card_id in dead or (card is not None and not live(card, dead)):
            self.store.access(self.case_id, name, role)
            raise UnknownScopeKeyError(
                f"Task scope {name!r} has no live value for {key!r}: it was revoked or expired.",
                "Write the key again.")
        if card is None:
            # Purged by a delete that committed after the ledger read (then: the refusal any
            # non-member gets), or lost by the store while the scope lives (damage: say so).
            self.store.access(self.case_id, name, role)
            raise DamagedDataError(
                f"The text of {key!r} (version {win.version}) in task scope {name!r} is missing "
                "from the card store.", "Write the key again; see scope_history for its past.")
        return ScopeValue(key, card.content, win.version, win.writer, win.written_at, card.id)

    def keys(self, name: object, role: str) -> list[str]:
        role = self._ctx.role(role)
        name = check_scope_name(name)
        _, dead = self._ctx.view()
        return [k for k, card_id in self.store.key_winners(self.case_id, name, role).items()
                if card_id not in dead]

    def history(self, name: object, role: str, key: object) -> list[ScopeWrite]:
        role = self._ctx.role(role)
        name = check_scope_name(name)
        key = check_key(key)
        space, dead = self._ctx.view()
        rows = self.store.history(self.case_id, name, role, key)
        logged = self.gateway.list(space, log_owner_id(name), where={"topic": key})
        gone = set(dead) | {c.id for c in logged if not live(c, dead)}
        texts = {c.id: c.content for c in logged}
        # a revoked or expired write leaves the history too (issue 19)
        return [ScopeWrite(**{**w.__dict__, "text": texts.get(w.card_id)}) for w in rows
                if w.card_id not in gone]

    def info(self, name: object, role: str) -> TaskScope:
        role = self._ctx.role(role)
        name = check_scope_name(name)
        self._ctx.space()
        return self.store.info(self.case_id, name, role)

    def inbox(self, role: str, cursor: int = 0, limit: int = 100) -> InboxPage:
        role = self._ctx.role(role)
        cursor = check_cursor(cursor)
        limit = check_page(limit)
        self._ctx.space()
        items = self.store.inbox_page(self.case_id, role, cursor, limit)
        return InboxPage(tuple(items), items[-1].cursor if items else cursor)

    # -- keyed writes ------------------------------------------------------------------------
    def write(self, name: object, role: str, key: object, text: object,
              read_version: int | None = None, source_id: str | None = None) -> WriteResult:
        """Record one write of ``text`` to ``key``. ``source_id``: the card the text was
        copied from (the agent handle's ``from_card``, checked readable there); the write's log
        card records it, so a revocation or expiry of that card reaches the value."""
        role = self._ctx.role(role)
        name = check_scope_name(name)
        key = check_key(key)
        content = clean_text(text, what="scope value")
        if source_id is not None and card_id_text(source_id) is None:
            raise InvalidArgumentError(f"source_id must be a card id, not "
                                       f"{short_repr(source_id)}.")
        version = next_version(read_version)
        space = self._ctx.space()
        # Refused before anything is stored (the ledger checks again when it records).
        self.store.access(self.case_id, name, role, write=True)
        if read_version is not None:  # only a version that exists: versions never go down, so
            # a version read now is one every later writer can still out-number
            try:
                current = self.store.value(self.case_id, name, role, key).version
            except UnknownScopeKeyError:
                current = 0
            if read_version > current:
                raise InvalidArgumentError(
                    f"read_version {read_version} of {key!r} was never written (the current "
                    f"version is {current}); pass the version you read.")
        quotas = self._ctx.quotas()  # the last check: a write refused here counts nothing
        self._ctx.meter.take(role, "scope_writes_per_minute", quotas.scope_writes_per_minute,
                             what="task-scope writes")
        self.store.inbox_length = quotas.inbox_length
        written_at = time.time()
        log = log_owner_id(name)
        labels = inherited_meta(content, self._untrusted_seen(space, role))
        card = self.gateway.add(space, log, content,
                                {**_meta(key, "scope-write", role, source_id), **labels})
        if source_id is not None:  # a limit set on the card meanwhile reaches the write
            self._ctx.inherit(source_id, [(card.id, log)])
        try:
            result, events = self.store.record_write(
                self.case_id, self.token, name, role, key, version, read_version,
                written_at, card.id)
        except BaseException:
            self.gateway.delete_or_gone(space, log, card.id)  # the write never happened
            raise
        self._notify(events)
        self._settle(space, name, {card.id: card})
        return result

    def _untrusted_seen(self, space: CaseSpace, role: str) -> list[MemoryCard]:
        """Every untrusted card ``role`` could have read and pasted: its live runs' tool
        output, its own promoted tool output, the board's and its scopes' untrusted values."""
        owners = [role, BOARD, *self.view(role)]
        seen = [c for o in owners
                for c in self.gateway.list(space, o, where={"trust": "untrusted"})]
        for rec in self._runs.all(self.case_id) if self._runs is not None else []:
            if rec.role == role and rec.token == self.token:
                seen += self.gateway.list(space, run_owner(rec.run_id, role))
        return seen

    def _settle(self, space: CaseSpace, name: str,
                known: dict[str, MemoryCard] | None = None) -> int:
        """Make each key's searchable card show its current winner; returns cards replaced.

        ``known``: log cards at hand (the caller's own write), saving a store read. The shown
        card keeps the log card's labels: a pasted tool output stays untrusted (issue 19 §4).
        """
        gw = self.gateway
        main, log = scope_owner_id(name), log_owner_id(name)
        replaced = 0
        for _ in range(MAX_SETTLE_ROUNDS):
            rows = self.store.unsettled(self.case_id, name)
            if not rows:
                break
            _, dead = self._ctx.view()
            rows = [r for r in rows if str(r["win_card"]) not in dead]
            if not rows:  # a revoked or expired value is never shown again
                break
            for r in rows:
                win_card = str(r["win_card"])
                src = (known or {}).get(win_card) or gw.get(space, log, win_card)
                if src is None or not live(src, dead):  # the scope was deleted meanwhile,
                    continue  # or the value's source was revoked or expired
                new = gw.add(space, main, src.content,
                             {**_meta(str(r["skey"]), "scope-value", str(r["writer"]), win_card),
                              **_inherited(src)})
                old = str(r["shown_card"]) if r["shown_card"] else None
                if self.store.settle_key(self.case_id, name, str(r["skey"]),
                                                int(r["win_seq"]), old, new.id):
                    replaced += 1
                    if old is not None:
                        gw.delete_or_gone(space, main, old)
                else:  # another holder settled this key first, or a newer write won
                    gw.delete_or_gone(space, main, new.id)
        return replaced


def _inherited(log_card: MemoryCard) -> dict[str, Any]:
    """The labels a log card took from what it copies (see :mod:`bureau.tiers.inheritance`)."""
    if log_card.trust != "untrusted":
        return {}
    return {"provenance": log_card.provenance, "trust": log_card.trust,
            "tool_source": log_card.tool_source, "copied_from": log_card.copied_from}


def _meta(key: str, kind: str, writer: str, source_id: str | None = None) -> dict[str, Any]:
    """A scope card's metadata: the key as its topic, the writer as ``source_role``."""
    meta: dict[str, Any] = {"visibility": "private", "topic": key, "kind": kind,
                            "source_role": writer}
    if source_id is not None:
        meta["source_id"] = source_id
    return meta
