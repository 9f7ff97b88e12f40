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
    BureauError,
    CaseDamagedError,
    InvalidArgumentError,
    StoreLedgerMismatchError,
    UnknownCardError,
    UnknownCaseError,
    UnknownRoleError,
)
from .gateway import MemoryGateway
from .ledger import BaseLedger, CaseRecord, open_ledger
from .model import BOARD, Answer, CaseSpace, Event, MemoryCard, RetrievalTrace, ScopeResult
from .publish import Publisher
from .responder import EvidenceResponder, Responder
from .scenario import Scenario, load_scenario
from .settings import Settings
from .text import MAX_QUESTION_CHARS, clean_case_id, clean_name, clean_text, short_repr

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
        self.check_store()
        # Board copies whose deletion failed earlier (in any process): retry now. A damaged
        # case fails alone, when it is touched; it must not keep every other case closed.
        for task_case in sorted({t.case_id for t in self.ledger.cleanup_tasks()}):
            try:
                if self.ledger.get_case(task_case):
                    self.case(task_case).recover()
            except BureauError as exc:
                log.warning("case %s was not recovered on open: %s", task_case, exc)

    def check_store(self) -> dict[str, int]:
        """Compare the card store with the ledger; sweep retired namespaces; stop on strangers.

        Every card lives under a namespace the ledger knows: a live case's, or one retired by a
        delete or reset (a holder that missed the change may still write there; such cards are
        swept here). Cards under a namespace the ledger has never heard of mean the ledger was
        lost, replaced or belongs to another store: opening anyway would merge them into new
        cases and let ``recover()`` treat real board copies as orphans.
        """
        stored = self.gateway.spaces()
        if not stored:
            return {"swept": 0, "unknown": 0}
        retired = self.ledger.retired_spaces()
        live = {r.space.store_id for r in self.ledger.list_cases()}
        swept = 0
        for store_id in sorted((stored & retired) - live):
            swept += self.gateway.purge_space(store_id)
        unknown = sorted(stored - retired - live)
        if unknown:
            shown = ", ".join(unknown[:3]) + (f" and {len(unknown) - 3} more" if len(unknown) > 3
                                             else "")
            raise StoreLedgerMismatchError(
                f"The card store in {self.settings.data_dir} holds cards of {len(unknown)} "
                f"case namespace(s) the ledger {self.ledger!r} does not know ({shown}). The "
                "ledger was probably lost, replaced or damaged.",
                "Nothing was changed. Run `python -m bureau repair` to see what was found; "
                "`python -m bureau repair --adopt` re-registers cases whose snapshot survives, "
                "`--purge-unknown` deletes the stray cards (see README, 'Repairing a data "
                "directory').",
            )
        return {"swept": swept, "unknown": 0}

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

    def _emit_many(
        self, case_id: str, items: list[tuple[str, dict[str, Any]]], token: Any = ...
    ) -> list[Event]:
        """Record events (one ledger transaction), then tell every listener about each.

        With ``token`` the events are recorded only while the case is that incarnation.
        """
        events = self.ledger.append_events(case_id, items, token) if items else []
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
        """Create a new case from an in-memory :class:`Scenario` and write its opening memories.

        All or nothing: if any step fails (snapshot, events, seeding), the ledger row, the
        snapshot and every card written so far are removed again before the error propagates.
        """
        if case_id is None:
            case_id = f"{scenario.id}-{uuid.uuid4().hex[:6]}"
        case_id = clean_case_id(case_id)
        snapshot = self._snapshot_path(case_id)
        record = self.ledger.add_case(case_id, scenario.id, scenario.title, uuid.uuid4().hex[:12])
        try:
            self._write_scenario(snapshot, scenario, record)
            case = Case(self, record, scenario)
            self._cases[case_id] = case
            self._emit(case_id, "case.created",
                       {"scenario_id": scenario.id, "roles": scenario.role_names})
            case._seed()
        except BaseException:
            self._cases.pop(case_id, None)
            try:
                self.ledger.delete_case(case_id, record.token)
            finally:
                snapshot.unlink(missing_ok=True)
                self.gateway.purge_space(record.space.store_id)
            raise
        return case

    def _snapshot_path(self, case_id: str) -> Path:
        """``cases/<id>.json``, resolved and checked to lie inside the data directory."""
        folder = (self.settings.data_dir / "cases").resolve()
        path = (folder / f"{case_id}.json").resolve()
        if path.parent != folder:
            raise UnknownCaseError(f"Case id {short_repr(case_id)} does not name a case file.")
        return path

    def _write_scenario(self, path: Path, scenario: Scenario, record: CaseRecord) -> None:
        """The scenario as it was when the case was created: a private file under the data
        directory, or (server store) a row on the server, since instances share no folder."""
        body = json.dumps(scenario.to_dict(), indent=1)
        if self.settings.store == "server":
            self.ledger.put_snapshot(record.case_id, record.token, body)  # type: ignore[attr-defined]
            return
        from .fsutil import write_private

        write_private(path, body)

    def _read_scenario(self, record: CaseRecord) -> Scenario:
        """The scenario a case was created from, as it was then (its snapshot; no fallback)."""
        from .scenario import parse_scenario

        path = self._snapshot_path(record.case_id)
        hint = (f"Delete the case with bureau.delete_case({record.case_id!r}) and load its "
                "scenario again, or restore the file from a backup.")
        try:
            if self.settings.store == "server":
                body = self.ledger.get_snapshot(record.case_id)  # type: ignore[attr-defined]
                if body is None:
                    raise FileNotFoundError(record.case_id)
                path = Path(f"<server snapshot of {record.case_id}>")
                data = json.loads(body)
            else:
                data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise CaseDamagedError(
                f"Case {record.case_id}: its scenario snapshot {path} is missing.", hint
            ) from None
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise CaseDamagedError(
                f"Case {record.case_id}: its scenario snapshot {path} cannot be read "
                f"({type(exc).__name__}).", hint
            ) from None
        try:
            return parse_scenario(data, source=path)
        except BureauError as exc:
            raise CaseDamagedError(
                f"Case {record.case_id}: its scenario snapshot {path} is damaged: {exc.message}",
                hint,
            ) from None

    def case(self, case_id: str) -> Case:
        """Reattach to an existing case by id (also one created by another process)."""
        if type(case_id) is not str or len(case_id) > 128:
            raise UnknownCaseError(f"There is no case {short_repr(case_id)}.")
        record = self.ledger.get_case(case_id)
        if record is None:
            self._cases.pop(case_id, None)
            raise UnknownCaseError(
                f"There is no case {short_repr(case_id)} in {self.settings.data_dir}."
            )
        cached = self._cases.get(case_id)
        if cached is not None and cached.token == record.token:
            return cached
        case = self._cases[case_id] = Case(self, record, self._read_scenario(record))
        return case

    def cases(self) -> list[CaseRecord]:
        return self.ledger.list_cases()

    def delete_case(self, case_id: str) -> int:
        """Delete a case for every holder, in every process; returns the cards removed.

        The ledger row goes first (with its namespace retired, in one transaction): from then on
        every operation on the case raises ``UnknownCaseError``, and a case created later with
        the same id gets a new, empty namespace.
        """
        case = self.case(case_id)
        old = self.ledger.delete_case(case.id, case.token)
        self._cases.pop(case.id, None)
        self._snapshot_path(case.id).unlink(missing_ok=True)
        return self.gateway.purge_space(old.space.store_id)


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
        """The only spaces a role may search: its own, then the board."""
        return [self.role(role), BOARD]

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
        evidence = list(self.bureau.mediator.mediate(self, role, trace))
        allowed = {c.id for c in trace.hits}
        evidence = [c for c in evidence if c.id in allowed or c.owner == BOARD]
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
        return Publisher(self).publish(self.role(role), str(card_id))

    def recover(self) -> dict[str, int]:
        """Finish or roll back interrupted publishes and retry scheduled cleanups."""
        return Publisher(self).recover()

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


def check_limit(limit: object) -> int:
    """A per-scope search limit: a whole number from 1 to 100 (the one copy of this check)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100:
        raise InvalidArgumentError(
            f"limit must be a whole number from 1 to 100, not {short_repr(limit)}."
        )
    return int(limit)
