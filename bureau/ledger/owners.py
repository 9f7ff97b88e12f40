"""Who owns a publish reservation or a run: this process's token, and whether an owner is gone."""

from __future__ import annotations

import os
import socket
import time
import uuid

from .rows import Publication


def _new_token() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


PROCESS_TOKEN = _new_token()
"""Who owns a publish reservation: host, pid and a random part (pids get reused)."""


def _after_fork() -> None:  # a forked child is another owner, not its parent
    global PROCESS_TOKEN
    PROCESS_TOKEN = _new_token()


os.register_at_fork(after_in_child=_after_fork)


def process_token() -> str:
    """This process's :data:`PROCESS_TOKEN`, read now (a name imported before a fork would keep
    the parent's)."""
    return PROCESS_TOKEN


def owner_alive(owner: str) -> bool:
    """True unless we can tell the owner process is gone (only checkable on this host)."""
    try:
        host, pid, _ = owner.split(":", 2)
        if host != socket.gethostname():
            return True
        if int(pid) == os.getpid():
            # Our own pid under another token: an earlier process whose pid we inherited.
            return owner == PROCESS_TOKEN
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (ValueError, PermissionError):
        return True
    return True


def is_stale(rec: Publication, now: float | None = None) -> bool:
    """A pending reservation nobody is working on any more: lease over or owner process gone."""
    now = time.time() if now is None else now
    return rec.lease_until < now or not owner_alive(rec.owner)
