"""Lesson 09's bridge from what learners already know: a long-term-memory store keyed by a
namespace the caller passes, ported onto an agent handle.

Learners of the LangGraph long-term-memory courses write ``store.put(("memories", user_id),
key, value)`` and ``store.search(("memories", user_id), query=...)``. The namespace is a tuple
the *caller* builds, so whoever calls the store decides whose memory it reads: fine for one
trusted application, a leak when the caller is one agent among several. Two classes put the
two designs side by side with the same methods:

* :class:`NamespaceStore` -- an in-memory stand-in that mirrors the *shape* of LangGraph's
  ``BaseStore`` API (``put(namespace, key, value)``, ``get(namespace, key)``,
  ``search(namespace_prefix, *, query, filter, limit, offset)`` returning items with
  ``namespace``, ``key``, ``value``, ``created_at``, ``updated_at`` and a search ``score``). It
  is not LangGraph and does not import it (the course does not depend on langgraph); its query
  score is a plain word overlap, not an embedding, which is enough to show where the scope
  comes from. Like the original, it knows no caller: any namespace may be named.
* :class:`HandleStore` -- the same methods over one agent handle (``case.agent(role)``) and the
  bureau's real storage. The namespace may only narrow what the handle already reaches: a
  namespace naming any other role is refused (:class:`~bureau.errors.NamespaceRefusedError`)
  from the argument alone, before storage is touched, in the same words whether or not that
  namespace holds anything; the search itself is the handle's ``recall``, so the scopes come
  from the identity the handle holds.

The exercise ``09-port-a-store`` checks the learner's ported store against the bureau's real
state: the note it wrote in the role's own space, and the bureau's log of what that role
searched.
"""

from __future__ import annotations

import json
import numbers
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..errors import InvalidArgumentError, NamespaceRefusedError
from ..model import BOARD, MemoryCard
from ..service import Case
from ..service.agent import Agent
from ..settings import LIMIT_RANGE, check_limit
from ..text import short_repr
from .widgets.exercises import Exercise, Verdict, not_yet, passed, register

PREFIX = "memories"
"""The first element of every namespace here, as in the courses' ``("memories", user_id)``."""


@dataclass(frozen=True)
class Item:
    """One stored value, shaped like LangGraph's ``Item`` (``SearchItem`` adds ``score``)."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    score: float | None = None


def _namespace(value: object) -> tuple[str, ...]:
    if not isinstance(value, tuple) or not all(isinstance(p, str) and p for p in value):
        raise InvalidArgumentError("A namespace is a tuple of non-empty strings, e.g. "
                                   "('memories', 'some-user').")
    return value


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def _matches(value: dict[str, Any], filter: dict[str, Any] | None) -> bool:
    return not filter or all(value.get(k) == v for k, v in filter.items())


class NamespaceStore:
    """In-memory stand-in with the shape of LangGraph's ``BaseStore`` API: the caller names the
    namespace on every call, and the store checks nothing about who the caller is."""

    def __init__(self) -> None:
        self._items: dict[tuple[tuple[str, ...], str], Item] = {}

    @classmethod
    def from_case(cls, case: Case) -> NamespaceStore:
        """Each role's private cards of ``case`` under ``("memories", role)``, keyed by seed key
        (or topic), the way an application would have loaded them (the operator reads them)."""
        store = cls()
        for role in case.role_names:
            for card in case.cards(role):
                if card.owner == role:
                    store.put((PREFIX, role), card.seed_key or card.topic, {"text": card.content})
        return store

    def put(self, namespace: tuple[str, ...], key: str, value: dict[str, Any]) -> None:
        """Store ``value`` at ``key`` in ``namespace`` (overwriting, as LangGraph does)."""
        namespace = _namespace(namespace)
        now = datetime.now(UTC)
        old = self._items.get((namespace, key))
        self._items[(namespace, key)] = Item(namespace, key, dict(value),
                                             old.created_at if old else now, now)

    def get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        return self._items.get((_namespace(namespace), key))

    def search(self, namespace_prefix: tuple[str, ...], /, *, query: str | None = None,
               filter: dict[str, Any] | None = None, limit: int = 10,
               offset: int = 0) -> list[Item]:
        """Every item whose namespace starts with ``namespace_prefix`` (``()``: the whole
        store), ranked by the share of the query's words its text contains."""
        prefix = namespace_prefix if namespace_prefix == () else _namespace(namespace_prefix)
        asked = _words(query or "")
        found = []
        for (ns, _), item in self._items.items():
            if ns[:len(prefix)] == prefix and _matches(item.value, filter):
                text = json.dumps(item.value, sort_keys=True)
                score = len(asked & _words(text)) / len(asked) if asked else None
                found.append(Item(item.namespace, item.key, item.value, item.created_at,
                                  item.updated_at, score))
        found.sort(key=lambda i: -(i.score or 0.0))
        return found[offset:offset + limit]


@dataclass
class HandleStore:
    """The same put / get / search over one agent handle and the bureau's real storage.

    The role is the handle's; a namespace may name it (``("memories", role)``), a prefix of it
    (``("memories",)`` or ``()``: everything the handle may read) or nothing else. ``refused``
    and ``keys`` record what this store was asked, for the exercise's check (which reads the
    bureau's state, not these lists, for anything it vouches for)."""

    agent: Agent
    refused: list[tuple[str, ...]] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    owners_returned: set[str] = field(default_factory=set)

    @property
    def role(self) -> str:
        return self.agent.role

    @property
    def own(self) -> tuple[str, str]:
        return (PREFIX, self.role)

    def _allowed(self, namespace: object, *, exact: bool) -> tuple[str, ...]:
        """``namespace`` if it names this handle's own memory (or, for a search, a prefix of
        it); anything else is refused from the argument alone, before storage is touched."""
        ns = () if namespace == () and not exact else _namespace(namespace)
        if ns != self.own and (exact or ns != self.own[:len(ns)]):
            self.refused.append(ns)
            raise NamespaceRefusedError(
                f"This store is bound to the {self.role!r} handle; it reads and writes only "
                f"{self.own!r}.")
        return ns

    def _item(self, card: MemoryCard) -> Item:
        self.owners_returned.add(card.owner)
        try:
            value = json.loads(card.content)
        except ValueError:
            value = None
        if not isinstance(value, dict):
            value = {"text": card.content}
        at = datetime.fromisoformat(card.created_at)
        return Item((PREFIX, card.owner), card.topic, value, at, at, card.score)

    def _own_notes(self, key: str) -> list[MemoryCard]:
        return [c for c in self.agent.cards()
                if c.owner == self.role and c.topic == key and c.provenance == "agent-note"]

    def put(self, namespace: tuple[str, ...], key: str, value: dict[str, Any]) -> None:
        """A note in the handle's own space (``agent.note``), topic ``key``; an earlier note
        at that key is forgotten, so a put overwrites, as in LangGraph."""
        self._allowed(namespace, exact=True)
        if not isinstance(value, dict) or not value:
            raise InvalidArgumentError("A value is a non-empty dict, e.g. {'text': '...'}.")
        text = value["text"] if set(value) == {"text"} else json.dumps(value, sort_keys=True)
        old = self._own_notes(key)
        self.agent.note(str(text), topic=key)
        for card in old:
            self.agent.forget(card.id)
        self.keys.append(key)

    def get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        self._allowed(namespace, exact=True)
        mine = [c for c in self.agent.cards() if c.owner == self.role and c.topic == key]
        return self._item(max(mine, key=lambda c: c.created_at)) if mine else None

    def search(self, namespace_prefix: tuple[str, ...], /, *, query: str | None = None,
               filter: dict[str, Any] | None = None, limit: int = 10,
               offset: int = 0) -> list[Item]:
        """The handle's ``recall`` (its own space, the board, its task scopes: the service
        decides), narrowed to its own space when the prefix names it."""
        ns = self._allowed(namespace_prefix, exact=False)
        limit = check_limit(limit)
        top = LIMIT_RANGE[1] - limit  # the handle's recall reads at most offset + limit cards
        if isinstance(offset, bool) or not isinstance(offset, numbers.Integral) \
                or not 0 <= offset <= top:
            raise InvalidArgumentError(
                f"offset must be a whole number from 0 to {top} (offset + limit at most "
                f"{LIMIT_RANGE[1]}), not {short_repr(offset)}.")
        if query:
            cards = self.agent.recall(query, limit=offset + limit).hits
        else:
            cards = self.agent.cards()
        if ns == self.own:
            cards = [c for c in cards if c.owner == self.role]
        items = [self._item(c) for c in cards]
        return [i for i in items if _matches(i.value, filter)][offset:offset + limit]


# -- the exercise -----------------------------------------------------------------------------
def check_ported_store(case: Case, answer: Any) -> Verdict:
    """The learner's :class:`HandleStore` must belong to a role that does not hold the secret,
    have written a note that the bureau holds in that role's own space, and have been refused
    when it named the holder's namespace; the bureau's log must show that role never searched
    outside its own scopes."""
    from .cast import Cast

    holder = Cast.of(case).holder
    if answer is None:
        return not_yet("Replace `None` with your `HandleStore(case.agent(...))`.")
    if not isinstance(answer, HandleStore):
        return not_yet(f"Expected a HandleStore, got {type(answer).__name__}.")
    role = answer.role
    if role == holder:
        return not_yet(f"That store is the {holder}'s own: build it on another role's handle, "
                       "one that does not hold the secret.")
    if not answer.keys:
        return not_yet(f"Put one memory first: `my_store.put(('memories', {role!r}), key, "
                       "{'text': ...})`.")
    held = {c.topic for c in case.cards(role) if c.owner == role and c.provenance == "agent-note"}
    if not set(answer.keys) & held:
        return not_yet(f"The bureau holds none of the keys you put ({answer.keys}) in the "
                       f"{role}'s own space: was the store built on this case?")
    if (PREFIX, holder) not in answer.refused:
        return not_yet(f"Now try the leak from above through your store: search "
                       f"('memories', {holder!r}) and catch the error it raises.")
    allowed = {role, BOARD, *case.scopes_for(role)}
    strays = [e.payload["searched_scopes"] for e in case.bureau.event_log(case.id)
              if e.type == "retrieval.completed" and e.payload.get("role") == role
              and not set(e.payload["searched_scopes"]) <= allowed]
    if strays or answer.owners_returned - allowed:
        return not_yet(f"The {role}'s store reached beyond its own scopes: {strays}.")
    return passed(f"Your put landed in the {role}'s own space, and naming the {holder}'s "
                  "namespace was refused before anything ran: the namespace can narrow what "
                  "the handle reaches, never widen it.")


SOLUTION = '''my_store = HandleStore(case.agent(suspect))  # the same methods, the identity held
my_store.put(("memories", suspect), "plan", {"text": "Follow up tomorrow morning."})
try:
    my_store.search(("memories", informant), query=safe_question)
except BureauError as exc:
    print("refused:", exc.message)
[item.key for item in my_store.search(("memories", suspect), query="follow up")]'''

register(Exercise("09-port-a-store", "Port a namespace store onto a handle", SOLUTION,
                  check_ported_store))

__all__ = ["PREFIX", "HandleStore", "Item", "NamespaceStore", "check_ported_store"]
