"""One running case: its roles, their private spaces and the board.

Every read goes through :meth:`Case.retrieve`: the service decides the scopes
(:func:`bureau.scopes.readable_scopes`), the gateway fills in case and role filters, the mediator
may withhold or rewrite evidence, and only then does a responder phrase an answer from the cards
it was handed. Questions never widen scopes because scopes are never derived from questions.
"""

from __future__ import annotations

import math
import time
import uuid
from dataclasses import asdict
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..errors import (
    BoardNotWritableError,
    BureauError,
    CardRevokedError,
    InvalidArgumentError,
    UnknownCardError,
    UnknownCaseError,
    UnknownRoleError,
    UnknownRunError,
)
from ..ledger import CaseRecord, RunRecord
from ..mediation import DecidingMediator, released
from ..mediation.audit import COLUMNS as AUDIT_COLUMNS
from ..mediation.grants import Grant
from ..mediation.invocation import Invocation
from ..mediation.mediator import Mediation, MediationContext, memory_owner
from ..mediation.policy import ACTIONS
from ..model import BOARD, Answer, CaseSpace, Event, MemoryCard, RetrievalTrace, ScopeResult
from ..scenario import Scenario
from ..scopes import readable_scopes
from ..settings import check_limit, check_threshold
from ..task_scopes import (
    InboxPage,
    Membership,
    ScopeValue,
    ScopeWrite,
    TaskScope,
    WriteResult,
)
from ..text import MAX_QUESTION_CHARS, clean_name, clean_text, short_repr
from ..tiers import (
    LONG_TERM,
    ROLE_TIERS,
    SEARCHED_IN_RUN,
    SEARCHED_OUTSIDE_RUN,
    TRUSTED,
    Labels,
    check_tier,
)
from .publish import Publisher
from .runs import (
    Run,
    check_run_id,
    delete_session_cards,
    find_promotable,
    new_run_id,
    promote_card,
    sweep_runs,
)
from .shared_scopes import SharedScopes

if TYPE_CHECKING:
    import pandas as pd

    from .bureau import Bureau

Dead = dict[str, tuple[str, str]]
"""Revoked or expired cards of a case: ``{card_id: (owner, "revoked" | "expired")}``."""


class Case:
    """One running case: its roles, their private spaces and the board."""

    def __init__(self, bureau: Bureau, record: CaseRecord, scenario: Scenario) -> None:
        self.bureau = bureau
        self.id = record.case_id
        self.token = record.token
        self.scenario = scenario
        self.role_names: list[str] = list(scenario.role_names)

    def __repr__(self) -> str:
        return f"<Case {self.id} ({self.scenario.title}): roles {', '.join(self.role_names)}>"

    # -- helpers -----------------------------------------------------------------------------
    @property
    def space(self) -> CaseSpace:
        """This case's current store namespace; ``UnknownCaseError`` once it was deleted.

        Read from the ledger on every operation (one indexed read), so a delete or a reset made
        by any holder in any process takes effect for every other holder at once.
        """
        record = self.bureau.ledger.get_case(self.id)
        if record is None or record.token != self.token:
            raise UnknownCaseError(f"Case {self.id} no longer exists (it was deleted).")
        return record.space

    def _view(self) -> tuple[CaseSpace, Dead]:
        """The live namespace and the revoked or expired cards, in one ledger read.

        Every read path filters with it, so a revocation or an expiry made by any holder in any
        process hides the card everywhere at once (and after a restart: it lives in the ledger).
        """
        record, dead = self.bureau.ledger.case_view(self.id)
        if record is None or record.token != self.token:
            raise UnknownCaseError(f"Case {self.id} no longer exists (it was deleted).")
        return record.space, dead

    def _emit(self, type_: str, payload: dict[str, Any]) -> Event:
        return self._emit_many([(type_, payload)])[0]

    def _emit_many(self, items: list[tuple[str, dict[str, Any]]]) -> list[Event]:
        return self.bureau._emit_many(self.id, items, token=self.token)

    def role(self, name: object) -> str:
        """The scenario's own name for a role of this case (the board is not a role)."""
        if type(name) is str and name in self.role_names:
            return self.role_names[self.role_names.index(name)]
        if type(name) is str and name == BOARD:
            raise BoardNotWritableError(
                "The bulletin board is not a role: it cannot be whispered to or interrogated."
            )
        raise UnknownRoleError(
            f"Case {self.id} has no role {short_repr(name)}.",
            f"Roles in this case: {', '.join(self.role_names)}.",
        )

    def scopes_for(self, role: str) -> list[str]:
        """The only spaces a role may search (see :mod:`bureau.scopes`): its own, the board, and
        the shared task scopes it is an accepted member of (read from the ledger now)."""
        return self._scopes(self.role(role))[0]

    def _scopes(self, role: str) -> tuple[list[str], dict[str, frozenset[str]]]:
        """The role's readable scopes, and for its task scopes the ids of the cards showing
        current values (one ledger read, shared by the scope list and the search filter)."""
        shown = SharedScopes(self).view(role)
        return readable_scopes(role, tuple(shown)), shown

    def _seed(self) -> None:
        gw = self.bureau.gateway
        space = self.space
        gw.encoder.embed([mem.content for _, mem in self.scenario.seeds()])  # one batched pass
        events: list[tuple[str, dict[str, Any]]] = []
        for role, mems in self.scenario.memories.items():
            items = [(m.content, {"visibility": "private", "topic": m.topic, "kind": m.kind,
                                  "seed_key": m.key, **m.labels(),
                                  **Labels(LONG_TERM, "seed", TRUSTED).meta()}) for m in mems]
            for card in gw.add_many(space, role, items):
                events.append(("memory.created", _public_meta(card)))
        events.append(("case.seeded", {"cards": len(events)}))
        self._emit_many(events)

    # -- commands ----------------------------------------------------------------------------
    def whisper(
        self, role: str, text: str, topic: str = "general", kind: str = "note", *,
        sensitivity: str | None = None, info_type: str | None = None,
        abstraction: str | None = None, tier: str = "session",
    ) -> MemoryCard:
        """Write a fact into one role's private memory, optionally with the labels purpose-bound
        policies match on and a safe abstraction (see :mod:`bureau.mediation`).

        ``tier``: ``session`` (default; :meth:`end_session` deletes it) or ``long-term``. A
        whisper is trusted operator input (provenance ``whisper``)."""
        role = self.role(role)
        tier = check_tier(tier, ROLE_TIERS, "whisper tier")
        content = clean_text(text, what="whisper")
        topic = clean_name(topic, what="topic")
        kind = clean_name(kind, what="kind")
        meta: dict[str, Any] = {"visibility": "private", "topic": topic, "kind": kind}
        if sensitivity is not None:
            meta["sensitivity"] = clean_name(sensitivity, what="sensitivity")
        if info_type is not None:
            meta["info_type"] = clean_name(info_type, what="info_type")
        if abstraction is not None:
            meta["abstraction"] = clean_text(abstraction, what="abstraction")
        meta.update(Labels(tier, "whisper", TRUSTED).meta())
        card = self.bureau.gateway.add(self.space, role, content, meta)
        self._emit("memory.whispered", _public_meta(card))
        return card

    def retrieve(self, role: str, question: str, limit: int | None = None, *,
                 run: Run | None = None) -> RetrievalTrace:
        """Search exactly the role's private space and the board; the X-ray of that search.

        ``limit`` cards per scope (default: the ``search_limit`` setting). ``run``: one of this
        role's live runs, whose ephemeral scope is searched too (see :meth:`start_run`); without
        it no ephemeral scope is ever searched.
        """
        scope = self._run_scope(role, run)
        trace = self._search(role, question, limit, run_scope=scope)
        self._emit("retrieval.completed", trace.summary())
        return trace

    def _search(
        self, role: str, question: str, limit: int | None = None,
        view: tuple[CaseSpace, Dead] | None = None, run_scope: str | None = None,
        threshold: float | None = None,
    ) -> RetrievalTrace:
        # Shared task scopes the role is a member of now: owner id -> cards showing key values.
        scopes, shown = self._scopes(self.role(role))
        if run_scope is not None:  # a run's own ephemeral scope (trust tiers), searched first
            scopes = [run_scope, *scopes]
        q = clean_text(question, what="question", max_chars=MAX_QUESTION_CHARS)
        settings = self.bureau.settings
        limit = settings.search_limit if limit is None else check_limit(limit)
        gw = self.bureau.gateway
        space, dead = self._view() if view is None else view
        # Revoked and expired cards are dropped before anyone sees them; ask for as many more
        # as there are, so each scope still gets its own top-k of live cards.
        k = limit + sum(1 for owner, _ in dead.values() if owner in scopes)
        if shown:  # and for task-scope cards that show no current value (see shared_scopes.py)
            k += SharedScopes(self).hidden(space, shown)
        start = time.perf_counter()
        vector, embed_ms = gw.embed_query(q)
        if settings.query_per_scope:  # exact per-scope latency, one query each (slower)
            found = {}
            timing = {}
            for scope in scopes:
                found[scope], timing[scope] = gw.search_scope(space, scope, vector, k)
        else:  # each scope's own top-k; each scope reports the whole search's latency
            found, ms = gw.search_scopes(space, scopes, vector, k)
            timing = dict.fromkeys(scopes, ms)
        if dead or k != limit or shown:
            found = {sc: [c for c in cards if c.id not in dead
                          and (sc not in shown or c.id in shown[sc])][:limit]
                     for sc, cards in found.items()}
        thr = settings.relevance_threshold if threshold is None else threshold
        results = [
            ScopeResult(
                scope,
                tuple(c for c in found[scope] if (c.score or 0) >= thr),
                tuple(c for c in found[scope] if (c.score or 0) < thr),
                round(timing[scope], 3),
            )
            for scope in scopes
        ]
        trace = RetrievalTrace(
            request_id=uuid.uuid4().hex[:12],
            case_id=self.id,
            role=role,
            question=q,
            scopes=tuple(results),
            threshold=thr,
            embed_ms=round(embed_ms, 3),
            total_ms=round((time.perf_counter() - start) * 1000, 3),
            mode=self.bureau.responder.name,
            shared_query=not settings.query_per_scope,
            tiers=SEARCHED_IN_RUN if run_scope is not None else SEARCHED_OUTSIDE_RUN,
        )
        return trace

    def interrogate(
        self, role: str, question: str, *, requester: str | None = None,
        recipient: str = "same-agent", task: str | None = None, purpose: str | None = None,
        run: Run | None = None,
    ) -> Answer:
        """Ask a role a question; it answers only from evidence the service handed it.

        ``requester``, ``recipient``, ``task`` and ``purpose`` describe the invocation a
        purpose-bound mediator decides on (defaults: the role asks for itself, for an answer);
        without a policy they change nothing. :meth:`consult` also returns the decisions.
        ``run``: within one of this role's live runs (its ephemeral scope is searched too).
        """
        return self.consult(role, question, requester=requester, recipient=recipient,
                            task=task, purpose=purpose, run=run).answer

    def consult(
        self, role: str, question: str, *, requester: str | None = None,
        recipient: str = "same-agent", task: str | None = None, purpose: str | None = None,
        run: Run | None = None, limit: int | None = None, threshold: float | None = None,
    ) -> Mediation:
        """Interrogate, and return the invocation, one decision per relevant card (withhold,
        abstract or reveal, with reason codes) and the answer built from what was released.

        ``limit``: cards per scope the search may hand the mediator (default: the
        ``search_limit`` setting), as for :meth:`retrieve`. ``threshold``: the relevance a card
        needs to count as evidence (default: the ``relevance_threshold`` setting; -1 hands the
        mediator every card of the top-k: the leakage lab's headline reading). Neither widens
        what the role may search: both only choose among cards of its own scopes.
        """
        role = self.role(role)
        scope = self._run_scope(role, run)
        q = clean_text(question, what="question", max_chars=MAX_QUESTION_CHARS)
        limit = None if limit is None else check_limit(limit)
        threshold = None if threshold is None else check_threshold(threshold)
        inv = Invocation.make(self.id, role, q, requester=requester, recipient=recipient,
                              task=task, purpose=purpose)
        mediator = self.bureau.mediator
        if not isinstance(mediator, DecidingMediator):
            trace = self._search(role, q, limit, run_scope=scope, threshold=threshold)
            evidence = released(trace, mediator.mediate(self, role, trace))
            answer = self._answer(role, trace, evidence)
            self._emit_many(_answer_events(role, trace, answer))
            return Mediation(inv, (), answer)
        return self._mediated(inv, mediator, scope, limit, threshold)

    def _answer(self, role: str, trace: RetrievalTrace, evidence: list[MemoryCard]) -> Answer:
        answer = self.bureau.responder.respond(role, trace.question, evidence, trace)
        if not set(answer.cited) <= {c.id for c in evidence}:
            raise AssertionError("A responder cited a card it was not handed.")
        return answer

    def _mediated(self, inv: Invocation, mediator: DecidingMediator,
                  run_scope: str | None = None, limit: int | None = None,
                  threshold: float | None = None) -> Mediation:
        """Decide on ledger state read in one transaction; write budget, audit and events in
        one more. If another holder spent the same budget meanwhile, decide again."""
        ledger = self.bureau.ledger
        trace: RetrievalTrace | None = None
        for _ in range(8):
            now = time.time()
            record, dead, grants, spent = ledger.mediation_view(self.id, inv.requester, now)
            if record is None or record.token != self.token:
                raise UnknownCaseError(f"Case {self.id} no longer exists (it was deleted).")
            if trace is None:
                trace = self._search(inv.owner, inv.query, limit, view=(record.space, dead),
                                     threshold=threshold,
                                     run_scope=run_scope)
            hits = [c for c in trace.hits if c.id not in dead]
            decisions = mediator.decide(inv, hits, MediationContext(now, tuple(grants), spent))
            evidence = released(trace, [d.card for d in decisions if d.card is not None])
            answer = self._answer(inv.owner, trace, evidence)
            charges: dict[str, float] = {}
            for d in decisions:
                if d.cost:
                    charges[d.card_owner] = charges.get(d.card_owner, 0.0) + d.cost
            audit = [d.audit_entry(inv, mediator.policy) for d in decisions]
            events = ledger.commit_mediation(self.id, self.token, inv.requester, spent, charges,
                                             audit, _answer_events(inv.owner, trace, answer))
            if events is not None:
                self.bureau._notify(events)
                return Mediation(inv, tuple(decisions), answer, mediator.policy.version)
        raise BureauError(f"The disclosure budget of {inv.requester} kept changing under this "
                          "request (other holders spend it right now).", "Ask again.")

    def publish(self, role: str, card_id: str, ttl_s: float | None = None) -> MemoryCard:
        """Copy one of the role's private cards to the board (idempotent; see publish.py).

        ``ttl_s``: the board copy expires after that many seconds (every read path then stops
        returning it). A revoked or expired card cannot be published, nor can a card whose
        copy was revoked be published again: revocation is final.
        """
        role = self.role(role)
        _, dead = self._view()
        if str(card_id) in dead:
            raise UnknownCardError(f"{role} has no card {short_repr(card_id)} in case {self.id}.")
        ttl = None if ttl_s is None else _ttl(ttl_s)
        copy = self._publisher().publish(role, str(card_id))
        _, dead = self._view()
        if copy.id in dead:
            raise CardRevokedError(
                f"The board copy of card {card_id} was {dead[copy.id][1]}; it is not published "
                "again."
            )
        if ttl is not None:
            self.expire(copy.id, ttl)
        return copy

    def recover(self) -> dict[str, int]:
        """Finish or roll back interrupted publishes and retry scheduled cleanups."""
        return self._publisher().recover()

    def _publisher(self) -> Publisher:
        bureau = self.bureau
        return Publisher(bureau.gateway, bureau.ledger, self.space, self._emit,
                         bureau.settings.publish_lease_s)

    def pending_cleanups(self) -> int:
        """Board copies whose deletion failed and waits for ``recover()`` (lesson 03)."""
        self.space  # noqa: B018 - raises UnknownCaseError for a deleted case
        return len(self.bureau.ledger.cleanup_tasks(self.id))

    def reset(self, reseed: bool = False) -> int:
        """Delete every card of the case (verified), forget publications, optionally reseed.

        The case moves to a fresh namespace first, so a holder still writing to the old one
        (another process that missed the reset) cannot bring cards back.
        """
        old = self.bureau.ledger.bump_epoch(self.id, self.token)
        deleted = self.bureau.gateway.purge_space(old.space.store_id)
        self._emit("case.reset", {"deleted": deleted})
        if reseed:
            self._seed()
        return deleted

    # -- purpose-bound mediation: revocation, expiry, grants, audit (operator) ---------------
    def _find(self, card_id: object) -> MemoryCard:
        """Any card of this case, by id (the operator may name any space's card)."""
        space = self.space
        for scope in [*self.role_names, BOARD]:
            card = self.bureau.gateway.get(space, scope, str(card_id))
            if card is not None:
                return card
        raise UnknownCardError(f"Case {self.id} has no card {short_repr(card_id)}.")

    def revoke(self, card_id: str, reason: str = "owner-revoked") -> list[str]:
        """Revoke a card for good: no read path returns it again, in any process, after any
        restart. Revoking an original also revokes its board copy (a copy is derived from it);
        revoking a copy leaves the owner's original private. Returns the ids revoked."""
        card = self._find(card_id)
        reason = clean_name(reason, what="reason")
        ids = [card.id]
        if card.owner != BOARD:
            pub = self.bureau.ledger.publication(self.id, card.id)
            if pub is not None and pub.copy_id:
                ids.append(pub.copy_id)
        for cid in ids:
            owner = card.owner if cid == card.id else BOARD
            self.bureau.ledger.limit_card(
                self.id, self.token, cid, owner, revoke=True, reason=reason,
                audit=[{"kind": "revocation", "card_id": cid, "card_owner": owner,
                        "action": "revoke", "reasons": [reason]}])
        self._emit("card.revoked", {"card_ids": ids})
        return ids

    def expire(self, card_id: str, ttl_s: float) -> str:
        """Let a card expire ``ttl_s`` seconds from now (a published copy's TTL, or any card's);
        returns the expiry time (UTC, ISO). From then on it is treated like a revoked card."""
        card = self._find(card_id)
        at = time.time() + _ttl(ttl_s)
        self.bureau.ledger.limit_card(
            self.id, self.token, card.id, card.owner, expires_at=at,
            audit=[{"kind": "expiry", "card_id": card.id, "card_owner": card.owner,
                    "action": "expire", "expires_at": _iso(at), "reasons": ["ttl"]}])
        return str(_iso(at))

    def grant(
        self, card_id: str, *, requester: str | None = None, recipient: str | None = None,
        purpose: str | None = None, action: str = "reveal", ttl_s: float | None = None,
    ) -> Grant:
        """Approve ``action`` on one card for a requester/recipient/purpose (``None``: any),
        optionally for ``ttl_s`` seconds: what a rule with ``approval: true`` waits for."""
        card = self._find(card_id)
        if action not in ACTIONS[1:]:
            raise InvalidArgumentError(f"A grant allows 'abstract' or 'reveal', not "
                                       f"{short_repr(action)}.")
        now = time.time()
        grant = Grant(
            grant_id="g-" + uuid.uuid4().hex[:10], case_id=self.id, card_id=card.id,
            requester=None if requester is None else clean_name(requester, what="requester"),
            recipient=None if recipient is None else Invocation.make(
                self.id, "x", "x", recipient=recipient).recipient,
            purpose=None if purpose is None else clean_name(purpose, what="purpose"),
            action=action, created_at=now,
            expires_at=None if ttl_s is None else now + _ttl(ttl_s),
        )
        entry = {"kind": "grant", "card_id": card.id, "card_owner": memory_owner(card),
                 "action": "grant", "grant_id": grant.grant_id, "granted": action,
                 "requester": grant.requester, "recipient": grant.recipient,
                 "purpose": grant.purpose, "expires_at": _iso(grant.expires_at), "reasons": []}
        return self.bureau.ledger.add_grant(grant, self.token, [entry])

    def revoke_grant(self, grant_id: str) -> None:
        """Withdraw a grant at once, for every holder in every process."""
        gid = str(grant_id)
        match = [g for g in self.bureau.ledger.grants(self.id) if g.grant_id == gid]
        entry = {"kind": "grant", "action": "revoke-grant", "grant_id": gid,
                 "card_id": match[0].card_id if match else None, "reasons": []}
        self.bureau.ledger.revoke_grant(self.id, self.token, gid, [entry])

    def grants(self) -> list[Grant]:
        """Every grant of the case, with its state (``g.state(time.time())``)."""
        self.space  # noqa: B018 - raises UnknownCaseError for a deleted case
        return self.bureau.ledger.grants(self.id)

    def audit(self, verify: bool = True) -> pd.DataFrame:
        """The audit trail of this case as a table: one row per decision, revocation, expiry
        and grant, with the card's state now (``live``, ``revoked``, ``expired``).

        Operator view: ids, labels, actions, reason codes and the policy version; never card
        text or questions. ``verify`` first walks the whole hash chain (``AuditTamperedError``
        names the first altered entry).
        """
        import pandas as pd

        ledger = self.bureau.ledger
        if verify:
            ledger.verify_audit()
        _, dead = self._view()
        rows = []
        for e in ledger.audit_entries(self.id, self.token):
            row = {c: e.get(c) for c in AUDIT_COLUMNS}
            row["kind"] = e.get("kind", "decision")
            row["reasons"] = ", ".join(e.get("reasons") or [])
            cid = e.get("card_id")
            row["card_state"] = dead[cid][1] if cid in dead else ("live" if cid else None)
            rows.append(row)
        return pd.DataFrame(rows, columns=list(AUDIT_COLUMNS))

    # -- trust tiers: runs, promotion, session end (issue 14; rules in bureau.tiers) ----------
    def start_run(self, role: str) -> Run:
        """Start a run of ``role``: a scope for untrusted tool output that only this run's own
        retrievals search, deleted (verified) when the run ends -- also when its process dies
        (the next open sweeps it). Use ``with case.start_run(role) as run:``."""
        role = self.role(role)
        record = self.bureau.ledger.add_run(new_run_id(), self.id, self.token, role)
        self._emit("run.started", {"run_id": record.run_id, "role": role})
        return Run(self, record, self._emit_many)

    def run(self, run_id: str) -> Run:
        """Reattach to a live run of this case by id (also one started by another process)."""
        rid = check_run_id(run_id)
        self.space  # noqa: B018 - raises UnknownCaseError for a deleted case
        record = self.bureau.ledger.run_record(rid)
        if record is None or record.case_id != self.id or record.token != self.token:
            raise UnknownRunError(f"Case {self.id} has no run {short_repr(run_id)}.")
        handle = Run(self, record, self._emit_many)
        handle.check_live()  # RunEndedError while an end is under way
        return handle

    def runs(self) -> list[RunRecord]:
        """Live runs of this case (operator view: ids, roles, owning process, start time)."""
        self.space  # noqa: B018 - raises UnknownCaseError for a deleted case
        return [r for r in self.bureau.ledger.runs(self.id) if r.token == self.token]

    def sweep_runs(self) -> int:
        """End the runs of this case whose process died (what every open does); returns how
        many ephemeral cards were deleted."""
        swept = sweep_runs(self.bureau.gateway, self.bureau.ledger, self.id)
        if swept:
            self._emit_many([("run.ended", {"run_id": r.run_id, "role": r.role, "deleted": n,
                                            "promoted": 0, "swept": True}) for r, n in swept])
        return sum(n for _, n in swept)

    def _run_scope(self, role: str, run: Run | None) -> str | None:
        """The ephemeral scope a read may add: only a live run of this very role and case."""
        if run is None:
            return None
        role = self.role(role)
        if not isinstance(run, Run):
            raise InvalidArgumentError(f"run must be a Run from case.start_run, not "
                                       f"{short_repr(run)}.")
        if run.case_id != self.id or run.token != self.token or run.role != role:
            raise UnknownRunError(f"Run {run.id} is not a run of {role} in case {self.id}.")
        run.check_live()
        return run.owner_id

    def promote(self, role: str, card_id: str, *, tier: str = "long-term",
                approved_by: str | None = None) -> MemoryCard:
        """Copy one of ``role``'s cards (its own, or tool output of one of its live runs) one
        tier up into its own space, and audit it.

        Untrusted content (tool output) needs ``approved_by`` (who reviewed it), else
        ``PromotionNotApprovedError``; the copy keeps its trust, so it still reaches responders
        as data. Provenance ``promotion``, ``promoted_from`` = the original's id.
        """
        role = self.role(role)
        check_tier(tier, ROLE_TIERS, "promotion tier")
        approver = None if approved_by is None else clean_name(approved_by, what="approver")
        space, dead = self._view()
        card = None if str(card_id) in dead else find_promotable(self, space, role, str(card_id))
        if card is None:
            raise UnknownCardError(f"{role} has no card {short_repr(card_id)} in case {self.id}.")
        return promote_card(self, role, card, self._emit_many, tier=tier, approved_by=approver)

    def end_session(self, role: str) -> int:
        """End ``role``'s session: delete its session-tier cards (verified); long-term memory,
        the board and runs stay. Returns the number of cards deleted."""
        role = self.role(role)
        deleted = delete_session_cards(self.bureau.gateway, self.space, role)
        self._emit("session.ended", {"role": role, "deleted": deleted})
        return deleted

    # -- operator views (privileged: the bureau chief sees every space) ----------------------
    def spaces(self) -> dict[str, list[MemoryCard]]:
        """Every role's private cards and the board, oldest first."""
        cards = self.bureau.gateway.list(self.space)
        out: dict[str, list[MemoryCard]] = {r: [] for r in [*self.role_names, BOARD]}
        for c in cards:
            out.setdefault(c.owner, []).append(c)
        return out

    def seed_card(self, key: str) -> MemoryCard:
        """The card written for the scenario's opening memory ``key``."""
        role, _ = self.scenario.seed(key)
        for card in self.bureau.gateway.list(self.space, role):
            if card.seed_key == key:
                return card
        raise UnknownCardError(f"Case {self.id} has no card for seed memory {key!r}.")

    def knowers(self, question: str) -> list[str]:
        """Which roles would retrieve a relevant card for this question (no events)."""
        q = clean_text(question, what="question", max_chars=MAX_QUESTION_CHARS)
        gw = self.bureau.gateway
        space, dead = self._view()
        vector, _ = gw.embed_query(q)
        thr = self.bureau.settings.relevance_threshold
        lim = self.bureau.settings.search_limit + len(dead)
        scopes = SharedScopes(self)
        shown = scopes.view(None)  # every live task scope: owner id -> cards showing values
        lim += scopes.hidden(space, shown) if shown else 0

        def relevant(scope: str) -> bool:
            cards, _ = gw.search_scope(space, scope, vector, lim)
            return any((c.score or 0) >= thr for c in cards if c.id not in dead
                       and (scope not in shown or c.id in shown[scope]))

        board = relevant(BOARD)
        members = scopes.members_of() if shown else {}
        in_scopes = {r for owner in shown if relevant(owner) for r in members.get(owner, ())}
        return [r for r in self.role_names if board or r in in_scopes or relevant(r)]

    # -- role and outward read paths (see read_paths.py) --------------------------------------
    def cards(self, role: str) -> list[MemoryCard]:
        """What a role may list: its own private cards, the board and the current values of the
        task scopes it is an accepted member of (live ones)."""
        role = self.role(role)
        gw = self.bureau.gateway
        space, dead = self._view()
        own = [c for c in gw.list(space, role) + gw.list(space, BOARD) if c.id not in dead]
        shown = SharedScopes(self).view(role)
        return own + [c for owner, ids in shown.items() for c in gw.list(space, owner)
                      if c.id in ids and c.id not in dead]

    def card(self, role: str, card_id: str) -> MemoryCard:
        """Get one card as a role: its own or a board card, nothing else (nor a revoked one)."""
        role = self.role(role)
        space, dead = self._view()
        if str(card_id) in dead:  # the same refusal as for a card that is not there
            raise UnknownCardError(f"{role} has no card {short_repr(card_id)} in case {self.id}.")
        for scope in (role, BOARD):
            card = self.bureau.gateway.get(space, scope, str(card_id))
            if card is not None:
                return card
        for owner, ids in SharedScopes(self).view(role).items():  # its task scopes' values
            if str(card_id) in ids:
                card = self.bureau.gateway.get(space, owner, str(card_id))
                if card is not None:
                    return card
        raise UnknownCardError(f"{role} has no card {short_repr(card_id)} in case {self.id}.")

    def events(self, since: int = 0) -> list[Event]:
        """Outward events: ids, counts and timings, never card bodies, questions or answers."""
        if type(since) is not int or since < 0:
            raise InvalidArgumentError(f"since must be a whole number ≥ 0, not {short_repr(since)}.")
        self.space  # noqa: B018 - raises UnknownCaseError for a deleted case
        return self.bureau.ledger.events(self.id, since)

    def stage(self) -> dict[str, Any]:
        """The projector view: counts per role, the board, the last retrieval summary."""
        gw = self.bureau.gateway
        space, dead = self._view()
        board = [c for c in gw.list(space, BOARD) if c.id not in dead]
        hidden = {r: sum(1 for owner, _ in dead.values() if owner == r) for r in self.role_names}
        last = None
        event = self.bureau.ledger.last_event(self.id, "retrieval.completed")
        if event is not None:
            p = event.payload
            last = {k: p[k] for k in ("role", "searched_scopes", "hits_by_scope", "misses",
                                      "latency_ms", "mode")}
        return {
            "case_id": self.id,
            "title": self.scenario.title,
            "private_counts": {r: gw.count(space, r) - hidden[r] for r in self.role_names},
            "board": [
                {"id": c.id, "content": c.content, "topic": c.topic, "source_role": c.source_role,
                 "created_at": c.created_at}
                for c in board
            ],
            "last_retrieval": last,
            "mediation": self.bureau.ledger.audit_counts(self.id, self.token),
        }

    def export(self, role: str) -> dict[str, Any]:
        """A role's memory as JSON-ready data (its own space and the board)."""
        return {"case_id": self.id, "role": self.role(role),
                "cards": [asdict(c) for c in self.cards(role)]}

    # -- shared task scopes (issue 14; rules in bureau.task_scopes, work in shared_scopes.py) --
    def create_scope(self, owner: str, name: str) -> TaskScope:
        """Create a shared task scope owned by the role ``owner`` (its first member).

        Its cards are stored and labelled under ``task:<name>``; members' searches, card lists
        and exports include it. Names are case-wide and never reused (``ScopeExistsError``).
        """
        return SharedScopes(self).create(owner, name)

    def invite(self, name: str, by: str, role: str) -> TaskScope:
        """The owner ``by`` invites ``role``; it reads and writes nothing until it accepts."""
        return SharedScopes(self).change("invite", name, by, role)

    def accept(self, name: str, role: str) -> TaskScope:
        """Accept a pending invitation: from now on the scope is searched for ``role``."""
        return SharedScopes(self).change("accept", name, role)

    def decline(self, name: str, role: str) -> TaskScope:
        """Decline a pending invitation."""
        return SharedScopes(self).change("decline", name, role)

    def remove_member(self, name: str, by: str, role: str) -> TaskScope:
        """The owner ``by`` removes a member (or withdraws an invitation). It loses access on
        every read path at once, in every process (membership is read on every request)."""
        return SharedScopes(self).change("remove", name, by, role)

    def transfer_scope(self, name: str, by: str, to: str) -> TaskScope:
        """The owner ``by`` hands the scope to ``to``, who must be an accepted member."""
        return SharedScopes(self).change("transfer", name, by, to)

    def archive_scope(self, name: str, by: str) -> TaskScope:
        """The owner archives the scope: members still read it; no writes or membership
        changes from now on."""
        return SharedScopes(self).change("archive", name, by)

    def delete_scope(self, name: str, by: str) -> TaskScope:
        """The owner deletes the scope for everyone: its cards are purged (verified) and its
        name is not used again in this case."""
        return SharedScopes(self).change("delete", name, by)

    def scope_write(self, name: str, role: str, key: str, text: str, *,
                    read_version: int | None = None) -> WriteResult:
        """Write ``text`` under ``key`` as a member, with version ``(read_version or 0) + 1``.

        Pass the version you read (:meth:`scope_read`) to update; omit it for a first write. A
        write that loses against the key's current value (lower version, or an equal version
        with an earlier timestamp / lower writer id) comes back with ``stale=True`` and the
        winning version; it stays in :meth:`scope_history` and the writer's inbox.
        """
        return SharedScopes(self).write(name, role, key, text, read_version)

    def scope_read(self, name: str, role: str, key: str) -> ScopeValue:
        """A key's current value as a member reads it (text, version, writer, timestamp)."""
        return SharedScopes(self).read(name, role, key)

    def scope_keys(self, name: str, role: str) -> list[str]:
        """The keys written in a scope, sorted (members only)."""
        return SharedScopes(self).keys(name, role)

    def scope_history(self, name: str, role: str, key: str) -> list[ScopeWrite]:
        """Every write of a key, stale ones included, oldest first (members only)."""
        return SharedScopes(self).history(name, role, key)

    def scope_info(self, name: str, role: str) -> TaskScope:
        """A scope's owner, state, members and pending invitations (members only)."""
        return SharedScopes(self).info(name, role)

    def my_scopes(self, role: str) -> list[Membership]:
        """The role's memberships and pending invitations (of scopes not deleted)."""
        role = self.role(role)
        self.space  # noqa: B018 - raises UnknownCaseError for a deleted case
        return self.bureau.ledger.memberships(self.id, role)

    def inbox(self, role: str, cursor: int = 0, limit: int = 100) -> InboxPage:
        """The role's scope notices after ``cursor``, oldest first; pass ``next_cursor`` back
        to read on. Notices carry scope names, roles, keys and versions, never text."""
        return SharedScopes(self).inbox(role, cursor, limit)

    def task_scopes(self) -> list[TaskScope]:
        """Every task scope of the case, deleted ones too (operator view)."""
        self.space  # noqa: B018 - raises UnknownCaseError for a deleted case
        return self.bureau.ledger.task_scopes(self.id)


def _answer_events(role: str, trace: RetrievalTrace,
                   answer: Answer) -> list[tuple[str, dict[str, Any]]]:
    """Both events of an answered question (one ledger transaction: one commit, not two)."""
    return [
        ("retrieval.completed", trace.summary()),
        ("answer.completed",
         {"request_id": trace.request_id, "role": role, "known": answer.known,
          "cited": list(answer.cited), "responder": answer.responder,
          "fallback_reason": answer.fallback_reason}),
    ]


def _ttl(value: object) -> float:
    """A time to live in seconds: a finite number > 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or value <= 0:
        raise InvalidArgumentError(f"ttl_s must be a number of seconds > 0, not "
                                   f"{short_repr(value)}.")
    return float(value)


def _iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC).isoformat(
        timespec="seconds")


def _public_meta(card: MemoryCard) -> dict[str, Any]:
    """What an outward event may say about a new card: which card, whose, and nothing typed.

    A private card's topic and kind are typed text and its seed key names the fact, so events
    (read by the stage and every process) carry none of them.
    """
    return {"card_id": card.id, "owner": card.owner, "visibility": card.visibility}
