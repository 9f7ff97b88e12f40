"""Migrating a store sealed before issue 51: its vectors turned back and sealed per card.

Stores written by the issue-31 bureau kept each sealed card's vector turned by its scope's
rotation (``bureau/sealing/rotation.py``, now retired), and some labels that name content in
clear (``seed_key``, a board copy's ``source_id``, ...). Every cosine inside a scope survived
the turn, which is what let one known text name the rest (issue 51). Such a store is recognised
by its key store's MANIFEST (v1) and migrated the first time it is opened
(:meth:`~bureau.storage.gateway.MemoryGateway.check_seal_keys`), under the key store's writer
lock, before anything reads or writes it:

1. every sealed row without a vector token, in id order: its stored vector turned back with its
   scope's key and draw, sealed under its card's data key into ``metadata.vector``, the labels
   :data:`~bureau.sealing.CLEAR_META` does not keep in clear sealed with the rest, and the
   vector column given noise -- one ``UPDATE`` per row, so a row is either the old form or the
   new one. A row whose key is gone (a forgotten card a crash left behind) cannot be opened: its
   vector column is given noise and its content labels are dropped;
2. then every v1 scope file rewritten as v2 (same keys, no draw), each atomically;
3. then the MANIFEST rewritten as v2, the last step.

A kill at any point leaves a MANIFEST that still says v1 and key files that still name their
draws until every row is done, so the next open starts again from step 1 and finds only the
rows left (``tests/test_seal_migration.py`` kills it at each step). What migration cannot reach:
copies of the turned vectors that seekdb's redo log and old blocks already hold keep their
cosines until the engine recycles them (docs/sealing.md says so).
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import text

from ..sealing import CLEAR_META, VECTOR_KEY, noise
from ..sealing.cipher import row_ad, seal, unseal
from ..sealing.rotation import turn_back
from ..sealing.vectors import seal_vector
from .rows import vector_literal
from .scope_index import parse_vectors
from .setup import LOCK, sql_engine

POINTS = ("seal_migration.after_first_row", "seal_migration.after_rows",
          "seal_migration.after_key_files")
"""Where the migration tells :attr:`MemoryGateway.on_step` it got to (the kill test's points)."""
PAGE = 256


def migrate(gateway: Any) -> dict[str, int]:
    """Migrate ``gateway``'s store and key store (see the module's docstring). Returns what it
    did: rows sealed anew, rows left as noise, scope files rewritten."""
    keys = gateway.sealer.keys
    done = {"rows": 0, "dead_rows": 0, "key_files": 0}
    with keys.locked():
        if not keys.needs_migration():  # another process finished it while this one waited
            return done
        touched = _rows(gateway, done)
        gateway.on_step("seal_migration.after_rows")
        done["key_files"] = keys.retire_draws()
        gateway.on_step("seal_migration.after_key_files")
        keys.mark_migrated()
    gateway.scopes.clear()  # nothing this process holds was built from the turned vectors
    for uid, owners in touched.items():
        gateway.scope_search._counted(uid, sorted(owners))  # every other process rebuilds
    return done


def _rows(gateway: Any, done: dict[str, int]) -> dict[str, set[str]]:
    """Step 1, over every sealed row still without its vector token."""
    engine = sql_engine(gateway.memory)
    touched: dict[str, set[str]] = {}
    if engine is None:
        return touched
    vs = gateway.memory.storage.vector_store
    table, pk, vec, meta, body = (vs.collection_name, vs.primary_field, vs.vector_field,
                                  vs.metadata_field, vs.text_field)
    after = -1
    while True:
        with LOCK, engine.connect() as conn:
            try:
                rows = conn.execute(text(
                    f"SELECT `{pk}`, `user_id`, `agent_id`, `{vec}`, `{meta}`, `{body}` FROM "
                    f"`{table}` WHERE `{body}` LIKE 'sealed:1:%' AND "
                    f"`{meta}`->>'$.{VECTOR_KEY}' IS NULL AND `{pk}` > {int(after)} "
                    f"ORDER BY `{pk}` LIMIT {PAGE}")).fetchall()
            except Exception as exc:  # noqa: BLE001 - no card table yet: nothing stored
                if "doesn't exist" in str(exc) or "not exist" in str(exc):
                    return touched
                raise
            for row in rows:
                uid, owner = str(row[1]), str(row[2])
                vector, labels, alive = _renewed(gateway, row, gateway.encoder.dims)
                conn.execute(text(
                    f"UPDATE `{table}` SET `{vec}` = :v, `{meta}` = :m WHERE `{pk}` = :id AND "
                    "`user_id` = :u AND `agent_id` = :o"),
                    {"v": vector_literal(vector), "m": json.dumps(labels), "id": int(row[0]),
                     "u": uid, "o": owner})
                conn.commit()
                done["rows" if alive else "dead_rows"] += 1
                touched.setdefault(uid, set()).add(owner)
                if done["rows"] + done["dead_rows"] == 1:
                    gateway.on_step("seal_migration.after_first_row")
        if len(rows) < PAGE:
            return touched
        after = int(rows[-1][0])


def _renewed(gateway: Any, row: Any, dims: int) -> tuple[Any, dict[str, Any], bool]:
    """One old row's new vector column (noise), its new metadata, and whether it was alive."""
    cid, uid, owner = str(row[0]), str(row[1]), str(row[2])
    meta = row[4]
    meta = dict(json.loads(meta) if isinstance(meta, str | bytes) else (meta or {}))
    keys = gateway.sealer.keys
    scope_key = keys.scope_key(uid, owner)
    dk = keys.data_keys(uid, owner, [cid]).get(cid)
    hidden: dict[str, Any] | None = {}
    if dk is not None and meta.get("sealed") is not None:
        opened = unseal(dk, str(meta["sealed"]), row_ad(uid, owner, cid, "meta"))
        hidden = None if opened is None else json.loads(opened)
    text_ = None if dk is None else unseal(dk, str(row[5]), row_ad(uid, owner, cid, "content"))
    filler = noise(1, dims)[0]
    if dk is None or hidden is None or text_ is None:  # forgotten, or not this row's: dead
        clear = {k: v for k, v in meta.items() if k in CLEAR_META or k == "sealed"}
        return filler, clear, False
    if scope_key is not None and scope_key.draw is not None:
        stored = parse_vectors([str(row[3])], dims)
        vector = turn_back(scope_key.key, scope_key.draw, stored)[0]
    else:  # a scope file already rewritten without its draw: the text itself, embedded again
        vector = gateway.encoder.embed([text_])[0]
    labels = {**{k: v for k, v in meta.items() if k != "sealed"}, **hidden}
    clear = {k: v for k, v in labels.items() if k in CLEAR_META}
    rest = {k: v for k, v in labels.items() if k not in CLEAR_META and v is not None}
    if rest:
        clear["sealed"] = seal(dk, json.dumps(rest, sort_keys=True),
                               row_ad(uid, owner, cid, "meta"))
    clear[VECTOR_KEY] = seal_vector(dk, vector, uid, owner, cid)
    return filler, clear, True


__all__ = ["POINTS", "migrate"]
