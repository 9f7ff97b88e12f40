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
from typing import TYPE_CHECKING, Any

from .cases import CaseRows, CaseStore
from .connection import Connection
from .events import EventStore
from .mediation import MediationStore
from .publishes import PublishStore
from .runs import RunStore
from .task_scopes import TaskScopeStore

if TYPE_CHECKING:
    from ..mediation.grants import Grant
    from ..model import Event
    from ..task_scopes.inbox import InboxItem
    from ..task_scopes.membership import Change, Membership, ScopeRow, TaskScope
    from ..task_scopes.versions import ScopeWrite, WriteResult
    from .rows import CaseRecord, CleanupTask, Publication, RunRecord


class BaseLedger:
    """The stores of one ledger over one connection (see the module docstring)."""

    def __init__(self, connection: Connection, case_rows: Sequence[CaseRows] = ()) -> None:
        """``case_rows``: a backend's own stores whose rows a case delete forgets too."""
        self.connection = connection
        self.event_log = EventStore(connection)
        self.publishes = PublishStore(connection)
        self.mediation = MediationStore(connection, self.event_log)
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

    # -- transitional: old flat names, remove when service/case.py, runs.py, shared_scopes.py
    # (and service/rooms/) use the stores. Each forwards to one store method; the mapping is in
    # notes/ledger-mapping.md. Nothing else may call these.

    def add_case(
        self, case_id: str, scenario_id: str, title: str, token: str | None = None, epoch: int = 0
    ) -> CaseRecord:
        return self.cases.add(case_id, scenario_id, title, token, epoch)

    def get_case(self, case_id: str) -> CaseRecord | None:
        return self.cases.get(case_id)

    def list_cases(self) -> list[CaseRecord]:
        return self.cases.all()

    def bump_epoch(self, case_id: str, token: str | None = None) -> CaseRecord:
        return self.cases.bump_epoch(case_id, token)

    def delete_case(self, case_id: str, token: str | None = None) -> CaseRecord:
        return self.cases.delete(case_id, token)

    def retired_spaces(self) -> set[str]:
        return self.cases.retired_spaces()

    def unretire(self, store_id: str) -> None:
        return self.cases.unretire(store_id)

    def append_event(self, case_id: str, type_: str, payload: dict[str, Any]) -> Event:
        return self.event_log.append(case_id, type_, payload)

    def append_events(
        self, case_id: str, items: list[tuple[str, dict[str, Any]]], token: Any = ...
    ) -> list[Event]:
        return self.event_log.append_many(case_id, items, token)

    def events(self, case_id: str, since: int = 0, limit: int = 10_000) -> list[Event]:
        return self.event_log.read(case_id, since, limit)

    def last_event(self, case_id: str, type_: str | None = None) -> Event | None:
        return self.event_log.last(case_id, type_)

    def publication(self, case_id: str, source_id: str) -> Publication | None:
        return self.publishes.get(case_id, source_id)

    def publications(self, case_id: str | None = None) -> list[Publication]:
        return self.publishes.all(case_id)

    def reserve(
        self, case_id: str, source_id: str, source_role: str, lease_s: float
    ) -> tuple[str, Publication]:
        return self.publishes.reserve(case_id, source_id, source_role, lease_s)

    def renew(self, case_id: str, source_id: str, attempt: int, lease_s: float) -> bool:
        return self.publishes.renew(case_id, source_id, attempt, lease_s)

    def mark_ready(self, case_id: str, source_id: str, copy_id: str, attempt: int) -> bool:
        return self.publishes.mark_ready(case_id, source_id, copy_id, attempt)

    def mark_failed(self, case_id: str, source_id: str, attempt: int, error: str) -> bool:
        return self.publishes.mark_failed(case_id, source_id, attempt, error)

    def force_ready(self, rec: Publication, copy_id: str) -> bool:
        return self.publishes.force_ready(rec, copy_id)

    def abandon(self, rec: Publication, error: str) -> bool:
        return self.publishes.abandon(rec, error)

    def drop_publication(
        self, case_id: str, source_id: str, rec: Publication | None = None
    ) -> bool:
        return self.publishes.drop(case_id, source_id, rec)

    def restore_publication(
        self, case_id: str, source_id: str, source_role: str, copy_id: str
    ) -> None:
        return self.publishes.restore(case_id, source_id, source_role, copy_id)

    def add_cleanup(self, case_id: str, card_id: str, owner_role: str, reason: str) -> None:
        return self.publishes.add_cleanup(case_id, card_id, owner_role, reason)

    def cleanup_tasks(self, case_id: str | None = None) -> list[CleanupTask]:
        return self.publishes.cleanup_tasks(case_id)

    def finish_cleanup(self, case_id: str, card_id: str, done: bool) -> None:
        return self.publishes.finish_cleanup(case_id, card_id, done)

    def case_view(
        self, case_id: str, now: float | None = None
    ) -> tuple[CaseRecord | None, dict[str, tuple[str, str]]]:
        return self.mediation.case_view(case_id, now)

    def mediation_view(
        self, case_id: str, requester: str, now: float | None = None
    ) -> tuple[CaseRecord | None, dict[str, tuple[str, str]], list[Grant], dict[str, float]]:
        return self.mediation.view(case_id, requester, now)

    def limit_card(
        self, case_id: str, token: str | None, card_id: str, owner: str, *,
        expires_at: float | None = None, revoke: bool = False, reason: str | None = None,
        audit: list[dict[str, Any]] | None = None
    ) -> None:
        return self.mediation.limit_card(
            case_id, token, card_id, owner, expires_at=expires_at, revoke=revoke, reason=reason,
            audit=audit)

    def card_limits(self, case_id: str) -> list[dict[str, Any]]:
        return self.mediation.card_limits(case_id)

    def add_grant(self, grant: Grant, token: str | None, audit: list[dict[str, Any]]) -> Grant:
        return self.mediation.add_grant(grant, token, audit)

    def revoke_grant(
        self, case_id: str, token: str | None, grant_id: str, audit: list[dict[str, Any]]
    ) -> None:
        return self.mediation.revoke_grant(case_id, token, grant_id, audit)

    def grants(self, case_id: str) -> list[Grant]:
        return self.mediation.grants(case_id)

    def commit_mediation(
        self, case_id: str, token: str | None, requester: str, seen: dict[str, float],
        charges: dict[str, float], audit: list[dict[str, Any]],
        events: list[tuple[str, dict[str, Any]]]
    ) -> list[Event] | None:
        return self.mediation.commit(case_id, token, requester, seen, charges, audit, events)

    def append_audit(self, case_id: str, token: str | None, entries: list[dict[str, Any]]) -> None:
        return self.mediation.append_audit(case_id, token, entries)

    def audit_entries(self, case_id: str, token: str | None) -> list[dict[str, Any]]:
        return self.mediation.audit_entries(case_id, token)

    def audit_counts(self, case_id: str, token: str | None) -> dict[str, int]:
        return self.mediation.audit_counts(case_id, token)

    def verify_audit(self) -> int:
        return self.mediation.verify_audit()

    def add_run(self, run_id: str, case_id: str, token: str | None, role: str) -> RunRecord:
        return self.run_records.add(run_id, case_id, token, role)

    def run_record(self, run_id: str) -> RunRecord | None:
        return self.run_records.get(run_id)

    def runs(self, case_id: str | None = None) -> list[RunRecord]:
        return self.run_records.all(case_id)

    def end_run(self, run_id: str) -> RunRecord | None:
        return self.run_records.end(run_id)

    def drop_run(self, run_id: str) -> bool:
        return self.run_records.drop(run_id)

    def create_task_scope(
        self, case_id: str, token: str | None, name: str, owner: str
    ) -> tuple[TaskScope, list[Event]]:
        return self.task_scope_records.create(case_id, token, name, owner)

    def change_task_scope(
        self, case_id: str, token: str | None, op: str, name: str, actor: str,
        target: str | None = None
    ) -> tuple[Change, TaskScope, list[Event]]:
        return self.task_scope_records.change(case_id, token, op, name, actor, target)

    def task_scope_access(
        self, case_id: str, name: str, role: str, write: bool = False
    ) -> ScopeRow:
        return self.task_scope_records.access(case_id, name, role, write)

    def task_scope_info(self, case_id: str, name: str, role: str) -> TaskScope:
        return self.task_scope_records.info(case_id, name, role)

    def task_scopes(self, case_id: str) -> list[TaskScope]:
        return self.task_scope_records.all(case_id)

    def memberships(self, case_id: str, role: str) -> list[Membership]:
        return self.task_scope_records.memberships(case_id, role)

    def member_view(self, case_id: str, role: str | None = None) -> dict[str, frozenset[str]]:
        return self.task_scope_records.member_view(case_id, role)

    def scope_members_of(self, case_id: str) -> dict[str, frozenset[str]]:
        return self.task_scope_records.members_of(case_id)

    def record_scope_write(
        self, case_id: str, token: str | None, name: str, writer: str, key: str, version: int,
        read_version: int | None, written_at: float, card_id: str
    ) -> tuple[WriteResult, list[Event]]:
        return self.task_scope_records.record_write(
            case_id, token, name, writer, key, version, read_version, written_at, card_id)

    def scope_value(self, case_id: str, name: str, role: str, key: str) -> ScopeWrite:
        return self.task_scope_records.value(case_id, name, role, key)

    def scope_keys(self, case_id: str, name: str, role: str) -> list[str]:
        return self.task_scope_records.keys(case_id, name, role)

    def scope_history(self, case_id: str, name: str, role: str, key: str) -> list[ScopeWrite]:
        return self.task_scope_records.history(case_id, name, role, key)

    def scope_unsettled(self, case_id: str, name: str) -> list[dict[str, Any]]:
        return self.task_scope_records.unsettled(case_id, name)

    def settle_scope_key(
        self, case_id: str, name: str, key: str, win_seq: int, expect_card: str | None,
        new_card: str
    ) -> bool:
        return self.task_scope_records.settle_key(
            case_id, name, key, win_seq, expect_card, new_card)

    def inbox_page(self, case_id: str, role: str, cursor: int, limit: int) -> list[InboxItem]:
        return self.task_scope_records.inbox_page(case_id, role, cursor, limit)
