"""Reconnect and retry once: what a server-mode connection does when its session is ended.

Why: on a classroom server any learner's account may ``KILL`` any other session (seekdb 1.4
accepts it without SUPER, measured; no grant or setting refuses it), and the server itself may
stop and come back (``kill -9``, a restart). A killed session answers its next statement with
``2013 Lost connection`` (idle or in flight, measured); a stopped server refuses with ``2003``.
Neither should fail a lesson cell: the bureau reconnects and runs the call again (a retry per
ended session, within :data:`LOST_BUDGET_S`) when running it again cannot duplicate anything:

* reads: always;
* a card insert (:meth:`~bureau.storage.gateway.MemoryGateway.add`): only after looking up
  whether the first attempt landed (a row with the same scope, text and creation stamp); the
  caller passes that look-up as ``landed``;
* deletes: they are idempotent (``delete_or_gone``);
* ledger transactions: :class:`~bureau.ledger.server.ServerConnection` replays the statements of
  a transaction the server rolled back, and checks a commit mark when the connection died during
  ``COMMIT`` (see there);
* the publish saga needs nothing more: each of its steps is one of the above, and a repeat
  publish is answered from its ledger record.

A call that still fails, or a server that does not answer, becomes :class:`ServerUnavailableError`:
typed, and it says to wait and re-run the cell. Never a driver's stack trace.

Only the storage and ledger layers (and the classroom's administrative code, which talks to the
server directly) use this module; it imports no driver at module level.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from ..bounds import codes_of
from ..errors import ServerUnavailableError

log = logging.getLogger(__name__)
T = TypeVar("T")

LOST = {2006, 2013, 2055, 4012, 1317, 5066}
"""The session is gone (server has gone away, lost connection, lost during SSL) or its statement
was interrupted (1317, ``KILL QUERY``); seekdb answers a killed session with 2013, and a
statement its session's KILL cut in flight with 5066 "Session interrupted" (seen once in 647
calls of the attack test, on a loaded machine)."""
DOWN = {2003}
"""Cannot connect: the server does not listen (stopped, restarting)."""
_MESSAGES = ("Lost connection to MySQL server", "MySQL server has gone away",
             "Can't connect to MySQL server", "Query execution was interrupted")
RETRY_WAIT_S = 0.05
"""First pause before a retry; it doubles with each attempt, up to a second."""
LOST_BUDGET_S = 20.0
"""How long one call keeps retrying while its sessions are being ended. One retry absorbs one
KILL, but a learner who kills every session every 0.3 s also ends retries that take longer
than that, which a card write on a loaded 2-core machine does (measured: load average 15-19,
a whisper 0.3-1.4 s; with a single retry 1-3 of ~80 calls per learner failed in 30 s, typed).
The room's guard locks such a learner within seconds (:mod:`bureau.classroom.guard`); the
budget outlasts that."""
DOWN_BUDGET_S = 5.0
"""How long a call waits for a server that does not answer (a restart takes ~2 s here); then
it fails typed, telling the learner to wait and re-run the cell."""


def is_lost(exc: BaseException) -> bool:
    """The connection died (a KILL, a server that went away): worth one reconnect."""
    if codes_of(exc, messages=False) & (LOST | DOWN):
        return True
    if getattr(exc, "connection_invalidated", False):
        return True
    text = str(exc)
    return any(m in text for m in _MESSAGES)


def is_down(exc: BaseException) -> bool:
    """Nobody listens on the server's port."""
    return (bool(codes_of(exc, messages=False) & DOWN)
            or "Can't connect to MySQL server" in str(exc))


def unavailable(what: str, exc: BaseException | None = None,
                attempts: int = 1) -> ServerUnavailableError:
    kind = "does not answer" if exc is not None and is_down(exc) else "dropped the connection"
    return ServerUnavailableError(
        f"The database server {kind} while the bureau was {what} (tried {attempts} times).")


def retry(fn: Callable[[], T], what: str, landed: Callable[[], T | None] | None = None) -> T:
    """Run ``fn``; while its connection dies, reconnect and run it again (each run safe for the
    reason above), within :data:`LOST_BUDGET_S` (:data:`DOWN_BUDGET_S` while nobody listens).

    ``landed`` is for writes that are not idempotent: after a failure it is asked first whether
    the previous attempt's write is there (the server may have committed it before the
    connection died); its answer, when not ``None``, is the result and ``fn`` is not run again.
    Anything but a lost connection propagates unchanged.
    """
    start = time.monotonic()
    attempt = 0
    while True:
        attempt += 1
        try:
            if attempt > 1 and landed is not None:
                found = landed()
                if found is not None:
                    return found
            return fn()
        except Exception as exc:
            if not is_lost(exc):
                raise
            wait = min(1.0, RETRY_WAIT_S * 2 ** (attempt - 1))
            budget = DOWN_BUDGET_S if is_down(exc) else LOST_BUDGET_S
            if time.monotonic() - start + wait > budget:
                raise unavailable(what, exc, attempt) from None
            log.warning("%s: connection lost (%s); reconnecting and retrying", what,
                        type(exc).__name__)
            time.sleep(wait)


def retry_timeouts(fn: Callable[[], T], what: str,
                   landed: Callable[[], T | None] | None = None) -> T:
    """Run ``fn`` against embedded seekdb; when seekdb gives up on it at one of its bounds
    (:mod:`bureau.bounds`: a statement, a lock wait), run it again :data:`~bureau.bounds.RETRIES`
    more times (safe for the same reasons as :func:`retry`: reads, writes keyed by their ids,
    and ``landed`` asked first for an insert), then raise
    :class:`~bureau.errors.StoreTimeoutError`. A typed refusal (a full disk) passes unchanged."""
    from ..bounds import LOCK_WAIT_S, RETRIES, STATEMENT_S, is_timeout
    from ..errors import BureauError, StoreTimeoutError

    last: BaseException | None = None
    for attempt in range(RETRIES + 1):
        try:
            if attempt and landed is not None:
                found = landed()
                if found is not None:
                    return found
            return fn()
        except BureauError:
            raise
        except Exception as exc:
            if not is_timeout(exc):
                raise
            last = exc
            log.info("%s: seekdb stopped it at its bound (%s); %s", what, type(exc).__name__,
                     "running it again" if attempt < RETRIES else "giving up")
    raise StoreTimeoutError(
        f"seekdb stopped {what} at its bound ({STATEMENT_S} s a statement, {LOCK_WAIT_S} s a "
        f"lock wait) {RETRIES + 1} times in a row: another process using the same data "
        "directory may be holding a lock, or the machine is very busy.") from last


def typed(fn: Callable[[], T], what: str) -> T:
    """Run ``fn`` once; a lost connection becomes :class:`ServerUnavailableError` (for calls
    that must not be repeated blindly and have no ``landed`` check)."""
    try:
        return fn()
    except Exception as exc:
        if is_lost(exc):
            raise unavailable(what, exc) from None
        raise


def pre_ping(engine: Any) -> None:
    """Check a pooled connection before each use, replacing it if the server ended it: a
    session killed while idle in the pool (the common case) then costs a ping, not an error."""
    pool = getattr(engine, "pool", None)
    if pool is not None and hasattr(pool, "_pre_ping"):
        pool._pre_ping = True


__all__ = ["DOWN", "LOST", "is_down", "is_lost", "pre_ping", "retry", "retry_timeouts", "typed",
           "unavailable"]
