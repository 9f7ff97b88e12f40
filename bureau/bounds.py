"""How long anything the bureau asks of a database may wait: no wait without a bound.

Why this exists (issue 47): seekdb's defaults let a session wait far longer than a learner
will. ``lock_wait_timeout`` is 31,536,000 s, a transaction may live a day
(``ob_trx_timeout``), and a DDL statement waits on a lock for ``_ob_ddl_timeout`` = 1,000 s
whatever the session's statement timeout says (measured on seekdb 1.4: ``SET SESSION
ob_query_timeout`` and ``lock_wait_timeout`` did not cut a ``CREATE TABLE`` stuck behind a
tenant lock; ``_ob_ddl_timeout`` did, with error 4012, at the second it named). A lesson cell
that spins for a quarter of an hour is a hang to the person in front of it.

Every session the bureau opens sets :func:`session_sql` (embedded seekdb, a server store, the
server ledger, the classroom's administrative connections); an embedded store also sets
:data:`DDL_S` on its own engine, which is the bureau's alone. SQLite (the embedded ledger, the
progress record) waits :data:`SQLITE_BUSY_S` for another writer. A statement that runs out of
its bound raises :class:`~bureau.errors.StoreTimeoutError` (typed, saying what waited and what
to do) unless running it again is safe, in which case it is run once more first.
"""

from __future__ import annotations

STATEMENT_S = 10
"""One statement (``ob_query_timeout``; seekdb's own default, which every lab batch fits in)."""
LOCK_WAIT_S = 10
"""Waiting for a row or table lock held by another session (``ob_trx_lock_timeout``,
``lock_wait_timeout``)."""
TRANSACTION_S = 60
"""A whole transaction (``ob_trx_timeout``): the ledger's server transactions take
milliseconds; embedded statements commit one by one."""
IDLE_IN_TRANSACTION_S = 120
"""A session idle inside an open transaction (``ob_trx_idle_timeout``) is rolled back."""
DDL_S = 30
"""A DDL statement on an embedded store (``_ob_ddl_timeout``, a parameter of that store's
engine; a server store's engine is not the bureau's to change). Creating the card table with
its vector index took 1-4 s on a busy 2-core machine; a DDL only runs when a table or index is
missing (a new store, or one written by an older version)."""
SQLITE_BUSY_S = 15
"""How long an SQLite connection waits for another process's write to finish."""
RETRIES = 1
"""A statement that ran out of its bound and is safe to repeat (a read, a write keyed by its
ids) runs this many times more before :class:`~bureau.errors.StoreTimeoutError`."""

TIMEOUT_CODES = frozenset({4012, 1205, 6002, 6003, 6004, 6005})
"""What seekdb answers when a bound is reached: 4012 statement (or DDL) timeout, 1205 lock wait
timeout, 6002-6005 a transaction rolled back or a lock conflict that outlived its wait."""


def session_settings() -> dict[str, int]:
    """The session variables every connection sets, in the units seekdb reads them in."""
    us = 1_000_000
    return {
        "ob_query_timeout": STATEMENT_S * us,
        "ob_trx_timeout": TRANSACTION_S * us,
        "ob_trx_idle_timeout": IDLE_IN_TRANSACTION_S * us,
        "ob_trx_lock_timeout": LOCK_WAIT_S * us,
        "lock_wait_timeout": LOCK_WAIT_S,
    }


def session_sql() -> str:
    """One ``SET SESSION`` statement for :func:`session_settings` (numbers only: no quoting)."""
    return "SET SESSION " + ", ".join(f"{k} = {v}" for k, v in session_settings().items())


def codes_of(exc: BaseException, *, messages: bool = True) -> set[int]:
    """MySQL/seekdb error codes anywhere in an exception's chain (SQLAlchemy wraps the driver's
    in ``.orig``, PowerMem re-raises, pylibseekdb puts ``code=N`` in its message; ``messages``:
    read those too)."""
    import re

    out: set[int] = set()
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        args = getattr(e, "args", ())
        if args and isinstance(args[0], int):
            out.add(args[0])
        if messages:
            out.update(int(m) for m in re.findall(r"code=(-?\d+)", str(e)))
        todo += [getattr(e, "orig", None), e.__cause__, e.__context__]
    return out


def is_timeout(exc: BaseException) -> bool:
    """The database gave up on a statement at one of the bounds above."""
    if codes_of(exc) & TIMEOUT_CODES:
        return True
    text = str(exc)
    return "Statement is timeout" in text or "Lock wait timeout exceeded" in text


__all__ = ["DDL_S", "IDLE_IN_TRANSACTION_S", "LOCK_WAIT_S", "RETRIES", "SQLITE_BUSY_S",
           "STATEMENT_S", "TIMEOUT_CODES", "TRANSACTION_S", "codes_of", "is_timeout",
           "session_settings", "session_sql"]
