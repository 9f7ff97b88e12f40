"""One running case: a thin door to its rooms, and the operator's powers.

Whoever holds a ``Case`` is the operator (the bureau chief): trusted, able to whisper into any
role, read every space, revoke, expire, grant, reset, and hand out handles. An agent never holds
the case; it holds ``case.agent(role)`` (or an outsider ``case.requester(name)``), whose every
operation fills in its own identity (:mod:`bureau.service.agent`).

The work is done by one room per feature (:mod:`bureau.service.rooms`), each built from one
narrow :class:`~bureau.service.rooms.CaseContext`: ``reading`` (what a role may see),
``writing`` (new private cards), ``disclosure`` (consults, budget, revocation, grants, audit),
``publishing``, ``runs`` (trust tiers) and ``task_scopes``. The door validates a role once and
forwards.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ..agents import ROLE, Principals
from ..errors import InvalidArgumentError, UnknownCardError
from ..ledger import CaseRecord
from ..mediation import DecidingMediator
from ..mediation.derivation import TOMBSTONE_OWNER
from ..mediation.grants import Grant
from ..model import BOARD, Answer, CaseSpace, Event, MemoryCard, RetrievalTrace
from ..scenario import Scenario
from ..settings import check_threshold
from ..text import MAX_WHOLE, short_repr
from .agent import Agent, Requester
from .outward import observed
from .rooms import CaseContext, Disclosure, Publishing, Reading, Runs, TaskScopes
from .rooms.context import live
from .rooms.writing import Writing

if TYPE_CHECKING:
    import pandas as pd

    from ..ledger.base import BaseLedger
    from ..mediation import Mediator
    from ..responders import Responder
    from ..settings import Settings
    from ..storage.gateway import MemoryGateway


class BureauParts(Protocol):
    """What a case needs of the bureau that opened it (``Bureau`` itself, in practice): the
    store, the ledger, the current settings and voices, and where events go."""

    gateway: MemoryGateway
    ledger: BaseLedger
    settings: Settings
    mediator: Mediator
    responder: Responder

    def record_events(self, case_id: str, items: list[tuple[str, dict[str, Any]]],
                      token: Any = ...) -> list[Event]: ...

    def notify(self, events: list[Event]) -> list[Event]: ...


class Case:
    """One running case: its roles, their private spaces, the board, and its rooms."""

    def __init__(self, bureau: BureauParts, record: CaseRecord, scenario: Scenario) -> None:
        self.bureau = bureau
        self.id = record.case_id
        self.token = record.token
        self.scenario = scenario
        self.role_names: list[str] = list(scenario.role_names)
        ctx = CaseContext(
            case_id=self.id, token=self.token, roles=tuple(self.role_names),
            gateway=bureau.gateway, cases=bureau.ledger.cases, limits=bureau.ledger.mediation,
            settings=lambda: bureau.settings, mediator=lambda: bureau.mediator,
            responder=lambda: bureau.responder,
            record_events=lambda items: bureau.record_events(self.id, items, token=self.token),
            notify=bureau.notify,
        )
        self._ctx = ctx
        ledger = bureau.ledger
        self.task_scopes = TaskScopes(ctx, ledger.task_scope_records, ledger.run_records)
        """Shared task scopes (operator view; an agent uses ``agent.scopes``)."""
        self.reading = Reading(ctx, self.task_scopes)
        self.writing = Writing(ctx)
        self.disclosure = Disclosure(ctx, self.reading, self._principals, ledger.mediation,
                                     ledger.publishes)
        """Consults, revocation, expiry, grants and the audit trail."""
        self.task_scopes.forget = self.disclosure.forget  # a removed member's values
        self.publishing = Publishing(ctx, self.disclosure, ledger.publishes)
        self.runs = Runs(ctx, self.reading, self.disclosure, ledger.run_records,
                         ledger.mediation)
        """Runs, promotion and session ends (trust tiers)."""

    def __repr__(self) -> str:
        return f"<Case {self.id} ({self.scenario.title}): roles {', '.join(self.role_names)}>"

    @property
    def space(self) -> CaseSpace:
        """This case's current store namespace; ``UnknownCaseError`` once it was deleted."""
        return self._ctx.space()

    def _principals(self) -> Principals:
        declared = [(p.name, p.title) for p in self.scenario.principals]
        approvers: tuple[str, ...] = ()
        mediator = self.bureau.mediator
        if isinstance(mediator, DecidingMediator):
            declared += [(name, name) for name in mediator.policy.principals]
            approvers = mediator.policy.approvers
        return Principals(self.role_names, declared, approvers)

    # -- identities ----------------------------------------------------------------------------
    def role(self, name: object) -> str:
        """The scenario's own name for a role of this case (the board is not a role)."""
        return self._ctx.role(name)

    def agent(self, role: str, *, threshold: float | None = None) -> Agent:
        """The handle an agent acting as ``role`` holds: every operation through it is that
        role's, and none takes a role, a requester or a case.

        ``threshold``: the relevance a card needs to count as evidence in this handle's
        consults (default: the setting); the operator fixes it here, the agent cannot. -1 hands
        the mediator every card of the top-k (the leakage lab's headline reading).
        """
        principal = self.disclosure.principal(self._ctx.role(role), kind=ROLE)
        threshold = None if threshold is None else check_threshold(threshold)
        self._ctx.space()  # a deleted case hands out no handle (UnknownCaseError), not a dead one
        return Agent(principal, self.id, reading=self.reading, writing=self.writing,
                     disclosure=self.disclosure, publishing=self.publishing, runs=self.runs,
                     task_scopes=self.task_scopes, threshold=threshold)

    def requester(self, name: str) -> Requester:
        """The handle of a requester that is not a role: an outsider the scenario or the policy
        declares (``principals:``), or the chief; it may only consult. Any other name is
        refused (``UnknownPrincipalError``): an undeclared name gets no budget of its own."""
        principal = self.disclosure.principal(name)
        if principal.is_role:
            return self.agent(principal.name)
        self._ctx.space()  # as for an agent's handle
        return Requester(principal, self.id, self.disclosure)

    def scopes_for(self, role: str) -> list[str]:
        """The only spaces a role may search (see :mod:`bureau.scopes`): its own, the board, and
        the shared task scopes it is an accepted member of (read from the ledger now)."""
        return self.reading.scopes_for(self._ctx.role(role))

    # -- the operator's commands ---------------------------------------------------------------
    def whisper(
        self, role: str, text: str, topic: str = "general", kind: str = "note", *,
        sensitivity: str | None = None, info_type: str | None = None,
        abstraction: str | None = None, tier: str = "session",
    ) -> MemoryCard:
        """Write a fact into one role's private memory, optionally with the labels purpose-bound
        policies match on and a safe abstraction (see :mod:`bureau.mediation`).

        ``tier``: ``session`` (default; :meth:`end_session` deletes it) or ``long-term``. A
        whisper is trusted operator input (provenance ``whisper``)."""
        return self.writing.write(role, text, topic, kind, provenance="whisper",
                                  event="memory.whispered", sensitivity=sensitivity,
                                  info_type=info_type, abstraction=abstraction, tier=tier)

    def retrieve(self, role: str, question: str, limit: int | None = None) -> RetrievalTrace:
        """The chief searches as ``role``: exactly its own space, the board and its task scopes
        (``case.agent(role).recall`` is the same search in the agent's own hands)."""
        return self.reading.retrieve(self._ctx.role(role), question, limit)

    def interrogate(self, role: str, question: str) -> Answer:
        """The chief makes ``role`` answer from its own evidence (requester: the role itself,
        for itself) -- the same as ``case.agent(role).ask(question)``, audited alike, but an
        operator's command: not counted against the role's quotas."""
        role = self._ctx.role(role)
        principal = self.disclosure.principal(role, kind=ROLE)
        return self.disclosure.consult(principal, role, question, metered=False).answer

    def publish(self, role: str, card_id: str, ttl_s: float | None = None) -> MemoryCard:
        """Copy one of the role's private cards to the board (idempotent; see publish.py);
        ``ttl_s``: the copy expires then. Revocation is final: a revoked card (or one whose copy
        was revoked) is not published again."""
        return self.publishing.publish(role, card_id, ttl_s)

    def recover(self) -> dict[str, int]:
        """Finish or roll back interrupted publishes and retry scheduled cleanups."""
        return self.publishing.recover()

    def reset(self, reseed: bool = False) -> int:
        """Delete every card of the case (verified), forget publications, optionally reseed.

        The case moves to a fresh namespace first, so a holder still writing to the old one
        (another process that missed the reset) cannot bring cards back.
        """
        if type(reseed) is not bool:
            raise InvalidArgumentError(f"reseed must be True or False, not {short_repr(reseed)}.")
        old = self.bureau.ledger.cases.bump_epoch(self.id, self.token)
        deleted = self.bureau.gateway.purge_space(old.space.store_id)
        self._ctx.emit("case.reset", {"deleted": deleted})
        if reseed:
            self.writing.seed(self.scenario)
        return deleted

    def promote(self, role: str, card_id: str, *, tier: str = "long-term",
                approved_by: str | None = None) -> MemoryCard:
        """Copy one of ``role``'s cards (its own, or tool output of one of its live runs) one
        tier up, audited; untrusted content needs ``approved_by`` (see :class:`Runs`)."""
        return self.runs.promote(role, card_id, tier=tier, approved_by=approved_by)

    def end_session(self, role: str) -> int:
        """End ``role``'s session: delete its session-tier cards (verified)."""
        return self.runs.end_session(role)

    def revoke(self, card_id: str, reason: str = "owner-revoked") -> list[str]:
        """Revoke a card for good, on every read path, in every process, after any restart
        and any repair, with every copy derived from it (board, promoted and task-scope
        copies); ``card_id`` may name a task-scope value (``WriteResult.card_id``). Returns the
        ids revoked."""
        return self.disclosure.revoke(card_id, reason)

    def forget(self, card_id: str) -> list[str]:
        """Forget a card for good: revoked like :meth:`revoke` (with every board, promoted and
        task-scope copy), and with sealing on (the default) its key and theirs destroyed, so no
        copy the database's files keep -- redo log, old blocks, backups -- can be read again.
        Returns the ids forgotten."""
        return self.disclosure.forget(card_id)

    def expire(self, card_id: str, ttl_s: float) -> str:
        """Let a card and every copy derived from it expire ``ttl_s`` seconds from now;
        returns the expiry time (UTC, ISO)."""
        return self.disclosure.expire(card_id, ttl_s)

    def grant(
        self, card_id: str, *, requester: str | None = None, recipient: str | None = None,
        purpose: str | None = None, action: str = "reveal", ttl_s: float | None = None,
    ) -> Grant:
        """Approve ``action`` on one card for a principal / recipient / purpose (``None``:
        any), optionally for ``ttl_s`` seconds; ``requester`` must be a principal of the case."""
        return self.disclosure.grant(card_id, requester=requester, recipient=recipient,
                                     purpose=purpose, action=action, ttl_s=ttl_s)

    def revoke_grant(self, grant_id: str) -> None:
        """Withdraw a grant at once, for every holder in every process."""
        self.disclosure.revoke_grant(grant_id)

    # -- the operator's views (privileged: the chief sees every space) ------------------------
    def audit(self, verify: bool = True) -> pd.DataFrame:
        """The audit trail as a table (ids, labels, actions, reasons; never text)."""
        return self.disclosure.audit(verify)

    def spaces(self) -> dict[str, list[MemoryCard]]:
        """Every role's private cards and the board, oldest first: the cards that are alive.
        A revoked or expired card is gone from this view at its time, like from every read
        path, not when the next write sweeps its text away."""
        space, dead = self._ctx.view()
        out: dict[str, list[MemoryCard]] = {r: [] for r in [*self.role_names, BOARD]}
        for c in self.bureau.gateway.list(space):
            if c.owner != TOMBSTONE_OWNER and live(c, dead):  # tombstones: ids, no memory
                out.setdefault(c.owner, []).append(c)
        return out

    def seed_card(self, key: str) -> MemoryCard:
        """The card written for the scenario's opening memory ``key``."""
        role, _ = self.scenario.seed(key)
        for card in self.bureau.gateway.list(self.space, role):
            if card.seed_key == key:
                return card
        raise UnknownCardError(f"Case {self.id} has no card for seed memory {short_repr(key)}.")

    def knowers(self, question: str) -> list[str]:
        """Which roles would retrieve a relevant card for this question (no events)."""
        return self.reading.knowers(question)

    def cards(self, role: str) -> list[MemoryCard]:
        """What ``role`` may list (the chief viewing as that role)."""
        return self.reading.cards(self._ctx.role(role))

    def card(self, role: str, card_id: str) -> MemoryCard:
        """One card as ``role`` may read it; any other id: the same ``UnknownCardError``."""
        return self.reading.card(self._ctx.role(role), card_id)

    # -- outward views (anyone: ids, counts and timings, never text) ---------------------------
    def events(self, since: int = 0) -> list[Event]:
        """Outward events: ids, counts and timings, never card bodies, questions or answers,
        and no task scope, member, invitee or run id (:mod:`bureau.service.outward`); the
        operator's full record is ``bureau.event_log(case_id)``."""
        if type(since) is not int or not 0 <= since <= MAX_WHOLE:
            raise InvalidArgumentError(f"since must be a whole number ≥ 0, not {short_repr(since)}.")
        self._ctx.space()
        return [observed(e) for e in self.bureau.ledger.event_log.read(self.id, since)]

    def stage(self) -> dict[str, Any]:
        """The projector view: counts per role, the board, the last retrieval summary."""
        gw = self.bureau.gateway
        space, dead = self._ctx.view()
        board = [c for c in gw.list(space, BOARD) if live(c, dead)]
        # What each role holds and may still read (revoked: erased). The stage redraws on every
        # event, so with nothing revoked or expired a count query per role is enough; otherwise
        # each card's own id and its source link must be checked, which needs the cards.
        counts = {r: gw.count(space, r) if not dead else
                  sum(1 for c in gw.list(space, r) if live(c, dead)) for r in self.role_names}
        last = None
        event = self.bureau.ledger.event_log.last(self.id, "retrieval.completed")
        if event is not None:
            p = observed(event).payload
            last = {k: p[k] for k in ("role", "searched_scopes", "hits_by_scope", "misses",
                                      "latency_ms", "mode")}
        return {
            "case_id": self.id,
            "title": self.scenario.title,
            "private_counts": counts,
            "board": [
                {"id": c.id, "content": c.content, "topic": c.topic, "source_role": c.source_role,
                 "created_at": c.created_at}
                for c in board
            ],
            "last_retrieval": last,
            "mediation": self.disclosure.counts(),
        }
