"""Mediation: what a role may *use* of what it was allowed to *retrieve*.

Retrieval decides which spaces a role may search (:mod:`bureau.scopes`); a mediator then sees
each relevant card and may withhold, abstract or reveal it before any responder phrases an
answer. The default passes every relevant card through. Whatever a mediator returns, the service
keeps only cards that were among the retrieved hits (:func:`released`), so a mediator can narrow
the evidence but never widen it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from ..model import MemoryCard, RetrievalTrace

if TYPE_CHECKING:
    from ..service.case import Case


class Mediator(Protocol):
    """Sits between retrieval and answering; may withhold, abstract or reveal each hit."""

    def mediate(self, case: Case, role: str, trace: RetrievalTrace) -> Sequence[MemoryCard]: ...


class PassThrough:
    """No mediation: a role may use every relevant card in its scopes."""

    def mediate(self, case: Case, role: str, trace: RetrievalTrace) -> Sequence[MemoryCard]:
        return trace.hits


def released(trace: RetrievalTrace, evidence: Sequence[MemoryCard]) -> list[MemoryCard]:
    """The mediator's output, cut to cards the retrieval actually returned as hits."""
    allowed = {c.id for c in trace.hits}
    return [c for c in evidence if c.id in allowed]
