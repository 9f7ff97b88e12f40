"""Shared task scopes: team workspaces with an owner, invited members, keyed writes and an inbox.

A task scope is a third kind of memory space beside a role's private space and the board (see
the shared-memory coordination article, issue 14). Its rules live here as plain functions over
plain rows, so they can be read and tested without a store:

* :mod:`.membership`: store owner ids (``task:<name>``), scope and member states, and who may do
  what (an invitation must be accepted before a member reads or writes; only the owner manages;
  a non-member is refused with the same words whether the scope exists or not);
* :mod:`.versions`: Lamport-style versions for keyed writes and the one total order that picks
  the winner of a key (version, then timestamp, then writer id), so every observer converges;
* :mod:`.inbox`: the notices members receive, in order, resumable by a cursor, carrying ids,
  names and versions only.

The service (:mod:`bureau.service.shared_scopes`) applies these rules inside ledger transactions
(:mod:`bureau.ledger.task_scopes`) and keeps the texts in the card store.
"""

from __future__ import annotations

from .inbox import InboxItem, InboxPage
from .membership import (
    Membership,
    TaskScope,
    is_task_owner,
    log_owner_id,
    scope_name_of,
    scope_owner_id,
)
from .versions import ScopeValue, ScopeWrite, WriteResult, next_version, order_key, winner

__all__ = [
    "InboxItem",
    "InboxPage",
    "Membership",
    "ScopeValue",
    "ScopeWrite",
    "TaskScope",
    "WriteResult",
    "is_task_owner",
    "log_owner_id",
    "next_version",
    "order_key",
    "scope_name_of",
    "scope_owner_id",
    "winner",
]
