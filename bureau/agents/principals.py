"""The principals of a case: its roles, the outsiders its files declare, and the operator.

A disclosure budget, a grant, a revocation check and an audit entry are all keyed on a
principal's name, so the set of names is closed: the scenario's roles, the names the scenario
(``principals:``) or the mediation policy (``principals:``) declare for requesters that are not
roles (the press, an insurer, an outside service), and the operator, ``chief``. A name outside
that set is refused (:class:`~bureau.errors.UnknownPrincipalError`) rather than treated as a new
requester with a fresh budget, which is what made "detective-2" a way around the budget.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import UnknownPrincipalError
from ..model import BOARD
from ..text import short_repr

ROLE, EXTERNAL, OPERATOR = "role", "external", "operator"
"""Kinds of principal: a role of the case (it has a private space), a declared outsider (it may
only consult), the operator (the bureau chief, trusted)."""
OPERATOR_NAME = "chief"
"""The operator's name in invocations and the audit (the bureau chief)."""


@dataclass(frozen=True)
class Principal:
    """One identity the bureau acts for; built by :class:`Principals`, carried by a handle."""

    name: str
    kind: str
    title: str = ""

    @property
    def is_role(self) -> bool:
        return self.kind == ROLE


class Principals:
    """The closed set of principals of one case."""

    def __init__(self, roles: Iterable[str], declared: Iterable[tuple[str, str]] = (),
                 approvers: Iterable[str] = ()) -> None:
        self._all: dict[str, Principal] = {}
        self._approvers = frozenset(approvers)
        for name in roles:
            self._all[name] = Principal(name, ROLE, name)
        for name, title in declared:
            if name in (BOARD, OPERATOR_NAME) or name in self._all:
                continue  # a role (or the chief) declared again is still that principal
            self._all[name] = Principal(name, EXTERNAL, title or name)
        self._all.setdefault(OPERATOR_NAME, Principal(OPERATOR_NAME, OPERATOR, "bureau chief"))

    def __contains__(self, name: object) -> bool:
        return type(name) is str and name in self._all

    def __iter__(self):  # noqa: ANN204 - iterator of principals, in declaration order
        return iter(self._all.values())

    def may_approve(self, approver: Principal, owner: str) -> bool:
        """Whether ``approver`` may approve promoting untrusted content into ``owner``'s memory:
        the chief, or a principal the policy names under ``approvers``, never the owner."""
        return approver.name != owner and (approver.kind == OPERATOR
                                           or approver.name in self._approvers)

    def names(self, kind: str | None = None) -> list[str]:
        return [p.name for p in self._all.values() if kind is None or p.kind == kind]

    def get(self, name: object, *, kind: str | None = None) -> Principal:
        """The principal called exactly ``name`` (of ``kind``, if given), else a refusal that
        lists the names one may use."""
        if kind not in (None, ROLE, EXTERNAL, OPERATOR):
            raise UnknownPrincipalError(f"There is no kind of principal {short_repr(kind)}.")
        principal = self._all.get(name) if type(name) is str else None
        if principal is None or (kind is not None and principal.kind != kind):
            wanted = self.names(kind)
            raise UnknownPrincipalError(
                f"{short_repr(name)} is not a {kind or 'principal'} of this case "
                f"({', '.join(wanted) or 'none declared'}).")
        return principal


__all__ = ["EXTERNAL", "OPERATOR", "OPERATOR_NAME", "ROLE", "Principal", "Principals"]
