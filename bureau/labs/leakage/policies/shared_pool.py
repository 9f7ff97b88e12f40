"""Policy a, the shared pool, in numpy: one memory for every agent, ranked by exact cosine.

``a_shared_pool_with_own`` ranks every agent's items and drops the requester's own from its top-k
afterwards; ``a_shared_pool_others`` ranks only the other agents' items. Ties keep file order, so
the figures do not depend on numpy's sort.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from bureau.labs.leakage.datasets.labset import LabScenario
from bureau.labs.leakage.policies.policies import SHARED_POOL, SHARED_POOL_WITH_OWN
from bureau.labs.leakage.result import Timings

QUERY_SCORES = {"own_job": "score", "task": "score_task", "role_task": "score_role_task"}
"""The query variants each requester asks with, and the score column each one fills."""


def shared_pool(
    scenario: LabScenario,
    vec: dict[str, np.ndarray],
    k: int,
    rows: list[tuple[Any, ...]],
    t: Timings,
) -> list[tuple[Any, ...]]:
    """Policy a, both pools: exact cosine top-k in numpy.

    ``a_shared_pool_with_own`` ranks every agent's items and drops the requester's own from its
    top-k afterwards (own items are not leaks, but they took slots); ``a_shared_pool_others``
    ranks only the other agents' items. Appends the returned items to ``rows``; returns, per
    (requester, other agent's item) pair, the cosine under each query variant, the item's rank
    in each pool and each pool's size (:data:`SCORE_COLUMNS`), so any other k -- and the random
    baseline -- can be read off.
    """
    t0 = time.perf_counter()
    scores = []
    items = list(scenario.items)
    item_vecs = np.stack([vec[i.text] for i in items])
    owners = np.array([i.owner for i in items])
    for agent in scenario.agents:
        cos = {name: item_vecs @ vec[agent.variant(name)] for name in QUERY_SCORES}
        asked = cos["own_job"]
        others = np.flatnonzero(owners != agent.name)
        rank_all, rank_others = pool_ranks(asked, owners == agent.name)
        for j in others:
            scores.append(
                (scenario.scenario_id, agent.name, items[j].item_id, float(asked[j]),
                 float(cos["task"][j]), float(cos["role_task"][j]), int(rank_all[j]),
                 int(rank_others[j]), len(items), len(others))
            )
        for policy, ranked, pool in ((SHARED_POOL_WITH_OWN, rank_all, np.arange(len(items))),
                                     (SHARED_POOL, rank_others, others)):
            for j in sorted((j for j in pool if ranked[j] <= k), key=lambda j: ranked[j]):
                item = items[j]
                rows.append(
                    (policy, scenario.scenario_id, agent.name, "pool", int(ranked[j]),
                     item.item_id, item.owner, item.label, None, item.item_id, "item",
                     item.owner, item.label, float(asked[j]), float(asked[j]), item.text)
                )
    t.shared_pool += time.perf_counter() - t0
    return scores


def pool_ranks(scores: np.ndarray, own: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each item's 1-based rank in the two shared pools of one requester.

    ``scores``: relevance of every item of the scenario; ``own``: which are the requester's.
    Returns (rank among all items -- the with-own pool, whose top-k may spend slots on own
    items; rank among the other agents' items -- 0 for own items, which that pool lacks).
    """
    own = np.asarray(own, dtype=bool)
    rank_all = ranks(scores)
    rank_others = np.zeros(len(scores), dtype=int)
    rank_others[~own] = ranks(scores[~own])
    return rank_all, rank_others


def ranks(scores: np.ndarray) -> np.ndarray:
    """1-based rank of each score, best first; ties keep file order (as :func:`topk`)."""
    out = np.empty(len(scores), dtype=int)
    out[topk(scores, len(scores))] = np.arange(1, len(scores) + 1)
    return out


def topk(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k highest scores, best first; ties keep file order."""
    return np.argsort(-scores, kind="stable")[:k]


__all__ = ["QUERY_SCORES", "pool_ranks", "ranks", "shared_pool", "topk"]
