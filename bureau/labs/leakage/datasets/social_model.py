"""AgentSocialBench's privacy boundaries as the loader builds them: :class:`SocialItem` (one
sentence of a boundary), :class:`SocialAgent`, :class:`SocialScenario`, :class:`SocialDataset`, and
the categories in scope.

Plain frozen records, with no reading and no pairing in them: the loader
(:mod:`bureau.labs.leakage.datasets.agentsocialbench`) builds them, the pairing
(:mod:`bureau.labs.leakage.datasets.social_pairing`) counts over them, the conversion
(:mod:`bureau.labs.leakage.datasets.social_lab`) turns them into the lab's common shape and the report tells
the benchmark by them, so each of those can import them without importing the others. What
every field means in the benchmark's own terms is documented with the loader.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import pandas as pd

from bureau.labs.leakage.datasets.magpie import LabelledItems

Label = Literal["shareable", "private"]
Category = Literal["cross_domain", "mediated_comm", "cross_user"]
Match = Literal["exact", "fuzzy"]

IN_SCOPE: tuple[Category, ...] = ("cross_domain", "mediated_comm", "cross_user")
OUT_OF_SCOPE = ("affinity_modulated", "competitive", "hub_and_spoke", "multi_party_group")


@dataclass(frozen=True)
class SocialItem:
    """One sentence of a privacy boundary: the unit a memory store holds and a policy may leak.

    ``field_path`` is the path inside the scenario file (``privacy_boundary.must_not_cross[2]``), so a
    surprising figure can be traced to its source. ``match``/``score``/``abstraction_key`` say how
    the abstraction was paired (None when it was not).
    """

    item_id: str
    scenario_id: str
    category: str
    holder: str
    person: str | None
    field_path: str
    label: Label
    text: str
    fact: str
    abstraction: str | None = None
    abstraction_key: str | None = None
    match: Match | None = None
    score: float | None = None


@dataclass(frozen=True)
class SocialAgent:
    """A participant: a user's agent (``kind="agent"``) or a human on the other side.

    ``name`` is the file's agent ``role`` (``finance_planning_agent``) or the human's name: unique
    within a scenario, it is what items name as their ``holder``.
    """

    name: str
    kind: Literal["agent", "human"]
    domain: str
    user: str
    description: str
    holder: bool


@dataclass(frozen=True)
class SocialScenario(LabelledItems):
    """One scenario file. Every participant but an item's holder is a requester of that item."""

    scenario_id: str
    category: str
    task: str
    agents: tuple[SocialAgent, ...]
    items: tuple[SocialItem, ...]
    abstraction_keys: int
    unused_abstraction_keys: tuple[str, ...]
    file: Path | None = field(default=None, compare=False)
    people: tuple[str, ...] = ()
    """The people both sides already know by name: ``user_profiles[].name``, the humans and the
    ``cross_user`` persons. A released abstraction that repeats one of them repeats nothing the
    requester lacks (:mod:`bureau.labs.leakage.metrics.repetition`)."""


@dataclass(frozen=True)
class SocialDataset:
    """In-scope scenarios sorted by id, every item flat, and the files skipped per category."""

    scenarios: tuple[SocialScenario, ...]
    items: tuple[SocialItem, ...]
    skipped: Mapping[str, int] = field(default_factory=dict)
    source: Path | None = field(default=None, compare=False)

    def __len__(self) -> int:
        return len(self.scenarios)

    def to_frame(self) -> pd.DataFrame:
        """One row per item, columns in :class:`SocialItem` field order."""
        columns = list(SocialItem.__dataclass_fields__)
        return pd.DataFrame([asdict(i) for i in self.items], columns=columns)

    def counts(self) -> dict[str, int]:
        """Headline sizes, so a reader (or a test) can check a load at a glance."""
        counts = {
            "scenarios": len(self.scenarios),
            "agents": sum(len(s.agents) for s in self.scenarios),
            "private": sum(i.label == "private" for i in self.items),
            "shareable": sum(i.label == "shareable" for i in self.items),
            "safe_abstraction": sum(i.abstraction is not None for i in self.items),
            "skipped": sum(self.skipped.values()),
        }
        for category in IN_SCOPE:
            counts[category] = sum(s.category == category for s in self.scenarios)
        return counts
