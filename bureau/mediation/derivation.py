"""Derivation: every copy made from a card records the card it came from, so that a revocation
or an expiry of the card reaches every copy (issue 19 §1).

A card is *derived* from another when the bureau copied its text:

* a board copy (``publish``) records its source in ``source_id``;
* a promoted copy (``promote``) records its original in ``promoted_from``;
* a task-scope write made from a card (``scopes.write(..., from_card=id)``) records the card in
  ``source_id``, and each searchable value card of a scope records its write in ``source_id``;
* a task-scope write whose text is, character for character, the text of a card counts as
  derived from it too (the owner pasted it), wherever it was written.

These links live in the stored metadata of the copies, not only in the ledger, so
:func:`closure` can be computed from the card store alone: by ``revoke`` and ``expire`` (which
then limit the whole closure in one ledger transaction) and by ``repair --adopt`` after the
ledger was lost. Text a member retyped in other words is no copy and stays out of reach (the
threat model, docs/threat-model.md, says so).

A **tombstone** is a small card (owner :data:`TOMBSTONE_OWNER`, never searched, holding ids and
no text of the cards it names) that records one revocation or expiry in the card store itself;
``repair`` re-applies every tombstone it finds, so a limit survives the loss of the ledger.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import DamagedDataError
from ..model import MemoryCard
from ..task_scopes.membership import LOG_SUFFIX, PREFIX

TOMBSTONE_OWNER = "bureau:tombstones"
"""The store owner id of tombstones: no role, no scope, no run; never searched or listed as a
role."""
TOMBSTONE_KIND = "tombstone"


def parents(card: MemoryCard) -> tuple[str, ...]:
    """The ids of the cards ``card`` was copied from (none for an original)."""
    return tuple(p for p in (card.source_id, card.promoted_from, card.copied_from) if p)


def is_scope_log(owner: str) -> bool:
    """True for the owner id of a task scope's write log (``task:<name>:log``)."""
    return owner.startswith(PREFIX) and owner.endswith(LOG_SUFFIX)


def is_scope_card(owner: str | None) -> bool:
    """True for a task scope's value or log card (``task:<name>``, ``task:<name>:log``)."""
    return bool(owner) and str(owner).startswith(PREFIX)


def closure(cards: Iterable[MemoryCard], roots: Iterable[str]) -> dict[str, str]:
    """``{card_id: owner}`` of ``roots`` and every card derived from them, transitively.

    ``cards``: every card of the case namespace (one listing). A root that is no longer in the
    store is kept with owner ``""`` so its late copies are still found by their link.
    """
    every = [c for c in cards if c.owner != TOMBSTONE_OWNER]
    by_id = {c.id: c for c in every}
    children: dict[str, list[MemoryCard]] = {}
    logs_by_text: dict[str, list[MemoryCard]] = {}
    for c in every:
        for p in parents(c):
            children.setdefault(p, []).append(c)
        if is_scope_log(c.owner):
            logs_by_text.setdefault(c.content, []).append(c)
    out: dict[str, str] = {}
    todo = list(dict.fromkeys(roots))
    while todo:
        cid = todo.pop()
        if cid in out:
            continue
        card = by_id.get(cid)
        out[cid] = card.owner if card is not None else ""
        todo += [c.id for c in children.get(cid, ())]
        if card is not None:  # verbatim copies pasted into a task scope
            todo += [c.id for c in logs_by_text.get(card.content, ()) if c.id != cid]
    return out


@dataclass(frozen=True)
class Tombstone:
    """One revocation or expiry as the card store records it (ids, owners and a time; no
    text)."""

    state: str
    """``revoked`` or ``expired``."""
    cards: tuple[tuple[str, str], ...]
    """``(card_id, owner)`` of every card the operation limited."""
    expires_at: float | None = None
    reason: str | None = None

    def text(self) -> str:
        """The tombstone card's content: JSON of ids and owners."""
        return json.dumps({"state": self.state, "cards": [list(c) for c in self.cards],
                           "expires_at": self.expires_at, "reason": self.reason},
                          sort_keys=True)

    @staticmethod
    def meta() -> dict[str, str]:
        return {"visibility": "private", "kind": TOMBSTONE_KIND, "topic": TOMBSTONE_KIND}

    @classmethod
    def parse(cls, card: MemoryCard) -> Tombstone:
        """Read a tombstone card back; ``DamagedDataError`` for one that is not."""
        try:
            body = json.loads(card.content)
            state = body["state"]
            cards = tuple((str(i), str(o)) for i, o in body["cards"])
            at = body.get("expires_at")
            at = None if at is None else float(at)
        except (ValueError, KeyError, TypeError) as exc:
            raise DamagedDataError(f"Tombstone card {card.id} is unreadable ({exc}).") from exc
        if state not in ("revoked", "expired") or (at is not None and not math.isfinite(at)):
            raise DamagedDataError(f"Tombstone card {card.id} names no revocation or expiry.")
        return cls(state, cards, at, body.get("reason"))


__all__ = ["TOMBSTONE_OWNER", "Tombstone", "closure", "is_scope_card", "is_scope_log", "parents"]
