"""Scopes: the memory spaces a role may read, decided by the service, never by a question.

A role reads its own private space and the shared bulletin board, nothing else. Keeping the rule
here, in one function, is what makes it reviewable: every read path of the service asks it, and
the gateway then fills in the case and role filters of each scope it names.
"""

from __future__ import annotations

from ..model import BOARD


def readable_scopes(role: str) -> list[str]:
    """The spaces ``role`` may search, in the order the X-ray shows them: its own, then the board."""
    return [role, BOARD]
