"""The runs room: runs, promotion and session ends, the service side of the trust tiers.

(Vocabulary and rules in :mod:`bureau.tiers`.)

A **run** is one role's task: whatever its tools fetch lands in the run's ephemeral scope (store
owner ``run:<run_id>:<role>``), which only that run's own retrievals search. Ending the run
deletes the scope, verified with the store's own count, after an optional
:class:`~bureau.tiers.PromotionRule` kept what it matched. Every ephemeral card has a ledger row
to be swept by: the ``runs`` row is written before the first card, names the process that owns
the run, and goes only once the cards are verified gone. A run whose process died (killed
mid-run) is swept by the next ``Bureau.open``.

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

from ...errors import (
    BoundaryViolation,
    CardRevokedError,
    InvalidArgumentError,
    PromotionNotApprovedError,
    RunEndedError,
    UnknownCardError,
    UnknownRunError,
)
from ...ledger import RunRecord, owner_alive
from ...model import Answer, CaseSpace, MemoryCard, RetrievalTrace
from ...quotas import over_cap
from ...text import card_id_text, clean_name, clean_text, short_repr
from ...tiers import (
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
from .context import CaseContext, live

if TYPE_CHECKING:
    from ...ledger.cases import CaseStore
    from ...ledger.mediation import MediationStore
    from ...ledger.runs import RunStore
    from ...mediation.mediator import Mediation
    from ...storage.gateway import MemoryGateway
    from .disclosure import Disclosure
    from .reading import Reading

EmitMany = Callable[[list[tuple[str, dict[str, Any]]]], Any]
"""Records outward events of the case."""

RUN_ID_RE = re.compile(r"[0-9a-f]{12}")


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def check_run_id(run_id: object) -> str:
    if type(run_id) is not str or not RUN_ID_RE.fullmatch(run_id):
        raise UnknownRunError(f"{short_repr(run_id)} is not a run id.")
    return run_id


class Run:
    """One role's run: its ephemeral scope, its retrievals, its end.

    Use it as a context manager (``with agent.start_run() as run:``) so the run ends -- and its
    ephemeral cards go -- however the block is left. After the end every method raises
    :class:`~bureau.errors.RunEndedError` and changes nothing. Whoever holds the run acts as its
    role: every question asked through it is that role's.
    """

    def __init__(self, room: Runs, record: RunRecord) -> None:
        self._room = room
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
        return self._room.ctx.gateway

    @property
    def _records(self) -> RunStore:
        return self._room.store

    def check_live(self) -> RunRecord:
        """The run's ledger row while the run accepts work; ``RunEndedError`` after its end."""
        rec = None if self._ended else self._records.get(self.id)
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
        space = self._room.ctx.space()
        cap = self._room.ctx.quotas().run_tool_outputs  # refused before the card is written
        if cap is not None and self._gw.count(space, self.owner_id) >= cap:
            raise over_cap(self.role, "run_tool_outputs", cap, "tool outputs in one run")
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
        return self._gw.list(self._room.ctx.space(), self.owner_id)

    def retrieve(self, question: str, limit: int | None = None) -> RetrievalTrace:
        """Search this run's ephemeral scope, the role's own space and the board."""
        return self._room.reading.retrieve(self.role, question, limit,
                                           run_scope=self._room.scope_of(self.role, self))

    def interrogate(self, question: str) -> Answer:
        """Ask the role within this run (its tool output is evidence, handed over as data)."""
        return self.consult(question).answer

    def consult(self, question: str, *, recipient: str = "same-agent", task: str | None = None,
                purpose: str | None = None) -> Mediation:
        """The role consults its own memory within this run (requester: the run's role)."""
        return self._room.disclosure.consult(
            self._room.disclosure.principal(self.role), self.role, question,
            recipient=recipient, task=task, purpose=purpose,
            run_scope=self._room.scope_of(self.role, self))

    def promote(self, card_id: str, *, tier: str = "long-term") -> MemoryCard:
        """Keep one of this role's trusted cards a tier up. Whoever holds the run acts as its
        role, and a role never approves its own untrusted content: tool output needs the
        operator's ``case.promote(role, card_id, approved_by=...)`` or a promotion rule."""
        self.check_live()
        return self._room.promote(self.role, card_id, tier=tier)

    def end(self, promote: PromotionRule | None = None) -> int:
        """End the run: apply ``promote`` to its tool output, then delete every ephemeral card
        (verified in storage) and the run's row. Returns the number of cards deleted."""
        if promote is not None and not isinstance(promote, PromotionRule):
            raise InvalidArgumentError(f"promote must be a PromotionRule or None, not "
                                       f"{short_repr(promote)}.")
        self.check_live()
        space = self._room.ctx.space()
        promoted = []
        if promote is not None:
            for card in self._gw.list(space, self.owner_id):
                if promotable(card) and promote.matches(card):
                    promoted.append(self._room._promote_card(self.role, card, rule=promote))
        if self._records.end(self.id) is None:
            self._ended = True
            raise RunEndedError(f"Run {self.id} of {self.role} was ended elsewhere meanwhile.")
        deleted = self._gw.purge_owner(space, self.owner_id)
        self._records.drop(self.id)
        self._ended = True
        self.deleted, self.promoted = deleted, tuple(promoted)
        self._room.ctx.record_events([("run.ended", {
            "run_id": self.id, "role": self.role, "deleted": deleted,
            "promoted": len(promoted)})])
        return deleted


# -- session end and crash sweep -------------------------------------------------------------------
def delete_session_cards(gw: MemoryGateway, space: CaseSpace, role: str) -> int:
    """Delete a role's session-tier cards (long-term stays), verified with a fresh listing."""
    doomed = [c.id for c in gw.list(space, role) if c.tier == SESSION]
    deleted = sum(1 for cid in doomed if gw.delete(space, role, cid))
    left = [c.id for c in gw.list(space, role) if c.id in set(doomed)]
    if left:
        raise BoundaryViolation(f"{len(left)} session cards of {role} survived deletion.")
    return deleted


def sweep_runs(gw: MemoryGateway, runs: RunStore, cases: CaseStore,
               case_id: str | None = None) -> list[tuple[RunRecord, int]]:
    """Purge the ephemeral scope of every run whose process is gone; drop its row.

    Returns ``(run, cards deleted)`` per swept run. A run of a case that was deleted or reset
    since has no cards in the live namespace (the retired one is purged by ``check_store``).
    """
    swept = []
    for rec in runs.all(case_id):
        if owner_alive(rec.owner):
            continue
        case = cases.get(rec.case_id)
        deleted = 0
        if case is not None and case.token == rec.token:
            deleted = gw.purge_owner(case.space, run_owner(rec.run_id, rec.role))
        if runs.drop(rec.run_id):
            swept.append((rec, deleted))
    return swept


class Runs:
    """The runs room of one case: runs, promotion one tier up, the end of a role's session."""

    def __init__(self, ctx: CaseContext, reading: Reading, disclosure: Disclosure,
                 store: RunStore, audit: MediationStore) -> None:
        self.ctx = ctx
        self.reading = reading
        self.disclosure = disclosure
        self.store = store
        """The ledger's run rows."""
        self._audit = audit

    def start(self, role: str) -> Run:
        """Start a run of ``role``: a scope for untrusted tool output that only this run's own
        retrievals search, deleted (verified) when the run ends -- also when its process dies
        (the next open sweeps it). Use ``with case.runs.start(role) as run:``."""
        role = self.ctx.role(role)
        record = self.store.add(new_run_id(), self.ctx.case_id, self.ctx.token, role)
        self.ctx.emit("run.started", {"run_id": record.run_id, "role": role})
        return Run(self, record)

    def get(self, run_id: object, role: str | None = None) -> Run:
        """Reattach to a live run of this case by id (also one another process started).

        ``role``: only a run of that role (an agent's handle passes its own, so a run id read
        off the events does not open another role's run); the same refusal either way."""
        rid = check_run_id(run_id)
        self.ctx.space()
        record = self.store.get(rid)
        if record is None or record.case_id != self.ctx.case_id \
                or record.token != self.ctx.token or (role is not None and record.role != role):
            raise UnknownRunError(f"Case {self.ctx.case_id} has no run {short_repr(run_id)}.")
        handle = Run(self, record)
        handle.check_live()  # RunEndedError while an end is under way
        return handle

    def live(self) -> list[RunRecord]:
        """Live runs of this case (operator view: ids, roles, owning process, start time)."""
        self.ctx.space()
        return [r for r in self.store.all(self.ctx.case_id) if r.token == self.ctx.token]

    def sweep(self) -> int:
        """End the runs of this case whose process died (what every open does); returns how
        many ephemeral cards were deleted."""
        swept = sweep_runs(self.ctx.gateway, self.store, self.ctx.cases, self.ctx.case_id)
        if swept:
            self.ctx.record_events([("run.ended", {"run_id": r.run_id, "role": r.role,
                                                   "deleted": n, "promoted": 0, "swept": True})
                                    for r, n in swept])
        return sum(n for _, n in swept)

    def scope_of(self, role: str, run: Run | None) -> str | None:
        """The ephemeral scope a read may add: only a live run of this very role and case."""
        if run is None:
            return None
        if not isinstance(run, Run):
            raise InvalidArgumentError(f"run must be a Run from start_run, not "
                                       f"{short_repr(run)}.")
        if run.case_id != self.ctx.case_id or run.token != self.ctx.token or run.role != role:
            raise UnknownRunError(f"Run {run.id} is not a run of {role} in case "
                                  f"{self.ctx.case_id}.")
        run.check_live()
        return run.owner_id

    # -- promotion and session end -----------------------------------------------------------
    def promote(self, role: str, card_id: object, *, tier: str = "long-term",
                approved_by: str | None = None) -> MemoryCard:
        """Copy one of ``role``'s cards (its own, or tool output of one of its live runs) one
        tier up into its own space, and audit it.

        Untrusted content (tool output) needs ``approved_by`` (who reviewed it), else
        ``PromotionNotApprovedError``; the copy keeps its trust, so it still reaches responders
        as data. Provenance ``promotion``, ``promoted_from`` = the original's id.
        """
        role = self.ctx.role(role)
        check_tier(tier, ROLE_TIERS, "promotion tier")
        approver = None if approved_by is None else clean_name(approved_by, what="approver")
        if approver is not None:
            principals = self.disclosure.principals()
            who = principals.get(approver)
            if not principals.may_approve(who, role):
                raise PromotionNotApprovedError(
                    f"{approver} may not approve promoting {role}'s untrusted content"
                    + (" (its own)" if approver == role else "") + ".",
                    "The chief approves, or a principal the policy names under `approvers:`.")
        space, dead = self.ctx.view()
        cid = card_id_text(card_id)
        card = None if cid is None or cid in dead else self._promotable(space, role, cid)
        if card is None:
            raise UnknownCardError(f"{role} has no card {short_repr(card_id)} in case "
                                   f"{self.ctx.case_id}.")
        return self._promote_card(role, card, tier=tier, approved_by=approver)

    def _promotable(self, space: CaseSpace, role: str, card_id: str) -> MemoryCard | None:
        """A card ``role`` may promote: its own, or tool output of one of its live runs."""
        gw = self.ctx.gateway
        card = gw.get(space, role, card_id)
        if card is not None:
            return card
        for rec in self.store.all(self.ctx.case_id):
            if rec.role == role and rec.token == self.ctx.token and rec.ended_at is None:
                card = gw.get(space, run_owner(rec.run_id, role), card_id)
                if card is not None:
                    return card
        return None

    def _promote_card(self, role: str, card: MemoryCard, *, tier: str = "long-term",
                     approved_by: str | None = None,
                     rule: PromotionRule | None = None) -> MemoryCard:
        """Copy ``card`` one tier up into ``role``'s space and audit it (approver or rule).

        Refuses untrusted content with neither; a card already at or above ``tier`` is refused
        too (promotion only moves content up). Promoting the same card to the same tier again
        returns the existing copy. The copy is written first and deleted again if the audit
        entry cannot be written, so no promotion exists without its entry.
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
        gw = self.ctx.gateway
        space, dead = self.ctx.view()
        if not live(card, dead):
            raise CardRevokedError(f"Card {card.id} (or the card it was copied from) was "
                                   "revoked or expired; it is not promoted.")
        for existing in gw.list(space, role, where={"promoted_from": card.id}):
            if existing.tier == target:
                if existing.id in dead:
                    raise CardRevokedError(f"The promoted copy of card {card.id} was "
                                           f"{dead[existing.id][1]}; it is not promoted again.")
                return existing
        meta = {"visibility": "private", "topic": card.topic, "kind": card.kind,
                "sensitivity": card.sensitivity, "info_type": card.info_type,
                "abstraction": card.abstraction, "promoted_from": card.id,
                "tool_source": card.tool_source, **Labels(target, "promotion", lab.trust).meta()}
        copy = gw.add(space, role, card.content, meta)
        self.ctx.inherit(card.id, [(copy.id, role)])  # a limit set meanwhile reaches the copy
        reason = (f"rule:{rule.name}" if rule is not None
                  else f"approved-by:{approved_by}" if approved_by is not None else "operator")
        entry = {"kind": "promotion", "action": "promote", "card_id": copy.id,
                 "card_owner": role, "promoted_from": card.id, "from_owner": card.owner,
                 "from_tier": lab.tier, "tier": target, "provenance": lab.provenance,
                 "trust": lab.trust, "approved_by": approved_by,
                 "rule": None if rule is None else rule.name,
                 "rule_description": None if rule is None else rule.description,
                 "reasons": [reason]}
        try:
            self._audit.append_audit(self.ctx.case_id, self.ctx.token, [entry])
        except BaseException:
            gw.delete_or_gone(space, role, copy.id)
            raise
        self.ctx.record_events([("card.promoted", {"card_id": copy.id, "promoted_from": card.id,
                                                   "owner": role, "tier": target})])
        return copy

    def end_session(self, role: str) -> int:
        """End ``role``'s session: delete its session-tier cards (verified); long-term memory,
        the board and runs stay. Returns the number of cards deleted."""
        role = self.ctx.role(role)
        deleted = delete_session_cards(self.ctx.gateway, self.ctx.space(), role)
        self.ctx.emit("session.ended", {"role": role, "deleted": deleted})
        return deleted


__all__ = ["Run", "Runs", "check_run_id", "delete_session_cards", "new_run_id", "sweep_runs"]
