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
    got = []
    for cards in case.spaces().values():
        for c in cards:
            try:
                got.append(case.card(role, c.id))
            except UnknownCardError:
                pass
    return got


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

    for scope in case.task_scopes():
        attempt(case.scope_info, scope.name, role)
        for key in attempt(case.scope_keys, scope.name, role) or []:
            attempt(case.scope_read, scope.name, role, key)
            attempt(case.scope_history, scope.name, role, key)
    return got


ROLE_READ_PATHS: dict[str, Callable[[Case, str, str], Any]] = {
    "search": lambda case, role, probe: case.retrieve(role, probe),
    "interrogate": lambda case, role, probe: case.interrogate(role, probe),
    "consult": lambda case, role, probe: case.consult(role, probe),
    "list": lambda case, role, probe: case.cards(role),
    "get": _get_all,
    "export": lambda case, role, probe: case.export(role),
    "task-scopes": _scope_reads,
    "inbox": lambda case, role, probe: case.inbox(role, 0, 1000),
    "memberships": lambda case, role, probe: case.my_scopes(role),
}
"""Reads made *as a role*: may show that role's private cards, the board and the task scopes it
is an accepted member of, nothing else."""

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
