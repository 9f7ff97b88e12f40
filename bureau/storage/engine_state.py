"""What embedded seekdb is doing besides the bureau's statements, read in SQL: the one lock of
its that made reopening a store hang (issue 47), and how the bureau keeps out of its way.

**The cause, measured on seekdb 1.4.** Once in a store's life, a few seconds after a start,
seekdb installs its system packages (``dbms_stats`` and 12 more; its log says
``load sys package list``) in a transaction that holds an *exclusive lock on the tenant*
(``__all_virtual_obj_lock``: ``{"type":5, ...}``, mode ``X``). It takes 0.6 s on a quiet
machine, tens of seconds on a loaded one. seekdb exits with its last client, so a kernel that
ends in that window -- killed, or simply finished, as lesson 00 is a few seconds after its
first open -- leaves the transaction half done. At the next start seekdb replays it from its
redo log as still *running*, writes it into its checkpoints as running, and never ends it:
the exclusive lock stays, through every later restart. Every DDL statement needs the tenant's
lock too, so from then on each waited ``_ob_ddl_timeout`` (1,000 s); the bureau ran one on
every open (``CREATE TABLE IF NOT EXISTS``), and the lesson's first cell hung.

**What the bureau does about it.**

* No DDL when the schema is there (:mod:`.setup`): a store left with such a lock still opens,
  reads and writes (rows take no tenant lock), as the stress test checks.
* Every DDL is bounded (``Settings.ddl_timeout_s``) and its timeout is explained here:
  :func:`explain_ddl_timeout` names the lock and what to do.
* The window is kept shut where the bureau can: when the package install is under way as a
  store opens, the open waits for it; and a process that exits normally first lets an install
  under way finish (:func:`let_setup_finish_at_exit`). Only a ``kill -9`` inside those few
  seconds can still leave the lock, and then the first point holds.
"""

from __future__ import annotations

import atexit
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import StoreTimeoutError
from ..settings import Settings

log = logging.getLogger(__name__)

Rows = Callable[[str], list[tuple[Any, ...]]]
"""Runs one written-out SELECT and returns its rows."""

SETUP_WAIT_S = 20.0
"""Longest wait, at an open or at exit, for seekdb's package install to finish (0.6 s quiet;
Jupyter kills a kernel that takes more than 5 s to shut down anyway)."""

TENANT_LOCKS = ("SELECT create_trans_id, create_timestamp FROM oceanbase.__all_virtual_obj_lock "
                "WHERE lock_mode = 'X' AND LEFT(lock_id, 10) = '{\"type\":5,'")
"""Exclusive locks on the tenant (lock object type 5). Written without ``%`` and ``:`` after a
letter so that no driver on the way reads a placeholder in it."""


@dataclass(frozen=True)
class TenantLock:
    txid: int
    created: float
    """When the transaction took the lock (seconds since the epoch)."""
    orphan: bool | None
    """Taken before the running seekdb started: left by a process that ended inside it, and
    never released (None: the start time of seekdb is unknown)."""


def seekdb_started_at(seekdb_path: Path) -> float | None:
    """When the seekdb serving ``seekdb_path`` started (from its PID file), or None."""
    import psutil

    try:
        pid = int((seekdb_path / "run" / "seekdb.pid").read_text().strip())
        return psutil.Process(pid).create_time()
    except (OSError, ValueError, psutil.Error):
        return None


def tenant_locks(rows: Rows, seekdb_path: Path | None) -> list[TenantLock]:
    """The exclusive locks held on the tenant now (none on a store at rest)."""
    started = seekdb_started_at(seekdb_path) if seekdb_path is not None else None
    out = []
    for txid, created_us in rows(TENANT_LOCKS):
        created = int(created_us) / 1e6
        orphan = None if started is None else created < started - 0.05
        out.append(TenantLock(int(txid), created, orphan))
    return out


def wait_for_setup(rows: Rows, seekdb_path: Path, bound_s: float = SETUP_WAIT_S) -> float:
    """Wait while seekdb's package install (an exclusive tenant lock taken since this seekdb
    started) is under way, at most ``bound_s``; returns the seconds waited. An orphaned lock
    is not waited for: it never goes."""
    start = time.monotonic()
    while time.monotonic() - start < bound_s:
        try:
            live = [lk for lk in tenant_locks(rows, seekdb_path) if lk.orphan is False]
        except Exception:  # noqa: BLE001 - a view seekdb lacks must not fail an open or exit
            return time.monotonic() - start
        if not live:
            break
        time.sleep(0.2)
    return time.monotonic() - start


def let_setup_finish_at_exit(rows: Rows, lock: Any, settings: Settings,
                             usable: Callable[[], bool]) -> None:
    """Wait now for a package install under way, and again when this process exits normally
    (``atexit``), so that the bureau never ends seekdb inside it (see the module's text).
    ``rows`` runs on the store's own connection under ``lock``; ``usable`` says whether that
    connection may still be used (not after a DDL was given up on, :func:`.schema.stuck`)."""

    def check() -> None:
        # bounded: at exit a thread stuck in a statement may hold the lock for good
        if not usable() or not lock.acquire(timeout=5.0):
            return
        try:
            waited = wait_for_setup(rows, settings.seekdb_path)
            orphans = [lk for lk in tenant_locks(rows, settings.seekdb_path) if lk.orphan]
        except Exception:  # noqa: BLE001 - an ending process must not fail here
            return
        finally:
            lock.release()
        if waited > 0.5:
            log.info("waited %.1f s for embedded seekdb to install its system packages", waited)
        if orphans:
            log.info("embedded seekdb holds a tenant lock left since %s by a process that "
                     "ended during its package install; the bureau needs no DDL on this store",
                     _when(orphans[0].created))

    check()
    atexit.register(check)


def explain_ddl_timeout(rows: Rows, settings: Settings, what: str) -> StoreTimeoutError:
    """The typed error for a DDL statement seekdb stopped at ``settings.ddl_timeout_s``."""
    bound = settings.ddl_timeout_s
    seekdb_path = settings.seekdb_path if settings.store == "embedded" else None
    try:
        locks = tenant_locks(rows, seekdb_path)
    except Exception:  # noqa: BLE001 - the view is an explanation, not a requirement
        locks = []
    orphans = [lk for lk in locks if lk.orphan]
    if orphans:
        return StoreTimeoutError(
            f"{_sentence(what)} did not finish within {bound} s: seekdb's tenant has been "
            "locked since "
            f"{_when(orphans[0].created)} by a transaction an earlier process left open (it "
            "ended while seekdb was installing its system packages, a one-time step of a new "
            "store). seekdb never releases that lock, so this store cannot create tables any "
            "more, and its set-up is incomplete.",
            f"Move the folder {settings.seekdb_path} aside (or delete it if it holds nothing "
            "you need) and open again: a new store is created. Cards already written there are "
            "in that folder.")
    if locks:
        return StoreTimeoutError(
            f"{_sentence(what)} did not finish within {bound} s: seekdb was installing its "
            "system packages (a one-time step of a new store, which locks it) and had not "
            "finished.")
    where = (f"another process using {settings.data_dir}" if settings.store == "embedded"
             else f"another session on the server {settings.server.host}")
    return StoreTimeoutError(
        f"{_sentence(what)} did not finish within {bound} s: it waited for a lock ({where} "
        "may hold one, in an open transaction).")


def _when(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s).strftime("%Y-%m-%d %H:%M:%S")


def _sentence(what: str) -> str:
    return what[:1].upper() + what[1:]


__all__ = ["SETUP_WAIT_S", "TenantLock", "explain_ddl_timeout", "let_setup_finish_at_exit",
           "seekdb_started_at", "tenant_locks", "wait_for_setup"]
