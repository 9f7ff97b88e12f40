"""The policy mediator: withhold, abstract or reveal each candidate card, with reason codes.

Pure decisions: the service hands in the invocation, the relevant cards and a
:class:`MediationContext` it read from the ledger (active grants, the requester's spent
disclosure budget), and gets back one :class:`Decision` per card. Durable state (revocations,
grants, budget, the audit entries) is written by the service in one ledger transaction, so this
module needs neither the ledger nor the store and its decision table is testable on plain data.

Order of a decision, for each card (best hit first):

1. the first matching rule's action (or the policy's ``default``: ``no-rule-matched``);
2. ``approval: true`` needs an active grant, else ``withhold`` (``human-approval-required``); a
   grant may also widen a rule's action for its requester/recipient/purpose (``granted``);
3. ``abstract`` releases the card's own safe abstraction (same id, abstraction as content), or
   an opt-in abstractor's text if it repeats none of the original's distinctive terms;
   otherwise ``withhold`` (``no-safe-abstraction`` / ``abstraction-rejected``);
4. the disclosure budget: another role's private card costs its action's price for this
   (requester, owner); past the limit, ``withhold`` (``budget-exhausted``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..model import BOARD, Answer, MemoryCard, RetrievalTrace, ScopeResult
from ..tiers.provenance import parse_run_owner
from .abstraction import Abstractor, abstracted, leaked_terms
from .grants import Grant, best_grant
from .invocation import Invocation
from .policy import ACTIONS, UNLABELLED, Policy, first_match

if TYPE_CHECKING:
    import pandas as pd

REASONS: dict[str, str] = {
    "owner-policy-allows": "a policy rule allows revealing this card",
    "sensitive-detail-not-needed": "a policy rule allows only the card's safe abstraction",
    "not-authorized-for-purpose": "a policy rule withholds this card for this request",
    "no-rule-matched": "no policy rule matched; the policy's default applies",
    "recipient-too-broad": "the final recipient is wider than this card may reach",
    "human-approval-required": "the matching rule needs an approval (a grant), and none is "
                               "active",
    "granted": "an active grant for this card allows it",
    "no-safe-abstraction": "only an abstraction may flow, and the card has none",
    "abstraction-rejected": "the generated abstraction repeated distinctive terms of the "
                            "original",
    "budget-exhausted": "the requester's disclosure budget for this owner's memories is used up",
}
"""Every reason code a decision can carry, with what it means."""
DEFAULT_REASON = {"reveal": "owner-policy-allows", "abstract": "sensitive-detail-not-needed",
                  "withhold": "not-authorized-for-purpose"}


def memory_owner(card: MemoryCard) -> str:
    """Whose memory a card is: its owner, or for a board copy the role that published it, or
    for a run's ephemeral card the role whose run it is."""
    run = parse_run_owner(card.owner)
    if run is not None:
        return run[1]
    return card.source_role if card.owner == BOARD and card.source_role else card.owner


def labels_of(inv: Invocation, card: MemoryCard) -> dict[str, str]:
    """The values policy rules match on, for one (invocation, card) pair."""
    owner = memory_owner(card)
    return {
        "info_type": card.info_type or UNLABELLED,
        "sensitivity": card.sensitivity or UNLABELLED,
        "owner": owner,
        "visibility": card.visibility,
        "requester": inv.requester,
        "recipient": inv.recipient,
        "task": inv.task,
        "purpose": inv.purpose,
        "requester_is_owner": "yes" if inv.requester == owner else "no",
    }


@dataclass(frozen=True)
class MediationContext:
    """What the service read from the ledger for one invocation (all in one transaction)."""

    now: float = field(default_factory=time.time)
    grants: tuple[Grant, ...] = ()
    spent: Mapping[str, float] = field(default_factory=dict)
    """Disclosure budget this requester already spent, per memory owner."""


@dataclass(frozen=True)
class Decision:
    card_id: str
    card_owner: str
    action: str
    reasons: tuple[str, ...]
    rule: str | None
    cost: float = 0.0
    card: MemoryCard | None = field(default=None, repr=False)
    """What is released: the card (reveal), its abstraction under the same id (abstract), or
    ``None`` (withhold)."""
    grant_id: str | None = None
    detail: str = ""
    """Figures behind the reasons (the budget spent and its limit), for the message."""

    @property
    def message(self) -> str:
        """Why, in words: one clause per reason code, then the figures."""
        text = "; ".join(REASONS.get(r, r) for r in self.reasons) + "."
        return f"{text[0].upper()}{text[1:]}" + (f" {self.detail}" if self.detail else "")

    def audit_entry(self, inv: Invocation, policy: Policy) -> dict[str, Any]:
        """The audit ledger's entry: ids, labels, action and reasons; no card text."""
        return {"kind": "decision", **inv.audit_fields(), "card_id": self.card_id,
                "card_owner": self.card_owner, "action": self.action,
                "reasons": list(self.reasons), "rule": self.rule, "cost": self.cost,
                "grant_id": self.grant_id, "policy_version": policy.version,
                "policy_digest": policy.digest}


@dataclass(frozen=True)
class Mediation:
    """One mediated interrogation: the invocation, a decision per relevant card, the answer."""

    invocation: Invocation
    decisions: tuple[Decision, ...]
    answer: Answer
    policy_version: str | None = None

    @property
    def released(self) -> list[MemoryCard]:
        return [d.card for d in self.decisions if d.card is not None]

    def released_view(self) -> Mediation:
        """What the requester may receive when the memory is not its own: the released cards,
        their decisions, and an answer whose trace holds those cards only (no withheld or
        below-threshold card, no timing); the full X-ray stays with the operator."""
        shown = released_trace(self.answer.trace, self.released)
        return Mediation(self.invocation,
                         tuple(d for d in self.decisions if d.card is not None),
                         replace(self.answer, trace=shown), self.policy_version)

    def table(self) -> pd.DataFrame:
        """The decisions as a DataFrame (card, owner, action, reasons, message, cost)."""
        import pandas as pd

        return pd.DataFrame(
            [{"card_id": d.card_id, "owner": d.card_owner, "action": d.action,
              "reasons": ", ".join(d.reasons), "rule": d.rule, "cost": d.cost,
              "message": d.message} for d in self.decisions],
            columns=["card_id", "owner", "action", "reasons", "rule", "cost", "message"],
        )


def released_trace(trace: RetrievalTrace, released: Sequence[MemoryCard]) -> RetrievalTrace:
    """``trace`` as the requester may see it: per scope only the released cards (as released:
    the abstraction for an abstract), nothing below the threshold, no timing."""
    out = {c.id: c for c in released}
    scopes = tuple(ScopeResult(s.scope, tuple(out[c.id] for c in s.hits if c.id in out), (), 0.0)
                   for s in trace.scopes)
    return replace(trace, scopes=scopes, embed_ms=0.0, total_ms=0.0)


def _rank(action: str) -> int:
    return ACTIONS.index(action)


class PolicyMediator:
    """Purpose-bound mediation by a :class:`~bureau.mediation.policy.Policy`."""

    name = "policy"

    def __init__(self, policy: Policy, abstractor: Abstractor | None = None) -> None:
        self.policy = policy
        self.abstractor = abstractor
        """Opt-in writer of abstractions for cards without one (checked before release)."""

    def __repr__(self) -> str:
        return f"<PolicyMediator {self.policy.describe()} from {self.policy.source}>"

    def decide(
        self, inv: Invocation, candidates: Sequence[MemoryCard], ctx: MediationContext
    ) -> list[Decision]:
        """One decision per candidate, in order; budget is spent as decisions are made."""
        now_dt = datetime.fromtimestamp(ctx.now, UTC)
        spent = dict(ctx.spent)
        return [self._one(inv, card, ctx, now_dt, spent) for card in candidates]

    def _one(self, inv: Invocation, card: MemoryCard, ctx: MediationContext, now_dt: datetime,
             spent: dict[str, float]) -> Decision:
        labels = labels_of(inv, card)
        owner = labels["owner"]
        hit = first_match(self.policy, labels, now_dt)
        rule = hit[1] if hit else None
        if rule is not None:
            action, reasons = rule.action, [rule.reason or DEFAULT_REASON[rule.action]]
        else:
            action, reasons = self.policy.default, ["no-rule-matched"]
        grant = best_grant(ctx.grants, inv, card.id, ctx.now, ACTIONS)
        if rule is not None and rule.approval:
            if grant is None:
                action, reasons = "withhold", ["human-approval-required"]
            else:
                action, reasons = grant.action, [*reasons, "granted"]
        elif grant is not None and _rank(grant.action) > _rank(action):
            action, reasons = grant.action, [*reasons, "granted"]
        rule_id = rule.id if rule else None
        gid = grant.grant_id if grant is not None and "granted" in reasons else None

        released: MemoryCard | None = card if action == "reveal" else None
        if action == "abstract":
            text = card.abstraction
            if text is None and self.abstractor is not None:
                text = self.abstractor(card)
                if leaked_terms(card.content, text):
                    return Decision(card.id, owner, "withhold", ("abstraction-rejected",),
                                    rule_id, 0.0, None, gid)
            if text is None:
                return Decision(card.id, owner, "withhold", ("no-safe-abstraction",), rule_id,
                                0.0, None, gid)
            released = abstracted(card, text)

        budget = self.policy.budget
        cost = 0.0
        if budget is not None and card.visibility == "private" and labels[
                "requester_is_owner"] == "no":
            cost = budget.cost(action)
            if cost and spent.get(owner, 0.0) + cost > budget.limit + 1e-9:
                return Decision(card.id, owner, "withhold", ("budget-exhausted",), rule_id, 0.0,
                                None, gid, budget_message(inv.requester, owner,
                                                          spent.get(owner, 0.0), budget.limit))
            spent[owner] = spent.get(owner, 0.0) + cost
        return Decision(card.id, owner, action, tuple(reasons), rule_id, cost, released, gid)


def budget_message(requester: str, owner: str, spent: float, limit: float) -> str:
    return (f"{requester} has spent {spent:.2f} of its {limit:.2f} disclosure budget for "
            f"{owner}'s memories in this case.")
