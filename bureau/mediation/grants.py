"""Grants: an owner's explicit, time-limited permission for one card.

A rule with ``approval: true`` releases a card only under a grant (the human approval the MaaS
design asks for), and a grant can also lift a stricter rule for one requester, recipient and
purpose. Grants and card revocations live in the ledger (read on every operation, like case
liveness), so a revocation made in one process holds in every other at once and after a restart;
this module only says which grant applies.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .invocation import Invocation


@dataclass(frozen=True)
class Grant:
    grant_id: str
    case_id: str
    card_id: str
    requester: str | None
    """``None``: any requester."""
    recipient: str | None
    """``None``: any recipient except ``external`` (a grant reaches outsiders only by name)."""
    purpose: str | None
    action: str
    created_at: float
    expires_at: float | None = None
    revoked_at: float | None = None

    def active(self, now: float) -> bool:
        return self.revoked_at is None and (self.expires_at is None or now < self.expires_at)

    def state(self, now: float) -> str:
        if self.revoked_at is not None:
            return "revoked"
        return "active" if self.active(now) else "expired"

    def covers(self, inv: Invocation, card_id: str, now: float) -> bool:
        return (self.active(now) and self.card_id == card_id
                and self.requester in (None, inv.requester)
                and (self.recipient == inv.recipient
                     or (self.recipient is None and inv.recipient != "external"))
                and self.purpose in (None, inv.purpose))


def best_grant(grants: Iterable[Grant], inv: Invocation, card_id: str, now: float,
               order: tuple[str, ...]) -> Grant | None:
    """The widest active grant covering this invocation and card (``order``: narrowest first)."""
    found = [g for g in grants if g.covers(inv, card_id, now)]
    return max(found, key=lambda g: order.index(g.action), default=None)
