"""The four memory policies the leakage lab compares, and the lab's defaults.

Every benchmark scenario is one Bureau case; one query per requester agent is asked under:

``a_shared_pool``
    One store, one scope: every agent's items together, ranked by relevance alone (the
    anti-pattern). Computed exactly in numpy over the same MiniLM vectors the Bureau stores, so
    it needs no second copy of every card in seekdb; the runner compares the numpy ranking with
    seekdb's on the same board contents (policy c) to show the two agree.
``b_bureau_closed``
    The real Bureau on embedded seekdb, nothing published: a requester searches its own space
    and the (empty) board.
``c_bureau_published``
    As b after every owner published each of its shareable items (``Case.publish``).
``d_bureau_abstractions``
    As c, plus for every private item with a safe abstraction (for MAGPIE, the hint rule in
    :mod:`bureau.leakage.magpie`) the owner whispers the abstraction into its own space as kind
    ``abstraction`` and publishes that card; the private item itself stays private.

b, c and d are three successive states of one case per scenario. How they are run and scored:
:mod:`bureau.leakage.runner`; how a MAGPIE scenario becomes a case: :mod:`bureau.leakage.convert`.

This module only defines them, so the runner, the report and the plots name the policies the
same way.
"""

from __future__ import annotations

from bureau.settings import DEFAULT_THRESHOLD

POLICIES: dict[str, str] = {
    "a_shared_pool": "shared pool: one scope, relevance only",
    "b_bureau_closed": "bureau boundary, nothing published",
    "c_bureau_published": "bureau boundary, shareable items published",
    "d_bureau_abstractions": "as c + safe abstractions of hint items published",
}
POLICY_LABELS: dict[str, str] = {
    "a_shared_pool": "a: shared pool",
    "b_bureau_closed": "b: bureau, nothing published",
    "c_bureau_published": "c: bureau + shareable published",
    "d_bureau_abstractions": "d: c + safe abstractions",
}
ENGINES: dict[str, str] = {
    "a_shared_pool": "numpy, exact cosine over the Bureau's MiniLM vectors",
    "b_bureau_closed": "Bureau (Case.retrieve) on embedded seekdb",
    "c_bureau_published": "Bureau (Case.retrieve) on embedded seekdb",
    "d_bureau_abstractions": "Bureau (Case.retrieve) on embedded seekdb",
}
SHARED_POOL = "a_shared_pool"
BUREAU_POLICIES = ("b_bureau_closed", "c_bureau_published", "d_bureau_abstractions")
DEFAULT_K = 5
__all__ = ["BUREAU_POLICIES", "DEFAULT_K", "DEFAULT_THRESHOLD", "ENGINES", "POLICIES",
           "POLICY_LABELS", "SHARED_POOL"]
"""DEFAULT_THRESHOLD is the Bureau's own (``bureau.settings``): the lab's stricter reading."""
