"""Scope index: each (case, role) scope's vectors as one in-process float32 matrix, searched
exactly, kept in step with the store by a per-scope write version.

Why: the store never refreshes seekdb's vector index (a refresh costs 10-14 s an upsert,
:mod:`.setup`), so every search inside seekdb scans the scope row by row, in SQL: 123 ms at
50,000 cards where embedding the question and a numpy scan of the same vectors take about 11 ms
(issue 36). Here a search scans the scope's matrix (one matrix-vector product), keeps every card
that could be in the exact top-k (:meth:`ScopeMatrix.candidates`), and asks seekdb for just those
rows, with seekdb's own ``cosine_distance`` and the exact order ``(distance, id)``: the cards,
their scores and their order are exactly what seekdb's exact search of the whole scope returns
(``MemoryGateway.search_scopes_exact``; tests/test_scope_index.py compares them on random stores).

Staying in step, also with other processes: every gateway write to a scope bumps the scope's
row in the store's versions table (:func:`.schema.versions_table`) after the write; the search's
one statement reads the versions of its scopes beside the candidate rows, and a matrix whose
version is not the store's is dropped and rebuilt (a write of this process updates its matrix
in place and counts it one version on; had another writer come between, the store's version is
further on, and the next search sees it).

Sealed scopes (issue 51): the store holds no usable vector of a sealed card (its vector is
sealed under the card's own key; the vector column is noise), so the matrix is built by opening
each card's vector, and the search itself runs here: :meth:`ScopeMatrix.top` gives the exact
top-k by (distance, id), the distances computed in float64 from the float32 vectors (within
~1e-7 of seekdb's own ``cosine_distance`` of the same vectors, measured), and seekdb reads back
only the rows named. A forgotten card has no key and so never enters a matrix.

Timing (issue 9): a scope's matrix is built on its first search and then only changed by writes
to that scope; nothing is ever evicted to make room for another scope, so a role's search time
depends on its own scopes' sizes only. Memory: the matrices hold the vectors, one id and one
norm per card, and room to grow of at most ``Settings.scope_cache`` (1.5) times the raw
vectors of the scopes held (:meth:`ScopeIndex.footprint`). No card text is held here: the text
comes from the store with each answer.

Forgetting: :meth:`ScopeIndex.forget` (a scope, or a whole case namespace) and
:meth:`ScopeIndex.drop` (card ids) are the one way to take vectors out of the cache; the gateway
calls them on every delete and purge, and anything that removes or re-keys a scope's stored
vectors must call them too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

BAND = 2e-4
"""How far past the k-th nearest matrix distance a card may lie and still be sent to seekdb.

A card's matrix distance differs from seekdb's by at most ε: the vectors read back from the
store are printed with 6 significant digits (≤ 5e-6 of a cosine), and float32 accumulation over
384 products is bounded by 384 · 2⁻²⁴ ≈ 2.3e-5 (the bound, not the typical 1e-7); ε = 1e-4
covers both with room. Every card of seekdb's exact top-k then lies within 2ε of the matrix's
k-th distance (its seekdb distance is at most the k-th, which is at most the matrix's k-th + ε),
so sending everything within BAND = 2ε loses none of them."""
MAX_CANDIDATES = 512
"""More candidates than this within the band (near-duplicates by the hundred): the scope is
searched by seekdb's exact scan instead, for that one search."""


@dataclass(eq=False)
class ScopeMatrix:
    """One scope's vectors: rows ``[:n]`` of ``vecs``, ids in ``ids``, 1/|v| in ``inv``;
    ``sealed``: it holds sealed cards' vectors, so the scope is searched here (:meth:`top`)."""

    dims: int
    version: int
    growth: float
    sealed: bool = False
    clear: set[int] = field(default_factory=set)
    """In a sealed matrix, the ids of cards written unsealed (no key to check before they are
    named: :meth:`bureau.storage.scope_search.ScopeSearch._sealed_top`)."""
    ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    vecs: np.ndarray | None = None
    inv: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    n: int = 0

    def __post_init__(self) -> None:
        if self.vecs is None:
            self.vecs = np.zeros((0, self.dims), np.float32)

    @property
    def nbytes(self) -> int:
        return int(self.ids.nbytes + self.vecs.nbytes + self.inv.nbytes)

    def reserve(self, needed: int) -> None:
        """Room for ``needed`` rows: grown by ``growth`` (so appends are amortised), never
        beyond what the memory bound allows."""
        if needed <= len(self.ids):
            return
        cap = max(needed, int(self.n * self.growth))
        ids = np.zeros(cap, np.int64)
        vecs = np.zeros((cap, self.dims), np.float32)
        inv = np.zeros(cap, np.float32)
        ids[: self.n], vecs[: self.n], inv[: self.n] = (
            self.ids[: self.n], self.vecs[: self.n], self.inv[: self.n])
        self.ids, self.vecs, self.inv = ids, vecs, inv

    def append(self, ids: Iterable[int], vectors: np.ndarray) -> None:
        ids = np.fromiter(ids, np.int64)
        vectors = np.asarray(vectors, np.float32).reshape(len(ids), self.dims)
        self.reserve(self.n + len(ids))
        end = self.n + len(ids)
        self.ids[self.n : end] = ids
        self.vecs[self.n : end] = vectors
        norms = np.linalg.norm(vectors.astype(np.float64), axis=1)
        self.inv[self.n : end] = np.where(norms > 0, 1.0 / np.maximum(norms, 1e-30), 0.0)
        self.n = end

    def drop(self, ids: Iterable[int]) -> int:
        """Remove these ids (the last rows move into the gaps); returns how many were held."""
        gone = np.isin(self.ids[: self.n], np.fromiter(ids, np.int64))
        keep = np.flatnonzero(~gone)
        dropped = self.n - len(keep)
        if dropped:
            m = len(keep)
            self.ids[:m], self.vecs[:m], self.inv[:m] = (
                self.ids[keep], self.vecs[keep], self.inv[keep])
            self.n = m
            if len(self.ids) > int(m * self.growth):  # never hold more room than the bound
                cap = int(m * self.growth)
                self.ids, self.vecs, self.inv = (
                    self.ids[:cap].copy(), self.vecs[:cap].copy(), self.inv[:cap].copy())
        return dropped

    def _within(self, query: np.ndarray, k: int) -> np.ndarray | None:
        """Rows (indices) of every card that may be in the exact top-k: all within
        :data:`BAND` of the k-th float32 matrix distance. None for a zero query."""
        q = np.asarray(query, np.float32)
        qn = float(np.linalg.norm(q.astype(np.float64)))
        if qn == 0:
            return None
        if self.n <= k:
            return np.arange(self.n)
        dist = 1.0 - (self.vecs[: self.n] @ q) * self.inv[: self.n] * np.float32(1.0 / qn)
        kth = float(np.partition(dist, k - 1)[k - 1])
        return np.flatnonzero(dist <= kth + BAND)

    def candidates(self, query: np.ndarray, k: int) -> list[int] | None:
        """Ids of every card that may be in the exact top-k (all within :data:`BAND` of the
        k-th matrix distance); None when more than :data:`MAX_CANDIDATES` are."""
        if self.n == 0 or k <= 0:
            return []
        within = self._within(query, k)
        if within is None:
            return None  # seekdb decides what a zero query means
        if len(within) > MAX_CANDIDATES:
            return None
        return self.ids[within].tolist()

    def top(self, query: np.ndarray, k: int) -> tuple[list[int], list[float]]:
        """The exact top-k of the scope: ids and cosine distances, ordered by (distance, id),
        as seekdb's exact scan orders them. The float32 pass narrows the rows
        (:meth:`_within`); their distances are then computed again in float64. A zero query
        (no direction) puts every card at distance 1, in id order."""
        if self.n == 0 or k <= 0:
            return [], []
        within = self._within(query, k)
        q = np.asarray(query, np.float32).astype(np.float64)
        if within is None:
            rows = np.arange(self.n)
            dist = np.ones(self.n)
        else:
            rows = within
            v = self.vecs[rows].astype(np.float64)
            norms = np.linalg.norm(v, axis=1) * np.linalg.norm(q)
            dist = 1.0 - (v @ q) / np.where(norms > 0, norms, np.inf)
        ids = self.ids[rows]
        order = np.lexsort((ids, dist))[:k]
        return ids[order].tolist(), dist[order].tolist()


class ScopeIndex:
    """This process's scope matrices, keyed by (namespace, owner)."""

    def __init__(self, dims: int, limit: float) -> None:
        self.dims = dims
        self._scopes: dict[tuple[str, str], ScopeMatrix] = {}
        self.configure(limit)

    def configure(self, limit: float) -> None:
        """A new bound (``Settings.scope_cache``; 0: off): every matrix is dropped (rebuilt
        within the new bound on its next search)."""
        self.limit = float(limit)
        # Room to grow: what is left of the bound once ids and norms (12 bytes a row) are held.
        per_row = 1.0 + 12.0 / (4.0 * self.dims)
        self.growth = max(1.0, min(1.25, self.limit / per_row))
        self._scopes.clear()

    @property
    def enabled(self) -> bool:
        return self.limit > 0

    def get(self, uid: str, owner: str) -> ScopeMatrix | None:
        return self._scopes.get((uid, owner))

    def new(self, uid: str, owner: str, version: int, expected: int = 0) -> ScopeMatrix:
        """An empty matrix for a scope (replacing any), with room for ``expected`` rows."""
        m = ScopeMatrix(self.dims, version, self.growth)
        m.reserve(expected)
        self._scopes[(uid, owner)] = m
        return m

    def forget(self, uid: str, owner: str | None = None) -> None:
        """Drop one scope's matrix, or every scope of a namespace (``owner=None``)."""
        if owner is not None:
            self._scopes.pop((uid, owner), None)
            return
        for key in [key for key in self._scopes if key[0] == uid]:
            del self._scopes[key]

    def drop(self, card_ids: Iterable[str | int]) -> int:
        """Take these cards' vectors out of every matrix that holds them."""
        ids = [int(i) for i in card_ids]
        return sum(m.drop(ids) for m in self._scopes.values()) if ids else 0

    def clear(self) -> None:
        self._scopes.clear()

    def footprint(self) -> dict[str, float]:
        """What the cache holds: scopes, cards, bytes, the raw vectors' bytes and their ratio
        (bounded by the ``scope_cache`` setting)."""
        cards = sum(m.n for m in self._scopes.values())
        held = sum(m.nbytes for m in self._scopes.values())
        raw = cards * self.dims * 4
        return {"scopes": len(self._scopes), "cards": cards, "bytes": held, "raw_bytes": raw,
                "ratio": round(held / raw, 4) if raw else 0.0, "limit": self.limit}


def parse_vectors(texts: list[str], dims: int) -> np.ndarray:
    """seekdb's text form of vectors (``[0.1,-0.2,...]``) as a float32 matrix, in one parse."""
    if not texts:
        return np.zeros((0, dims), np.float32)
    flat = np.fromstring(",".join(t.strip()[1:-1] for t in texts), dtype=np.float32, sep=",")
    if flat.size != len(texts) * dims:
        raise ValueError(f"read {flat.size} numbers for {len(texts)} vectors of {dims}")
    return flat.reshape(len(texts), dims)
