"""Agent handles: an identity you hold, not a name you pass.

``case.agent(role)`` is what the operator hands to an agent (a notebook cell, an LLM tool loop,
an MCP server): everything the agent may do goes through it, and every operation fills in the
handle's own identity. No method takes a role, a requester or a case, so nothing an agent reads
or is told can make it act as someone else: the disclosure budget, grants, revocation checks
and audit entries are all keyed on the principal the handle carries. ``case.requester(name)``
is the same for a declared outsider (the press, an outside service), which may only consult.

``tools()`` offers the same operations as OpenAI function-calling tools, and ``call_tool``
runs one after checking its arguments (:mod:`bureau.agents.tools`); a refused call comes back
as an error result the model can read, and changes nothing.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from ..agents import Principal
from ..agents.tools import REQUESTER_TOOLS, ROLE_TOOLS, parse_call, schemas
from ..errors import BureauError, ForgetRefusedError, InvalidArgumentError
from ..mediation.mediator import Mediation
from ..model import Answer, MemoryCard, RetrievalTrace

if TYPE_CHECKING:
    from ..task_scopes import InboxPage, Membership, ScopeValue, ScopeWrite, TaskScope
    from ..task_scopes.versions import WriteResult
    from .rooms import Disclosure, Publishing, Reading, Run, Runs, TaskScopes
    from .rooms.writing import Writing

MAX_TOOL_TEXT = 1_000
"""Longest card text a tool result carries (a model reads it; the card itself is intact)."""


class Requester:
    """A held principal that may consult the roles of one case."""

    _offered: tuple[str, ...] = REQUESTER_TOOLS

    def __init__(self, principal: Principal, case_id: str, disclosure: Disclosure, *,
                 threshold: float | None = None) -> None:
        self._principal = principal
        self._disclosure = disclosure
        self._threshold = threshold
        self.case_id = case_id

    @property
    def name(self) -> str:
        """Who this handle acts as (a role, a declared outsider, or the chief)."""
        return self._principal.name

    @property
    def principal(self) -> Principal:
        return self._principal

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} of case {self.case_id}>"

    def consult(self, owner: str, question: str, *, purpose: str | None = None,
                recipient: str | None = None, task: str | None = None,
                limit: int | None = None) -> Mediation:
        """Ask ``owner``'s memory through the mediator, as this handle's principal.

        ``recipient`` (who finally sees the answer) defaults to ``same-agent`` for one's own
        memory and ``other-agent`` otherwise.
        """
        if recipient is None:
            recipient = "same-agent" if owner == self.name else "other-agent"
        m = self._disclosure.consult(self._principal, owner, question, recipient=recipient,
                                     task=task, purpose=purpose, limit=limit,
                                     threshold=self._threshold)
        return m if owner == self.name else m.released_view()

    # -- tools -------------------------------------------------------------------------------
    def tools(self) -> list[dict[str, Any]]:
        """This handle's operations as OpenAI function-calling tool definitions."""
        return schemas(self._offered)

    def call_tool(self, name: object, arguments: object = None) -> dict[str, Any]:
        """Run one tool call; ``{"ok": True, "result": ...}`` or ``{"ok": False, "error": kind,
        "message": ...}`` for a refusal (bad arguments, an unknown card, ...), which changes
        nothing. Arguments may be a mapping or the JSON text a model sends."""
        try:
            tool, args = parse_call(name, arguments, self._offered)
            return {"ok": True, "result": getattr(self, f"_tool_{tool}")(**args)}
        except BureauError as exc:
            return {"ok": False, "error": type(exc).__name__, "message": str(exc)}

    def _tool_consult(self, owner: str, question: str, purpose: str | None = None,
                      recipient: str | None = None) -> dict[str, Any]:
        m = self.consult(owner, question, purpose=purpose, recipient=recipient)
        return {"answer": m.answer.text, "known": m.answer.known,
                "released": [_card(c) for c in m.released]}


class Agent(Requester):
    """One role of one case, held: its memory, its board, its runs and task scopes."""

    _offered = ROLE_TOOLS

    def __init__(self, principal: Principal, case_id: str, *, reading: Reading,
                 writing: Writing, disclosure: Disclosure, publishing: Publishing, runs: Runs,
                 task_scopes: TaskScopes, threshold: float | None = None) -> None:
        super().__init__(principal, case_id, disclosure, threshold=threshold)
        self._reading = reading
        self._writing = writing
        self._publishing = publishing
        self._runs = runs
        self.scopes = AgentScopes(principal.name, task_scopes, reading)
        """This role's task-scope operations (create, invite, accept, write, read, ...)."""

    @property
    def role(self) -> str:
        return self._principal.name

    # -- memory ------------------------------------------------------------------------------
    def recall(self, question: str, limit: int | None = None) -> RetrievalTrace:
        """Search exactly this role's own space, the board and its task scopes (the X-ray)."""
        return self._reading.retrieve(self.role, question, limit)

    def ask(self, question: str) -> Answer:
        """Answer from this role's own evidence (requester: this role, for itself)."""
        return self.consult(self.role, question).answer

    def note(self, text: str, topic: str = "general", kind: str = "note") -> MemoryCard:
        """Write a note into this role's own private memory (provenance ``agent-note``)."""
        return self._writing.write(self.role, text, topic, kind, provenance="agent-note",
                                   event="memory.noted")

    def forget(self, card_id: str) -> list[str]:
        """Forget one of this role's own notes (written with :meth:`note`), with every copy
        derived from it (:meth:`Case.forget`). A card it may read but did not note itself --
        a whisper, a board card, a scope value -- is refused (``ForgetRefusedError``); one it
        may not read gets the same ``UnknownCardError`` as any unknown id."""
        card = self._reading.card(self.role, card_id)
        if card.owner != self.role or card.provenance != "agent-note":
            raise ForgetRefusedError(
                f"Card {card.id} is not one of {self.role}'s own notes; an agent forgets only "
                "what it noted itself.")
        return self._disclosure.forget(card.id)

    def publish(self, card_id: str, ttl_s: float | None = None) -> MemoryCard:
        """Put a sourced copy of one of this role's own cards on the board."""
        return self._publishing.publish(self.role, card_id, ttl_s)

    def cards(self) -> list[MemoryCard]:
        """Every card this role may list: its own, the board, its task scopes' values."""
        return self._reading.cards(self.role)

    def card(self, card_id: str) -> MemoryCard:
        """One card this role may read; any other id gets the same ``UnknownCardError``."""
        return self._reading.card(self.role, card_id)

    def export(self) -> dict[str, Any]:
        """This role's readable memory as JSON-ready data."""
        return {"case_id": self.case_id, "role": self.role,
                "cards": [asdict(c) for c in self.cards()]}

    # -- runs --------------------------------------------------------------------------------
    def start_run(self) -> Run:
        """A run of this role (``with agent.start_run() as run:``): its tool output stays in
        an ephemeral scope only this run searches, gone when the run ends."""
        return self._runs.start(self.role)

    def run(self, run_id: str) -> Run:
        """Reattach to one of this role's live runs (another role's run id is refused)."""
        return self._runs.get(run_id, role=self.role)

    # -- tools -------------------------------------------------------------------------------
    def _tool_recall(self, question: str, limit: int | None = None) -> dict[str, Any]:
        t = self.recall(question, limit)
        return {"searched": list(t.searched_scopes), "hits": [_card(c) for c in t.hits]}

    def _tool_ask(self, question: str) -> dict[str, Any]:
        a = self.ask(question)
        return {"answer": a.text, "known": a.known, "cited": list(a.cited)}

    def _tool_note(self, text: str, topic: str = "general") -> dict[str, Any]:
        return {"card_id": self.note(text, topic).id}

    def _tool_publish(self, card_id: str) -> dict[str, Any]:
        return {"board_card_id": self.publish(card_id).id}

    def _tool_list_cards(self) -> dict[str, Any]:
        return {"cards": [_card(c) for c in self.cards()]}

    def _tool_get_card(self, card_id: str) -> dict[str, Any]:
        return _card(self.card(card_id))

    def _tool_scope_create(self, name: str) -> dict[str, Any]:
        return _scope(self.scopes.create(name))

    def _tool_scope_invite(self, name: str, invitee: str) -> dict[str, Any]:
        return _scope(self.scopes.invite(name, invitee))

    def _tool_scope_accept(self, name: str) -> dict[str, Any]:
        return _scope(self.scopes.accept(name))

    def _tool_scope_leave(self, name: str) -> dict[str, Any]:
        return _scope(self.scopes.decline(name))

    def _tool_scope_write(self, name: str, key: str, text: str,
                          read_version: int | None = None) -> dict[str, Any]:
        r = self.scopes.write(name, key, text, read_version=read_version)
        return {"version": r.version, "stale": r.stale}

    def _tool_scope_read(self, name: str, key: str) -> dict[str, Any]:
        v = self.scopes.read(name, key)
        return {"key": v.key, "text": v.text[:MAX_TOOL_TEXT], "version": v.version,
                "writer": v.writer}

    def _tool_scope_keys(self, name: str) -> dict[str, Any]:
        return {"keys": self.scopes.keys(name)}

    def _tool_my_scopes(self) -> dict[str, Any]:
        return {"scopes": [{"name": m.scope, "state": m.state} for m in self.scopes.mine()]}

    def _tool_inbox(self, cursor: int = 0) -> dict[str, Any]:
        page = self.scopes.inbox(cursor)
        return {"notices": [_plain(i) for i in page.items], "next_cursor": page.next_cursor}


class AgentScopes:
    """One role's task-scope operations; the acting role is the handle's, never an argument."""

    def __init__(self, role: str, room: TaskScopes, reading: Reading) -> None:
        self._role = role
        self._room = room
        self._reading = reading

    def create(self, name: str) -> TaskScope:
        return self._room.create(self._role, name)

    def invite(self, name: str, invitee: str) -> TaskScope:
        return self._room.invite(name, self._role, invitee)

    def accept(self, name: str) -> TaskScope:
        return self._room.accept(name, self._role)

    def decline(self, name: str) -> TaskScope:
        return self._room.decline(name, self._role)

    def remove(self, name: str, member: str, *, forget_values: bool = False) -> TaskScope:
        """Remove ``member``; ``forget_values``: the values it wrote are forgotten too."""
        return self._room.remove(name, self._role, member, forget_values=forget_values)

    def transfer(self, name: str, to: str) -> TaskScope:
        return self._room.transfer(name, self._role, to)

    def archive(self, name: str) -> TaskScope:
        return self._room.archive(name, self._role)

    def delete(self, name: str) -> TaskScope:
        return self._room.delete(name, self._role)

    def write(self, name: str, key: str, text: str | None = None, *,
              read_version: int | None = None, from_card: str | None = None) -> WriteResult:
        """Write ``text`` to ``key``, or the text of one card this role may read
        (``from_card``): such a value records the card as its source, so revoking or expiring
        the card reaches the value and its history too (issue 19)."""
        if from_card is None:
            return self._room.write(name, self._role, key, text, read_version)
        if text is not None:
            raise InvalidArgumentError("Pass either text or from_card, not both.")
        card = self._reading.card(self._role, from_card)  # the one refusal for any other id
        return self._room.write(name, self._role, key, card.content, read_version,
                                source_id=card.id)

    def read(self, name: str, key: str) -> ScopeValue:
        return self._room.read(name, self._role, key)

    def keys(self, name: str) -> list[str]:
        return self._room.keys(name, self._role)

    def history(self, name: str, key: str) -> list[ScopeWrite]:
        return self._room.history(name, self._role, key)

    def info(self, name: str) -> TaskScope:
        return self._room.info(name, self._role)

    def mine(self) -> list[Membership]:
        return self._room.memberships(self._role)

    def inbox(self, cursor: int = 0, limit: int = 100) -> InboxPage:
        return self._room.inbox(self._role, cursor, limit)


def _card(c: MemoryCard) -> dict[str, Any]:
    """What a tool result says of a card: whose it is (as stored), where from, the text."""
    out: dict[str, Any] = {"card_id": c.id, "owner": c.owner, "text": c.content[:MAX_TOOL_TEXT]}
    if c.source_role:
        out["source_role"] = c.source_role
    if c.score is not None:
        out["score"] = round(c.score, 3)
    if c.trust:
        out["trust"] = c.trust
    return out


def _scope(s: TaskScope) -> dict[str, Any]:
    return {"name": s.name, "owner": s.owner, "state": s.state}


def _plain(item: Any) -> dict[str, Any]:
    return {k: v for k, v in asdict(item).items() if not isinstance(v, bytes)}


__all__ = ["Agent", "AgentScopes", "Requester"]
