"""Mediation: what a role may *use* of what it was allowed to *retrieve*.

Retrieval decides which spaces a role may search (:mod:`bureau.scopes`); a mediator then sees
each relevant card and may withhold, abstract or reveal it before any responder phrases an
answer. The default passes every relevant card through. Whatever a mediator returns, the service
keeps only cards that were among the retrieved hits (:func:`released`), so a mediator can narrow
the evidence but never widen it.

Purpose-bound mediation (issue 13; Li, "Memory as a Service", arXiv 2506.22815) lives in the
submodules: :mod:`.invocation` (who asks whose memory, for whom, for what), :mod:`.policy` (the
versioned rule file), :mod:`.mediator` (withhold / abstract / reveal with reason codes and the
disclosure budget), :mod:`.abstraction` (safe summaries and the distinctive-terms check),
:mod:`.grants` (approvals that expire) and :mod:`.audit` (the hash-chained audit entries). A
mediator with a ``decide`` method (:class:`DecidingMediator`) is handed the invocation and the
ledger state; the service records every decision it makes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..model import MemoryCard, RetrievalTrace

if TYPE_CHECKING:
    from .invocation import Invocation
    from .mediator import Decision, MediationContext
    from .policy import Policy


class Mediator(Protocol):
    """Sits between retrieval and answering; may withhold, abstract or reveal each hit."""

    def mediate(self, role: str, trace: RetrievalTrace) -> Sequence[MemoryCard]: ...


@runtime_checkable
class DecidingMediator(Protocol):
    """A mediator that decides per card on the whole invocation (the service audits it)."""

    policy: Policy

    def decide(self, inv: Invocation, candidates: Sequence[MemoryCard],
               ctx: MediationContext) -> list[Decision]: ...


class PassThrough:
    """No mediation: a role may use every relevant card in its scopes."""

    def mediate(self, role: str, trace: RetrievalTrace) -> Sequence[MemoryCard]:
        return trace.hits


def released(trace: RetrievalTrace, evidence: Sequence[MemoryCard]) -> list[MemoryCard]:
    """The mediator's output, cut to cards the retrieval actually returned as hits."""
    allowed = {c.id for c in trace.hits}
    return [c for c in evidence if c.id in allowed]
