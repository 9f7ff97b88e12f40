"""What an observer may see of an event: the one filter between the event log and the outside.

The ledger's event log is the operator's record: a task scope's name, its members and
invitees, a run's id. An observer (the stage, the projector, ``case.events()``) is shown the
same events through :func:`observed`, which keeps, per event type, only the fields on its
list; a type not on the list keeps none (a new event says nothing outward until someone decides
what it may say). So an observer learns *that* a task scope was created, joined or written, or
that a run started and ended and whose, and counts per kind -- never which scope, who was
invited or became a member, or a run's id (which would let whoever reads it reattach).

Searches name the spaces they searched; an observer sees a role's own space and the board by
name, and task scopes and a run's scope as kinds (:data:`TASK_SCOPES`, :data:`RUN_SCOPE`), with
their hits summed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..model import Event
from ..task_scopes.membership import PREFIX as TASK_PREFIX
from ..tiers.provenance import RUN_PREFIX

TASK_SCOPES = "task:*"
"""What an observer sees for every task scope a search covered (roles never contain ':')."""
RUN_SCOPE = "run:*"
"""What an observer sees for a run's ephemeral scope."""

_CARD = ("card_id", "owner", "visibility")
_SHOWN: dict[str, tuple[str, ...]] = {
    "case.created": ("scenario_id", "roles"),
    "case.seeded": ("cards",),
    "case.reset": ("deleted",),
    "memory.created": _CARD,
    "memory.whispered": _CARD,
    "memory.noted": _CARD,
    "retrieval.completed": ("request_id", "role", "hit_ids", "mode", "shared_query", "tiers"),
    "answer.completed": ("request_id", "role", "known", "cited", "responder",
                         "fallback_reason"),
    "memory.publishing": ("source_id", "source_role", "attempt"),
    "memory.published": ("source_id", "source_role", "copy_id", "topic", "kind", "attempt"),
    "memory.reconciled": ("source_id", "copy_id", "duplicates_removed"),
    "memory.publish_failed": ("source_id", "error", "attempt", "copy_removed",
                              "cleanup_scheduled"),
    "publish.taken_over": ("source_id", "attempt"),
    "cleanup.scheduled": ("card_id", "source_id", "reason"),
    "cleanup.done": ("card_id",),
    "card.revoked": ("card_ids",),
    "card.promoted": ("card_id", "promoted_from", "owner", "tier"),
    "session.ended": ("role", "deleted"),
    "run.started": ("role",),
    "run.ended": ("role", "deleted", "promoted", "swept"),
    "scope.purged": ("deleted",),
}
"""Per event type, the payload fields an observer sees. Task-scope events (``scope.*``) keep
no field but a count: their scope, owner, members, invitees and writers stay with the
operator."""


def kind_of(scope: str) -> str:
    """The name an observer sees for a searched space."""
    if scope.startswith(TASK_PREFIX):
        return TASK_SCOPES
    if scope.startswith(RUN_PREFIX):
        return RUN_SCOPE
    return scope


def observed_summary(payload: dict[str, Any]) -> dict[str, Any]:
    """A retrieval summary as an observer sees it: spaces by kind, hits summed per kind, the
    slowest figure per kind."""
    out = {k: payload[k] for k in _SHOWN["retrieval.completed"] if k in payload}
    searched: list[str] = []
    for scope in payload.get("searched_scopes") or []:
        if kind_of(scope) not in searched:
            searched.append(kind_of(scope))
    hits: dict[str, int] = {}
    for scope, n in (payload.get("hits_by_scope") or {}).items():
        hits[kind_of(scope)] = hits.get(kind_of(scope), 0) + int(n)
    latency: dict[str, float] = {}
    for scope, ms in (payload.get("latency_ms") or {}).items():
        key = kind_of(scope)
        latency[key] = max(latency.get(key, 0.0), float(ms))
    out.update(searched_scopes=searched, hits_by_scope=hits,
               misses=[s for s in searched if not hits.get(s)], latency_ms=latency)
    return out


def observed(event: Event) -> Event:
    """The event as an observer may see it (see the module docstring)."""
    if event.type == "retrieval.completed":
        return replace(event, payload=observed_summary(event.payload))
    shown = _SHOWN.get(event.type, ())
    return replace(event, payload={k: event.payload[k] for k in shown if k in event.payload})


__all__ = ["RUN_SCOPE", "TASK_SCOPES", "kind_of", "observed", "observed_summary"]
