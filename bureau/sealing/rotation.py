"""Retired (issue 51): the per-scope rotation stores written before issue 51 turned their
vectors by, kept only so that their migration can turn each vector back
(:mod:`bureau.storage.seal_migration`).

What it was: an orthogonal matrix ``Q`` drawn from the scope key turned every stored vector
``v`` into ``Q v`` and each query the same way, so every cosine, hence every top-k, was kept. That
was also its flaw: every cosine *within* a scope was kept on disk, so one known text in the scope
(a public seed card) named every other card by its cosine to it, and two rows' candidate texts
confirmed each other by their mutual cosine, forgotten cards in the redo log included (measured
97-100 % among 50 candidates). Vectors are now sealed per card (:mod:`.vectors`).

Two ways of drawing ``Q`` from a key, both Haar-distributed, named in a v1 scope file (none:
draw 1), and both must give the very matrix they gave when the vectors were turned
(``tests/test_sealing.py`` pins entries of each):

* ``1`` (``qr``): the QR factorisation of a Gaussian matrix, signs fixed so the draw is unique;
* ``2`` (``householder``): the Householder reflections such a QR would meet, drawn directly
  (Stewart 1980; Mezzadri 2007), and LAPACK's ``dorgqr`` forming ``Q`` from them.
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
"""Draw number (as a v1 scope file names it) -> how its rotation is drawn."""


@lru_cache(maxsize=256)
def rotation(scope_key: bytes, dims: int, draw: int) -> np.ndarray:
    """The ``dims`` x ``dims`` orthogonal matrix of one scope key (``draw``: which
    construction). It runs on one BLAS thread: inside the bureau's process OpenBLAS's second
    thread contended with the encoder's (a QR took ~97 ms instead of ~9 ms), and one thread
    makes the draw the same whatever the machine's core count."""
    make = DRAWS.get(draw)
    if make is None:
        raise ValueError(f"unknown rotation draw {draw!r} (known: {sorted(DRAWS)})")
    seed = hashlib.sha256(b"bureau-seal-rotation\x1f" + scope_key).digest()
    rng = np.random.default_rng(int.from_bytes(seed, "big"))
    with _DRAWING, _blas().limit(limits=1, user_api="blas"):
        q = make(rng, dims)
    q.setflags(write=False)
    return q


def turn_back(scope_key: bytes, draw: int, stored: np.ndarray) -> np.ndarray:
    """Rows a v1 scope stored (each ``Q v``) turned back to ``v`` (float32): the migration's
    one use of the rotation. ``draw`` is the scope file's; a wrong one gives noise."""
    v = np.asarray(stored, dtype=np.float64)
    return (v @ rotation(scope_key, v.shape[-1], draw)).astype(np.float32)
