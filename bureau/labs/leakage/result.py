"""What one lab run measured: :class:`LabResult`, its :class:`Timings`, and the row schemas
of the two frames a result holds by default (:data:`PROBE_COLUMNS`, :data:`DECISION_COLUMNS`).

A module of its own so that both the runner (:mod:`bureau.labs.leakage.runner`, which builds a result)
and policy e (:mod:`bureau.labs.leakage.policies.mediated`, which fills the result's timings and summarises its
decisions) can name these types without importing each other: the runner calls policy e at
runtime, so policy e cannot import the runner, not even for its type hints. It imports nothing
of the lab but the lab set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from bureau.labs.leakage.datasets.labset import LabSet

PROBE_COLUMNS = (
    "scenario_id", "requester", "role", "scopes", "probes", "hits", "cards_returned",
    "max_scope_cards", "scopes_as_listed",
)
"""One row per requester of the exhaustive probe: ``probes`` questions asked (one per other
agent's private item), ``hits`` returned cards that are another agent's private item,
``max_scope_cards`` the most cards one scope returned (below PROBE_LIMIT: nothing was cut off),
``scopes_as_listed`` every probe searched exactly ``Case.scopes_for(role)``."""
DECISION_COLUMNS = (
    "stage", "scenario_id", "requester", "owner", "card_id", "item_id", "item_owner",
    "item_label", "has_abstraction", "score", "action", "reasons", "rule", "raw_private",
    "abstraction_leaked_terms",
)
"""One row per mediator decision. ``stage``: ``ask`` (the requester's own query) or ``probe``
(the exhaustive probe). ``raw_private``: the decision released another agent's private item
raw. ``abstraction_leaked_terms``: for a released abstraction, the original's distinctive terms it
repeats (``;``-joined, empty: none)."""


@dataclass
class Timings:
    """Where the lab's wall time went (seconds) and what the encoder did during it."""

    total: float = 0.0
    embed_wait: float = 0.0
    shared_pool: float = 0.0
    seed: float = 0.0
    publish: float = 0.0
    abstractions: float = 0.0
    retrieve: float = 0.0
    frames: float = 0.0
    probe: float = 0.0
    mediated: float = 0.0
    mediated_probe: float = 0.0
    distinct_texts: int = 0
    texts_embedded: int = 0
    tokens_embedded: int = 0
    encoder_seconds: float = 0.0
    cards_written: int = 0
    searches: int = 0
    probes: int = 0
    mediated_requests: int = 0
    mediated_probes: int = 0
    busy_at_start: float = -1.0
    """Cores other processes kept busy as the lab started (-1: could not be read)."""
    stepped_back: int = 0
    """Embedding workers stepped back behind the storage work (0 on a busy machine)."""

    def as_dict(self) -> dict[str, float | int]:
        return dict(self.__dict__)


@dataclass
class LabResult:
    """Everything one run measured.

    ``lab``: the converted scenarios the run used (counts, items, queries).
    ``pairs``: the exposure table (:mod:`bureau.labs.leakage.metrics.metrics` schema) of every policy, plus
    ``policy``, ``rank`` (1-based rank in the scope that returned the item, NaN if not returned),
    ``abstraction_retrieved`` (policy d: the item's safe abstraction reached the requester) and
    ``pool_rank`` (the pair's rank in the requester's shared pool, own items included: policy a
    at any k is ``pool_rank <= k``).
    ``retrievals``: every card every query returned
    (:data:`~bureau.labs.leakage.runner.RETRIEVAL_COLUMNS`).
    ``requests``: one row per ``Case.retrieve`` call of policies b-d
    (:data:`~bureau.labs.leakage.runner.REQUEST_COLUMNS`).
    ``queries``: (scenario id, agent name) -> the query asked.
    ``probe``: the exhaustive boundary probe of the final state (:data:`PROBE_COLUMNS`).
    """

    lab: LabSet
    k: int
    pairs: pd.DataFrame
    retrievals: pd.DataFrame
    requests: pd.DataFrame
    queries: dict[tuple[str, str], str]
    texts: list[str]
    timings: Timings
    engine_check: dict[str, float | int] = field(default_factory=dict)
    case_ids: dict[str, str] = field(default_factory=dict)
    query_tokens: dict[tuple[str, str], int] = field(default_factory=dict)
    """(scenario id, agent name) -> tokens of the asked query before MiniLM's truncation (empty
    when the encoder has no tokenizer): the report says how many exceed what the model reads."""
    probe: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(PROBE_COLUMNS)))
    """The exhaustive boundary probe, one row per requester (:data:`PROBE_COLUMNS`)."""
    mediated: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=list(DECISION_COLUMNS)))
    """Policy e: one row per mediator decision (:data:`DECISION_COLUMNS`)."""
    audit_entries: int = 0
    """Decision entries the cases' audit ledgers hold after policy e (read back per case)."""
    content: pd.DataFrame | None = None
    """Every item's sensitivity score for the content mediator (labels hidden;
    :func:`bureau.labs.leakage.policies.measured.content_scores`), ``None`` when the run computed none."""

    @property
    def dataset(self) -> Any:
        """The benchmark's own object the lab set was converted from (a ``MagpieDataset``)."""
        return self.lab.dataset

    def policy(self, name: str) -> pd.DataFrame:
        """The exposure table of one policy (metrics functions take it as is)."""
        return self.pairs[self.pairs["policy"] == name].drop(columns="policy")
