"""Who may do what in a shared task scope, as pure functions over the scope's ledger rows.

The ledger reads a scope's row and its member rows inside one write transaction and asks
:func:`plan` what an operation changes (or which typed refusal it gets); it then writes exactly
that change, its inbox notices and its outward event in the same transaction. So two processes
racing (an owner removing a member while the member accepts, two owners-to-be) see one order,
and the rules stay in one reviewable place.

States. A scope is ``active`` (members read and write), ``archived`` (read-only: no writes, no
membership changes) or ``deleted`` (gone for everyone, its cards purged; the name stays taken so
a writer that missed the delete can never bring cards back under a new scope of the same name).
A member row is ``invited`` (may not read or write yet), ``member`` (accepted), ``removed`` or
``declined``.

Refusals. Whoever is not an accepted member of a live scope gets :class:`UnknownTaskScopeError`
with words built from the role and the name only, so a non-member, an invitee, a removed member
and a role asking about a scope that never existed cannot tell these apart. Only members learn
more (who owns it, that it is archived).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import (
    InvalidTextError,
    MembershipError,
    NoInvitationError,
    NotScopeOwnerError,
    ScopeArchivedError,
    UnknownTaskScopeError,
)
from ..text import clean_name, short_repr

PREFIX = "task:"
"""Store owner ids of task scopes start with it. Role names cannot contain ':' (NAME_RE), so a
scope's id never equals a role name or ``board``."""
LOG_SUFFIX = ":log"
SCOPE_STATES = ("active", "archived", "deleted")
MEMBER_STATES = ("invited", "member", "removed", "declined")
OPS = ("invite", "accept", "decline", "remove", "transfer", "archive", "delete")


def check_scope_name(name: object) -> str:
    """A scope name: validated like a role name (it becomes part of a store owner id)."""
    return clean_name(name, what="scope name")


def scope_owner_id(name: str) -> str:
    """The store owner id (PowerMem ``agent_id``) of a scope's searchable values."""
    return PREFIX + check_scope_name(name)


def log_owner_id(name: str) -> str:
    """The store owner id of a scope's write log: every write's text, never searched."""
    return PREFIX + check_scope_name(name) + LOG_SUFFIX


def is_task_owner(owner: object) -> bool:
    """True for the store owner id of a task scope's searchable values (not its log)."""
    return scope_name_of(owner) is not None


def scope_name_of(owner: object) -> str | None:
    """The scope name in a store owner id ``task:<name>``, else None (roles, board, logs)."""
    if type(owner) is not str or not owner.startswith(PREFIX):
        return None
    name = owner[len(PREFIX):]
    try:
        return check_scope_name(name)
    except InvalidTextError:  # a log id (``task:<name>:log``) or not a scope id at all
        return None


@dataclass(frozen=True)
class ScopeRow:
    """A scope's ledger row."""

    case_id: str
    name: str
    owner: str
    state: str
    created_by: str
    created_at: float
    updated_at: float


@dataclass(frozen=True)
class TaskScope:
    """What a member (or the operator) sees of a scope."""

    name: str
    store_owner: str
    """The owner id its cards are stored and labelled under: ``task:<name>``."""
    owner: str
    """The role that manages it."""
    state: str
    members: tuple[str, ...]
    """Accepted members, the owner included."""
    invited: tuple[str, ...]
    """Invitations not yet accepted or declined."""
    created_by: str
    created_at: float

    @classmethod
    def of(cls, row: ScopeRow, members: dict[str, str]) -> TaskScope:
        return cls(row.name, PREFIX + row.name, row.owner, row.state,
                   tuple(sorted(r for r, s in members.items() if s == "member")),
                   tuple(sorted(r for r, s in members.items() if s == "invited")),
                   row.created_by, row.created_at)


@dataclass(frozen=True)
class Membership:
    """One of a role's scopes as that role sees it: a pending invitation or a membership."""

    scope: str
    state: str
    """``invited`` or ``member``."""


@dataclass(frozen=True)
class Change:
    """What one membership operation changes; written by the ledger in one transaction."""

    op: str
    scope: str
    members: dict[str, str] = field(default_factory=dict)
    """New member states (changed rows only)."""
    owner: str | None = None
    """The new owner, after a transfer."""
    state: str | None = None
    """The new scope state, after archive or delete."""
    recipients: tuple[str, ...] = ()
    """Whose inbox gets the notice."""
    notice: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    """Inbox details and event payload: roles and the scope name, never card text."""


def unknown(case_id: str, role: str, name: object) -> UnknownTaskScopeError:
    """The one refusal for 'no such scope' and 'not a member of it' (no existence leak)."""
    return UnknownTaskScopeError(
        f"{role} is not a member of a task scope named {short_repr(name)} in case {case_id}.")


def no_invitation(case_id: str, role: str, name: object) -> NoInvitationError:
    return NoInvitationError(
        f"{role} has no pending invitation to a task scope named {short_repr(name)} in case "
        f"{case_id}.")


def require_member(case_id: str, name: str, scope: ScopeRow | None, members: dict[str, str],
                   role: str) -> ScopeRow:
    """The scope, if ``role`` is an accepted member of it and it is not deleted."""
    if scope is None or scope.state == "deleted" or members.get(role) != "member":
        raise unknown(case_id, role, name)
    return scope


def require_writable(case_id: str, name: str, scope: ScopeRow | None, members: dict[str, str],
                     role: str) -> ScopeRow:
    """As :func:`require_member`, and the scope still takes writes."""
    row = require_member(case_id, name, scope, members, role)
    if row.state != "active":
        raise ScopeArchivedError(f"Task scope {name!r} is archived: it takes no more writes.")
    return row


def plan(op: str, case_id: str, name: str, scope: ScopeRow | None, members: dict[str, str],
         actor: str, target: str | None = None) -> Change:
    """The change ``actor`` makes with ``op`` (and ``target``), or the typed refusal."""
    if op not in OPS:
        raise ValueError(f"unknown scope operation {op!r}")
    if op in ("accept", "decline"):
        if scope is None or scope.state == "deleted" or members.get(actor) != "invited":
            raise no_invitation(case_id, actor, name)
        if scope.state != "active":
            raise ScopeArchivedError(f"Task scope {name!r} is archived: it takes no new members.")
        new = "member" if op == "accept" else "declined"
        return _change(op, name, members, {actor: new}, subject=actor,
                       details={"scope": name, "role": actor})
    row = require_member(case_id, name, scope, members, actor)
    if row.owner != actor:
        raise NotScopeOwnerError(f"Only the owner of task scope {name!r} ({row.owner}) may "
                                 f"{op} {'it' if op in ('archive', 'delete') else 'members'}.")
    if op == "delete":
        return _change(op, name, members, {}, state="deleted", with_invited=True,
                       details={"scope": name, "by": actor})
    if row.state != "active":
        raise ScopeArchivedError(f"Task scope {name!r} is archived: its membership is frozen.")
    if op == "archive":
        return _change(op, name, members, {}, state="archived", with_invited=True,
                       details={"scope": name, "by": actor})
    assert target is not None
    current = members.get(target)
    if op == "invite":
        if target == row.owner or current == "member":
            raise MembershipError(f"{target} is already a member of task scope {name!r}.")
        if current == "invited":
            raise MembershipError(f"{target} already has a pending invitation to {name!r}.")
        return _change(op, name, members, {target: "invited"}, subject=target,
                       details={"scope": name, "by": actor, "role": target})
    if op == "remove":
        if target == row.owner:
            raise MembershipError(f"The owner ({target}) cannot be removed from {name!r}.",
                                  "Transfer the scope first with case.transfer_scope(name, by, to).")
        if current not in ("member", "invited"):
            raise MembershipError(f"{target} is neither a member of nor invited to {name!r}.")
        return _change(op, name, members, {target: "removed"}, subject=target,
                       details={"scope": name, "by": actor, "role": target})
    # transfer
    if target == row.owner:
        raise MembershipError(f"{target} already owns task scope {name!r}.")
    if current != "member":
        raise MembershipError(
            f"{target} is not an accepted member of {name!r}; only a member can become its owner.",
            "Invite them with case.invite(name, by, role) and wait until they accept.")
    return _change(op, name, members, {}, owner=target, subject=target,
                   details={"scope": name, "from": actor, "to": target})


NOTICES = {"invite": "scope.invited", "accept": "scope.accepted", "decline": "scope.declined",
           "remove": "scope.removed", "transfer": "scope.transferred",
           "archive": "scope.archived", "delete": "scope.deleted"}
"""Inbox kind (and outward event type) of each operation."""


def _change(op: str, name: str, members: dict[str, str], new: dict[str, str], *,
            subject: str | None = None, owner: str | None = None, state: str | None = None,
            with_invited: bool = False, details: dict[str, Any]) -> Change:
    """A change and who hears of it: the accepted members afterwards, the role it is about,
    and for archive/delete also pending invitees (their invitation is void from now on)."""
    after = {**members, **new}
    keep = ("member", "invited") if with_invited else ("member",)
    recipients = {r for r, s in after.items() if s in keep}
    if subject is not None:
        recipients.add(subject)
    return Change(op, name, new, owner, state, tuple(sorted(recipients)), NOTICES[op], details)
