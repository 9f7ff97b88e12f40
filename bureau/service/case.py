"""One running case: its roles, their private spaces and the board.

Every read goes through :meth:`Case.retrieve`: the service decides the scopes
(:func:`bureau.scopes.readable_scopes`), the gateway fills in case and role filters, the mediator
may withhold or rewrite evidence, and only then does a responder phrase an answer from the cards
it was handed. Questions never widen scopes because scopes are never derived from questions.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from ..errors import (
    BoardNotWritableError,
    InvalidArgumentError,
    UnknownCardError,
    UnknownCaseError,
    UnknownRoleError,
)
from ..ledger import CaseRecord
from ..mediation import released
from ..model import BOARD, Answer, CaseSpace, Event, MemoryCard, RetrievalTrace, ScopeResult
from ..scenario import Scenario
from ..scopes import readable_scopes
from ..settings import check_limit
from ..text import MAX_QUESTION_CHARS, clean_name, clean_text, short_repr
from .publish import Publisher

if TYPE_CHECKING:
    from .bureau import Bureau


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
        """The only spaces a role may search (see :mod:`bureau.scopes`)."""
        return readable_scopes(self.role(role))

    def _seed(self) -> None:
        gw = self.bureau.gateway
        space = self.space
        gw.encoder.embed([mem.content for _, mem in self.scenario.seeds()])  # one batched pass
        events: list[tuple[str, dict[str, Any]]] = []
        for role, mems in self.scenario.memories.items():
            items = [(m.content, {"visibility": "private", "topic": m.topic, "kind": m.kind,
                                  "seed_key": m.key}) for m in mems]
            for card in gw.add_many(space, role, items):
                events.append(("memory.created", _public_meta(card)))
        events.append(("case.seeded", {"cards": len(events)}))
        self._emit_many(events)

    # -- commands ----------------------------------------------------------------------------
    def whisper(self, role: str, text: str, topic: str = "general", kind: str = "note") -> MemoryCard:
        """Write a fact into one role's private memory."""
        role = self.role(role)
        content = clean_text(text, what="whisper")
        topic = clean_name(topic, what="topic")
        kind = clean_name(kind, what="kind")
        card = self.bureau.gateway.add(
            self.space, role, content, {"visibility": "private", "topic": topic, "kind": kind}
        )
        self._emit("memory.whispered", _public_meta(card))
        return card

    def retrieve(self, role: str, question: str, limit: int | None = None) -> RetrievalTrace:
        """Search exactly the role's private space and the board; the X-ray of that search.

        ``limit`` cards per scope (default: the ``search_limit`` setting).
        """
        trace = self._search(role, question, limit)
        self._emit("retrieval.completed", trace.summary())
        return trace

    def _search(self, role: str, question: str, limit: int | None = None) -> RetrievalTrace:
        scopes = self.scopes_for(role)
        q = clean_text(question, what="question", max_chars=MAX_QUESTION_CHARS)
        settings = self.bureau.settings
        limit = settings.search_limit if limit is None else check_limit(limit)
        gw = self.bureau.gateway
        space = self.space
        start = time.perf_counter()
        vector, embed_ms = gw.embed_query(q)
        if settings.query_per_scope:  # exact per-scope latency, one query each (slower)
            found = {}
            timing = {}
            for scope in scopes:
                found[scope], timing[scope] = gw.search_scope(space, scope, vector, limit)
        else:  # each scope's own top-k; each scope reports the whole search's latency
            found, ms = gw.search_scopes(space, scopes, vector, limit)
            timing = dict.fromkeys(scopes, ms)
        thr = settings.relevance_threshold
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
            threshold=settings.relevance_threshold,
            embed_ms=round(embed_ms, 3),
            total_ms=round((time.perf_counter() - start) * 1000, 3),
            mode=self.bureau.responder.name,
            shared_query=not settings.query_per_scope,
        )
        return trace

    def interrogate(self, role: str, question: str) -> Answer:
        """Ask a role a question; it answers only from evidence the service handed it."""
        trace = self._search(role, question)
        evidence = released(trace, self.bureau.mediator.mediate(self, role, trace))
        answer = self.bureau.responder.respond(role, trace.question, evidence, trace)
        if not set(answer.cited) <= {c.id for c in evidence}:
            raise AssertionError("A responder cited a card it was not handed.")
        # Both events in one ledger transaction: one commit per question, not two.
        self._emit_many([
            ("retrieval.completed", trace.summary()),
            ("answer.completed",
             {"request_id": trace.request_id, "role": role, "known": answer.known,
              "cited": list(answer.cited), "responder": answer.responder,
              "fallback_reason": answer.fallback_reason}),
        ])
        return answer

    def publish(self, role: str, card_id: str) -> MemoryCard:
        """Copy one of the role's private cards to the board (idempotent; see publish.py)."""
        return self._publisher().publish(self.role(role), str(card_id))

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
        space = self.space
        vector, _ = gw.embed_query(q)
        thr = self.bureau.settings.relevance_threshold
        lim = self.bureau.settings.search_limit

        def relevant(scope: str) -> bool:
            cards, _ = gw.search_scope(space, scope, vector, lim)
            return any((c.score or 0) >= thr for c in cards)

        board = relevant(BOARD)
        return [r for r in self.role_names if board or relevant(r)]

    # -- role and outward read paths (see read_paths.py) --------------------------------------
    def cards(self, role: str) -> list[MemoryCard]:
        """What a role may list: its own private cards and the board."""
        role = self.role(role)
        gw = self.bureau.gateway
        space = self.space
        return gw.list(space, role) + gw.list(space, BOARD)

    def card(self, role: str, card_id: str) -> MemoryCard:
        """Get one card as a role: its own or a board card, nothing else."""
        role = self.role(role)
        space = self.space
        for scope in (role, BOARD):
            card = self.bureau.gateway.get(space, scope, str(card_id))
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
        space = self.space
        board = gw.list(space, BOARD)
        last = None
        event = self.bureau.ledger.last_event(self.id, "retrieval.completed")
        if event is not None:
            p = event.payload
            last = {k: p[k] for k in ("role", "searched_scopes", "hits_by_scope", "misses",
                                      "latency_ms", "mode")}
        return {
            "case_id": self.id,
            "title": self.scenario.title,
            "private_counts": {r: gw.count(space, r) for r in self.role_names},
            "board": [
                {"id": c.id, "content": c.content, "topic": c.topic, "source_role": c.source_role,
                 "created_at": c.created_at}
                for c in board
            ],
            "last_retrieval": last,
        }

    def export(self, role: str) -> dict[str, Any]:
        """A role's memory as JSON-ready data (its own space and the board)."""
        return {"case_id": self.id, "role": self.role(role),
                "cards": [asdict(c) for c in self.cards(role)]}


def _public_meta(card: MemoryCard) -> dict[str, Any]:
    """What an outward event may say about a new card: which card, whose, and nothing typed.

    A private card's topic and kind are typed text and its seed key names the fact, so events
    (read by the stage and every process) carry none of them.
    """
    return {"card_id": card.id, "owner": card.owner, "visibility": card.visibility}
