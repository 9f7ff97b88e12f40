"""Every way a role or an outward view can read from a case, enumerated in one place.

Isolation tests iterate over :data:`ROLE_READ_PATHS` and :data:`OUTWARD_READ_PATHS`, so a new read
path added here is covered by them automatically, and one added elsewhere is a review finding.
Operator views (``Case.spaces``, ``Case.knowers``, ``Case.audit``, ``Case.grants``) are privileged
and deliberately not listed. Revoked and expired cards (issue 13) are dropped on every path listed
here; ``tests/test_mediation_service.py`` checks each one, in two processes and after a reopen.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, is_dataclass
from typing import TYPE_CHECKING, Any

from ..errors import TaskScopeError, UnknownCardError

if TYPE_CHECKING:
    from . import Case


def _get_all(case: Case, role: str, probe: str) -> list[Any]:
    """Try to get every card id the case holds, as ``role``; keep what is returned."""
    agent = case.agent(role)
    got = []
    for cards in case.spaces().values():
        for c in cards:
            try:
                got.append(agent.card(c.id))
            except UnknownCardError:
                pass
    return got


def _consult_all(case: Case, role: str, probe: str) -> list[Any]:
    """Consult every role's memory through the role's handle (with or without a policy)."""
    agent = case.agent(role)
    return [agent.consult(owner, probe) for owner in case.role_names]


def _tools_all(case: Case, role: str, probe: str) -> list[Any]:
    """Every tool of the role's handle, with every role name and every card id of the case as
    arguments where a tool takes a name or an id: what a model that obeys any text can try."""
    agent = case.agent(role)
    ids = [c.id for cards in case.spaces().values() for c in cards]
    got: list[Any] = [agent.call_tool("recall", {"question": probe}),
                      agent.call_tool("ask", {"question": probe}),
                      agent.call_tool("list_cards", {}), agent.call_tool("my_scopes", {}),
                      agent.call_tool("inbox", {})]
    got += [agent.call_tool("consult", {"owner": o, "question": probe}) for o in case.role_names]
    got += [agent.call_tool("get_card", {"card_id": i}) for i in ids]
    for scope in case.task_scopes.all():
        got.append(agent.call_tool("scope_keys", {"name": scope.name}))
        for key in case.task_scopes.keys(scope.name, scope.owner) if scope.state != "deleted" \
                else []:
            got.append(agent.call_tool("scope_read", {"name": scope.name, "key": key}))
    return [r for r in got if r.get("ok")]  # a refusal only repeats what the caller passed


def _scope_reads(case: Case, role: str, probe: str) -> list[Any]:
    """Try every scope read on every task scope the case has, as ``role``; keep what is
    returned (a non-member gets refusals only, issue 14)."""
    got: list[Any] = []

    def attempt(read: Callable[..., Any], *args: str) -> Any:
        try:
            got.append(read(*args))
            return got[-1]
        except TaskScopeError:
            return None

    scopes = case.agent(role).scopes
    for scope in case.task_scopes.all():
        attempt(scopes.info, scope.name)
        for key in attempt(scopes.keys, scope.name) or []:
            attempt(scopes.read, scope.name, key)
            attempt(scopes.history, scope.name, key)
    return got


ROLE_READ_PATHS: dict[str, Callable[[Case, str, str], Any]] = {
    "search": lambda case, role, probe: case.agent(role).recall(probe),
    "interrogate": lambda case, role, probe: case.agent(role).ask(probe),
    "consult": _consult_all,
    "list": lambda case, role, probe: case.agent(role).cards(),
    "get": _get_all,
    "export": lambda case, role, probe: case.agent(role).export(),
    "task-scopes": _scope_reads,
    "inbox": lambda case, role, probe: case.agent(role).scopes.inbox(0, 1000),
    "memberships": lambda case, role, probe: case.agent(role).scopes.mine(),
    "tools": _tools_all,
    "operator-as-role": lambda case, role, probe: [case.retrieve(role, probe),
                                                   case.interrogate(role, probe),
                                                   case.cards(role)],
}
"""Reads made *as a role* (through its handle ``case.agent(role)``, its tools, and the chief's
view-as-role): may show that role's private cards, the board and the task scopes it is an
accepted member of, nothing else."""

OUTWARD_READ_PATHS: dict[str, Callable[[Case], Any]] = {
    "stage": lambda case: case.stage(),
    "events": lambda case: case.events(),
}
"""Reads for everyone (projector, other processes): no private body, question or answer text."""


def as_text(value: Any) -> str:
    """Flatten any read result to one string, so a test can search it for forbidden text."""

    def default(o: Any) -> Any:
        if is_dataclass(o) and not isinstance(o, type):
            return asdict(o)
        if hasattr(o, "__dict__"):
            return vars(o)
        return str(o)

    return json.dumps(value, default=default, ensure_ascii=False)
