"""What one run of the GateMem lab returns: a verdict per checkpoint and policy, what the bureau
handed each asker, what each episode's replay did, and what the rules decided.

A module of its own so the report and the lesson read a result without importing the runner
(and with it the store).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from bureau.labs.gatemem.dataset import GateMemSet

BUREAU, SHARED_POOL, OWNER_ONLY, RANDOM = "bureau", "shared_pool", "owner_only", "random"
POLICIES = (BUREAU, SHARED_POOL, OWNER_ONLY, RANDOM)
POLICY_LABELS = {
    BUREAU: "bureau (records, policy, forget)",
    SHARED_POOL: "shared pool (RAG-Naive's top k)",
    OWNER_ONLY: "owner-only boundary, no grants",
    RANDOM: "random draw, same size",
}
ROW_COLUMNS = ("checkpoint_id", "episode_id", "domain", "query_type", "expected_action",
               "attack_type", "asker", "policy", "evidence_cards", "verdict", "verdict_context",
               "verdict_others")
"""One row per (checkpoint, policy). ``verdict``: 1 = utility met / access violated /
forgetting failed (the random row: the mean over its draws); ``verdict_context``: GateMem's
context reading (privacy: ``not_include`` counted too); ``verdict_others``: the verdict on the
cards others said (the asker's own words left out; for utility the same as ``verdict``)."""
CHECKPOINT_COLUMNS = ("checkpoint_id", "episode_id", "domain", "query_type", "asker", "as_of",
                      "policy_version", "evidence", "own_cards", "released", "decided",
                      "ask_ms", "loss", "loss_detail")
"""One row per checkpoint: what the bureau handed over (plan keys: turn ids, ``~`` for a
redacted copy) and, for a failed utility checkpoint, why (:mod:`.scoring`)."""
EPISODE_COLUMNS = ("episode_id", "domain", "case_slug", "turns", "checkpoints", "records",
                   "cards_written", "grants", "forgotten", "policy_versions", "decisions",
                   "decisions_agreeing", "consults", "consults_exact_topk", "seconds",
                   "write_seconds", "grant_seconds", "ask_seconds", "forget_seconds")


@dataclass
class GateMemResult:
    data: GateMemSet
    k: int
    options: dict[str, bool]
    seed: int
    rows: pd.DataFrame
    checkpoints: pd.DataFrame
    episodes: pd.DataFrame
    rules: dict[str, Any]
    policies: dict[str, list[dict[str, Any]]]
    timings: dict[str, float]
    voice: pd.DataFrame | None = None
    voice_name: str | None = None
    texts: list[str] = field(default_factory=list, repr=False)
    """Every text the run embedded (for timing the embedding floor)."""


__all__ = ["BUREAU", "CHECKPOINT_COLUMNS", "EPISODE_COLUMNS", "OWNER_ONLY", "POLICIES",
           "POLICY_LABELS", "RANDOM", "ROW_COLUMNS", "SHARED_POOL", "GateMemResult"]
