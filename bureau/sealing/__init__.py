"""Sealed memory (issue 31): what the bureau stores for a role is ciphertext under that card's
own key, and forgetting a card destroys the key, so every copy the database keeps (its redo log,
old data blocks, a backup) is noise from then on -- crypto-shredding.

* :mod:`~bureau.sealing.cipher`: AES-GCM per text, bound to (namespace, scope, card id, field);
* :mod:`~bureau.sealing.keys`: the key store outside the database (scope keys wrapping per-card
  data keys; destroyed keys leave no old copy in it);
* :mod:`~bureau.sealing.rotation`: a per-scope secret orthogonal rotation of vectors (cosines,
  hence every search result, unchanged).

:class:`Sealer` is what the storage gateway calls: it seals before a text leaves the process and
opens what the store returns. Which actor this protects against, and which not: README, threat
model ("Sealed memory").
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .cipher import PREFIX, is_sealed, row_ad, seal, unseal
from .keys import KeyStore, ScopeKey
from .rotation import rotate

__all__ = ["PREFIX", "SEALED_META", "KeyStore", "ScopeKey", "Sealer", "is_sealed"]

SEALED_META = ("abstraction", "content_hash")
"""Metadata that carries (or fingerprints) card text: sealed with the card, in ``sealed``.
Every other label stays in clear: the store filters on them (source, topic, trust, ...)."""


class Sealer:
    """Seal and open one data directory's cards; ``keys`` is its :class:`KeyStore`."""

    def __init__(self, root: Path) -> None:
        self.keys = KeyStore(root)

    def seal(self, namespace: str, scope: str, entries: Sequence[tuple[str, str, dict[str, Any]]]
             ) -> tuple[ScopeKey, list[tuple[str, dict[str, Any]]]]:
        """``(card id, text, metadata)`` of new cards -> the scope key and, per card, its sealed
        text and metadata. The keys are durable before this returns."""
        scope_key, dks = self.keys.new_cards(namespace, scope, [e[0] for e in entries])
        out = []
        for cid, text, meta in entries:
            dk = dks[cid]
            clear = {k: v for k, v in meta.items() if k not in SEALED_META}
            hidden = {k: meta[k] for k in SEALED_META if meta.get(k) is not None}
            if hidden:
                clear["sealed"] = seal(dk, json.dumps(hidden, sort_keys=True),
                                       row_ad(namespace, scope, cid, "meta"))
            out.append((seal(dk, text, row_ad(namespace, scope, cid, "content")), clear))
        return scope_key, out

    def rotate(self, scope_key: ScopeKey, vectors: np.ndarray) -> np.ndarray:
        return rotate(scope_key.key, vectors, scope_key.draw)

    def query(self, namespace: str, scope: str, vector: np.ndarray) -> np.ndarray:
        """A query vector as this scope's stored vectors are turned (as is: no sealed card)."""
        key = self.keys.scope_key(namespace, scope)
        return vector if key is None else rotate(key.key, vector[None, :], key.draw)[0]

    def open_rows(self, namespace: str, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """The rows the store returned, opened in place; a sealed row whose key is gone (a
        forgotten card) is left out. ``SealKeysLostError`` when the key store itself is gone."""
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
            text = unseal(dk, str(body), row_ad(namespace, scope, cid, "content"))
            if text is None:
                continue  # bound to another row (copied or altered): not this card's text
            meta = row.get("metadata") or {}
            meta = dict(json.loads(meta) if isinstance(meta, str | bytes) else meta)
            hidden = meta.pop("sealed", None)
            if hidden is not None:
                opened = unseal(dk, hidden, row_ad(namespace, scope, cid, "meta"))
                if opened is None:
                    continue
                meta.update(json.loads(opened))
            out.append({**row, "memory": text, "content": text, "metadata": meta})
        return out

    def forget(self, namespace: str, scope: str, card_ids: Sequence[str]) -> int:
        return self.keys.forget_cards(namespace, scope, card_ids)

    def forget_scope(self, namespace: str, scope: str) -> bool:
        return self.keys.forget_scope(namespace, scope)

    def forget_namespace(self, namespace: str) -> int:
        return self.keys.forget_namespace(namespace)


def _text(row: dict[str, Any]) -> object:
    """A row's text: PowerMem names it ``memory`` in searches and lists, ``content`` in get."""
    return row["memory"] if row.get("memory") is not None else row.get("content")
