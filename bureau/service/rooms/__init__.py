"""The rooms of a case: one feature each, behind the case's thin door.

Each room is built from one :class:`~.context.CaseContext` (the case incarnation, its liveness
check, the gateway, the ledger, the event sink) and the rooms it needs by name; none holds the
case or reaches back through it. ``tests/test_layers.py`` keeps it so.

* :mod:`.reading` -- what one role may see (:class:`~.reading.RoleView`, the one filter) and the
  searches, lists and gets that show it;
* :mod:`.disclosure` -- consults by a held principal, the mediator's decisions, the disclosure
  budget, revocation, expiry, grants and the audit trail;
* :mod:`.publishing` -- publishing a sourced copy to the board, recovery, cleanups;
* :mod:`.runs` -- runs with their ephemeral scope, promotion one tier up, session ends;
* :mod:`.task_scopes` -- shared task scopes: membership, versioned writes, the inbox.
"""

from .context import CaseContext
from .disclosure import Disclosure
from .publishing import Publishing
from .reading import Reading, RoleView
from .runs import Run, Runs
from .task_scopes import TaskScopes

__all__ = ["CaseContext", "Disclosure", "Publishing", "Reading", "RoleView", "Run", "Runs",
           "TaskScopes"]
