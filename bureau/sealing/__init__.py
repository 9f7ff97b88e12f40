"""Sealed memory (issues 31, 51): what the bureau stores for a role is ciphertext under that
card's own key -- its text, the labels that name or link its content, and its vector -- and
forgetting a card destroys the key, so every copy the database keeps (its redo log, old data
blocks, a backup) is noise from then on -- crypto-shredding.

* :mod:`~bureau.sealing.cipher`: AES-GCM per text, bound to (namespace, scope, card id, field);
* :mod:`~bureau.sealing.vectors`: a card's vector sealed the same way, and the noise the store's
  vector column holds instead;
* :mod:`~bureau.sealing.keys`: the key store outside the database (scope keys wrapping per-card
  data keys; destroyed keys leave no old copy in it);
* :mod:`~bureau.sealing.rotation`: retired; turns back the vectors of a store written before
  issue 51 while it is migrated.

:class:`Sealer` is what the storage gateway calls: it seals before a text or a vector leaves the
process and opens what the store returns. Which actor this protects against, and which not:
README, threat model, docs/sealing.md ("What it protects, from whom").
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .cipher import PREFIX, is_sealed, row_ad, seal, unseal
from .keys import KeyStore, ScopeKey
from .vectors import VECTOR_KEY, noise, open_vectors, seal_vector

__all__ = ["CLEAR_META", "PREFIX", "VECTOR_KEY", "KeyStore", "ScopeKey", "Sealer", "is_sealed",
           "noise"]

CLEAR_META = ("visibility", "tier", "provenance", "trust", "created")
"""The labels a sealed row keeps in clear: none names, links or fingerprints its text (whether a
card is shared, its trust tier, where it came from by kind, and when), and the store filters on
some of them (``trust``, ``created``). Every other label is sealed with the card in
``metadata.sealed``: its topic, kind, sensitivity and type (with the public scenario file, a seed
card's labels name which seed it is), ``seed_key``, the ids it was copied from
(``source_id``, ``promoted_from``, ``copied_from``: a board copy would name its source card),
its source role, abstraction, content hash and tool source (issue 51). A listing that filters
on a sealed label filters after opening (:meth:`bureau.storage.gateway.MemoryGateway.list`)."""


_Slot = tuple[str, "tuple[str, ...] | None", str, str]


OPENED_CAP = 16_384
"""Opened cards a :class:`Sealer` keeps (~3-5 MB of short texts): a lab or a lesson asks the
same few cards again and again (the leak lab opens each ~15 times)."""


class Sealer:
    """Seal and open one data directory's cards; ``keys`` is its :class:`KeyStore`."""

    def __init__(self, root: Path) -> None:
        self.keys = KeyStore(root)
        self._opened: OrderedDict[_Slot, tuple[bytes, str, Any, str, dict[str, Any]]] = (
            OrderedDict())
        """(namespace, reader, scope, card id) -> (data key, sealed text, sealed metadata,
        text, metadata it hid): what opening that row gave. Opening is a pure function of the
        data key and the two tokens, so a hit is served only when all three are the same as
        now; the data key is looked up in the key store on every read first, so a card
        forgotten here or in another process is never served from here (and a forget here
        drops it). ``reader`` is the set of scopes the search was allowed (a role's own and
        the board): a board card another role's question brought up is not any faster for
        this one (the threat model's timing row: no figure depends on who asked what)."""
        self._opened_in: dict[str, set[_Slot]] = {}
        """namespace -> its slots in ``_opened`` (a case deleted drops its own, not a scan)."""
        self._opened_lock = threading.Lock()

    def seal(self, namespace: str, scope: str, entries: Sequence[tuple[str, str, dict[str, Any]]]
             ) -> tuple[dict[str, bytes], list[tuple[str, dict[str, Any]]]]:
        """``(card id, text, metadata)`` of new cards -> their data keys and, per card, its
        sealed text and metadata (the labels of :data:`CLEAR_META` in clear, the rest sealed).
        The keys are durable before this returns."""
        _, dks = self.keys.new_cards(namespace, scope, [e[0] for e in entries])
        out = []
        for cid, text, meta in entries:
            dk = dks[cid]
            clear, hidden = split_labels(meta)
            if hidden:
                clear["sealed"] = seal(dk, json.dumps(hidden, sort_keys=True),
                                       row_ad(namespace, scope, cid, "meta"))
            out.append((seal(dk, text, row_ad(namespace, scope, cid, "content")), clear))
        return dks, out

    @staticmethod
    def seal_vectors(namespace: str, scope: str, keys: dict[str, bytes], ids: Sequence[str],
                     vectors: np.ndarray) -> list[str]:
        """Each new card's vector sealed under its data key (``keys``: from :meth:`seal`)."""
        return [seal_vector(keys[cid], vec, namespace, scope, cid)
                for cid, vec in zip(ids, vectors, strict=True)]

    def sealed_scope(self, namespace: str, scope: str) -> bool:
        """Whether the scope holds sealed cards (it has a key; one ``stat``, cached read)."""
        return self.keys.scope_key(namespace, scope) is not None

    def open_vectors(self, namespace: str, scope: str, rows: Sequence[tuple[str, str]],
                     dims: int) -> tuple[list[str], np.ndarray]:
        """``(card id, vector token)`` rows of one scope opened: the ids that opened and their
        vectors (:func:`.vectors.open_vectors`); a forgotten card is left out.
        ``SealKeysLostError`` when the key store itself is gone."""
        keys = self.keys.data_keys(namespace, scope, [cid for cid, _ in rows])
        if rows and not keys and not self.keys.exists():
            raise self.keys.lost("its MANIFEST is gone")
        return open_vectors(keys, namespace, scope, rows, dims)

    def open_rows(self, namespace: str, rows: Sequence[dict[str, Any]],
                  reader: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
        """The rows the store returned, opened in place; a sealed row whose key is gone (a
        forgotten card) is left out. ``SealKeysLostError`` when the key store itself is gone.
        ``reader``: the scopes the search may read, which keeps what it opened for the next
        search of the same scopes (``None``: keep nothing)."""
        by_scope: dict[str, list[str]] = {}
        for row in rows:
            if is_sealed(_text(row)):
                by_scope.setdefault(str(row.get("agent_id")), []).append(str(row["id"]))
        if not by_scope:
            return list(rows)
        keys = {scope: self.keys.data_keys(namespace, scope, ids)
                for scope, ids in by_scope.items()}
        # Only a scope with none of its keys can mean a lost store (one stat fewer per read)
        if not all(keys.values()) and not self.keys.exists():
            raise self.keys.lost("its MANIFEST is gone")
        out = []
        for row in rows:
            body = _text(row)
            if not is_sealed(body):
                out.append(row)
                continue
            scope, cid = str(row.get("agent_id")), str(row["id"])
            dk = keys[scope].get(cid)
            if dk is None:
                continue  # forgotten: its key was destroyed
            meta = row.get("metadata") or {}
            meta = dict(json.loads(meta) if isinstance(meta, str | bytes) else meta)
            meta.pop(VECTOR_KEY, None)  # the sealed vector is the index's, never a caller's
            opened = self._open((namespace, reader, scope, cid), dk, str(body),
                                meta.pop("sealed", None))
            if opened is None:
                continue  # bound to another row (copied or altered): not this card's text
            text, hidden = opened
            meta.update(hidden)
            out.append({**row, "memory": text, "content": text, "metadata": meta})
        return out

    def _open(self, slot: _Slot, dk: bytes, body: str, sealed_meta: Any
              ) -> tuple[str, dict[str, Any]] | None:
        """One row's text and the metadata it hid, or ``None`` when either does not open."""
        namespace, reader, scope, cid = slot
        kept = reader is not None
        with self._opened_lock:
            hit = self._opened.get(slot) if kept else None
            if hit is not None and hit[0] == dk and hit[1] == body and hit[2] == sealed_meta:
                self._opened.move_to_end(slot)
                return hit[3], dict(hit[4])
        text = unseal(dk, body, row_ad(namespace, scope, cid, "content"))
        if text is None:
            return None
        hidden: dict[str, Any] = {}
        if sealed_meta is not None:
            opened = unseal(dk, sealed_meta, row_ad(namespace, scope, cid, "meta"))
            if opened is None:
                return None
            hidden = json.loads(opened)
        if not kept:
            return text, hidden
        with self._opened_lock:
            self._opened[slot] = (dk, body, sealed_meta, text, hidden)
            self._opened.move_to_end(slot)
            self._opened_in.setdefault(namespace, set()).add(slot)
            while len(self._opened) > OPENED_CAP:
                self._unlist(self._opened.popitem(last=False)[0])
        return text, dict(hidden)

    def _unlist(self, slot: _Slot) -> None:
        slots = self._opened_in.get(slot[0])
        if slots is not None:
            slots.discard(slot)
            if not slots:
                del self._opened_in[slot[0]]

    def _drop_opened(self, namespace: str, scope: str | None = None,
                     card_ids: Sequence[str] | None = None) -> None:
        """Called once the keys are destroyed (a read racing the forget found no key)."""
        ids = None if card_ids is None else {str(c) for c in card_ids}
        with self._opened_lock:
            slots = [s for s in self._opened_in.get(namespace, ())
                     if (scope is None or s[2] == scope) and (ids is None or s[3] in ids)]
            for slot in slots:
                if self._opened.pop(slot, None) is not None:
                    self._unlist(slot)

    def forget(self, namespace: str, scope: str, card_ids: Sequence[str]) -> int:
        try:
            return self.keys.forget_cards(namespace, scope, card_ids)
        finally:
            self._drop_opened(namespace, scope, card_ids)

    def forget_scope(self, namespace: str, scope: str) -> bool:
        try:
            return self.keys.forget_scope(namespace, scope)
        finally:
            self._drop_opened(namespace, scope)

    def forget_namespace(self, namespace: str) -> int:
        try:
            return self.keys.forget_namespace(namespace)
        finally:
            self._drop_opened(namespace)


def split_labels(meta: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A card's labels as a sealed row keeps them: (in clear, to be sealed)."""
    clear = {k: v for k, v in meta.items() if k in CLEAR_META}
    hidden = {k: v for k, v in meta.items() if k not in CLEAR_META and v is not None}
    return clear, hidden


def _text(row: dict[str, Any]) -> object:
    """A row's text: PowerMem names it ``memory`` in searches and lists, ``content`` in get."""
    return row["memory"] if row.get("memory") is not None else row.get("content")
