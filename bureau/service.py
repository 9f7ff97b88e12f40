"""The Bureau service: the one façade notebooks, widgets and the CLI use.

Every read goes through :meth:`Case.retrieve`: the service decides the scopes (the role's own
private space and the board, nothing else), the gateway fills in case and role filters, an
optional mediator may withhold or rewrite evidence, and only then does a responder phrase an
answer from the cards it was handed. Questions never widen scopes because scopes are never
derived from questions.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

from .errors import (
    BoardNotWritableError,
    UnknownCardError,
    UnknownCaseError,
    UnknownRoleError,
)
from .gateway import MemoryGateway
from .ledger import BaseLedger, CaseRecord, open_ledger
from .model import BOARD, Answer, Event, MemoryCard, RetrievalTrace, ScopeResult
from .publish import Publisher
from .responder import EvidenceResponder, Responder
from .scenario import Scenario, load_scenario
from .settings import Settings
from .text import MAX_QUESTION_CHARS, clean_name, clean_text

log = logging.getLogger(__name__)


class Mediator(Protocol):
    """Sits between retrieval and answering; may withhold, abstract or reveal each hit."""

    def mediate(self, case: Case, role: str, trace: RetrievalTrace) -> Sequence[MemoryCard]: ...


class PassThrough:
    """No mediation: a role may use every relevant card in its scopes."""

    def mediate(self, case: Case, role: str, trace: RetrievalTrace) -> Sequence[MemoryCard]:
        return trace.hits


Listener = Callable[[Event], None]


class Bureau:
    """One per process (PowerMem allows one store per process); get it with :meth:`open`."""

    _instance: Bureau | None = None
    _instance_lock = threading.Lock()

    def __init__(
        self,
        settings: Settings,
        responder: Responder | None = None,
        mediator: Mediator | None = None,
    ) -> None:
        self.settings = settings
        self.gateway = MemoryGateway.open(settings)
        # SQLite under the data dir, or (store="server") tables on the server all instances share.
        self.ledger: BaseLedger = open_ledger(settings)
        if responder is None and settings.responder == "llm":
            from .llm import LLMResponder

            assert settings.llm is not None  # Settings validates this
            responder = LLMResponder(settings.llm)
        self.responder: Responder = responder or EvidenceResponder()
        self.mediator: Mediator = mediator or PassThrough()
        self._listeners: list[Listener] = []
        self._cases: dict[str, Case] = {}
        # Board copies whose deletion failed earlier (in any process): retry now.
        for task_case in sorted({t.case_id for t in self.ledger.cleanup_tasks()}):
            if self.ledger.get_case(task_case):
                self.case(task_case).recover()

    @classmethod
    def open(
        cls,
        data_dir: str | Path | None = None,
        settings: Settings | None = None,
        **overrides: Any,
    ) -> Bureau:
        """Open (or return the already open) bureau of this process.

        ``data_dir`` defaults to ``$BUREAU_DATA_DIR`` or ``~/.local/share/bureau``.
        """
        if settings is None:
            extra = dict(overrides)
            if data_dir is not None:
                extra["data_dir"] = Path(data_dir)
            settings = Settings.from_env(**extra)
        with cls._instance_lock:
            inst = cls._instance
            if inst is not None and inst.settings.data_dir == settings.data_dir:
                return inst
            inst = cls(settings)  # MemoryGateway.open refuses a second data dir
            cls._instance = inst
            return inst

    # -- events ------------------------------------------------------------------------------
    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` with every event of every case; returns an unsubscribe function."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _emit(self, case_id: str, type_: str, payload: dict[str, Any]) -> Event:
        return self._emit_many(case_id, [(type_, payload)])[0]

    def _emit_many(self, case_id: str, items: list[tuple[str, dict[str, Any]]]) -> list[Event]:
        """Record events (one ledger transaction), then tell every listener about each."""
        events = self.ledger.append_events(case_id, items) if items else []
        for event in events:
            for listener in list(self._listeners):
                try:
                    listener(event)
                except Exception:  # noqa: BLE001 - a subscriber must never break a command
                    log.exception("bureau event listener %r failed on %s", listener, event.type)
        return events

    # -- cases -------------------------------------------------------------------------------
    def scenarios(self) -> list[Scenario]:
        from .scenario import list_scenarios

        return list_scenarios()

    def load_scenario(self, id_or_path: str | Path, case_id: str | None = None) -> Case:
        """Create a new case from a scenario file (or shipped id) and write its opening memories."""
        return self.create_case(load_scenario(id_or_path), case_id)

    def create_case(self, scenario: Scenario, case_id: str | None = None) -> Case:
        """Create a new case from an in-memory :class:`Scenario` and write its opening memories."""
        case_id = case_id or f"{scenario.id}-{uuid.uuid4().hex[:6]}"
        clean_name(case_id.replace(".", "-")[:32], what="case id")
        self.ledger.add_case(case_id, scenario.id, scenario.title)
        self._write_scenario(case_id, scenario)
        case = Case(self, case_id, scenario)
        self._cases[case_id] = case
        self._emit(case_id, "case.created", {"scenario_id": scenario.id, "roles": scenario.role_names})
        case._seed()
        return case

    def _write_scenario(self, case_id: str, scenario: Scenario) -> None:
        folder = self.settings.data_dir / "cases"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{case_id}.json").write_text(json.dumps(scenario.to_dict(), indent=1))

    def case(self, case_id: str) -> Case:
        """Reattach to an existing case by id (also one created by another process)."""
        if case_id in self._cases:
            return self._cases[case_id]
        record = self.ledger.get_case(case_id) if isinstance(case_id, str) else None
        if record is None:
            raise UnknownCaseError(f"There is no case {case_id!r} in {self.settings.data_dir}.")
        from .scenario import parse_scenario

        snapshot = self.settings.data_dir / "cases" / f"{case_id}.json"
        scenario = (
            parse_scenario(json.loads(snapshot.read_text()), source=snapshot)
            if snapshot.exists()
            else load_scenario(record.scenario_id)
        )
        case = self._cases[case_id] = Case(self, case_id, scenario)
        return case

    def cases(self) -> list[CaseRecord]:
        return self.ledger.list_cases()

    def delete_case(self, case_id: str) -> int:
        case = self.case(case_id)
        deleted = self.gateway.purge_case(case.id)
        self.ledger.delete_case(case.id)
        self._cases.pop(case.id, None)
        (self.settings.data_dir / "cases" / f"{case.id}.json").unlink(missing_ok=True)
        return deleted


class Case:
    """One running case: its roles, their private spaces and the board."""

    def __init__(self, bureau: Bureau, case_id: str, scenario: Scenario) -> None:
        self.bureau = bureau
        self.id = case_id
        self.scenario = scenario
        self.role_names: list[str] = list(scenario.role_names)
        self._last_trace: RetrievalTrace | None = None

    def __repr__(self) -> str:
        return f"<Case {self.id} ({self.scenario.title}): roles {', '.join(self.role_names)}>"

    # -- helpers -----------------------------------------------------------------------------
    def _emit(self, type_: str, payload: dict[str, Any]) -> Event:
        return self.bureau._emit(self.id, type_, payload)

    def role(self, name: object) -> str:
        """Validate a role name for this case (the board is not a role)."""
        if name == BOARD:
            raise BoardNotWritableError(
                "The bulletin board is not a role: it cannot be whispered to or interrogated."
            )
        if not isinstance(name, str) or name not in self.role_names:
            raise UnknownRoleError(
                f"Case {self.id} has no role {name!r}.",
                f"Roles in this case: {', '.join(self.role_names)}.",
            )
        return name

    def scopes_for(self, role: str) -> list[str]:
        """The only spaces a role may search: its own, then the board."""
        return [self.role(role), BOARD]

    def _seed(self) -> None:
        gw = self.bureau.gateway
        gw.encoder.embed([mem.content for _, mem in self.scenario.seeds()])  # one batched pass
        events: list[tuple[str, dict[str, Any]]] = []
        for role, mems in self.scenario.memories.items():
            items = [(m.content, {"visibility": "private", "topic": m.topic, "kind": m.kind,
                                  "seed_key": m.key}) for m in mems]
            for mem, card in zip(mems, gw.add_many(self.id, role, items), strict=True):
                events.append(("memory.created", {**_public_meta(card), "seed_key": mem.key}))
        events.append(("case.seeded", {"cards": len(events)}))
        self.bureau._emit_many(self.id, events)

    # -- commands ----------------------------------------------------------------------------
    def whisper(self, role: str, text: str, topic: str = "general", kind: str = "note") -> MemoryCard:
        """Write a fact into one role's private memory."""
        role = self.role(role)
        content = clean_text(text, what="whisper")
        topic = clean_name(topic, what="topic")
        kind = clean_name(kind, what="kind")
        card = self.bureau.gateway.add(
            self.id, role, content, {"visibility": "private", "topic": topic, "kind": kind}
        )
        self._emit("memory.whispered", _public_meta(card))
        return card

    def retrieve(self, role: str, question: str, limit: int | None = None) -> RetrievalTrace:
        """Search exactly the role's private space and the board; the X-ray of that search.

        ``limit`` cards per scope (default: the ``search_limit`` setting).
        """
        scopes = self.scopes_for(role)
        q = clean_text(question, what="question", max_chars=MAX_QUESTION_CHARS)
        settings = self.bureau.settings
        limit = settings.search_limit if limit is None else int(limit)
        if not 1 <= limit <= 100:
            raise ValueError("limit must lie between 1 and 100.")
        gw = self.bureau.gateway
        start = time.perf_counter()
        vector, embed_ms = gw.embed_query(q)
        if settings.query_per_scope:  # exact per-scope latency, one query each (slower)
            found = {}
            timing = {}
            for scope in scopes:
                found[scope], timing[scope] = gw.search_scope(self.id, scope, vector, limit)
        else:  # one filtered query over all scopes; each scope reports that query's latency
            found, ms = gw.search_scopes(self.id, scopes, vector, limit)
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
        self._last_trace = trace
        self._emit("retrieval.completed", trace.summary())
        return trace

    def interrogate(self, role: str, question: str) -> Answer:
        """Ask a role a question; it answers only from evidence the service handed it."""
        trace = self.retrieve(role, question)
        evidence = list(self.bureau.mediator.mediate(self, role, trace))
        allowed = {c.id for c in trace.hits}
        evidence = [c for c in evidence if c.id in allowed or c.owner == BOARD]
        answer = self.bureau.responder.respond(role, trace.question, evidence, trace)
        if not set(answer.cited) <= {c.id for c in evidence}:
            raise AssertionError("A responder cited a card it was not handed.")
        self._emit(
            "answer.completed",
            {"request_id": trace.request_id, "role": role, "known": answer.known,
             "cited": list(answer.cited), "responder": answer.responder,
             "fallback_reason": answer.fallback_reason},
        )
        return answer

    def publish(self, role: str, card_id: str) -> MemoryCard:
        """Copy one of the role's private cards to the board (idempotent; see publish.py)."""
        return Publisher(self).publish(self.role(role), str(card_id))

    def recover(self) -> dict[str, int]:
        """Finish or roll back interrupted publishes and retry scheduled cleanups."""
        return Publisher(self).recover()

    def reset(self, reseed: bool = False) -> int:
        """Delete every card of the case (verified), forget publications, optionally reseed."""
        deleted = self.bureau.gateway.purge_case(self.id)
        self.bureau.ledger.bump_epoch(self.id)
        self._last_trace = None
        self._emit("case.reset", {"deleted": deleted})
        if reseed:
            self._seed()
        return deleted

    # -- operator views (privileged: the bureau chief sees every space) ----------------------
    def spaces(self) -> dict[str, list[MemoryCard]]:
        """Every role's private cards and the board, oldest first."""
        cards = self.bureau.gateway.list(self.id)
        out: dict[str, list[MemoryCard]] = {r: [] for r in [*self.role_names, BOARD]}
        for c in cards:
            out.setdefault(c.owner, []).append(c)
        return out

    def seed_card(self, key: str) -> MemoryCard:
        """The card written for the scenario's opening memory ``key``."""
        role, _ = self.scenario.seed(key)
        for card in self.bureau.gateway.list(self.id, role):
            if card.seed_key == key:
                return card
        raise UnknownCardError(f"Case {self.id} has no card for seed memory {key!r}.")

    def knowers(self, question: str) -> list[str]:
        """Which roles would retrieve a relevant card for this question (no events)."""
        q = clean_text(question, what="question", max_chars=MAX_QUESTION_CHARS)
        gw = self.bureau.gateway
        vector, _ = gw.embed_query(q)
        thr = self.bureau.settings.relevance_threshold
        lim = self.bureau.settings.search_limit

        def relevant(scope: str) -> bool:
            cards, _ = gw.search_scope(self.id, scope, vector, lim)
            return any((c.score or 0) >= thr for c in cards)

        board = relevant(BOARD)
        return [r for r in self.role_names if board or relevant(r)]

    # -- role and outward read paths (see read_paths.py) --------------------------------------
    def cards(self, role: str) -> list[MemoryCard]:
        """What a role may list: its own private cards and the board."""
        role = self.role(role)
        gw = self.bureau.gateway
        return gw.list(self.id, role) + gw.list(self.id, BOARD)

    def card(self, role: str, card_id: str) -> MemoryCard:
        """Get one card as a role: its own or a board card, nothing else."""
        role = self.role(role)
        for scope in (role, BOARD):
            card = self.bureau.gateway.get(self.id, scope, str(card_id))
            if card is not None:
                return card
        raise UnknownCardError(f"{role} has no card {card_id} in case {self.id}.")

    def events(self, since: int = 0) -> list[Event]:
        """Outward events: ids, counts and timings, never card bodies, questions or answers."""
        return self.bureau.ledger.events(self.id, since)

    def stage(self) -> dict[str, Any]:
        """The projector view: counts per role, the board, the last retrieval summary."""
        gw = self.bureau.gateway
        board = gw.list(self.id, BOARD)
        last = None
        event = self.bureau.ledger.last_event(self.id, "retrieval.completed")
        if event is not None:
            p = event.payload
            last = {k: p[k] for k in ("role", "searched_scopes", "hits_by_scope", "misses",
                                      "latency_ms", "mode")}
        return {
            "case_id": self.id,
            "title": self.scenario.title,
            "private_counts": {r: gw.count(self.id, r) for r in self.role_names},
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
    return {"card_id": card.id, "owner": card.owner, "visibility": card.visibility,
            "topic": card.topic, "kind": card.kind}
