"""The ledger: cases, events, publish records, cleanup tasks and retired store namespaces.

It holds ids and metadata, never a card body, a question or an answer: it is what outward views
and other processes read. :mod:`.base` holds every rule; :mod:`.sqlite` and :mod:`.server` only
connect. Which one is used is decided in one place, :mod:`bureau.service.assembly`.
"""

from __future__ import annotations

from .base import (
    BaseLedger,
    CaseRecord,
    CleanupTask,
    Publication,
    RunRecord,
    is_stale,
    owner_alive,
    parse_store_id,
    store_id_for,
)
from .sqlite import Ledger

__all__ = [
    "BaseLedger",
    "CaseRecord",
    "CleanupTask",
    "Ledger",
    "Publication",
    "RunRecord",
    "is_stale",
    "owner_alive",
    "parse_store_id",
    "store_id_for",
]
