"""Scopes: the memory spaces a role may read, decided by the service, never by a question.

A role reads its own private space, the shared bulletin board and the shared task scopes it is an
accepted member of (issue 14), nothing else. Keeping the rule here, in one function, is what
makes it reviewable: every read path of the service asks it, and the gateway then fills in the
case and owner filters of each scope it names.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..model import BOARD
from ..task_scopes import is_task_owner


def readable_scopes(role: str, task_scopes: Iterable[str] = ()) -> list[str]:
    """The spaces ``role`` may search, in the order the X-ray shows them: its own, the board,
    then the task scopes (store owner ids ``task:<name>``) the service read from the ledger as
    the role's accepted memberships for this very request.

    Anything else passed as a task scope (a role name, the board, a scope's log) is refused: a
    membership can only ever add task scopes.
    """
    extra = list(dict.fromkeys(task_scopes))
    bad = [s for s in extra if not is_task_owner(s)]
    if bad:
        raise ValueError(f"not task scope ids: {bad!r}")
    return [role, BOARD, *extra]
