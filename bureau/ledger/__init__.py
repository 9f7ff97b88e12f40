"""The ledger: cases, events, publish records, cleanup tasks, mediation state, runs and task
scopes, one store per feature over one connection.

It holds ids and metadata, never a card body, a question or an answer: it is what outward views
and other processes read.

* :mod:`.rows`: the row types the stores return;
* :mod:`.connection`: transactions, table names, retries (:class:`Tx`, :class:`Connection`);
* :mod:`.schema`: every table's DDL, for SQLite and for the server;
* one store per feature: :mod:`.cases` (``ledger.cases``), :mod:`.events`
  (``ledger.event_log``), :mod:`.publishes` (``ledger.publishes``), :mod:`.mediation`
  (``ledger.mediation``), :mod:`.runs` (``ledger.run_records``), :mod:`.task_scopes`
  (``ledger.task_scope_records``);
* :mod:`.base`: :class:`BaseLedger`, the composite of the stores; :mod:`.sqlite` and
  :mod:`.server` its two backends (which one is used is decided in one place,
  :mod:`bureau.service.assembly`);
* :mod:`.owners`: this process's owner token, and whether an owner process is gone.
"""

from __future__ import annotations

from .base import BaseLedger
from .owners import is_stale, owner_alive
from .rows import CaseRecord, CleanupTask, Publication, RunRecord, parse_store_id, store_id_for
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
