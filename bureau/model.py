"""The bureau's vocabulary: cards, retrieval traces, answers and events.

These are plain frozen dataclasses so that widgets, responders and tests can hold them without
touching storage. A card's ``owner`` is always the role it is *stored* under, never the role that
asked for it: a leak must look like a leak.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

BOARD = "board"
"""The reserved role name of the shared bulletin board (no scenario may define a role with it)."""

Visibility = Literal["private", "public"]


@dataclass(frozen=True)
class CaseSpace:
    """Where one incarnation of a case keeps its cards: the store's ``user_id`` value.

    A case id names a case for people; the store namespace also carries a random token made when
    the case was created and the epoch of its last reset. So a card written by a holder that
    missed a delete or a reset lands in a retired namespace nobody reads (and the next open
    sweeps it), and an id used again starts empty: a new case never inherits ghost cards.
    """

    case_id: str
    store_id: str


@dataclass(frozen=True)
class MemoryCard:
    id: str
    case_id: str
    owner: str
    visibility: Visibility
    topic: str
    kind: str
    content: str
    created_at: str
    source_role: str | None = None
    source_id: str | None = None
    content_hash: str | None = None
    seed_key: str | None = None
    """Set on opening memories written from a scenario file."""
    score: float | None = None
    sensitivity: str | None = None
    """A label purpose-bound policies match on (``public``, ``confidential``, ...); see
    :mod:`bureau.mediation.policy`. ``None``: unlabelled."""
    info_type: str | None = None
    """What kind of information the card holds (``access-code``, ``alibi``, ...), for policies."""
    abstraction: str | None = None
    """A safe summary the owner wrote: what a mediator may release instead of the content."""
    # -- trust tiers (issue 14; see bureau.tiers): as read from the store, None on a hand-made card
    tier: str | None = None
    """``ephemeral`` (one run), ``session`` or ``long-term`` (see :mod:`bureau.tiers`)."""
    provenance: str | None = None
    """``seed``, ``whisper``, ``tool-output``, ``promotion`` or ``publication``."""
    trust: str | None = None
    """``trusted`` or ``untrusted`` (tool output, also once promoted): untrusted text reaches a
    responder only as data, never as instructions."""
    promoted_from: str | None = None
    """The id of the card a promotion copied."""
    tool_source: str | None = None
    """Where tool output came from, as the tool reported it (a URL or a tool name)."""
    copied_from: str | None = None
    """A task-scope value that repeats an untrusted card: that card's id (see
    :mod:`bureau.tiers.inheritance`)."""

    @property
    def is_board_copy(self) -> bool:
        return self.owner == BOARD

    def with_score(self, score: float) -> MemoryCard:
        return replace(self, score=score)

    def snippet(self, width: int = 80) -> str:
        text = " ".join(self.content.split())
        return text if len(text) <= width else text[: width - 1] + "…"


@dataclass(frozen=True)
class ScopeResult:
    """What one scope (a role's private space, or the board) returned for one question."""

    scope: str
    hits: tuple[MemoryCard, ...]
    """Cards at or above the relevance threshold, best first."""
    below_threshold: tuple[MemoryCard, ...]
    """Cards the search returned that were not relevant enough to count."""
    latency_ms: float
    """Time of the query that searched this scope. By default one filtered query covers all of a
    role's scopes, so they report the same figure (``RetrievalTrace.shared_query``)."""

    @property
    def missed(self) -> bool:
        return not self.hits


@dataclass(frozen=True)
class RetrievalTrace:
    """The memory X-ray: what was searched, what hit, what missed, how long it took."""

    request_id: str
    case_id: str
    role: str
    question: str
    scopes: tuple[ScopeResult, ...]
    threshold: float
    embed_ms: float
    total_ms: float
    mode: str
    """Which responder phrased the answer (e.g. "evidence", "llm")."""
    shared_query: bool = True
    """True when one filtered query searched every scope (the default); False: one per scope."""
    tiers: tuple[str, ...] = ("session", "long-term")
    """Which memory tiers were searched (issue 14): a role's session and long-term memory, plus
    ``ephemeral`` inside a run (its own run's scope only)."""

    @property
    def searched_scopes(self) -> list[str]:
        return [s.scope for s in self.scopes]

    @property
    def hits(self) -> list[MemoryCard]:
        """Relevant cards over all scopes, best first."""
        cards = [c for s in self.scopes for c in s.hits]
        return sorted(cards, key=lambda c: -(c.score or 0.0))

    @property
    def misses(self) -> list[str]:
        return [s.scope for s in self.scopes if s.missed]

    def latency_by_scope(self) -> dict[str, float]:
        return {s.scope: s.latency_ms for s in self.scopes}

    def summary(self) -> dict[str, Any]:
        """An outward-safe summary: no question, no card bodies."""
        return {
            "request_id": self.request_id,
            "role": self.role,
            "searched_scopes": self.searched_scopes,
            "hit_ids": [c.id for c in self.hits],
            "hits_by_scope": {s.scope: len(s.hits) for s in self.scopes},
            "misses": self.misses,
            "latency_ms": {**self.latency_by_scope(), "embed": self.embed_ms, "total": self.total_ms},
            "mode": self.mode,
            "shared_query": self.shared_query,
            "tiers": list(self.tiers),
        }


@dataclass(frozen=True)
class LLMExchange:
    """One call to the opt-in LLM voice, exactly as it was made and answered.

    It is the proof of what a model could possibly have known: the messages are the request
    body's messages verbatim (system prompt, then the question and the evidence packet as JSON),
    so nothing reached the model that is not in here. Like the retrieval trace, it is an
    operator view carried on the :class:`Answer` only: events and the stage never hold it,
    because it contains the question and card bodies.
    """

    model: str
    base_url: str | None
    messages: tuple[dict[str, str], ...] = field(hash=False)
    """``{"role": ..., "content": ...}`` as sent."""
    refs: tuple[tuple[str, str], ...]
    """``(ref, card id)`` for every card in the packet, in packet order."""
    raw_reply: str | None
    """The model's reply text as received (``None``: no reply, see ``error``)."""
    parsed: dict[str, Any] | None = field(default=None, hash=False)
    """The reply as JSON, when it parsed as an object."""
    fallback_reason: str | None = None
    """Why the reply was rejected (content-free: safe in events); ``None`` when accepted."""
    error: str | None = None
    """The client's error text when the call failed (operator view only: it may quote the reply)."""
    latency_ms: float = 0.0
    unsupported: tuple[str, ...] = ()
    """The reply's words that no cited card holds, when that rejected it (operator view only:
    they quote the reply; :mod:`bureau.responders.phrasing`)."""

    @property
    def accepted(self) -> bool:
        return self.fallback_reason is None

    @property
    def system_prompt(self) -> str:
        return next((m["content"] for m in self.messages if m.get("role") == "system"), "")

    def request(self) -> dict[str, Any]:
        """The user message decoded: ``{"question": ..., "evidence": [{ref, source, text}]}``."""
        user = next((m["content"] for m in self.messages if m.get("role") == "user"), "")
        try:
            data = json.loads(user)
        except ValueError:
            return {"question": user, "evidence": []}
        return data if isinstance(data, dict) else {"question": user, "evidence": []}

    def sent_text(self) -> str:
        """Everything the model received, as plain text (card bodies unescaped)."""
        req = self.request()
        parts = [self.system_prompt, str(req.get("question", ""))]
        parts += [f"{p.get('ref')} {p.get('source')} {p.get('text')}"
                  for p in req.get("evidence", []) if isinstance(p, dict)]
        return "\n".join(parts)


@dataclass(frozen=True)
class Answer:
    text: str
    known: bool
    cited: tuple[str, ...]
    """Ids of the cards the answer rests on; always a subset of the trace's hits."""
    responder: str
    trace: RetrievalTrace
    fallback_reason: str | None = None
    exchange: LLMExchange | None = field(default=None, repr=False, compare=False)
    """The LLM call behind this answer (request, raw reply, verdict), when a model was called."""

    @property
    def certainty(self) -> str:
        return "known" if self.known else "unknown"


@dataclass(frozen=True)
class Event:
    """Something that happened in a case. Payloads never carry card bodies, questions or answers."""

    seq: int
    case_id: str
    type: str
    payload: dict[str, Any] = field(default_factory=dict)
    at: str = field(default_factory=lambda: datetime.now().isoformat(timespec="milliseconds"))
