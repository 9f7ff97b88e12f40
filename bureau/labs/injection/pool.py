"""The lab's cases and its baseline: larger cases, and a shared pool ranked by relevance.

**Larger cases.** A shipped scenario has about ten cards, so a top-5 over "every card of the
case" is half the case, and a baseline that hands the model every card is certain to leak. Each
lab case is its scenario plus :data:`FILLER_CARDS` filler cards (items of the shipped MAGPIE and
AgentSocialBench minis, dealt round robin to the roles), so a case holds 50 cards or more and a
relevance-ranked pool is not the whole case.

**The shared pool** (the naive baseline): what an agent framework with one memory for every
agent does: one pool of every card of the case (every role's, the board, a run's fetched page),
ranked by relevance alone, the top ``k`` at the bureau's own relevance threshold; a text stored
twice (a card and its board copy) is one entry. It has no trust tiers, so a fetched page is an
ordinary card there. It is the leak lab's policy a (top-k in all) with the attacker's own cards
in the pool, scored by the same MiniLM vectors (cosine, the score seekdb reports).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from ...model import MemoryCard
from ...resources import shipped_path
from ...scenario import Scenario, load_scenario, parse_scenario
from ...text import MAX_CARD_CHARS
from ...tiers import LONG_TERM, TRUSTED

if TYPE_CHECKING:
    from ...service import Bureau, Case

FILLER_CARDS = 45
"""Filler cards added to each lab case: a shipped scenario has 5 to 11 cards, so every lab case
holds 50 or more."""
FILLER_KEY = "filler"
FILLER_TOPIC = "filler"


@lru_cache(maxsize=1)
def filler_texts() -> tuple[str, ...]:
    """The filler: every distinct item text of the shipped MAGPIE and AgentSocialBench minis."""
    from ..poisoning.corpus import benchmark_texts

    out: dict[str, None] = {}
    for mini in ("magpie_mini", "agentsocialbench_mini"):
        items, _ = benchmark_texts(shipped_path("data", mini))
        for text, _sid in items:
            text = " ".join(text.split())[:MAX_CARD_CHARS]
            if text:
                out[text] = None
    return tuple(out)


def padded_scenario(scenario_id: str, filler: int = FILLER_CARDS) -> Scenario:
    """``scenario_id`` with ``filler`` filler cards dealt round robin to its roles (keys
    ``filler000``...; a topic no question has, so the lab's targets stay the scenario's)."""
    base = load_scenario(scenario_id)
    if filler <= 0:
        return base
    texts = filler_texts()
    data = base.to_dict()
    memories = {role: list(mems) for role, mems in data.get("memories", {}).items()}
    roles = list(memories) or [r.name for r in base.roles]
    for n in range(filler):
        memories.setdefault(roles[n % len(roles)], []).append({
            "key": f"{FILLER_KEY}{n:03d}", "topic": FILLER_TOPIC, "kind": "note",
            "content": texts[n % len(texts)]})
    return parse_scenario({**data, "memories": memories})


def plain(card: MemoryCard) -> MemoryCard:
    """The card as a memory without tiers holds it: ordinary, trusted, no tool source."""
    return replace(card, tier=LONG_TERM, provenance="whisper", trust=TRUSTED, tool_source=None)


def shared_pool(bureau: Bureau, case: Case, question: str, k: int | None = None,
                threshold: float | None = None) -> list[MemoryCard]:
    """The top ``k`` (default: the bureau's search limit) of every card of the case at the
    relevance ``threshold`` (default: the bureau's), best first, each with its score."""
    settings = bureau.settings
    k = settings.search_limit if k is None else k
    threshold = settings.relevance_threshold if threshold is None else threshold
    seen: dict[str, MemoryCard] = {}
    for cards in case.spaces().values():
        for c in cards:
            seen.setdefault(c.content, c)
    pool = list(seen.values())
    if not pool:
        return []
    return ranked(bureau, question, pool, k, threshold)


def ranked(bureau: Bureau, question: str, pool: Sequence[MemoryCard], k: int,
           threshold: float) -> list[MemoryCard]:
    """``pool`` ranked by cosine to ``question`` (the query vector is never cached: the cache
    is shared by every case), the top ``k`` at ``threshold``, made :func:`plain`."""
    enc = bureau.encoder
    vectors = np.asarray(enc.embed([c.content for c in pool]), dtype=np.float64)
    query = np.asarray(enc.embed([question], cache=False), dtype=np.float64)[0]
    norms = np.linalg.norm(vectors, axis=1) * (np.linalg.norm(query) or 1.0)
    scores = (vectors @ query) / np.where(norms == 0, 1.0, norms)
    order = sorted(range(len(pool)), key=lambda i: -scores[i])
    return [plain(pool[i]).with_score(round(float(scores[i]), 6)) for i in order
            if scores[i] >= threshold][:k]


__all__ = ["FILLER_CARDS", "filler_texts", "padded_scenario", "plain", "ranked", "shared_pool"]
