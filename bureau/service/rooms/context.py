"""What every room of a case is built from: one narrow context, never the whole case.

A room (reading, disclosure, publishing, runs, task scopes) needs to know which case incarnation
it serves, whether that incarnation is still live, where the cards are, and where events go. It
gets exactly that here, and its own ledger store from its constructor; it never holds the :class:`~bureau.service.case.Case`, the
:class:`~bureau.service.bureau.Bureau` or another room's private parts, so a room's reach is what
its constructor was handed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...errors import BoardNotWritableError, UnknownCaseError, UnknownRoleError
from ...mediation.derivation import parents
from ...model import BOARD, CaseSpace, Event, MemoryCard
from ...quotas import QuotaMeter, Quotas
from ...text import short_repr

if TYPE_CHECKING:
    from ...ledger.cases import CaseStore
    from ...ledger.mediation import MediationStore
    from ...mediation import Mediator
    from ...responders import Responder
    from ...settings import Settings
    from ...storage.gateway import MemoryGateway

log = logging.getLogger(__name__)

_SHREDDED: set[tuple[str, str]] = set()
"""(namespace, card id) of dead cards this process has already erased: every case object of
the process shares it, so reattaching to a case does not erase its dead cards again."""

Dead = dict[str, tuple[str, str]]
"""Revoked or expired cards of a case: ``{card_id: (owner, "revoked" | "expired")}``."""
EventItems = list[tuple[str, dict[str, Any]]]


@dataclass(frozen=True)
class CaseContext:
    """One case incarnation as its rooms see it.

    ``settings``, ``mediator`` and ``responder`` are read through callables because the operator
    may swap them on the bureau while the case is open (lesson 07's exercise does).
    """

    case_id: str
    token: str | None
    roles: tuple[str, ...]
    gateway: MemoryGateway
    cases: CaseStore
    """The case rows: is this incarnation still live (read on every operation)."""
    limits: MediationStore
    """Revocations and expiries, read with the case row (every read path filters by them)."""
    settings: Callable[[], Settings]
    mediator: Callable[[], Mediator]
    responder: Callable[[], Responder]
    record_events: Callable[[EventItems], list[Event]]
    """Record events of this incarnation (one ledger transaction), then notify listeners."""
    notify: Callable[[list[Event]], list[Event]]
    """Notify listeners of events a ledger transaction already recorded."""
    meter: QuotaMeter = field(default_factory=QuotaMeter)

    """This case's per-principal rate windows (in this process; see :mod:`bureau.quotas`)."""

    def quotas(self) -> Quotas:
        """The limits now (the operator may change the settings while the case is open)."""
        return self.settings().quotas

    def space(self) -> CaseSpace:
        """This case's current store namespace; ``UnknownCaseError`` once it was deleted.

        Read from the ledger on every operation (one indexed read), so a delete or a reset made
        by any holder in any process takes effect for every other holder at once.
        """
        record = self.cases.get(self.case_id)
        if record is None or record.token != self.token:
            raise self.gone()
        return record.space

    def view(self) -> tuple[CaseSpace, Dead]:
        """The live namespace and the revoked or expired cards, in one ledger read."""
        record, dead = self.limits.case_view(self.case_id)
        if record is None or record.token != self.token:
            raise self.gone()
        self.shred(record.space, dead)
        return record.space, dead

    def shred(self, space: CaseSpace, dead: Dead) -> None:
        """Erase every revoked card, and every card whose expiry fell due, that is still stored
        (with sealing: its key destroyed first, so its text is noise on disk too); once per card
        per process. A revocation erases its cards itself; this catches the ones a crash left
        behind (killed between the ledger's limit and the erase) and expiries, which nothing
        else erases when they fall due. Read paths drop these cards anyway; a failure is retried
        on the next read."""
        due = [(cid, owner) for cid, (owner, _) in dead.items()
               if owner and (space.store_id, cid) not in _SHREDDED]
        for cid, owner in due:
            try:
                if self.gateway.delete_or_gone(space, owner, cid):
                    _SHREDDED.add((space.store_id, cid))
            except Exception:  # noqa: BLE001 - retried on the next read
                log.warning("could not erase dead card %s yet", cid)

    def gone(self) -> UnknownCaseError:
        return UnknownCaseError(f"Case {self.case_id} no longer exists (it was deleted).")

    def emit(self, type_: str, payload: dict[str, Any]) -> Event:
        return self.record_events([(type_, payload)])[0]

    def inherit(self, parent: str, derived: list[tuple[str, str]]) -> None:
        """A card was just copied from ``parent``: the copies ``(card_id, owner)`` take on its
        revocation or expiry, so a limit set on a card before (or while) it was copied still
        reaches the copies of its copies (issue 19). One ledger read when the parent has none.
        """
        rows = {r["card_id"]: r for r in self.limits.card_limits(self.case_id)}
        row = rows.get(parent)
        if row is None:
            return
        revoked = row["revoked_at"] is not None
        at = None if row["expires_at"] is None else float(row["expires_at"])

        def covered(cid: str) -> bool:  # already limited at least as much (a repeat publish)
            mine = rows.get(cid)
            return mine is not None and (mine["revoked_at"] is not None or (
                not revoked and at is not None and mine["expires_at"] is not None
                and float(mine["expires_at"]) <= at))

        derived = [(cid, owner) for cid, owner in derived if not covered(cid)]
        if not derived:
            return
        kind, action = ("revocation", "revoke") if revoked else ("expiry", "expire")
        self.limits.limit_cards(
            self.case_id, self.token, derived, revoke=revoked, expires_at=at,
            reason=row["reason"],
            audit=[{"kind": kind, "card_id": cid, "card_owner": owner, "action": action,
                    "derived_from": parent, "reasons": ["derived"]} for cid, owner in derived])

    def role(self, name: object) -> str:
        """The scenario's own name for a role of this case (the board is not a role)."""
        if type(name) is str and name in self.roles:
            return self.roles[self.roles.index(name)]
        if type(name) is str and name == BOARD:
            raise BoardNotWritableError(
                "The bulletin board is not a role: it cannot be whispered to or interrogated."
            )
        raise UnknownRoleError(
            f"Case {self.case_id} has no role {short_repr(name)}.",
            f"Roles in this case: {', '.join(self.roles)}.",
        )


def live(card: MemoryCard, dead: Dead) -> bool:
    """Neither ``card`` nor the card it was copied from is revoked or expired: the check every
    read path makes (a copy written while its source was being revoked is caught by its link)."""
    return card.id not in dead and not any(p in dead for p in parents(card))


def public_meta(card: Any) -> dict[str, Any]:
    """What an outward event may say about a new card: which card, whose, and nothing typed.

    A private card's topic and kind are typed text and its seed key names the fact, so events
    (read by the stage and every process) carry none of them.
    """
    return {"card_id": card.id, "owner": card.owner, "visibility": card.visibility}


__all__ = ["CaseContext", "Dead", "EventItems", "live", "public_meta"]
