"""Runs and promotion: the service side of the trust tiers (issue 14; vocabulary in bureau.tiers).

A **run** is one role's task: whatever its tools fetch lands in the run's ephemeral scope (store
owner ``run:<run_id>:<role>``), which only that run's own retrievals search. Ending the run
deletes the scope, verified with the store's own count, after an optional
:class:`~bureau.tiers.PromotionRule` kept what it matched. Every ephemeral card has a ledger row
to be swept by: the ``runs`` row is written before the first card, names the process that owns
the run, and goes only once the cards are verified gone. A run whose process died (killed
mid-run) is swept by the next :meth:`Bureau.open <bureau.service.bureau.Bureau.open>`.

Ending is two-phase so that a write racing an end can never leave a card behind: the end first
marks the row (no more writes), then purges; a writer checks the row before *and after* its
write, and deletes its own card if the run ended meanwhile.

**Promotion** copies a card one tier up into the role's own space (provenance ``promotion``,
``promoted_from`` = the original, trust kept) and writes one audit entry naming the approver or
the rule. Untrusted content is never promoted without one of them.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import (
    BoundaryViolation,
    InvalidArgumentError,
    PromotionNotApprovedError,
    RunEndedError,
    UnknownRunError,
)
from ..ledger import RunRecord, owner_alive
from ..model import Answer, CaseSpace, MemoryCard, RetrievalTrace
from ..text import clean_name, clean_text, short_repr
from ..tiers import (
    EPHEMERAL,
    ROLE_TIERS,
    SESSION,
    TIERS,
    UNTRUSTED,
    Labels,
    PromotionRule,
    check_tier,
    clean_source,
    labels,
    promotable,
    run_owner,
)

if TYPE_CHECKING:
    from ..ledger.base import BaseLedger
    from ..mediation.mediator import Mediation
    from ..storage.gateway import MemoryGateway
    from .case import Case

EmitMany = Callable[[list[tuple[str, dict[str, Any]]]], Any]
"""Records outward events of the case (``Case._emit_many``)."""

RUN_ID_RE = re.compile(r"[0-9a-f]{12}")


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def check_run_id(run_id: object) -> str:
    if type(run_id) is not str or not RUN_ID_RE.fullmatch(run_id):
        raise UnknownRunError(f"{short_repr(run_id)} is not a run id.")
    return run_id


class Run:
    """One role's run: its ephemeral scope, its retrievals, its end.

    Use it as a context manager (``with case.start_run("detective") as run:``) so the run ends
    -- and its ephemeral cards go -- however the block is left. After the end every method
    raises :class:`~bureau.errors.RunEndedError` and changes nothing.
    """

    def __init__(self, case: Case, record: RunRecord, emit: EmitMany) -> None:
        self.case = case
        self.id = record.run_id
        self.role = record.role
        self.case_id = record.case_id
        self.token = record.token
        self.started_at = record.started_at
        self.owner_id = run_owner(record.run_id, record.role)
        """The store owner of this run's ephemeral scope."""
        self.deleted: int | None = None
        """Ephemeral cards deleted by :meth:`end` (``None`` until it ran here)."""
        self.promoted: tuple[MemoryCard, ...] = ()
        """The long-term copies the promotion rule given to :meth:`end` made."""
        self._emit = emit
        self._ended = False

    def __repr__(self) -> str:
        state = "ended" if self._ended else "live"
        return f"<Run {self.id} of {self.role} in case {self.case_id} ({state})>"

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._ended:
            try:
                self.end()
            except RunEndedError:  # ended elsewhere (or swept): its cards are gone already
                self._ended = True

    # -- state -------------------------------------------------------------------------------
    @property
    def _gw(self) -> MemoryGateway:
        return self.case.bureau.gateway

    @property
    def _ledger(self) -> BaseLedger:
        return self.case.bureau.ledger

    def check_live(self) -> RunRecord:
        """The run's ledger row while the run accepts work; ``RunEndedError`` after its end."""
        rec = None if self._ended else self._ledger.run_record(self.id)
        if rec is None or rec.ended_at is not None or rec.token != self.token:
            self._ended = True
            raise RunEndedError(f"Run {self.id} of {self.role} in case {self.case_id} has ended; "
                                "its ephemeral cards are gone.")
        return rec

    @property
    def live(self) -> bool:
        try:
            self.check_live()
        except RunEndedError:
            return False
        return True

    # -- work --------------------------------------------------------------------------------
    def tool_output(self, text: str, source: str, topic: str = "general") -> MemoryCard:
        """Keep what a tool returned (a fetched page, a search result) for this run only.

        ``source`` is what the tool reports (a URL or the tool's name). The card is untrusted:
        only this run's retrievals see it, a responder gets it as data, and it is gone when the
        run ends unless an approval or a promotion rule keeps a copy.
        """
        content = clean_text(text, what="tool output")
        src = clean_source(source)
        topic = clean_name(topic, what="topic")
        self.check_live()
        space = self.case.space
        meta = {"visibility": "private", "topic": topic, "kind": "tool-output",
                "tool_source": src, **Labels(EPHEMERAL, "tool-output", UNTRUSTED).meta()}
        card = self._gw.add(space, self.owner_id, content, meta)
        try:
            self.check_live()  # an end that began meanwhile may have purged before this write
        except RunEndedError:
            self._gw.delete_or_gone(space, self.owner_id, card.id)
            raise
        return card

    def cards(self) -> list[MemoryCard]:
        """This run's ephemeral cards (the run's own view; no other read path lists them)."""
        self.check_live()
        return self._gw.list(self.case.space, self.owner_id)

    def retrieve(self, question: str, limit: int | None = None) -> RetrievalTrace:
        """Search this run's ephemeral scope, the role's own space and the board."""
        return self.case.retrieve(self.role, question, limit, run=self)

    def interrogate(self, question: str, **invocation: Any) -> Answer:
        """Ask the role within this run (its tool output is evidence, handed over as data)."""
        return self.case.interrogate(self.role, question, run=self, **invocation)

    def consult(self, question: str, **invocation: Any) -> Mediation:
        return self.case.consult(self.role, question, run=self, **invocation)

    def promote(self, card_id: str, *, tier: str = "long-term",
                approved_by: str | None = None) -> MemoryCard:
        """Keep one of this run's cards beyond the run (see :meth:`Case.promote`)."""
        self.check_live()
        return self.case.promote(self.role, card_id, tier=tier, approved_by=approved_by)

    def end(self, promote: PromotionRule | None = None) -> int:
        """End the run: apply ``promote`` to its tool output, then delete every ephemeral card
        (verified in storage) and the run's row. Returns the number of cards deleted."""
        if promote is not None and not isinstance(promote, PromotionRule):
            raise InvalidArgumentError(f"promote must be a PromotionRule or None, not "
                                       f"{short_repr(promote)}.")
        self.check_live()
        space = self.case.space
        promoted = []
        if promote is not None:
            for card in self._gw.list(space, self.owner_id):
                if promotable(card) and promote.matches(card):
                    promoted.append(promote_card(self.case, self.role, card, self._emit,
                                                 rule=promote))
        if self._ledger.end_run(self.id) is None:
            self._ended = True
            raise RunEndedError(f"Run {self.id} of {self.role} was ended elsewhere meanwhile.")
        deleted = self._gw.purge_owner(space, self.owner_id)
        self._ledger.drop_run(self.id)
        self._ended = True
        self.deleted, self.promoted = deleted, tuple(promoted)
        self._emit([("run.ended", {"run_id": self.id, "role": self.role, "deleted": deleted,
                                   "promoted": len(promoted)})])
        return deleted


# -- promotion ------------------------------------------------------------------------------------
def promote_card(
    case: Case, role: str, card: MemoryCard, emit: EmitMany, *, tier: str = "long-term",
    approved_by: str | None = None, rule: PromotionRule | None = None,
) -> MemoryCard:
    """Copy ``card`` one tier up into ``role``'s space and audit it (approver or rule).

    Refuses untrusted content with neither; a card already at or above ``tier`` is refused too
    (promotion only moves content up). Promoting the same card to the same tier again returns
    the existing copy. The copy is written first and deleted again if the audit entry cannot be
    written, so no promotion exists without its entry.
    """
    target = check_tier(tier, ROLE_TIERS, "promotion tier")
    lab = labels(card)
    if TIERS.index(target) <= TIERS.index(lab.tier):
        raise InvalidArgumentError(
            f"Card {card.id} is already {lab.tier} memory; promotion only moves content up "
            f"({' → '.join(TIERS)}).")
    if lab.untrusted and approved_by is None and rule is None:
        raise PromotionNotApprovedError(
            f"Card {card.id} is untrusted {lab.provenance} and is never promoted without an "
            "approval step.")
    gw, ledger = case.bureau.gateway, case.bureau.ledger
    space = case.space
    for existing in gw.list(space, role, where={"promoted_from": card.id}):
        if existing.tier == target:
            return existing
    meta = {"visibility": "private", "topic": card.topic, "kind": card.kind,
            "sensitivity": card.sensitivity, "info_type": card.info_type,
            "abstraction": card.abstraction, "promoted_from": card.id,
            "tool_source": card.tool_source, **Labels(target, "promotion", lab.trust).meta()}
    copy = gw.add(space, role, card.content, meta)
    reason = (f"rule:{rule.name}" if rule is not None
              else f"approved-by:{approved_by}" if approved_by is not None else "operator")
    entry = {"kind": "promotion", "action": "promote", "card_id": copy.id, "card_owner": role,
             "promoted_from": card.id, "from_owner": card.owner, "from_tier": lab.tier,
             "tier": target, "provenance": lab.provenance, "trust": lab.trust,
             "approved_by": approved_by, "rule": None if rule is None else rule.name,
             "rule_description": None if rule is None else rule.description,
             "reasons": [reason]}
    try:
        ledger.append_audit(case.id, case.token, [entry])
    except BaseException:
        gw.delete_or_gone(space, role, copy.id)
        raise
    emit([("card.promoted", {"card_id": copy.id, "promoted_from": card.id, "owner": role,
                              "tier": target})])
    return copy


def find_promotable(case: Case, space: CaseSpace, role: str, card_id: str) -> MemoryCard | None:
    """A card ``role`` may promote: its own, or tool output of one of its live runs."""
    gw = case.bureau.gateway
    card = gw.get(space, role, card_id)
    if card is not None:
        return card
    for rec in case.bureau.ledger.runs(case.id):
        if rec.role == role and rec.token == case.token and rec.ended_at is None:
            card = gw.get(space, run_owner(rec.run_id, role), card_id)
            if card is not None:
                return card
    return None


# -- session end and crash sweep -------------------------------------------------------------------
def delete_session_cards(gw: MemoryGateway, space: CaseSpace, role: str) -> int:
    """Delete a role's session-tier cards (long-term stays), verified with a fresh listing."""
    doomed = [c.id for c in gw.list(space, role) if c.tier == SESSION]
    deleted = sum(1 for cid in doomed if gw.delete(space, role, cid))
    left = [c.id for c in gw.list(space, role) if c.id in set(doomed)]
    if left:
        raise BoundaryViolation(f"{len(left)} session cards of {role} survived deletion.")
    return deleted


def sweep_runs(gw: MemoryGateway, ledger: BaseLedger,
               case_id: str | None = None) -> list[tuple[RunRecord, int]]:
    """Purge the ephemeral scope of every run whose process is gone; drop its row.

    Returns ``(run, cards deleted)`` per swept run. A run of a case that was deleted or reset
    since has no cards in the live namespace (the retired one is purged by ``check_store``).
    """
    swept = []
    for rec in ledger.runs(case_id):
        if owner_alive(rec.owner):
            continue
        case = ledger.get_case(rec.case_id)
        deleted = 0
        if case is not None and case.token == rec.token:
            deleted = gw.purge_owner(case.space, run_owner(rec.run_id, rec.role))
        if ledger.drop_run(rec.run_id):
            swept.append((rec, deleted))
    return swept


__all__ = ["Run", "check_run_id", "delete_session_cards", "find_promotable",
           "new_run_id", "promote_card", "sweep_runs"]
