"""Writing cards sealed, and refusing a store whose key store is gone (issue 31).

Kept beside the gateway, which calls them: ids are drawn before the insert so each ciphertext is
bound to its card id, keys are made durable before any row is written, each card's vector is
sealed under its own key (in the row's metadata; the store's vector column holds noise, issue 51),
and the rows are
inserted exactly as PowerMem's ``insert`` writes them (same record builder, same ``REPLACE``),
so a retried insert cannot add a card. Every batch, once in the store, bumps its scope's
version (:mod:`.scope_search`), so no process's copy of the scope's vectors misses it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

from ..model import CaseSpace, MemoryCard
from ..sealing import VECTOR_KEY, Sealer, noise
from .rows import META_KEYS, ids_of
from .setup import LOCK, new_card_ids, sql_engine, store_now
from .statements import replace_rows

_SEALING = ThreadPoolExecutor(max_workers=2, thread_name_prefix="bureau-seal")
"""Makes a write's keys durable while its texts are embedded (:func:`write_sealed`)."""


def write_sealed(gateway: Any, case: CaseSpace, owner: str,
                 items: Sequence[tuple[str, dict[str, Any]]], batch: int = 256) -> list[MemoryCard]:
    """``gateway``: the :class:`~bureau.storage.gateway.MemoryGateway` writing (its store,
    encoder, sealer, disk guard and retry). Write cards sealed: ids drawn first (the ciphertext
    is bound to its card id), keys made durable, then text, full-text copy, the labels that
    name or link content (:data:`~bureau.sealing.CLEAR_META`) and the vector sealed under each
    card's key, the vector column given noise, and the rows inserted exactly as PowerMem's
    ``insert`` writes them (same record builder, same ``REPLACE``). This process's scope matrix
    is handed the vectors themselves."""

    case_id, uid = ids_of(case)
    storage = gateway.memory.storage
    vs = storage.vector_store
    with LOCK:
        if not hasattr(storage, "_collection_created"):  # PowerMem creates it lazily
            vs.create_col(vs.collection_name, vector_size=gateway.encoder.dims,
                          distance="cosine")
            storage._collection_created = True

    def sealed_chunk(start: int) -> tuple[str, list[str], list[dict[str, Any]], dict[str, bytes],
                                          list[tuple[str, dict[str, Any]]]]:
        """One chunk's ids, labels, durable keys and sealed texts (needs no vector)."""
        chunk = items[start : start + batch]
        now = store_now()
        with LOCK:
            ids = new_card_ids(len(chunk))
        metas = []
        for _, meta in chunk:
            metadata = {k: v for k, v in meta.items() if k in META_KEYS and v is not None}
            metadata.setdefault("created", datetime.now().isoformat(timespec="milliseconds"))
            metas.append(metadata)
        with gateway._writing():  # the key store is on the same disk: refuse before it
            keys, sealed = gateway.sealer.seal(
                uid, owner, [(i, text, m) for i, (text, _), m in zip(ids, chunk, metas,
                                                                       strict=True)])
        return now, ids, metas, keys, sealed

    # The first chunk's keys are made durable (an fsync: the thread waits on the disk) while
    # the texts are embedded (the CPU works): a publish no longer pays the two one after the
    # other (issue 31 §4). No row is written before both are done.
    first = _SEALING.submit(sealed_chunk, 0)
    try:
        vectors = gateway.encoder.embed([text for text, _ in items])
    finally:
        first_chunk = first.result()
    cards: list[MemoryCard] = []
    for start in range(0, len(items), batch):
        chunk = items[start : start + batch]
        now, ids, metas, keys, sealed = first_chunk if start == 0 else sealed_chunk(start)
        mine = vectors[start : start + len(chunk)]
        tokens = gateway.sealer.seal_vectors(uid, owner, keys, ids, mine)
        records = []
        for i, (body, smeta), token, filler in zip(ids, sealed, tokens,
                                                   noise(len(ids), gateway.encoder.dims),
                                                   strict=True):
            record = vs._build_record_for_insert(filler.tolist(), {
                "data": body, "user_id": uid, "agent_id": owner, "run_id": "",
                "actor_id": "", "hash": hashlib.md5(body.encode("ascii")).hexdigest(),
                "created_at": now, "updated_at": now, "category": "",
                "fulltext_content": body, "metadata": {**smeta, VECTOR_KEY: token},
            })
            record[vs.primary_field] = int(i)
            records.append(record)

        def insert(records: list[dict[str, Any]] = records) -> None:
            # REPLACE keyed by the ids drawn above: running it again cannot add a card
            with gateway._writing(), LOCK:
                replace_rows(gateway.memory, records)

        gateway._retry(insert, "writing cards")
        # the scope's version bumped, this process's matrix given the vectors (sealed in store)
        gateway.scope_search.wrote(uid, owner, added=ids, vectors=mine, sealed=True)
        cards += [
            gateway._card({"id": i, "memory": text, "user_id": uid, "agent_id": owner,
                        "metadata": m}, case_id)
            for i, (text, _), m in zip(ids, chunk, metas, strict=True)
        ]
    return cards


def check_seal_keys(memory: Any, sealer: Sealer) -> None:
    """Refuse to go on when the store holds sealed cards but the key store is gone: a
    fresh key store made now would quietly turn every old card into noise.
    (``SealKeysLostError`` names the folder and what is lost.)"""
    if sealer.keys.exists():
        return
    from sqlalchemy import text

    engine = sql_engine(memory)
    if engine is None:
        return
    vs = memory.storage.vector_store
    with LOCK, engine.connect() as conn:
        try:
            found = conn.execute(text(
                f"SELECT 1 FROM `{vs.collection_name}` WHERE `{vs.text_field}` LIKE "
                "'sealed:1:%' LIMIT 1")).fetchall()
        except Exception as exc:  # noqa: BLE001 - no card table yet: nothing sealed
            if "doesn't exist" in str(exc) or "not exist" in str(exc):
                return
            raise
    if found:
        raise sealer.keys.lost("the store holds sealed cards, the key store does not")


__all__ = ["check_seal_keys", "write_sealed"]
