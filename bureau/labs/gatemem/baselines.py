"""What the bureau is read beside, computed exactly in numpy over the same MiniLM vectors.

* **shared pool** -- GateMem's RAG-Naive: every turn up to the checkpoint, as spoken (no
  deletion honoured, no rule), ranked by cosine with the query; the top k is what it hands its
  model (the paper's runs: ``top_k: 20``, one chunk per turn).
* **owner-only boundary** -- the bureau with no records and no grants: every turn in its
  speaker's own space, so an asker reads only what it said itself, as the bureau stored it
  (deleted values redacted, forgotten cards gone); its top k.
* **random draw** -- as many turns as the bureau handed the asker, drawn uniformly from the
  shared pool (:data:`DRAWS` seeded draws per checkpoint): what a selection that knows nothing
  of relevance or policy hands over at the same size.

Ties keep turn order (a stable sort), so a figure does not depend on numpy's sort. The replay
checks that numpy's top-k over a record equals seekdb's (:mod:`.replay`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from bureau.labs.gatemem.plan import Write

DRAWS = 20
"""Random draws per checkpoint: the random row is the mean verdict over them."""


def top_k(cards: Sequence[Write], vec: Mapping[str, np.ndarray], query: np.ndarray,
          k: int) -> list[str]:
    """The keys of the ``k`` cards most similar to ``query``, best first (ties: card order)."""
    if not cards:
        return []
    scores = np.stack([vec[w.text] for w in cards]) @ query
    return [cards[int(i)].key for i in np.argsort(-scores, kind="stable")[:k]]


def shared_pool(turns: Sequence[Write], vec: Mapping[str, np.ndarray], query: np.ndarray,
                k: int) -> list[str]:
    """RAG-Naive's top k over every turn so far (``turns``: the turns as spoken)."""
    return top_k(turns, vec, query, k)


def owner_only(live: Mapping[str, Write], asker: str, vec: Mapping[str, np.ndarray],
               query: np.ndarray, k: int) -> list[str]:
    """The owner-only boundary's top k: the live cards the asker itself said."""
    return top_k([w for w in live.values() if w.speaker == asker], vec, query, k)


def random_draws(pool: int, size: int, rng: np.random.Generator,
                 draws: int = DRAWS) -> list[list[int]]:
    """``draws`` uniform draws of ``size`` distinct indices out of ``pool`` (all of them when
    the pool is smaller)."""
    size = min(size, pool)
    return [sorted(rng.choice(pool, size=size, replace=False).tolist()) for _ in range(draws)]


__all__ = ["DRAWS", "owner_only", "random_draws", "shared_pool", "top_k"]
