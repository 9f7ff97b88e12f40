"""The ledger's row types: what its stores read and return (plain frozen dataclasses).

Every store of :mod:`bureau.ledger` returns these (or the pure layers' own row types, re-exported
here so a caller finds them in one place: :class:`~bureau.task_scopes.membership.ScopeRow` and
:class:`~bureau.mediation.grants.Grant` are defined next to the rules that read them, which must
not import the ledger).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..mediation.grants import Grant
from ..model import CaseSpace
from ..task_scopes.membership import ScopeRow

__all__ = ["CaseRecord", "CleanupTask", "Grant", "Publication", "RunRecord", "ScopeRow",
           "parse_store_id", "store_id_for"]


@dataclass(frozen=True)
class CaseRecord:
    case_id: str
    scenario_id: str
    title: str
    created_at: str
    epoch: int
    token: str | None = None
    """Made when the case is created; a holder whose token differs holds a deleted case. Cases
    made before tokens existed have none and keep their original store namespace."""

    @property
    def space(self) -> CaseSpace:
        return CaseSpace(self.case_id, store_id_for(self.case_id, self.token, self.epoch))


def store_id_for(case_id: str, token: str | None, epoch: int) -> str:
    """The store namespace (PowerMem ``user_id``) of one incarnation and epoch of a case."""
    if not token:
        return f"case:{case_id}"
    return f"case:{case_id}#{token}:{epoch}"


def parse_store_id(store_id: str) -> tuple[str, str | None, int] | None:
    """(case id, token, epoch) of a namespace :func:`store_id_for` made, else None."""
    if not store_id.startswith("case:"):
        return None
    rest = store_id[5:]
    if "#" not in rest:
        return rest, None, 0
    case_id, _, tail = rest.rpartition("#")
    token, _, epoch = tail.partition(":")
    return (case_id, token, int(epoch)) if epoch.isdigit() and token else None


BLOCKED = "revoked"
"""The error of a publish record whose source was revoked (:meth:`PublishStore.block`)."""


@dataclass(frozen=True)
class Publication:
    case_id: str
    source_id: str
    source_role: str
    status: str
    copy_id: str | None
    attempts: int
    owner: str
    lease_until: float
    created_at: float
    updated_at: float
    error: str | None

    @property
    def blocked(self) -> bool:
        """Its source was revoked: never reserved, completed or taken over again."""
        return self.status == "failed" and self.error == BLOCKED


@dataclass(frozen=True)
class RunRecord:
    """One run of a role (issue 14): its ephemeral cards live under ``run:<run_id>:<role>``.

    ``owner`` is the process that started it (:data:`~bureau.ledger.owners.PROCESS_TOKEN`): when
    that process is gone, the next open sweeps the run. ``ended_at`` is set when an end began:
    from then on the run accepts no more writes, and its row goes once its cards are verified
    gone.
    """

    run_id: str
    case_id: str
    token: str | None
    role: str
    owner: str
    started_at: float
    ended_at: float | None = None


@dataclass(frozen=True)
class CleanupTask:
    case_id: str
    card_id: str
    owner_role: str
    reason: str
    attempts: int
