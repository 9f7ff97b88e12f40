"""Child processes for the open tests (issue 47): each opens one data directory the way a
lesson does, or leaves it the way a dying kernel does, and says what happened as one JSON line.

Run as ``python tests/openers.py <what> <data_dir> [arg]``:

* ``lesson``: the first cells of a lesson: ``Bureau.open()``, a case loaded, a question asked
  and a card published; prints the open's seconds. With ``kill`` it ends itself with SIGKILL
  right after, as a kernel killed mid-lesson does; with ``collection=NAME`` it opens another
  card table (one the store does not have yet).
* ``poison``: opens (``bureau``: through the bureau, ``raw``: seekdb alone, no schema) and kills
  itself the moment seekdb's one-time package install holds its tenant lock: the state that hung
  a reopen for good.
* ``probe``: whether seekdb holds a tenant lock an earlier process left (an orphan).
* ``hold``: opens and keeps the store until its stdin closes (another kernel on the same data
  directory); with ``tx`` it also holds an open transaction on a card row.
* ``ddl``: opens and runs one DDL statement of the bureau's (a test table), reporting how it ended.
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
import time

faulthandler.register(signal.SIGUSR1, all_threads=True)  # the test asks for the stack of a hang


def _say(**out: object) -> None:
    print(json.dumps(out), flush=True)


def lesson(data: str, how: str) -> None:
    t = time.monotonic()
    from bureau import Bureau

    imported = time.monotonic()
    extra = {"collection": how.split("=", 1)[1]} if how.startswith("collection=") else {}
    bureau = Bureau.open(data_dir=data, **extra)
    opened = time.monotonic()
    case = bureau.load_scenario("safe-combination")
    question = "What is the combination of the safe in the study?"
    before = case.interrogate("detective", question).text
    case.publish("informant", case.seed_card("safe-code").id)
    after = case.interrogate("detective", question).text
    _say(open_s=round(opened - imported, 2), total_s=round(time.monotonic() - t, 2),
         before=before, after=after)
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)


def _rows_of(data: str, how: str):
    if how == "bureau":
        from bureau import Bureau
        from bureau.storage.statements import statements

        memory = Bureau.open(data_dir=data).gateway.memory

        def rows(sql: str) -> list:
            with statements(memory) as conn:
                return conn.rows(sql)
        return rows
    import pylibseekdb

    os.makedirs(os.path.join(data, "seekdb"), exist_ok=True)
    pylibseekdb.open(db_dir=os.path.join(data, "seekdb"))
    conn = pylibseekdb.connect(database="test", autocommit=True)

    def rows(sql: str) -> list:
        cursor = conn.cursor()
        cursor.execute(sql)
        found = cursor.fetchall()
        cursor.close()
        return found
    return rows


def poison(data: str, how: str) -> None:
    from bureau.storage.engine_state import TENANT_LOCKS

    rows = _rows_of(data, how)
    start = time.monotonic()
    while time.monotonic() - start < 90:
        if rows(TENANT_LOCKS):
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(0.01)
    _say(error="seekdb never installed its packages within 90 s")
    sys.exit(3)


def probe(data: str, how: str) -> None:
    """Whether seekdb on ``data`` holds a tenant lock left by an earlier process (an orphan)."""
    from pathlib import Path

    from bureau.storage.engine_state import tenant_locks

    rows = _rows_of(data, "raw")
    time.sleep(1.0)
    locks = tenant_locks(rows, Path(data) / "seekdb")
    _say(orphans=sum(1 for lk in locks if lk.orphan), locks=len(locks))


def hold(data: str, how: str) -> None:
    """Another kernel on the data directory. ``tx``: seekdb alone (no bureau open, which would
    mend the store first), with an open transaction on one card row."""
    if how == "tx":
        import pylibseekdb

        pylibseekdb.open(db_dir=os.path.join(data, "seekdb"))
        conn = pylibseekdb.connect(database="test", autocommit=False)
        cursor = conn.cursor()
        cursor.execute("UPDATE `bureau_cards` SET `agent_id` = `agent_id` LIMIT 1")
    else:
        from bureau import Bureau

        Bureau.open(data_dir=data)
    _say(holding=True)
    sys.stdin.read()  # until the test closes it


def ddl(data: str, how: str) -> None:
    from sqlalchemy import text  # noqa: F401  (the DDL goes through the store's engine)

    from bureau import Bureau
    from bureau.errors import BureauError
    from bureau.storage import schema, setup

    bureau = Bureau.open(data_dir=data)
    engine = bureau.gateway.sql_engine
    start = time.monotonic()
    try:
        with setup.LOCK, engine.connect() as conn:
            schema.ddl(conn, bureau.settings, "CREATE TABLE IF NOT EXISTS `bounds_probe` (a INT)",
                       "creating a test table", setup._side_rows(bureau.settings))
        _say(error=None, seconds=round(time.monotonic() - start, 2))
    except BureauError as exc:
        _say(error=type(exc).__name__, message=str(exc),
             seconds=round(time.monotonic() - start, 2))


if __name__ == "__main__":
    what, data = sys.argv[1], sys.argv[2]
    arg = sys.argv[3] if len(sys.argv) > 3 else ""
    try:
        {"lesson": lesson, "poison": poison, "probe": probe, "hold": hold, "ddl": ddl}[what](data, arg)
    except Exception as exc:  # noqa: BLE001 - reported, typed or not
        _say(error=type(exc).__name__, message=str(exc)[:2000])
