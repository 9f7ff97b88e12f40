"""The publishing room: one private card to the board as a sourced copy, and what follows.

The saga itself (reserve, reconcile, copy, mark ready, compensation, takeover, recovery) is
:class:`~bureau.service.publish.Publisher`; this room adds what a case asks of it: the card
must be the publisher's own and live, a revoked copy is never published again, and an optional
time to live becomes an expiry of the copy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import CardRevokedError, UnknownCardError
from ...model import BOARD, MemoryCard
from ...text import card_id_text, short_repr
from ..publish import Publisher
from .context import CaseContext
from .disclosure import Disclosure, ttl

if TYPE_CHECKING:
    from ...ledger.publishes import PublishStore


class Publishing:
    """Publish, recover and the cleanup queue of one case."""

    def __init__(self, ctx: CaseContext, disclosure: Disclosure, store: PublishStore) -> None:
        self._ctx = ctx
        self._disclosure = disclosure
        self._store = store

    def _publisher(self) -> Publisher:
        ctx = self._ctx
        return Publisher(ctx.gateway, self._store, ctx.space(), ctx.emit,
                         ctx.settings().publish_lease_s)

    def publish(self, role: str, card_id: object, ttl_s: float | None = None) -> MemoryCard:
        """Copy one of ``role``'s private cards to the board (idempotent; see publish.py).

        ``ttl_s``: the board copy expires after that many seconds. A revoked or expired card
        cannot be published, nor can a card whose copy was revoked: revocation is final. A
        copy takes on any expiry its card has (issue 19).
        """
        role = self._ctx.role(role)
        seconds = None if ttl_s is None else ttl(ttl_s)  # bad input changes nothing
        _, dead = self._ctx.view()
        cid = card_id_text(card_id)
        if cid is None or cid in dead:
            raise UnknownCardError(f"{role} has no card {short_repr(card_id)} in case "
                                   f"{self._ctx.case_id}.")
        copy = self._publisher().publish(role, cid)
        self._ctx.inherit(cid, [(copy.id, BOARD)])  # a limit set meanwhile reaches the copy
        _, dead = self._ctx.view()
        gone = dead.get(copy.id) or dead.get(cid)
        if gone is not None:
            raise CardRevokedError(
                f"Card {card_id} or its board copy was {gone[1]}; it is not published again."
            )
        if seconds is not None:
            self._disclosure.expire(copy.id, seconds)
        return copy

    def recover(self) -> dict[str, int]:
        """Finish or roll back interrupted publishes and retry scheduled cleanups (and erase
        revoked or expired cards a crash left stored: :meth:`CaseContext.shred`)."""
        self._ctx.view()
        return self._publisher().recover()

    def pending_cleanups(self) -> int:
        """Board copies whose deletion failed and waits for ``recover()`` (lesson 03)."""
        self._ctx.space()
        return len(self._store.cleanup_tasks(self._ctx.case_id))


__all__ = ["Publishing"]
