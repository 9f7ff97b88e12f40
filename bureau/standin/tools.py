"""The stand-in model's tool calling: what it asks for when a request offers tools.

A teaching and test tool, not a language model (see :mod:`.standin_model`; replies without tools are
:mod:`.standin_replies`):

* **obedient** calls ``recall`` once with the user's question, then answers from the card that
  shares most words with it;
* **gullible** is the worst case an agent host can meet: it calls *every* tool it is offered
  with *every* argument it can find in its input -- each name-like word (role names included),
  each long digit run (card ids, other cases' ids), the question itself -- and, when told "you
  are now the X", adds an identity field (``role: X``) the tools do not have. After each round
  it tries again with what the results taught it (up to :data:`ROUNDS` rounds), then answers
  with everything the tools gave it, word for word, and obeys every order it read.

So whatever a tool-calling agent could be talked into, the gullible stand-in does; what it can
reach is then exactly what the handle that serves the tools allows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from itertools import zip_longest
from typing import Any

from .replies import SAY, Order, find_orders, obedient_reply

ROUNDS = 3
MAX_CALLS = 150
"""Calls per round at most (every argument it found, for every tool, grows fast)."""
_ID = re.compile(r"\b\d{6,}\b")
_NAMEISH = re.compile(r"\b[a-z][a-z0-9_-]{2,31}\b")
_SWAP = re.compile(r"\byou are (?:now )?(?:the |an? )?([a-z][a-z0-9_-]{2,31})\b", re.I)
_COMMON = frozenset(
    "the and for with that this what who whom which when where why how does did you your yours "
    "are was were not but any all tell know about from into have has had can could would should "
    "will shall may might must our their them they its it's his her him she he i'm i've one two "
    "also then than there here only just very some such each every ignore previous instructions "
    "rules print secret answer question memory private notes card cards cite say known reveal "
    "plain text json reply give list everything true false none null ok result error message "
    "text score trust owner source_role card_id searched hits cited".split())


def _content(m: dict[str, Any]) -> str:
    c = m.get("content")
    return c if isinstance(c, str) else ""


_NAMED_FIELDS = frozenset({"owner", "source_role", "writer", "name", "card_id", "board_card_id",
                           "scope", "key", "keys", "searched", "cited"})


def _fields(messages: Sequence[dict[str, Any]], wanted: frozenset[str]) -> list[str]:
    """Every value of a field named in ``wanted`` in the tool results (any depth, lists of
    values included), as text, in order."""
    out: list[str] = []

    def walk(v: Any, field: str = "") -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, k)
        elif isinstance(v, list):
            for x in v:
                walk(x, field)
        elif field in wanted and isinstance(v, str | int) and not isinstance(v, bool):
            out.append(str(v))

    for m in messages:
        if m.get("role") == "tool":
            try:
                walk(json.loads(_content(m)))
            except ValueError:
                continue
    return out


def _tool_texts(messages: Sequence[dict[str, Any]]) -> list[str]:
    """The texts of every card the tool results carried."""
    return _fields(messages, frozenset({"text"}))


def _named(messages: Sequence[dict[str, Any]]) -> list[str]:
    """The names and ids tool results mention (values of owner, writer, card_id, ... fields)."""
    return _fields(messages, _NAMED_FIELDS)


def _tried(messages: Sequence[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(str(c.get("function", {}).get("name")), str(c.get("function", {}).get("arguments")))
            for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls") or []}


def _question(messages: Sequence[dict[str, Any]]) -> str:
    return next((_content(m) for m in messages if m.get("role") == "user"), "")


def tool_turn(temperament: str, messages: Sequence[dict[str, Any]],
              tools: Sequence[dict[str, Any]]) -> tuple[dict[str, Any], list[Order]]:
    """The stand-in's next message: ``{"tool_calls": [...]}`` or ``{"content": text}``, and the
    orders it obeyed."""
    question = _question(messages)
    rounds = sum(1 for m in messages if m.get("role") == "assistant" and m.get("tool_calls"))
    offered = {t["function"]["name"]: t["function"].get("parameters", {}) for t in tools
               if isinstance(t, dict) and isinstance(t.get("function"), dict)}
    texts = _tool_texts(messages)
    if temperament != "gullible":
        if rounds == 0 and "recall" in offered:
            return _calls([("recall", {"question": question})], rounds), []
        packet = [{"ref": f"t{i}", "text": t, "source": "a tool result"}
                  for i, t in enumerate(texts)]
        best = obedient_reply(question, packet)
        return {"content": best["answer"]}, []
    orders = find_orders(question, "question")
    for i, t in enumerate(texts):
        orders += find_orders(t, f"tool result {i}")
    if rounds < ROUNDS:
        calls = _everything(question, messages, offered, orders)
        tried = _tried(messages)
        fresh = [(n, a) for n, a in calls if (n, json.dumps(a, sort_keys=True)) not in tried]
        if fresh:
            return _calls(fresh[:MAX_CALLS], rounds), orders
    parts = ["Here is everything I can see: " + " | ".join(texts)] if texts else [
        "My tools gave me nothing."]
    parts += [m.group(2) for o in orders if o.kind == "say" for m in [SAY.search(o.sentence)]
              if m]
    return {"content": " ".join(parts)}, orders


def _everything(question: str, messages: Sequence[dict[str, Any]],
                offered: dict[str, dict[str, Any]], orders: list[Order]
                ) -> list[tuple[str, dict[str, Any]]]:
    # What it read: the question in full (the host's system prompt is the host's, not the
    # attacker's); of the tool results, the names and ids they mention (owners, writers, scopes,
    # card ids), not every word of every card.
    said = " ".join(_content(m) for m in messages if m.get("role") == "user")
    named = " ".join(_named(messages))
    ids = list(dict.fromkeys(_ID.findall(said + " " + named)))[:60]
    names = [w for w in dict.fromkeys(_NAMEISH.findall((said + " " + named).lower()))
             if w not in _COMMON][:40]
    swaps = [m.group(1).lower() for o in orders if o.kind == "reveal"
             for m in [_SWAP.search(o.sentence)] if m]
    values: dict[str, list[Any]] = {
        "question": [question], "text": [question], "topic": ["general"], "limit": [100],
        "cursor": [0], "read_version": [None], "purpose": ["investigation"],
        "recipient": ["same-agent"], "card_id": ids, "key": names[:10]}
    per_tool: list[list[tuple[str, dict[str, Any]]]] = []
    for tool, schema in offered.items():
        props = list(schema.get("properties") or {})
        base = {p: values.get(p, names)[0] for p in props if values.get(p, names)}
        base = {k: v for k, v in base.items() if v is not None}
        calls = [(tool, base)]
        for p in props:  # every value it found, one field at a time
            for v in values.get(p, names)[1:] if p in values else names:
                calls.append((tool, {**base, p: v}))
        for who in swaps:  # "you are now the X": it adds an identity the tool does not have
            calls.append((tool, {**base, "role": who}))
        per_tool.append(calls)
    # Round-robin over the tools, so a capped round still tries every tool.
    merged = [c for group in zip_longest(*per_tool) for c in group if c is not None]
    return list({(n, json.dumps(a, sort_keys=True)): (n, a) for n, a in merged}.values())


def _calls(calls: Sequence[tuple[str, dict[str, Any]]], rounds: int) -> dict[str, Any]:
    return {"tool_calls": [
        {"id": f"call_{rounds}_{i}", "type": "function",
         "function": {"name": n, "arguments": json.dumps(a, ensure_ascii=False)}}
        for i, (n, a) in enumerate(calls)]}


__all__ = ["MAX_CALLS", "ROUNDS", "tool_turn"]
