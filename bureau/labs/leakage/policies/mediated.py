"""Policy e: the lab's requests through purpose-bound mediation (:mod:`bureau.mediation`).

Policies b-d answer "may a requester *search* this space?"; e answers "may this memory *flow*
to this requester, and in what form?". Every requester asks every other agent of its scenario
through its own handle (``case.agent(requester, threshold=-1).consult(owner, query,
recipient="other-agent", limit=k)``) and the service's mediator decides each relevant card of
the owner's space under the lab policy (``scenarios/policies/leak-lab.yaml``):

* a shareable item (MAGPIE ``shareable``, AgentSocialBench ``minimum_info_needed``) is revealed;
* a private item (``private`` / ``must_not_cross``) is abstracted: its safe abstraction is
  released if the owner has one (MAGPIE: the hint rule of :mod:`bureau.labs.leakage.datasets.magpie`;
  AgentSocialBench: the ``acceptable_abstractions`` value paired with the sentence, see
  :mod:`bureau.labs.leakage.datasets.agentsocialbench` for the pairing and its counts), else it is withheld;
* nothing is revealed raw that the policy does not name.

It runs on the case in state b (nothing published: the board is empty, so every decision is
about the owner's own memory). Budget: the search hands the mediator the top-k cards of each
*owner*, so a requester of an n-agent scenario reads up to (n - 1) k decided cards. Headline
reading, as for a-d: every card of the top-k is decided (``threshold=-1``, fixed by the lab, the
operator, when it builds each requester's handle); the stricter reading keeps the decisions on
cards at or above the relevance threshold (what the service's evidence rule hands a mediator by
default), read off the same decisions by their score.

Whose view: a requester's handle is handed only what was released (a withheld card is not in
its result, nor in its answer's trace). The lab is the operator, so it reads every decision --
withheld ones too -- from the case's audit trail (``case.audit()``, one entry per decision,
matched to the request by its invocation id), and takes from the requester's result only what
the requester got: the released text, and the store's score of each revealed card. A withheld
or abstracted card carries no score in that view (a released abstraction carries nothing of its
original), so its ``score`` is the lab's exact cosine of the same two vectors (numpy, rounded to
the store's six decimals; the report's engine check compares the two engines).

Exhaustive probe: a decision depends on the invocation and the card's labels, never on the
question or the rank, so deciding every card once per (requester, owner) is exhaustive: every
requester asks every other agent once more with limit :data:`PROBE_LIMIT` per scope (above any
scenario's card count) and ``threshold=-1``, and the mediator decides every card of the owner's
space. A raw private reveal is a decision that releases a private item of another agent with
action ``reveal``, or releases any text equal to one; the count must be 0. The mediator reads the
card's ``sensitivity``, which the lab copies from the benchmark's label, so this 0 is a *wiring*
(label-conformance) check of the service, its mediator and its audit trail, reported over the
private-card decisions; the figures that could fail (a mediator that reads content with the
labels hidden, label noise, recall by budget) are in :mod:`bureau.labs.leakage.policies.measured`.

Abstraction leakage: a released abstraction that repeats a distinctive term (number, name, date)
of its original (:func:`bureau.mediation.abstraction.leaked_terms`): the owner-written
abstractions are released as they are (deterministic path), so this measures the benchmark's
abstractions, not a model. Read as a leak figure it flags names both sides know and passes a fact
repeated in plain words; :mod:`bureau.labs.leakage.metrics.repetition` measures term repetition instead.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bureau.embedding import given_vectors
from bureau.labs.leakage.datasets.labset import LabAgent, LabItem, LabScenario
from bureau.labs.leakage.policies.policies import DEFAULT_THRESHOLD, MEDIATED, PROBE_LIMIT
from bureau.labs.leakage.result import DECISION_COLUMNS as DECISION_COLUMNS  # run_mediated's rows
from bureau.mediation.abstraction import leaked_terms
from bureau.mediation.mediator import PolicyMediator
from bureau.mediation.policy import load_policy
from bureau.resources import shipped_path

if TYPE_CHECKING:
    from bureau.labs.leakage.result import LabResult, Timings

EVERY_CARD = -1.0
"""The threshold that makes every card of the top-k evidence: the lab builds each requester's
handle with it (``case.agent(role, threshold=EVERY_CARD)``)."""
PURPOSE = "collaboration"
"""The declared purpose of every lab invocation (the lab policy does not match on it)."""
RECIPIENT = "other-agent"


def lab_policy_path() -> Any:
    return shipped_path("scenarios", "policies", "leak-lab.yaml")


def lab_mediator() -> PolicyMediator:
    """The mediator policy e runs with (the lab's Bureau uses it; b-d never consult it)."""
    return PolicyMediator(load_policy(lab_policy_path()))


Origin = dict[str, tuple[LabItem, str]]
AUDITED = ("invocation_id", "card_id", "action", "reasons", "rule")
"""What the lab reads of each audit entry (the operator's view of every decision)."""


def _rows(stage: str, scenario: LabScenario, requester: LabAgent, owner: str, mediation: Any,
          decided: list[dict[str, Any]], origin: Origin, secret_texts: set[str],
          vec: dict[str, np.ndarray]) -> list[tuple[Any, ...]]:
    """One row per decision of one request: ``decided`` are its audit entries (every decision,
    in the mediator's order), ``mediation`` the requester's own result (what was released)."""
    out = []
    released = {d.card_id: d.card for d in mediation.decisions if d.card is not None}
    scores = {c.id: c.score for c in mediation.answer.trace.hits}
    query = vec.get(requester.query)
    for d in decided:
        card_id, action = d["card_id"], d["action"]
        item, variant = origin.get(card_id, (None, "unknown"))
        card = released.get(card_id)
        text = card.content if card is not None else None
        foreign_private = (item is not None and variant == "item" and item.label == "private"
                           and item.owner != requester.name)
        raw = (foreign_private and action == "reveal") or (
            text is not None and text in secret_texts and action == "reveal")
        leaked = ""
        if action == "abstract" and item is not None and text is not None:
            leaked = ";".join(leaked_terms(item.text, text))
        score = scores.get(card_id)
        if score is None and item is not None and query is not None and item.text in vec:
            score = round(float(query @ vec[item.text]), 6)  # not in the requester's view
        out.append((stage, scenario.scenario_id, requester.name, owner, card_id,
                    item.item_id if item else None, item.owner if item else None,
                    item.label if item else None, bool(item and item.abstraction),
                    score, action, ",".join(_codes(d["reasons"])), d["rule"], bool(raw),
                    leaked))
    return out


def _codes(reasons: Any) -> list[str]:
    """The reason codes of one audit row (the audit table joins them with ", ")."""
    return [r for r in str(reasons or "").split(", ") if r]


def _decisions(case: Any) -> dict[str, list[dict[str, Any]]]:
    """The operator's view: every decision of the case's audit trail, by invocation id, in the
    order the mediator made them (withheld ones too, which no requester is handed)."""
    trail = case.audit(verify=False)
    out: dict[str, list[dict[str, Any]]] = {}
    for row in trail.loc[trail["kind"] == "decision", list(AUDITED)].to_dict("records"):
        out.setdefault(row["invocation_id"], []).append(row)
    return out


def run_mediated(
    case: Any, scenario: LabScenario, vec: dict[str, np.ndarray], origin: Origin, k: int,
    t: Timings,
) -> tuple[list[tuple[Any, ...]], int]:
    """Policy e on one case in state b: every requester asks every other agent through its
    own handle, then the exhaustive probe; the decisions are read back from the audit trail.
    Returns the rows (:data:`DECISION_COLUMNS`) and the decision entries the case's audit
    ledger holds, counted on the same read (every one, matched to a request or not: only
    consults write decisions, so the count is final for the case)."""
    agents = scenario.agents
    # The operator fixes the threshold when it builds a handle; the requester cannot.
    handles = {a.name: case.agent(a.role, threshold=EVERY_CARD) for a in agents}
    asked: list[tuple[str, LabAgent, LabAgent, Any]] = []
    for stage, limit in (("ask", k), ("probe", PROBE_LIMIT)):
        t0 = time.perf_counter()
        for agent in agents:
            me = handles[agent.name]
            for other in agents:
                if other.name == agent.name:
                    continue
                with given_vectors(vec):
                    m = me.consult(other.role, agent.query, recipient=RECIPIENT,
                                   purpose=PURPOSE, limit=limit)
                asked.append((stage, agent, other, m))
                if stage == "ask":
                    t.mediated_requests += 1
                else:
                    t.mediated_probes += 1
        if stage == "ask":
            t.mediated += time.perf_counter() - t0
        else:
            t.mediated_probe += time.perf_counter() - t0
    t0 = time.perf_counter()  # reading the decisions back is the probe's bookkeeping
    decided = _decisions(case)
    rows: list[tuple[Any, ...]] = []
    for stage, agent, other, m in asked:
        mine = decided.get(m.invocation.id, [])
        if stage == "probe":  # every card of the owner must be decided
            owned = sum(1 for i in scenario.items if i.owner == other.name)
            if len(mine) < owned:
                raise RuntimeError(f"{scenario.scenario_id}: the probe decided {len(mine)} of "
                                   f"{owned} cards of {other.name}")
        secrets = {i.text for i in scenario.items if i.label == "private"
                   and i.owner != agent.name}
        rows += _rows(stage, scenario, agent, other.name, m, mine, origin, secrets, vec)
    t.mediated_probe += time.perf_counter() - t0
    return rows, sum(len(entries) for entries in decided.values())


def mediated_summary(result: LabResult, threshold: float = DEFAULT_THRESHOLD) -> dict[str, Any]:
    """Policy e in figures, beside the pair counts policies a-d use (see the module docstring).

    Pairs are (requester, another agent's item) as everywhere in the lab: ``min_info_recall``
    is the share of shareable pairs whose item was revealed to the requester by its own query;
    ``abstract_coverage`` the share of private pairs with a safe abstraction whose abstraction
    reached the requester (``abstract_coverage_all``: over every private pair).
    """
    dec = result.mediated
    lab = result.lab
    pairs = {"private": 0, "shareable": 0, "private_with_abstraction": 0}
    for s in lab.scenarios:
        for a in s.agents:
            for i in s.items:
                if i.owner == a.name:
                    continue
                pairs[i.label] += 1
                pairs["private_with_abstraction"] += int(i.label == "private"
                                                         and bool(i.abstraction))
    ask = dec[dec["stage"] == "ask"]
    probe = dec[dec["stage"] == "probe"]
    foreign = ask[ask["item_owner"].notna() & (ask["item_owner"] != ask["requester"])]
    key = ["scenario_id", "requester", "item_id"]
    revealed = foreign[(foreign["item_label"] == "shareable") & (foreign["action"] == "reveal")]
    abstracted = foreign[(foreign["item_label"] == "private") & (foreign["action"] == "abstract")]
    raw_pairs = foreign[foreign["raw_private"]].drop_duplicates(key)
    raw_items = raw_pairs.drop_duplicates(["scenario_id", "item_id"])
    released_abs = dec[dec["action"] == "abstract"]
    distinct_abs = released_abs.drop_duplicates(["scenario_id", "item_id"])
    private_decisions = foreign[foreign["item_label"] == "private"]

    def rate(num: int, den: int) -> float:
        return num / den if den else float("nan")

    n_abs_pairs = len(abstracted.drop_duplicates(key))
    strict = foreign[foreign["score"] >= threshold]
    strict_revealed = strict[(strict["item_label"] == "shareable")
                             & (strict["action"] == "reveal")].drop_duplicates(key)
    strict_abstracted = strict[(strict["item_label"] == "private")
                               & (strict["action"] == "abstract")].drop_duplicates(key)
    private_items = sum(1 for i in lab.items if i.label == "private")
    return {
        "policy": MEDIATED,
        "k_per_owner": result.k,
        "requests": int(result.timings.mediated_requests),
        "decisions": len(ask),
        "audit_entries": int(result.audit_entries),
        "private_pairs": pairs["private"],
        "shareable_pairs": pairs["shareable"],
        "private_pairs_with_abstraction": pairs["private_with_abstraction"],
        "raw_private_reveals": int(ask["raw_private"].sum()),
        "pair_leak": rate(len(raw_pairs), pairs["private"]),
        "item_leak": rate(len(raw_items), private_items),
        "min_info_revealed_pairs": len(revealed.drop_duplicates(key)),
        "min_info_recall": rate(len(revealed.drop_duplicates(key)), pairs["shareable"]),
        "abstract_pairs": n_abs_pairs,
        "abstract_coverage": rate(n_abs_pairs, pairs["private_with_abstraction"]),
        "abstract_coverage_all": rate(n_abs_pairs, pairs["private"]),
        "threshold": threshold,
        "min_info_recall_at_threshold": rate(len(strict_revealed), pairs["shareable"]),
        "abstract_coverage_at_threshold": rate(len(strict_abstracted),
                                               pairs["private_with_abstraction"]),
        "private_decisions": len(private_decisions),
        "private_actions": {a: int(n) for a, n in
                            private_decisions["action"].value_counts().items()},
        "withhold_reasons": {r: int(n) for r, n in private_decisions.loc[
            private_decisions["action"] == "withhold", "reasons"].value_counts().items()},
        "abstractions_released": len(released_abs),
        "distinct_abstractions_released": len(distinct_abs),
        "abstractions_with_leaked_terms": int((distinct_abs["abstraction_leaked_terms"] != "")
                                              .sum()),
        "abstraction_leakage": rate(int((distinct_abs["abstraction_leaked_terms"] != "").sum()),
                                    len(distinct_abs)),
        "probe": {
            "probes": int(result.timings.mediated_probes),
            "unit": "one consult per (requester, other agent), every card of the owner decided",
            "limit_per_scope": PROBE_LIMIT,
            "decisions": len(probe),
            "raw_private_reveals": int(probe["raw_private"].sum()),
            "abstracts_released": int((probe["action"] == "abstract").sum()),
            "withheld": int((probe["action"] == "withhold").sum()),
        },
    }


def leaked_abstractions(result: LabResult) -> pd.DataFrame:
    """Released abstractions that repeat a distinctive term of their original, one row per
    item: what a reader should look at before trusting the benchmark's abstractions."""
    dec = result.mediated
    rel = dec[(dec["action"] == "abstract") & (dec["abstraction_leaked_terms"] != "")]
    rel = rel.drop_duplicates(["scenario_id", "item_id"])
    items = {(i.scenario_id, i.item_id): i for i in result.lab.items}
    rows = [(r.scenario_id, r.item_id, r.item_owner, r.abstraction_leaked_terms,
             items[(r.scenario_id, r.item_id)].text,
             items[(r.scenario_id, r.item_id)].abstraction)
            for r in rel.itertuples()]
    return pd.DataFrame(rows, columns=["scenario_id", "item_id", "owner", "leaked_terms",
                                       "original", "abstraction"])

