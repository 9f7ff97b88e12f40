"""Deleting every row of a namespace or of one scope in it, verified by the store's own count.

Kept apart from the gateway because the fast way is SQL by scope (a statement per
:data:`PURGE_BATCH` rows) and the fallback is PowerMem's read-then-delete per card: two ways to
one result, each checked the same way. The caller (the gateway, ``gw``: its store, settings and
scope search) holds the lock and has destroyed the keys."""

from __future__ import annotations

from typing import Any

from .rows import check_row as _check_row
from .rows import sql_name as _sql_name
from .setup import sql_engine
from .statements import statements

PURGE_BATCH = 1000
"""Rows one purge statement deletes: well inside a statement's bound (:mod:`bureau.bounds`);
the count is read again after each."""


def purge_rows(gw: Any, uid: str, owner: str | None, max_rounds: int) -> tuple[int, int]:
    """Delete the rows of a namespace (``owner`` None) or of one scope in it; returns
    (deleted, left over). The caller holds the lock and has destroyed the keys first.

    A statement deletes :data:`PURGE_BATCH` rows by their scope (the ``WHERE`` that names
    it is the boundary; names are validated, :func:`.rows.sql_name`). PowerMem's way was a
    read of 500 rows and a read-then-delete per card: ~7 ms a card, 3.5 of the injection
    lab's 22 s for one scenario (profiled, issue 47). Without an SQL engine, that way."""
    if sql_engine(gw.memory) is None:
        return _one_by_one(gw, uid, owner, max_rounds)
    table = gw.settings.collection
    where = f"`user_id` = {_sql_name(uid)}"
    if owner is not None:
        where += f" AND `agent_id` = {_sql_name(owner)}"
    owners: list[str] = [] if owner is None else [owner]
    try:
        with statements(gw.memory) as conn:
            if owner is None:
                owners = [str(r[0]) for r in conn.rows(
                    f"SELECT DISTINCT `agent_id` FROM `{table}` WHERE {where}")]
            before = left = int(conn.rows(f"SELECT COUNT(*) FROM `{table}` WHERE {where}")[0][0])
            for _ in range(max_rounds):
                if not left:
                    break
                conn.run(f"DELETE FROM `{table}` WHERE {where} LIMIT {PURGE_BATCH}")
                conn.commit()
                left = int(conn.rows(f"SELECT COUNT(*) FROM `{table}` WHERE {where}")[0][0])
    finally:
        if owner is None:
            gw.scope_search.wrote_space(uid, owners)
        else:
            gw.scope_search.wrote(uid, owner, forget=True)
    return before - left, left

def _one_by_one(gw: Any, uid: str, owner: str | None,
                           max_rounds: int) -> tuple[int, int]:
    deleted, owners = 0, []
    try:
        for _ in range(max_rounds):
            rows = gw.memory.get_all(user_id=uid, agent_id=owner, limit=500,
                                       offset=0)["results"]
            if not rows:
                break
            for row in rows:
                _check_row(row, uid, owner, "purge")
                owners.append(str(row.get("agent_id")))
                if gw.memory.delete(int(row["id"]), user_id=uid,
                                      agent_id=row.get("agent_id")):
                    deleted += 1
    finally:
        if owner is None:
            gw.scope_search.wrote_space(uid, owners)
        else:
            gw.scope_search.wrote(uid, owner, forget=True)
    left = int(gw.memory.count_all(user_id=uid, agent_id=owner))
    return deleted, left
