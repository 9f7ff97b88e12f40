"""The operations an agent's model may call, as OpenAI function-calling tools.

A model that obeys any text it reads will put any value it saw into any field it is offered, so
the safe design is to offer no field that names *who* acts: no tool here takes a role, a
requester, a case, or an owner meaning "me". The handle that serves the tools fills those in
from the identity it holds. What remains are the question, the text, a card id, a scope name,
and for a consult *whose* memory to ask (which the mediator then decides on, for the holder).

Arguments are checked here before anything runs: an unknown tool, a missing or unexpected
field, a wrong type or an over-long value is a :class:`~bureau.errors.ToolCallError` that says
what was wrong, safe to hand back to the model. So is an argument nested deeper than
:data:`MAX_ARGUMENT_DEPTH` or larger than :data:`MAX_ARGUMENT_NODES` values: its shape is
measured before anything parses it (a 3,000-deep JSON array would otherwise exhaust Python's
recursion limit inside ``json.loads`` and escape as ``RecursionError``).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ToolCallError
from ..text import short_repr

IDENTITY_FIELDS = frozenset({"role", "requester", "case", "case_id", "user_id", "agent_id",
                             "self", "me", "as_role", "principal"})
"""Field names no tool may have: an identity comes from the handle, never from an argument."""
MAX_ARGUMENT_CHARS = 4_000
"""Longest string argument (a question or a note is far shorter; this only bounds cost)."""
MAX_ARGUMENTS_JSON = 20_000
"""Longest JSON text of a call's arguments."""
MAX_ARGUMENT_DEPTH = 16
"""Deepest nesting of a call's arguments (a tool's arguments are one flat object: depth 1)."""
MAX_ARGUMENT_NODES = 256
"""Most values (objects, arrays, scalars) in a call's arguments (a tool takes at most four)."""


@dataclass(frozen=True)
class Param:
    type: str  # "string" | "integer"
    description: str
    required: bool = True
    enum: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    params: Mapping[str, Param]

    def schema(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry (``{"type": "function", "function": {...}}``)."""
        props: dict[str, Any] = {}
        for pname, p in self.params.items():
            prop: dict[str, Any] = {"type": p.type, "description": p.description}
            if p.enum:
                prop["enum"] = list(p.enum)
            if p.type == "string":
                prop["maxLength"] = MAX_ARGUMENT_CHARS
            props[pname] = prop
        return {"type": "function", "function": {
            "name": self.name, "description": self.description,
            "parameters": {"type": "object", "properties": props,
                           "required": [n for n, p in self.params.items() if p.required],
                           "additionalProperties": False}}}


_Q = Param("string", "The question, in plain words.")
_NAME = Param("string", "The task scope's name (lowercase letters, digits, - or _).")
_KEY = Param("string", "The key within the scope (lowercase letters, digits, - or _).")
_CARD = Param("string", "A card id, as shown by recall or list_cards.")

TOOLS: dict[str, ToolSpec] = {t.name: t for t in (
    ToolSpec("recall", "Search your own memory, the bulletin board and the task scopes you are a "
             "member of; returns the matching cards with their owner and score.",
             {"question": _Q,
              "limit": Param("integer", "Cards per scope (default 5).", required=False)}),
    ToolSpec("ask", "Answer a question from your own memory and the board; returns the answer "
             "and the cards it cites.", {"question": _Q}),
    ToolSpec("note", "Write a note into your own private memory.",
             {"text": Param("string", "The note."),
              "topic": Param("string", "A one-word topic (default 'general').",
                             required=False)}),
    ToolSpec("publish", "Put a sourced copy of one of your own cards on the bulletin board, "
             "where every role can read it.", {"card_id": _CARD}),
    ToolSpec("consult", "Ask another role's memory, through the bureau's mediator: it decides "
             "per card, for you, what may be revealed, abstracted or withheld.",
             {"owner": Param("string", "Whose memory to ask: a role of this case."),
              "question": _Q,
              "purpose": Param("string", "Why you ask (e.g. 'investigation').",
                               required=False),
              "recipient": Param("string", "Who will see the answer.", required=False,
                                 enum=("same-agent", "human-reviewer", "other-agent",
                                       "external"))}),
    ToolSpec("list_cards", "List every card you may read (your own, the board, your task "
             "scopes' current values).", {}),
    ToolSpec("get_card", "Read one card you may read, by id.", {"card_id": _CARD}),
    ToolSpec("scope_create", "Create a shared task scope that you own.", {"name": _NAME}),
    ToolSpec("scope_invite", "Invite a role into a task scope you own.",
             {"name": _NAME, "invitee": Param("string", "The role to invite.")}),
    ToolSpec("scope_accept", "Accept an invitation to a task scope.", {"name": _NAME}),
    ToolSpec("scope_leave", "Decline an invitation to a task scope.", {"name": _NAME}),
    ToolSpec("scope_write", "Write a value under a key of a task scope you are a member of.",
             {"name": _NAME, "key": _KEY, "text": Param("string", "The value."),
              "read_version": Param("integer", "The version you read (omit for a first "
                                    "write).", required=False)}),
    ToolSpec("scope_read", "Read a key's current value in a task scope you are a member of.",
             {"name": _NAME, "key": _KEY}),
    ToolSpec("scope_keys", "List the keys of a task scope you are a member of.",
             {"name": _NAME}),
    ToolSpec("my_scopes", "Your task-scope memberships and pending invitations.", {}),
    ToolSpec("inbox", "Your task-scope notices (stale writes, invitations), oldest first.",
             {"cursor": Param("integer", "Where to read on (0: from the start).",
                              required=False)}),
)}
ROLE_TOOLS: tuple[str, ...] = tuple(TOOLS)
"""What an agent acting as a role is offered."""
REQUESTER_TOOLS: tuple[str, ...] = ("consult",)
"""What a declared outsider (the press, an outside service) is offered."""

assert not any(set(t.params) & IDENTITY_FIELDS for t in TOOLS.values())


def schemas(names: Iterable[str]) -> list[dict[str, Any]]:
    """The OpenAI tool definitions of ``names``, in that order."""
    return [TOOLS[n].schema() for n in names]


def json_structure(text: str) -> Iterator[tuple[str, bool]]:
    """Each character of JSON text with whether it is structure (outside every string): one
    pass, no recursion, safe on any input. Not a validator."""
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            yield ch, False
        elif ch == '"':
            in_string = True
            yield ch, False
        else:
            yield ch, True


def json_depth(text: str | bytes) -> int:
    """The deepest nesting of ``[``/``{`` in JSON text, strings skipped; measured without
    parsing (:func:`json_structure`), so it is safe on any input. Not a validator."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if text.count("[") + text.count("{") <= 1:  # the common case: one flat object
        return min(1, text.count("[") + text.count("{"))
    depth = deepest = 0
    for ch, structural in json_structure(text):
        if not structural:
            continue
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _too_deep(name: str) -> ToolCallError:
    return ToolCallError(f"The arguments of {name} are nested deeper than "
                         f"{MAX_ARGUMENT_DEPTH} levels.",
                         "A tool takes one flat object of text and whole numbers.")


def _check_shape(name: str, arguments: object) -> None:
    """Refuse arguments (already parsed: a mapping from an MCP client or a caller) nested
    deeper than :data:`MAX_ARGUMENT_DEPTH` or holding more than :data:`MAX_ARGUMENT_NODES`
    values. Walked without recursion, stopping at the first limit (a self-containing list
    stops at the depth limit)."""
    stack: list[tuple[object, int]] = [(arguments, 1)]
    nodes = 0
    while stack:
        value, depth = stack.pop()
        nodes += 1
        if nodes > MAX_ARGUMENT_NODES:
            raise ToolCallError(f"The arguments of {name} hold more than "
                                f"{MAX_ARGUMENT_NODES} values.",
                                "A tool takes one flat object of text and whole numbers.")
        if isinstance(value, Mapping):
            children: Iterable[object] = value.values()
        elif isinstance(value, list | tuple | set | frozenset):
            children = value
        else:
            continue
        if depth > MAX_ARGUMENT_DEPTH:
            raise _too_deep(name)
        stack.extend((child, depth + 1) for child in itertools.islice(
            children, MAX_ARGUMENT_NODES + 1))


def parse_call(name: object, arguments: object, offered: Iterable[str]) -> tuple[str, dict[str,
                                                                                           Any]]:
    """A tool call checked against what the caller was offered: ``(name, clean arguments)``.

    ``arguments`` may be a mapping or the JSON text a model sends. Everything wrong is a
    :class:`ToolCallError` raised before anything runs.
    """
    offered = tuple(offered)
    if type(name) is not str or name not in offered:
        raise ToolCallError(f"There is no tool {short_repr(name)}.",
                            f"Your tools: {', '.join(offered)}.")
    if isinstance(arguments, str | bytes):
        if len(arguments) > MAX_ARGUMENTS_JSON:
            raise ToolCallError(f"The arguments of {name} are too long.")
        if json_depth(arguments) > MAX_ARGUMENT_DEPTH:
            raise _too_deep(name)
        try:
            arguments = json.loads(arguments or "{}")
        except (ValueError, RecursionError):  # RecursionError: unreachable after the depth check
            raise ToolCallError(f"The arguments of {name} are not valid JSON.") from None
    _check_shape(name, arguments)
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise ToolCallError(f"The arguments of {name} must be an object, not "
                            f"{type(arguments).__name__}.")
    spec = TOOLS[name]
    extra = [k for k in arguments if k not in spec.params]
    if extra:
        raise ToolCallError(f"{name} takes no argument {short_repr(str(extra[0]))}.",
                            f"It takes: {', '.join(spec.params) or 'nothing'}.")
    clean: dict[str, Any] = {}
    for pname, p in spec.params.items():
        if pname not in arguments or arguments[pname] is None:
            if p.required:
                raise ToolCallError(f"{name} needs {pname!r}.")
            continue
        value = arguments[pname]
        if p.type == "integer":
            if type(value) is not int:
                raise ToolCallError(f"{name}: {pname} must be a whole number, not "
                                    f"{short_repr(value)}.")
            if not -(2**31) < value < 2**31:  # a whole number, only far out of any range
                raise ToolCallError(f"{name}: {pname} {short_repr(value)} is out of range.")
        else:
            if type(value) is not str:
                raise ToolCallError(f"{name}: {pname} must be text, not {short_repr(value)}.")
            if len(value) > MAX_ARGUMENT_CHARS:
                raise ToolCallError(f"{name}: {pname} is longer than {MAX_ARGUMENT_CHARS:,} "
                                    "characters.")
            if p.enum and value not in p.enum:
                raise ToolCallError(f"{name}: {pname} must be one of {', '.join(p.enum)}.")
        clean[pname] = value
    return name, clean


__all__ = ["IDENTITY_FIELDS", "MAX_ARGUMENT_DEPTH", "MAX_ARGUMENT_NODES", "REQUESTER_TOOLS", "ROLE_TOOLS", "TOOLS", "Param", "ToolSpec",
           "json_depth", "parse_call", "schemas"]
