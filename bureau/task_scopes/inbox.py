"""A role's inbox: scope notices in order, resumable by a cursor, carrying no card text.

Every membership change and every write in a scope leaves a notice in the inbox of each role it
affects (see :func:`bureau.task_scopes.membership.plan` for who that is; a write notifies the
other accepted members, a stale write its writer). Notices are numbered per role (1, 2, 3, ...):
a role's cursor counts only its own notices, so it cannot learn from gaps how busy other roles'
inboxes are. A notice names a scope, roles, keys and versions -- never a text -- so an inbox can
be read by a role that has since lost access without showing it anything it could not read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InvalidArgumentError
from ..text import MAX_WHOLE, short_repr

KINDS = ("scope.created", "scope.invited", "scope.accepted", "scope.declined", "scope.removed",
         "scope.transferred", "scope.archived", "scope.deleted", "scope.write",
         "scope.write.stale")
DETAIL_KEYS = frozenset({"scope", "by", "role", "from", "to", "key", "version", "writer",
                         "winning_version", "winning_writer", "seq", "deleted"})
"""Everything a notice may carry: names, roles, versions, counts. No text, no card id."""
MAX_PAGE = 1000


def check_details(kind: str, details: dict[str, Any]) -> dict[str, Any]:
    """Refuse (loudly: a bug, not input) a notice that would carry anything but ids/versions."""
    extra = set(details) - DETAIL_KEYS
    if kind not in KINDS or extra:
        raise AssertionError(f"an inbox notice {kind!r} may not carry {sorted(extra)}")
    for value in details.values():
        if not isinstance(value, int | str) or (isinstance(value, str) and len(value) > 64):
            raise AssertionError(f"an inbox notice {kind!r} carries a non-id value")
    return details


def check_cursor(cursor: object) -> int:
    if isinstance(cursor, bool) or not isinstance(cursor, int) or not 0 <= cursor <= MAX_WHOLE:
        raise InvalidArgumentError(f"cursor must be a whole number ≥ 0 (a next_cursor), not "
                                   f"{short_repr(cursor)}.")
    return cursor


def check_page(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidArgumentError(f"limit must be a whole number from 1 to {MAX_PAGE}, not "
                                   f"{short_repr(limit)}.")
    return limit


@dataclass(frozen=True)
class InboxItem:
    cursor: int
    """This notice's number in the role's inbox (1, 2, ...); pass it back to read on."""
    kind: str
    scope: str
    at: float
    details: dict[str, Any]


@dataclass(frozen=True)
class InboxPage:
    items: tuple[InboxItem, ...]
    next_cursor: int
    """Pass it as ``cursor`` to get the notices after this page (the same value if none)."""
