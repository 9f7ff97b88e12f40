"""The disclosure room: who asked whose memory for what, what was released, and what is final.

A consult is an :class:`~bureau.mediation.invocation.Invocation` whose requester is a
:class:`~bureau.agents.Principal` the caller *holds* (a handle built it from the case's closed
set of principals), never a name it typed; the disclosure budget, grants and audit entries are
keyed on that principal. A policy mediator decides on ledger state read in one transaction and
the budget, audit and events are written in one more (if another holder spent the same budget
meanwhile, it decides again); the answer is built once, afterwards, from what was released.
Without a policy a role may still use its own memory and the board, and nothing private of
another role crosses (the built-in closed policy decides, and is audited like any other).

Revocation, expiry and grants are the operator's and live here too, because every read path
and every consult reads them.
"""

from __future__ import annotations

import math
import re
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ...agents import OPERATOR, Principal, Principals
from ...errors import (
    BureauError,
    InvalidArgumentError,
    QuotaExceededError,
    UnknownCardError,
    UnknownGrantError,
)
from ...mediation import DecidingMediator, released
from ...mediation.audit import COLUMNS as AUDIT_COLUMNS
from ...mediation.derivation import TOMBSTONE_OWNER, Tombstone, closure, is_scope_card
from ...mediation.grants import Grant
from ...mediation.invocation import Invocation
from ...mediation.mediator import (
    Decision,
    Mediation,
    MediationContext,
    PolicyMediator,
    memory_owner,
    released_trace,
)
from ...mediation.policy import ACTIONS, Policy, closed_policy
from ...model import BOARD, Answer, MemoryCard, RetrievalTrace
from ...settings import check_limit, check_threshold
from ...text import MAX_QUESTION_CHARS, card_id_text, clean_name, clean_text, short_repr
from .. import faults
from .context import CaseContext

if TYPE_CHECKING:
    import pandas as pd

    from ...ledger.mediation import MediationStore
    from ...ledger.publishes import PublishStore
    from .reading import Reading

_CLOSED = PolicyMediator(closed_policy())


class Disclosure:
    """Consults, revocation, expiry, grants and the audit trail of one case."""

    def __init__(self, ctx: CaseContext, reading: Reading,
                 principals: Callable[[], Principals], store: MediationStore,
                 publishes: PublishStore) -> None:
        self._ctx = ctx
        self._reading = reading
        self._principals = principals
        self._store = store
        self._publishes = publishes

    # -- principals --------------------------------------------------------------------------
    def principals(self) -> Principals:
        """The case's principals now: its roles, the outsiders the scenario and the policy
        file declare, and the chief."""
        return self._principals()

    def principal(self, name: object, kind: str | None = None) -> Principal:
        """The principal called exactly ``name``; ``UnknownPrincipalError`` for any other."""
        return self._principals().get(name, kind=kind)

    # -- consult -----------------------------------------------------------------------------
    def consult(
        self, principal: Principal, owner: str, question: str, *,
        recipient: str = "same-agent", task: str | None = None, purpose: str | None = None,
        run_scope: str | None = None, limit: int | None = None, threshold: float | None = None,
        metered: bool = True,
    ) -> Mediation:
        """``principal`` asks ``owner``'s memory (its own space and the board, and a run's
        scope if given) ``question``; one decision per relevant card, and the answer built
        from what was released.

        ``limit``: cards per scope the search may hand the mediator; ``threshold``: the
        relevance a card needs to count as evidence (fixed by whoever built the handle; -1
        hands the mediator every card of the top-k). Neither widens what may be searched.
        ``metered``: count it against the requester's quotas (:mod:`bureau.quotas`); only the
        operator's own commands (``case.interrogate``) pass False, and the chief is never
        limited. Metered or not, every consult is audited.
        """
        if not isinstance(principal, Principal):
            raise InvalidArgumentError(f"A consult needs the Principal of a handle, not "
                                       f"{short_repr(principal)}.")
        who = self.principal(principal.name)  # still one of the case's principals
        if type(metered) is not bool:
            raise InvalidArgumentError(f"metered must be True or False, not {short_repr(metered)}.")
        requester = who.name
        owner = self._ctx.role(owner)
        q = clean_text(question, what="question", max_chars=MAX_QUESTION_CHARS)
        limit = None if limit is None else check_limit(limit)
        threshold = None if threshold is None else check_threshold(threshold)
        inv = Invocation.make(self._ctx.case_id, owner, q, requester=requester,
                              recipient=recipient, task=task, purpose=purpose)
        limited = metered and who.kind != OPERATOR  # the chief is never limited
        if limited:  # refused before anything is searched, charged or written
            quotas, meter = self._ctx.quotas(), self._ctx.meter
            try:
                meter.check(requester, "audit_entries_per_minute",
                            quotas.audit_entries_per_minute, what="audit entries")
                meter.take(requester, "consults_per_minute", quotas.consults_per_minute,
                           what="consults")
            except QuotaExceededError:
                self._ctx.space()  # a deleted case says so (read only on a refusal)
                raise
        mediator = self._ctx.mediator()
        if not isinstance(mediator, DecidingMediator) and requester == owner:
            ctx = self._ctx
            trace = self._reading.search(owner, q, limit, run_scope=run_scope,
                                         threshold=threshold)
            evidence = released(trace, mediator.mediate(owner, trace))
            answer = self._answer(owner, trace, evidence)
            # Audited like every consult: one entry for the invocation, with its events.
            audit = [invocation_entry(inv, (), None)]
            events = self._store.commit(ctx.case_id, ctx.token, requester, {}, {}, audit,
                                        _answer_events(owner, trace, answer))
            ctx.notify(events or [])
            if limited:
                ctx.meter.add(requester, "audit_entries_per_minute", len(audit))
            return Mediation(inv, (), answer)
        deciding = mediator if isinstance(mediator, DecidingMediator) else _CLOSED
        mediation, entries = self._mediated(inv, deciding, run_scope, limit, threshold)
        if limited:
            self._ctx.meter.add(requester, "audit_entries_per_minute", entries)
        return mediation

    def _mediated(self, inv: Invocation, mediator: DecidingMediator, run_scope: str | None,
                  limit: int | None, threshold: float | None) -> tuple[Mediation, int]:
        """Decide, charge, audit and answer; also returns the audit entries written."""
        ctx = self._ctx
        trace: RetrievalTrace | None = None
        for _ in range(8):
            now = time.time()
            record, dead, grants, spent = self._store.view(ctx.case_id, inv.requester,
                                                                   now)
            if record is None or record.token != ctx.token:
                raise ctx.gone()
            if trace is None:
                view = self._reading.view(inv.owner, (record.space, dead))
                trace = self._reading.search(inv.owner, inv.query, limit, view=view,
                                             run_scope=run_scope, threshold=threshold)
            hits = [c for c in trace.hits if c.id not in dead]
            decisions = mediator.decide(inv, hits, MediationContext(now, tuple(grants), spent))
            charges: dict[str, float] = {}
            for d in decisions:
                if d.cost:
                    charges[d.card_owner] = charges.get(d.card_owner, 0.0) + d.cost
            # One entry for the invocation (also when nothing was relevant or released), then
            # one per decision: every consult is on the record.
            audit = [invocation_entry(inv, decisions, mediator.policy),
                     *(d.audit_entry(inv, mediator.policy) for d in decisions)]
            # Outward events say what the requester received: for another role's memory, the
            # released cards only (no withheld hit ids or counts, no timing).
            shown = trace if inv.requester == inv.owner else released_trace(
                trace, [d.card for d in decisions if d.card is not None])
            events = self._store.commit(
                ctx.case_id, ctx.token, inv.requester, spent, charges, audit,
                [("retrieval.completed", shown.summary())])
            if events is not None:
                ctx.notify(events)
                break
        else:
            raise BureauError(f"The disclosure budget of {inv.requester} kept changing under "
                              "this request (other holders spend it right now).", "Ask again.")
        evidence = released(trace, [d.card for d in decisions if d.card is not None])
        answer = self._answer(inv.owner, trace, evidence)  # once, after the budget is charged
        ctx.record_events(_answer_events(inv.owner, trace, answer)[1:])
        return Mediation(inv, tuple(decisions), answer, mediator.policy.version), len(audit)

    def _answer(self, role: str, trace: RetrievalTrace, evidence: list[MemoryCard]) -> Answer:
        answer = self._ctx.responder().respond(role, trace.question, evidence, trace)
        if not set(answer.cited) <= {c.id for c in evidence}:
            raise AssertionError("A responder cited a card it was not handed.")
        return answer

    # -- revocation, expiry, grants (operator) -----------------------------------------------
    def find(self, card_id: object) -> MemoryCard:
        """Any card of this case, by id (the operator may name any space's card, a task scope's
        writes and values included; never a tombstone)."""
        ctx = self._ctx
        space = ctx.space()
        cid = card_id_text(card_id)
        for scope in [*ctx.roles, BOARD] if cid is not None else []:
            card = ctx.gateway.get(space, scope, cid)
            if card is not None:
                return card
        for card in ctx.gateway.list(space) if cid is not None else []:
            if card.id == cid and card.owner != TOMBSTONE_OWNER:
                return card
        raise UnknownCardError(f"Case {ctx.case_id} has no card {short_repr(card_id)}.")

    def _derived(self, card: MemoryCard, block: bool = False) -> dict[str, str]:
        """``{card_id: owner}`` of ``card`` and of every copy derived from it, transitively
        (:func:`~bureau.mediation.derivation.closure`): board copies, promoted copies, task-scope
        writes made from it or holding its very text and their searchable values, and the copy a
        publish record names in any state (in flight, crashed, failed).

        ``block`` (revocation): every private card of the closure is first barred from being
        published again (:meth:`PublishStore.block`), which also fences a publish in flight;
        then the store is listed a second time, so a copy an attempt wrote before the bar is
        found too (one written after it is deleted by its publisher or by ``recover()``)."""
        ctx = self._ctx
        space = ctx.space()
        every = ctx.gateway.list(space)
        ids = closure(every, [card.id])
        by_id = {c.id: c for c in every}
        extra: list[str] = []
        for cid, owner in list(ids.items()):
            # the record of a private card of the closure, and (revoking a board copy) the
            # record of the card it copies: that card is not published again either
            source = by_id.get(cid)
            key = (cid, owner) if owner in ctx.roles else (
                (source.source_id, source.source_role)
                if owner == BOARD and source is not None and source.source_id
                and source.source_role in ctx.roles else None)
            if key is None:
                continue
            rec = (self._publishes.block(ctx.case_id, key[0], str(key[1])) if block
                   else self._publishes.get(ctx.case_id, key[0]))
            if rec is not None and rec.copy_id and key[0] == cid:
                extra.append(rec.copy_id)
        if block or extra:
            ids = closure(ctx.gateway.list(space), [card.id, *extra])
            # a copy a record names but the store no longer holds is still limited, as the
            # board's (a late write of it is then dead on arrival)
            ids = {cid: owner or (BOARD if cid in extra else "") for cid, owner in ids.items()}
        return ids

    def revoke(self, card_id: object, reason: str = "owner-revoked") -> list[str]:
        """Revoke a card for good, and every copy derived from it (:meth:`_derived`): no read
        path returns any of them again, in any process, after any restart, and none can be
        published, promoted or written into a task scope again. Revoking a copy leaves the
        card it was copied from alone. The limits are written in one ledger transaction; then a
        tombstone is stored and the texts are deleted from the card store, so the revocation
        survives the loss of the ledger (``repair --adopt`` respects tombstones). Returns the
        ids revoked (an id revoked before: just that id, nothing changes)."""
        ctx = self._ctx
        reason = clean_name(reason, what="reason")
        cid = card_id_text(card_id)
        _, dead = ctx.view()
        if cid is not None and dead.get(cid, ("", ""))[1] == "revoked":
            return [cid]
        card = self.find(card_id)
        ids = self._derived(card, block=True)
        self._store.limit_cards(
            ctx.case_id, ctx.token, list(ids.items()), revoke=True, reason=reason,
            audit=[{"kind": "revocation", "card_id": i, "card_owner": o,
                    "action": "revoke", "reasons": [reason]} for i, o in ids.items()])
        faults.hit("forget.after_limits")
        self._entomb(Tombstone("revoked", tuple(ids.items()), reason=reason))
        self._erase(ids)
        ctx.emit("card.revoked", {"card_ids": list(ids)})
        return list(ids)

    def forget(self, card_id: object) -> list[str]:
        """Forget a card: revoke it and every copy derived from it (reason ``forgotten``), and
        with sealing (the default) destroy each one's key, so what the store's files still hold
        of them is noise. Returns the ids forgotten."""
        return self.revoke(card_id, reason="forgotten")

    def expire(self, card_id: object, ttl_s: object) -> str:
        """Let a card, and every copy derived from it, expire ``ttl_s`` seconds from now;
        returns the expiry time (UTC, ISO). From then on each is treated like a revoked card;
        a copy made later takes the expiry on. A tombstone records it in the card store too."""
        ctx = self._ctx
        seconds = ttl(ttl_s)
        card = self.find(card_id)
        at = time.time() + seconds
        ids = self._derived(card)
        self._store.limit_cards(
            ctx.case_id, ctx.token, list(ids.items()), expires_at=at,
            audit=[{"kind": "expiry", "card_id": i, "card_owner": o, "action": "expire",
                    "expires_at": _iso(at), "reasons": ["ttl"]} for i, o in ids.items()])
        self._entomb(Tombstone("expired", tuple(ids.items()), expires_at=at))
        return str(_iso(at))

    def _entomb(self, stone: Tombstone) -> None:
        """Record a limit in the card store itself (ids and owners, no text)."""
        ctx = self._ctx
        ctx.gateway.add(ctx.space(), TOMBSTONE_OWNER, stone.text(), Tombstone.meta())

    def _erase(self, ids: dict[str, str]) -> None:
        """Delete revoked texts from the card store; a delete that fails becomes a cleanup
        task (retried by ``recover()`` and on every open). Read paths drop the cards anyway."""
        ctx = self._ctx
        space = ctx.space()
        for cid, owner in ids.items():
            if not owner:
                continue
            try:
                if ctx.gateway.delete_or_gone(space, owner, cid):
                    continue
            except Exception:  # noqa: BLE001 - any storage failure becomes a cleanup task
                pass
            self._publishes.add_cleanup(ctx.case_id, cid, owner, "revoked")

    def grant(
        self, card_id: object, *, requester: str | None = None, recipient: str | None = None,
        purpose: str | None = None, action: str = "reveal", ttl_s: float | None = None,
    ) -> Grant:
        """Approve ``action`` on one card for a requester/recipient/purpose (``None``: any),
        optionally for ``ttl_s`` seconds. ``requester`` must be one of the case's principals:
        a grant to a name nobody holds would wait for whoever types it."""
        ctx = self._ctx
        card = self.find(card_id)
        if action not in ACTIONS[1:]:
            raise InvalidArgumentError(f"A grant allows 'abstract' or 'reveal', not "
                                       f"{short_repr(action)}.")
        who = None if requester is None else self.principal(requester).name
        now = time.time()
        grant = Grant(
            grant_id="g-" + uuid.uuid4().hex[:10], case_id=ctx.case_id, card_id=card.id,
            requester=who,
            recipient=None if recipient is None else Invocation.make(
                ctx.case_id, "x", "x", recipient=recipient).recipient,
            purpose=None if purpose is None else clean_name(purpose, what="purpose"),
            action=action, created_at=now,
            expires_at=None if ttl_s is None else now + ttl(ttl_s),
        )
        owner = card.source_role if is_scope_card(card.owner) else memory_owner(card)
        entry = {"kind": "grant", "card_id": card.id, "card_owner": owner,
                 "action": "grant", "grant_id": grant.grant_id, "granted": action,
                 "requester": grant.requester, "recipient": grant.recipient,
                 "purpose": grant.purpose, "expires_at": _iso(grant.expires_at), "reasons": []}
        return self._store.add_grant(grant, ctx.token, [entry])

    def revoke_grant(self, grant_id: object) -> None:
        """Withdraw a grant at once, for every holder in every process."""
        ctx = self._ctx
        if type(grant_id) is not str or not GRANT_ID.fullmatch(grant_id):
            raise UnknownGrantError(f"Case {ctx.case_id} has no grant {short_repr(grant_id)}.")
        gid = grant_id
        match = [g for g in self._store.grants(ctx.case_id) if g.grant_id == gid]
        entry = {"kind": "grant", "action": "revoke-grant", "grant_id": gid,
                 "card_id": match[0].card_id if match else None, "reasons": []}
        self._store.revoke_grant(ctx.case_id, ctx.token, gid, [entry])

    def grants(self) -> list[Grant]:
        """Every grant of the case, with its state (``g.state(time.time())``)."""
        self._ctx.space()
        return self._store.grants(self._ctx.case_id)

    def counts(self) -> dict[str, int]:
        """Decisions per action (the stage's counts; no ids, no text). The invocation entries
        every consult writes are not decisions, so they are left out."""
        counts = self._store.audit_counts(self._ctx.case_id, self._ctx.token)
        counts.pop(CONSULT, None)
        return counts

    def audit(self, verify: bool = True) -> pd.DataFrame:
        """The audit trail as a table: one row per decision, revocation, expiry, grant and
        promotion, with the card's state now (``live``, ``revoked``, ``expired``); ids,
        labels, actions and reason codes, never card text or questions. ``verify`` first walks
        the whole hash chain (``AuditTamperedError`` names the first altered entry)."""
        import pandas as pd

        ctx = self._ctx
        if verify:
            self._store.verify_audit()
        _, dead = ctx.view()
        rows = []
        for e in self._store.audit_entries(ctx.case_id, ctx.token):
            row = {c: e.get(c) for c in AUDIT_COLUMNS}
            row["kind"] = e.get("kind", "decision")
            row["reasons"] = ", ".join(e.get("reasons") or [])
            cid = e.get("card_id")
            row["card_state"] = dead[cid][1] if cid in dead else ("live" if cid else None)
            rows.append(row)
        return pd.DataFrame(rows, columns=list(AUDIT_COLUMNS))


CONSULT = "consult"
"""The audit action of an invocation entry (one per consult)."""


def invocation_entry(inv: Invocation, decisions: Sequence[Decision],
                     policy: Policy | None) -> dict[str, Any]:
    """The audit entry every consult writes, whatever was released: who asked whose memory,
    for whom and why, how many decisions and releases it made; never the question. Only the
    operator reads the audit, and it names no card."""
    released_n = sum(1 for d in decisions if d.card is not None)
    return {"kind": "invocation", **inv.audit_fields(), "card_owner": inv.owner,
            "action": CONSULT, "reasons": [] if decisions else ["nothing-relevant"],
            "decisions": len(decisions), "released": released_n,
            "policy_version": None if policy is None else policy.version,
            "policy_digest": None if policy is None else policy.digest}


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


MAX_TTL_S = 10 * 366 * 86_400.0
"""Ten years: any longer is "for good", which is what revocation is for; and a larger number
would overflow the calendar when the expiry is written down."""
GRANT_ID = re.compile(r"g-[0-9a-f]{10}")


def ttl(value: object) -> float:
    """A time to live in seconds: a finite number > 0, at most :data:`MAX_TTL_S` (checked
    before anything is written)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidArgumentError(f"ttl_s must be a number of seconds > 0, not "
                                   f"{short_repr(value)}.")
    seconds = float(value) if -1e300 < value < 1e300 else math.inf
    if not math.isfinite(seconds) or not 0 < seconds <= MAX_TTL_S:
        raise InvalidArgumentError(f"ttl_s must be a number of seconds from 0 to "
                                   f"{MAX_TTL_S:,.0f} (ten years), not {short_repr(value)}.")
    return seconds


def _iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC).isoformat(
        timespec="seconds")


__all__ = ["Disclosure", "ttl"]
