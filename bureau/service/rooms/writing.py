"""The writing room: new cards in one role's private space (whispers, an agent's notes, seeds).

Every new private card is written here, with the labels purpose-bound policies match on and
its place at the memory boundary (tier, provenance, trust), and announced by an outward event
that says which card and whose, never what it says.
"""

from __future__ import annotations

from typing import Any

from ...errors import InvalidArgumentError
from ...model import MemoryCard
from ...scenario import Scenario
from ...text import clean_name, clean_text, short_repr
from ...tiers import LONG_TERM, ROLE_TIERS, TRUSTED, Labels, check_tier
from .context import CaseContext, public_meta

WRITES = {("whisper", "memory.whispered"), ("agent-note", "memory.noted")}
"""Who writes a private card (its provenance) and the event that says so."""


class Writing:
    """Writes into private spaces of one case."""

    def __init__(self, ctx: CaseContext) -> None:
        self._ctx = ctx

    def write(
        self, role: str, text: object, topic: object = "general", kind: object = "note", *,
        provenance: str, event: str, sensitivity: object = None, info_type: object = None,
        abstraction: object = None, tier: object = "session",
    ) -> MemoryCard:
        """One private card of ``role`` (validated whole before anything is written)."""
        if not isinstance(provenance, str) or not isinstance(event, str) \
                or (provenance, event) not in WRITES:
            raise InvalidArgumentError(f"A private card is written as one of {sorted(WRITES)}, "
                                       f"not {short_repr(provenance)}/{short_repr(event)}.")
        role = self._ctx.role(role)
        tier = check_tier(tier, ROLE_TIERS, f"{provenance} tier")
        content = clean_text(text, what=provenance)
        meta: dict[str, Any] = {"visibility": "private", "topic": clean_name(topic, what="topic"),
                                "kind": clean_name(kind, what="kind")}
        if sensitivity is not None:
            meta["sensitivity"] = clean_name(sensitivity, what="sensitivity")
        if info_type is not None:
            meta["info_type"] = clean_name(info_type, what="info_type")
        if abstraction is not None:
            meta["abstraction"] = clean_text(abstraction, what="abstraction")
        meta.update(Labels(tier, provenance, TRUSTED).meta())
        card = self._ctx.gateway.add(self._ctx.space(), role, content, meta)
        self._ctx.emit(event, public_meta(card))
        return card

    def seed(self, scenario: Scenario) -> None:
        """Write the scenario's opening memories (one embedding pass, one event batch)."""
        gw = self._ctx.gateway
        space = self._ctx.space()
        gw.encoder.embed([mem.content for _, mem in scenario.seeds()])  # one batched pass
        events: list[tuple[str, dict[str, Any]]] = []
        for role, mems in scenario.memories.items():
            items = [(m.content, {"visibility": "private", "topic": m.topic, "kind": m.kind,
                                  "seed_key": m.key, **m.labels(),
                                  **Labels(LONG_TERM, "seed", TRUSTED).meta()}) for m in mems]
            for card in gw.add_many(space, role, items):
                events.append(("memory.created", public_meta(card)))
        events.append(("case.seeded", {"cards": len(events)}))
        self._ctx.record_events(events)


__all__ = ["Writing"]
