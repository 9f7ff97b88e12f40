"""Named fault-injection points, so tests and lesson 03 can crash the publish saga on purpose.

Arm a point in-process with :func:`arm` (``"raise"`` raises :class:`InjectedFault`, ``"kill"``
SIGKILLs the process, as a power cut would), or for a child process through the environment:
``BUREAU_FAULT=publish.after_copy_written:kill``. Unarmed points cost one dict lookup.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import InjectedFault

POINTS = (
    "publish.after_reserve",
    "publish.after_copy_written",
    "publish.before_mark_ready",
    "publish.during_compensation",
)

FORGET_POINTS = (
    "forget.after_limits",  # the ledger says revoked; no card erased, no key destroyed yet
    "forget.after_key_destroyed",  # one card's key destroyed; its row not deleted yet
)
"""Points inside forgetting (issue 31): ``kill`` there must leave nothing readable behind."""

MIGRATION_POINTS = (
    "seal_migration.after_first_row",  # one old row sealed anew, the rest still turned
    "seal_migration.after_rows",  # every row done; key files still v1, MANIFEST v1
    "seal_migration.after_key_files",  # key files v2; the MANIFEST still v1
)
"""Points inside the migration of a store sealed before issue 51
(:mod:`bureau.storage.seal_migration`): ``kill`` there must leave a store the next open
finishes, every card readable and found as before."""

_armed: dict[str, str] = {}


def _from_env() -> None:
    spec = os.environ.get("BUREAU_FAULT", "")
    for item in filter(None, spec.split(",")):
        point, _, action = item.partition(":")
        arm(point, action or "raise")


def arm(point: str, action: str = "raise") -> None:
    known = POINTS + FORGET_POINTS + MIGRATION_POINTS
    if point not in known:
        raise ValueError(f"Unknown fault point {point!r}; known: {', '.join(known)}")
    if action not in ("raise", "kill"):
        raise ValueError("action must be 'raise' or 'kill'")
    _armed[point] = action


def disarm(point: str | None = None) -> None:
    if point is None:
        _armed.clear()
    else:
        _armed.pop(point, None)


@contextmanager
def armed(point: str, action: str = "raise") -> Iterator[None]:
    arm(point, action)
    try:
        yield
    finally:
        disarm(point)


def hit(point: str) -> None:
    action = _armed.get(point)
    if action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if action == "raise":
        raise InjectedFault(f"Injected fault at {point}.", "Run case.recover() to repair.")


_from_env()
