"""A scope's secret rotation of its vectors: every cosine kept, the vectors themselves useless
without the key.

The index needs vectors in clear, and a MiniLM vector is a fingerprint of its text: anyone with
the public model embeds guesses and compares (a dictionary attack). An orthogonal matrix ``Q``
drawn from the scope key turns every stored vector ``v`` into ``Q v``; the query of that scope is
turned the same way, and since ``(Q q)·(Q v) = q·v`` every cosine, hence every top-k, is what it
was (up to float32 rounding, ~1e-7). Without ``Q`` a stored vector scores like a random one
against any guess (checked by the forgetting lab's dictionary attack).

What it does not hide: the geometry *within* one scope (the cosines between its own vectors are
kept, that is the point), so someone who knows many of a scope's texts and sees its vectors could
try to align the two; and whoever holds the key store holds ``Q``.
"""

from __future__ import annotations

import hashlib
import threading
from functools import lru_cache

import numpy as np
from threadpoolctl import ThreadpoolController

_DRAWING = threading.Lock()
"""One draw at a time: the BLAS thread limit is the process's, and two draws lifting and
restoring it side by side could leave it at one thread for good."""


@lru_cache(maxsize=1)
def _blas() -> ThreadpoolController:
    return ThreadpoolController()


@lru_cache(maxsize=256)
def rotation(scope_key: bytes, dims: int) -> np.ndarray:
    """The ``dims`` x ``dims`` orthogonal matrix of one scope key (Haar-distributed: QR of a
    Gaussian matrix drawn from the key, signs fixed so the draw is unique).

    The QR runs on one BLAS thread: inside the bureau's process OpenBLAS's second thread
    contends with the encoder's and the store's, and a draw took ~97 ms instead of ~9 ms (the
    sealed leak lab draws one per new scope, ~1,550 of them: issue 31 §4). One thread also
    makes the draw the same whatever the machine's core count."""
    seed = hashlib.sha256(b"bureau-seal-rotation\x1f" + scope_key).digest()
    rng = np.random.default_rng(int.from_bytes(seed, "big"))
    with _DRAWING, _blas().limit(limits=1, user_api="blas"):
        q, r = np.linalg.qr(rng.standard_normal((dims, dims)))
    q *= np.sign(np.diag(r))
    q.setflags(write=False)
    return q


@lru_cache(maxsize=256)
def _rotation32(scope_key: bytes, dims: int) -> np.ndarray:
    q = rotation(scope_key, dims).astype(np.float32)
    q.setflags(write=False)
    return q


def rotate(scope_key: bytes, vectors: np.ndarray) -> np.ndarray:
    """Rows of ``vectors`` turned by the scope's rotation (float32, as the store keeps them)."""
    if len(vectors) <= 8:
        # A query (or a card or two): einsum's own loop over the float32 matrix, ~0.04 ms
        # (0.14 ms in float64, a sealed interrogation's main extra cost: issue 31 §4; a cosine
        # moves by ~5e-8 either way, the float32 storage's own rounding). Through BLAS the same
        # product took ~14 ms inside the bureau's process (its threads wake beside
        # onnxruntime's; measured in the interrogation profile), a sixth of an interrogation.
        v32 = np.asarray(vectors, dtype=np.float32)
        return np.einsum("ij,kj->ki", _rotation32(scope_key, v32.shape[-1]), v32)
    v = np.asarray(vectors, dtype=np.float64)
    return (v @ rotation(scope_key, v.shape[-1]).T).astype(np.float32)
