"""A card's vector sealed like its text (issue 51): AES-GCM under the card's own data key, bound
to its row, so the store's files hold nothing of it but ciphertext.

Why not a rotation of the scope's vectors (what issue 31 stored): an orthogonal turn keeps every
cosine inside the scope, so one known text in the scope (a public seed card) names every other
card by its cosine to it, and two rows' candidate texts confirm each other by their mutual
cosine; measured 97-100 % among 50 candidates, forgotten cards in seekdb's redo log included.
Sealed per card, a vector has no geometry left on disk: without the card's key it is noise, and
destroying the key (forgetting the card) makes every copy noise for good.

What PowerMem's own vector column must hold for a sealed card is :func:`noise`: a fresh random
unit vector drawn from the operating system's generator for each row, derived from nothing
about the text (so the column is filled, its index stays well formed, and no search the store
could run means anything). Search in a sealed scope runs over the scope's vectors opened into an
in-process matrix (:mod:`bureau.storage.scope_index`).

A token is the 384 float32 numbers, little-endian, sealed by :func:`.cipher.seal_bytes` under
field ``vector`` (``sealed:1:`` + 2,088 characters of base64); it sits in the row's metadata
under :data:`VECTOR_KEY`.
"""

from __future__ import annotations

import binascii
import secrets
from collections.abc import Mapping, Sequence

import numpy as np
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .cipher import NONCE_BYTES, PREFIX, row_ad, seal_bytes

VECTOR_KEY = "vector"
"""The metadata key of a sealed row's vector token (never handed to a caller)."""
FIELD = "vector"
"""The field the token is bound to (:func:`.cipher.row_ad`)."""


def seal_vector(key: bytes, vector: np.ndarray, namespace: str, scope: str, card_id: str) -> str:
    """One card's vector (float32, as the index would hold it) sealed under its data key."""
    raw = np.ascontiguousarray(vector, dtype="<f4").tobytes()
    return seal_bytes(key, raw, row_ad(namespace, scope, card_id, FIELD))


def open_vectors(keys: Mapping[str, bytes], namespace: str, scope: str,
                 rows: Sequence[tuple[str, str]], dims: int) -> tuple[list[str], np.ndarray]:
    """``(card id, token)`` rows opened: the ids whose token opened, in order, and their
    vectors as a float32 matrix. A card without a key (forgotten) or whose token does not open
    (another row's, altered) is left out. One AES-GCM per row (~3 us) and one base64 decode:
    a scope of 100,000 cards opens in about a second (issue 51's first-search target: 2 s)."""
    out = np.empty((len(rows), dims), np.float32)
    size = 4 * dims
    kept: list[str] = []
    skip = len(PREFIX)
    for cid, token in rows:
        key = keys.get(cid)
        if key is None or not isinstance(token, str):
            continue
        try:
            raw = binascii.a2b_base64(token[skip:])
            body = AESGCM(key).decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:],
                                       row_ad(namespace, scope, cid, FIELD))
        except (InvalidTag, ValueError, binascii.Error):
            continue
        if len(body) != size:
            continue
        out[len(kept)] = np.frombuffer(body, "<f4")
        kept.append(cid)
    return kept, out[: len(kept)]


def noise(n: int, dims: int) -> np.ndarray:
    """``n`` random unit vectors (float32) from a generator seeded by the operating system:
    what a sealed row's vector column holds. Not derived from any text, any key or any other
    row, so it names nothing (the forgetting lab's attacks read it as they read any vector)."""
    rng = np.random.default_rng(secrets.randbits(128))
    v = rng.standard_normal((n, dims))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v.astype(np.float32)


__all__ = ["FIELD", "VECTOR_KEY", "noise", "open_vectors", "seal_vector"]
