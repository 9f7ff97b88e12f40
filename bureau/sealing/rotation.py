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

Two ways of drawing ``Q`` from a key, both Haar-distributed (uniform over all rotations and
reflections), named in the scope's key file so a scope keeps the draw its vectors were turned
with (:data:`DRAWS`):

* ``1`` (``qr``): the QR factorisation of a Gaussian matrix, signs fixed so the draw is unique
  (~11 ms at 384 dimensions: the QR's own Householder factorisation and then forming ``Q``);
* ``2`` (``householder``, every new scope): the same reflections drawn directly. Householder QR
  of a Gaussian matrix meets, at step ``k``, a column that is again a fresh Gaussian vector in
  ``n - k + 1`` dimensions (the Gaussian is rotation-invariant), so drawing those vectors
  straight from the key gives the same distribution without factorising anything (Stewart 1980;
  Mezzadri 2007); LAPACK's ``dorgqr`` forms ``Q`` from them. ~4.2 ms a draw: the sealed leak lab
  draws one per written scope, ~2,000, and the draw was most of what sealing cost it (issue 31
  §4). ``tests/test_sealing.py`` checks its moments against Haar's and against draw 1.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable
from functools import lru_cache

import numpy as np
from scipy.linalg import lapack
from threadpoolctl import ThreadpoolController

_DRAWING = threading.Lock()
"""One draw at a time: the BLAS thread limit is the process's, and two draws lifting and
restoring it side by side could leave it at one thread for good."""


def _after_fork() -> None:  # a fork during another thread's draw must not leave it held
    global _DRAWING
    _DRAWING = threading.Lock()


os.register_at_fork(after_in_child=_after_fork)


@lru_cache(maxsize=1)
def _blas() -> ThreadpoolController:
    return ThreadpoolController()


def _by_qr(rng: np.random.Generator, dims: int) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal((dims, dims)))
    q *= np.sign(np.diag(r))
    return q


@lru_cache(maxsize=4)
def _upper(dims: int) -> np.ndarray:
    mask = np.triu(np.ones((dims, dims), dtype=bool))
    mask.setflags(write=False)
    return mask


def _by_householder(rng: np.random.Generator, dims: int) -> np.ndarray:
    # Column k holds x_k ~ N(0, I) in rows k..n-1: the vector step k of a Householder QR meets.
    # Filled column by column, rows k.. of column k in turn (the draw's order, fixed for good:
    # a scope's rotation is redrawn from its key). ``a.T`` is ``a``'s memory in C order, so a
    # boolean mask walks exactly that order: ~0.8 ms, where indexing by the (row, column)
    # pairs took ~2 ms of the ~6 ms draw.
    a = np.zeros((dims, dims), order="F")
    a.T[_upper(dims)] = rng.standard_normal(dims * (dims + 1) // 2)
    alpha = a.diagonal().copy()
    # The reflection taking x_k to beta_k e_1 (LAPACK's dlarfg, vectorised over k): v_k is x_k
    # scaled so its first entry is 1 (dorgqr reads only below the diagonal), tau_k = 2/|v_k|^2.
    beta = -np.copysign(np.sqrt(np.einsum("ij,ij->j", a, a)), alpha)
    tau = (beta - alpha) / beta
    a /= alpha - beta
    q, _, info = lapack.dorgqr(a, tau)
    if info != 0:  # pragma: no cover - LAPACK refuses only malformed arguments
        raise RuntimeError(f"dorgqr failed (info={info})")
    q *= np.sign(beta)  # R's diagonal made positive: the draw is unique, as with draw 1
    return q


DRAWS: dict[int, Callable[[np.random.Generator, int], np.ndarray]] = {
    1: _by_qr, 2: _by_householder}
"""Draw number (as a scope's key file names it) -> how its rotation is drawn."""
CURRENT_DRAW = 2
"""The draw of every new scope; a key file that names none is from before draws were named
(draw 1)."""


@lru_cache(maxsize=256)
def rotation(scope_key: bytes, dims: int, draw: int) -> np.ndarray:
    """The ``dims`` x ``dims`` orthogonal matrix of one scope key (Haar-distributed; ``draw``:
    which construction, see the module's docstring).

    The draw runs on one BLAS thread: inside the bureau's process OpenBLAS's second thread
    contends with the encoder's and the store's, and a QR took ~97 ms instead of ~9 ms. One
    thread also makes the draw the same whatever the machine's core count."""
    make = DRAWS.get(draw)
    if make is None:
        raise ValueError(f"unknown rotation draw {draw!r} (known: {sorted(DRAWS)})")
    seed = hashlib.sha256(b"bureau-seal-rotation\x1f" + scope_key).digest()
    rng = np.random.default_rng(int.from_bytes(seed, "big"))
    with _DRAWING, _blas().limit(limits=1, user_api="blas"):
        q = make(rng, dims)
    q.setflags(write=False)
    return q


@lru_cache(maxsize=256)
def _rotation32(scope_key: bytes, dims: int, draw: int) -> np.ndarray:
    q = rotation(scope_key, dims, draw).astype(np.float32)
    q.setflags(write=False)
    return q


def rotate(scope_key: bytes, vectors: np.ndarray, draw: int) -> np.ndarray:
    """Rows of ``vectors`` turned by the scope's rotation (float32, as the store keeps them).

    ``draw`` has no default on purpose: it is the scope's (its key file names it), and a caller
    who forgot it would turn a draw-1 scope's query with another matrix and every cosine with it."""
    if len(vectors) <= 8:
        # A query (or a card or two): einsum's own loop over the float32 matrix, ~0.04 ms
        # (0.14 ms in float64, a sealed interrogation's main extra cost: issue 31 §4; a cosine
        # moves by ~5e-8 either way, the float32 storage's own rounding). Through BLAS the same
        # product took ~14 ms inside the bureau's process (its threads wake beside
        # onnxruntime's; measured in the interrogation profile), a sixth of an interrogation.
        v32 = np.asarray(vectors, dtype=np.float32)
        return np.einsum("ij,kj->ki", _rotation32(scope_key, v32.shape[-1], draw), v32)
    v = np.asarray(vectors, dtype=np.float64)
    return (v @ rotation(scope_key, v.shape[-1], draw).T).astype(np.float32)
