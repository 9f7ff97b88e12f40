"""The four memory policies the leakage lab compares, and the lab's defaults.

Every benchmark scenario is one Bureau case; one query per requester agent is asked under:

``a_shared_pool_others`` (the headline "relevance as policy")
    One store, one scope holding the *other* agents' items, ranked by relevance alone (the
    anti-pattern): top-k in all. Computed exactly in numpy over the same MiniLM vectors the
    Bureau stores, so it needs no second copy of every card in seekdb; the runner compares the
    numpy ranking with seekdb's on the same board contents (policy c) to show the two agree.
``a_shared_pool_with_own``
    As above, but the pool also holds the requester's own items, which then take top-k slots and
    are dropped afterwards (own items are not leaks): the lab's former policy a. It understates
    every leak and recall figure, so it is reported beside the headline, not as it.
``b_bureau_closed``
    The real Bureau on embedded seekdb, nothing published: a requester searches its own space
    and the (empty) board.
``c_bureau_published``
    As b after every owner published each of its shareable items (``Case.publish``).
``d_bureau_abstractions``
    As c, plus for every private item with a safe abstraction (for MAGPIE, the hint rule in
    :mod:`bureau.labs.leakage.datasets.magpie`) the owner whispers the abstraction into its own space as kind
    ``abstraction`` and publishes that card; the private item itself stays private.

``e_bureau_mediated``
    The Bureau in state b, with purpose-bound mediation: every requester asks every other agent
    through its own handle (``case.agent(role).consult``) and the mediator reveals shareable items, releases a private item's safe
    abstraction if it has one and withholds the rest (:mod:`bureau.labs.leakage.policies.mediated`). It
    decides from the card's sensitivity, copied from the benchmark's label, so its zero is a
    wiring (label-conformance) check; what could fail is in :mod:`bureau.labs.leakage.policies.measured`.

b, c and d are three successive states of one case per scenario. Budgets: b-d take top-k *per
scope* (own space + board: up to 2k cards), a takes top-k in all; the report therefore shows a at
k and at 2k and says which is compared with which. How they are run and scored:
:mod:`bureau.labs.leakage.runner`; how a MAGPIE scenario becomes a case: :mod:`bureau.labs.leakage.datasets.convert`.

This module only defines them, so the runner, the report and the plots name the policies the
same way.
"""

from __future__ import annotations

from bureau.settings import DEFAULT_THRESHOLD

POLICIES: dict[str, str] = {
    "a_shared_pool_with_own": "shared pool incl. own items (dropped after top-k), relevance only",
    "a_shared_pool_others": "shared pool of the other agents' items, relevance only",
    "b_bureau_closed": "bureau boundary, nothing published",
    "c_bureau_published": "bureau boundary, shareable items published",
    "d_bureau_abstractions": "as c + safe abstractions of hint items published",
}
"""The retrieval policies a-d (exposure tables); policy e decides instead (:data:`MEDIATED`)."""
MEDIATED_DESCRIPTION = ("bureau boundary + purpose-bound mediation (reveal shareable, abstract "
                        "or withhold private)")
POLICY_LABELS: dict[str, str] = {
    "a_shared_pool_with_own": "a (with own): shared pool",
    "a_shared_pool_others": "a: shared pool of others",
    "b_bureau_closed": "b: bureau, nothing published",
    "c_bureau_published": "c: bureau + shareable published",
    "d_bureau_abstractions": "d: c + safe abstractions",
}
ENGINES: dict[str, str] = {
    "a_shared_pool_with_own": "numpy, exact cosine over the Bureau's MiniLM vectors",
    "a_shared_pool_others": "numpy, exact cosine over the Bureau's MiniLM vectors",
    "b_bureau_closed": "Bureau (Case.retrieve) on embedded seekdb",
    "c_bureau_published": "Bureau (Case.retrieve) on embedded seekdb",
    "d_bureau_abstractions": "Bureau (Case.retrieve) on embedded seekdb",
}
SHARED_POOL = "a_shared_pool_others"
"""The headline shared pool."""
SHARED_POOL_WITH_OWN = "a_shared_pool_with_own"
SHARED_POOLS = (SHARED_POOL_WITH_OWN, SHARED_POOL)
BUREAU_POLICIES = ("b_bureau_closed", "c_bureau_published", "d_bureau_abstractions")
"""The policies asked through ``Case.retrieve`` (exposure tables in ``LabResult.pairs``)."""
MEDIATED = "e_bureau_mediated"
"""Policy e: decisions, not retrievals (``LabResult.mediated``, :mod:`bureau.labs.leakage.policies.mediated`)."""
DEFAULT_K = 5
PROBE_LIMIT = 100
"""Per-scope limit of the exhaustive boundary probe: above any scenario's card count, so each
probe returns every card the requester can read."""
__all__ = ["BUREAU_POLICIES", "DEFAULT_K", "DEFAULT_THRESHOLD", "ENGINES", "MEDIATED",
           "MEDIATED_DESCRIPTION", "POLICIES", "POLICY_LABELS", "PROBE_LIMIT", "SHARED_POOL",
           "SHARED_POOLS", "SHARED_POOL_WITH_OWN"]
"""DEFAULT_THRESHOLD is the Bureau's own (``bureau.settings``): the lab's stricter reading."""
