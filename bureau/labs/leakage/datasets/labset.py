"""What the lab runner takes: benchmark scenarios already converted into Bureau terms.

The runner (:mod:`bureau.labs.leakage.runner`) only needs cases, roles, labelled cards and one query
per requester; it should not know any benchmark's file format. So a benchmark enters the lab
through a converter that produces a :class:`LabSet` (:mod:`bureau.labs.leakage.datasets.convert` does it for
MAGPIE), and a second benchmark needs a second converter, not a second runner.

Names: ``owner`` and :attr:`LabAgent.name` are the benchmark's own agent names, because every
table the lab writes (pairs, retrievals, per-item) names requesters and owners that way;
:attr:`LabAgent.role` is the Bureau role the agent acts as inside its case.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from bureau.scenario import Scenario

Label = Literal["shareable", "private"]

ITEM_COLUMNS = ("item_id", "scenario_id", "domain", "agent", "label", "text", "abstraction")
"""Columns of :meth:`LabSet.to_frame`; ``agent`` is the owner, as in ``MagpieDataset.to_frame``
(:func:`bureau.labs.leakage.metrics.metrics.exposure_frame` reads either)."""


@dataclass(frozen=True)
class LabItem:
    """One labelled memory: a private card of its owner in the case, the unit a policy may leak."""

    item_id: str
    scenario_id: str
    domain: str
    owner: str
    label: Label
    text: str
    seed_key: str
    """The key of the item's seed memory in :attr:`LabScenario.scenario`: how a card the case
    created is mapped back to its item (by id, never by content)."""
    abstraction: str | None = None
    """A safe text the owner may publish instead of a private item (policy d), if it has one."""


@dataclass(frozen=True)
class LabAgent:
    """A requester: an agent of the scenario, its Bureau role and the one query it asks."""

    name: str
    role: str
    query: str
    query_cut: bool = False
    """The converter shortened the query to fit the Bureau's question limit (the report says how
    many were)."""
    variants: Mapping[str, str] = field(default_factory=dict)
    """Other queries scored in numpy only (relevance AUROC), by name: ``task`` (the scenario task
    alone, the MaaS setting) and ``role_task`` (``role: task``). Missing names fall back to
    :attr:`query`, so a hand-made lab set needs none."""

    def variant(self, name: str) -> str:
        """The query called ``name`` (``own_job`` is :attr:`query`, the one asked everywhere)."""
        return self.query if name == "own_job" else self.variants.get(name, self.query)


@dataclass(frozen=True)
class LabScenario:
    """One benchmark scenario as one Bureau case: roles, one seed memory per item, the queries."""

    scenario_id: str
    domain: str
    scenario: Scenario
    """What ``Bureau.create_case`` receives; holds a seed memory for every item."""
    agents: tuple[LabAgent, ...]
    items: tuple[LabItem, ...]
    case_stem: str
    """Case ids are ``<case_stem>-<random>``, so a rerun never reuses a live case."""

    def role_of(self, owner: str) -> str:
        """The Bureau role of the agent called ``owner``."""
        for agent in self.agents:
            if agent.name == owner:
                return agent.role
        raise KeyError(f"{self.scenario_id}: no agent {owner!r}")


@dataclass(frozen=True)
class LabSet:
    """A converted benchmark (or a subset of one): everything a lab run and its report read."""

    name: str
    scenarios: tuple[LabScenario, ...]
    counts: Mapping[str, int]
    """The benchmark's headline sizes as its loader counts them (e.g. ``MagpieDataset.counts``):
    the report states these, so every count in its prose comes from the data."""
    source: Path | None = None
    source_scenarios: int | None = None
    """Scenarios in the source when this set is a subset of it (``None``: the whole source)."""
    dataset: Any = field(default=None, compare=False, repr=False)
    """The benchmark's own object, for callers that want it in its own terms."""

    def __len__(self) -> int:
        return len(self.scenarios)

    @property
    def items(self) -> tuple[LabItem, ...]:
        """Every item, scenario by scenario, in each scenario's item order."""
        return tuple(i for s in self.scenarios for i in s.items)

    @property
    def is_subset(self) -> bool:
        return self.source_scenarios is not None and self.source_scenarios > len(self.scenarios)

    def to_frame(self) -> pd.DataFrame:
        """One row per item (:data:`ITEM_COLUMNS`)."""
        rows = [
            (i.item_id, i.scenario_id, i.domain, i.owner, i.label, i.text, i.abstraction)
            for i in self.items
        ]
        return pd.DataFrame(rows, columns=list(ITEM_COLUMNS))

    def requester_frame(self) -> pd.DataFrame:
        """One row per (scenario, agent): every agent asks, even one that owns no item."""
        rows = [(s.scenario_id, a.name) for s in self.scenarios for a in s.agents]
        return pd.DataFrame(rows, columns=["scenario_id", "requester"])
