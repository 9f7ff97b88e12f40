"""The ledger: one store per feature over one connection.

It holds ids and metadata only, never a card body, a question or an answer: it is what outward
views and other processes read. A ledger (:class:`BaseLedger`) is a composite of stores that
share one :class:`~bureau.ledger.connection.Connection`:

* ``ledger.cases``: :class:`~bureau.ledger.cases.CaseStore` (cases, retired namespaces);
* ``ledger.event_log``: :class:`~bureau.ledger.events.EventStore` (outward events);
* ``ledger.publishes``: :class:`~bureau.ledger.publishes.PublishStore` (publish records,
  cleanup tasks);
* ``ledger.mediation``: :class:`~bureau.ledger.mediation.MediationStore` (card limits, grants,
  budget, the audit chain);
* ``ledger.run_records``: :class:`~bureau.ledger.runs.RunStore` (runs);
* ``ledger.task_scope_records``: :class:`~bureau.ledger.task_scopes.TaskScopeStore` (shared task
  scopes);
* ``ledger.connection``: the connection itself (transactions, table names, retries);
* ``ledger.keys``: :class:`~bureau.ledger.keys.AuditKeys`, the audit key and anchor (files
  outside the ledger: the chain and the state rows are keyed, issue 19 §3);
* ``ledger.snapshots`` (server backend only): :class:`~bureau.ledger.server.SnapshotStore`.

An operation that spans stores is still one transaction: a store takes the others it writes
into at construction and calls their public helpers that accept the open ``db: Tx``
(:func:`~bureau.ledger.cases.live_case`, :meth:`~bureau.ledger.events.EventStore.insert`, each
store's ``clear_case``). So a mediation's budget, audit entries and events commit together, and
a reset empties every store's rows of the case in the transaction that moves its namespace.

Two backends: :class:`~bureau.ledger.sqlite.Ledger` (default: SQLite under the data directory,
WAL mode with a busy timeout, safe across processes; one connection per thread) and
:class:`~bureau.ledger.server.ServerLedger` (``settings.store == "server"``: the same tables on
the seekdb/OceanBase server that holds the cards, so several service instances share one truth,
and the case snapshots, since they share no data directory).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .cases import CaseRows, CaseStore
from .connection import Connection
from .events import EventStore
from .keys import AuditKeys
from .mediation import MediationStore
from .publishes import PublishStore
from .runs import RunStore
from .task_scopes import TaskScopeStore

if TYPE_CHECKING:
    pass


class BaseLedger:
    """The stores of one ledger over one connection (see the module docstring)."""

    def __init__(self, connection: Connection, keys: AuditKeys,
                 case_rows: Sequence[CaseRows] = ()) -> None:
        """``keys``: the audit key and anchor (files outside the ledger, see
        :mod:`bureau.ledger.keys`); ``case_rows``: a backend's own stores whose rows a case
        delete forgets too."""
        self.connection = connection
        self.keys = keys
        self.event_log = EventStore(connection)
        self.publishes = PublishStore(connection)
        self.mediation = MediationStore(connection, self.event_log, keys)
        self.run_records = RunStore(connection)
        self.task_scope_records = TaskScopeStore(connection, self.event_log)
        self.cases = CaseStore(
            connection,
            reset_rows=(self.publishes, self.mediation, self.task_scope_records,
                        self.run_records),
            case_rows=(self.event_log, self.publishes, self.mediation, self.run_records,
                       self.task_scope_records, *case_rows),
        )

    def __repr__(self) -> str:
        return repr(self.connection)

    def close(self) -> None:
        """Close this thread's connection (the server backend keeps one per thread)."""
        self.connection.close()

