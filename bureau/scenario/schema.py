"""A scenario's schema: the roles, principals, seed memories and questions of a case file, every
check on them (field by field, then across fields: the answer key must agree with who holds what),
and the caps any scenario stays within (:data:`LIMITS`; :data:`LAB_LIMITS` for a lab's scenario
built in memory). :mod:`.loading` reads files and turns validation errors into messages."""


from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import (
    ValidationInfo,
    field_validator,
    model_validator,
)

from ..datafiles import (
    Limits,
    field_path,
)
from ..errors import ScenarioError
from ..model import BOARD
from ..text import MAX_CARD_CHARS, MAX_QUESTION_CHARS, short_repr
from .case_file import CaseFile
from .fields import Strict as _Strict
from .fields import checked_name as _name
from .fields import checked_text as _text

MAX_TITLE_CHARS = 120
"""Titles are shown as headings in widgets and tables; a paragraph belongs in ``summary``."""
MAX_FILE_BYTES = 100_000
"""A scenario is a handful of facts: the shipped ones are about 3 kB, and 40 cards of 700 Chinese
characters still fit. Checked before the file is read, not after. The cap also bounds parsing
time: PyYAML's pure-Python scanner (kept for its error messages, which tests and the README
quote) needs up to ~3 us per byte, so a file at the cap is refused or loaded in ~0.3 s."""
MAX_DEPTH = 32
"""Nesting levels, counting the top-level mapping as 1. A scenario needs 5 (``memories`` ->
role -> list -> card -> text); the cap stops recursive parsers and validators long before
Python's recursion limit, which deep ``[[[[...]]]]`` input would otherwise hit."""
MAX_VALUES = 5_000
"""Values (texts, numbers, lists, mappings) in the whole scenario, counted with every YAML alias
expanded. The shipped scenarios have about 150; a large one (10 roles, 40 cards, 20 questions)
about 800. The count is what makes an alias bomb (a few hundred bytes that expand to billions of
values) fail at once, and it bounds parsing time: the YAML composer spends ~40 us per value."""
MAX_TEXT_CHARS = 1_000_000
"""Characters of text in all, aliases expanded: a long text repeated through aliases must not
become gigabytes on its way through validation."""
MAX_NUMBER_CHARS = 64
"""No scenario field is a number; a longer one is a mistake or an attack (converting a huge
integer, or YAML's base-60 ``1:2:3...`` form, costs time quadratic in its length)."""
MAX_PROBLEM_LINES = 20
"""A message lists at most this many problems: the first ones are what a person fixes first."""
SIZE_HINT = "A scenario is a handful of facts; see scenarios/README.md for the format."
LIMITS = Limits(
    noun="scenario",
    max_bytes=MAX_FILE_BYTES,
    max_depth=MAX_DEPTH,
    max_values=MAX_VALUES,
    max_text_chars=MAX_TEXT_CHARS,
    max_number_chars=MAX_NUMBER_CHARS,
    depth_needed="a scenario needs 5",
    values_needed="a scenario needs a few hundred",
    size_hint=SIZE_HINT,
)
"""How scenario files are read (bureau.datafiles): the caps above, in the words of the messages."""
LAB_LIMITS = replace(LIMITS, max_values=50_000, max_text_chars=10_000_000,
                     values_needed="a lab scenario needs up to ~20,000")
"""For scenarios a lab builds in memory from a benchmark slice (never for files): room for a
victim memory of 2,000 benchmark items (about 9 values each) beside a shipped scenario."""
LANGUAGE_RE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$")
"""A BCP-47-like short code: ``en``, ``zh``, ``pt-BR``, ``zh-Hans``."""


class Problems(ValueError):
    """Cross-field problems, each already prefixed with its field path.

    Carried through pydantic's wrapping (``ctx["error"]``) so the loader can report every problem
    on its own line instead of one opaque ``Value error``.
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


class RoleSpec(_Strict):
    """One participant with a private memory space (detective, informant, a nurse, ...)."""

    name: str
    title: str
    description: str = ""

    @field_validator("name")
    @classmethod
    def _check_name(cls, v: str) -> str:
        if v == BOARD:
            raise ValueError(f"{BOARD!r} is reserved for the bulletin board")
        return _name(v, "role name")

    @field_validator("title")
    @classmethod
    def _check_title(cls, v: str) -> str:
        return _text(v, "role title", MAX_TITLE_CHARS)

    @field_validator("description")
    @classmethod
    def _check_description(cls, v: str) -> str:
        return _text(v, "role description", MAX_CARD_CHARS) if v else v


class PrincipalSpec(_Strict):
    """A requester that is not a role (the press, an insurer, an outside service): it has no
    private space and may only consult roles through the mediator, with its own budget."""

    name: str
    title: str = ""

    @field_validator("name")
    @classmethod
    def _check_name(cls, v: str) -> str:
        return _name(v, "principal name")

    @field_validator("title")
    @classmethod
    def _check_title(cls, v: str) -> str:
        return _text(v, "principal title", MAX_TITLE_CHARS) if v else v


class SeedMemory(_Strict):
    """A card a role holds privately when the case opens; ``key`` lets questions refer to it."""

    key: str
    topic: str
    kind: str = "fact"
    content: str
    sensitivity: str | None = None
    """Optional labels purpose-bound policies match on (scenarios/README.md, 'Labels')."""
    info_type: str | None = None
    abstraction: str | None = None
    """A safe summary a mediator may release instead of the content (never generated)."""

    @field_validator("key", "topic", "kind")
    @classmethod
    def _check_slug(cls, v: str, info: ValidationInfo) -> str:
        return _name(v, f"memory {info.field_name}")

    @field_validator("sensitivity", "info_type")
    @classmethod
    def _check_label(cls, v: str | None, info: ValidationInfo) -> str | None:
        return None if v is None else _name(v, f"memory {info.field_name}")

    @field_validator("content")
    @classmethod
    def _check_content(cls, v: str) -> str:
        return _text(v, "memory content", MAX_CARD_CHARS)

    @field_validator("abstraction")
    @classmethod
    def _check_abstraction(cls, v: str | None) -> str | None:
        return None if v is None else _text(v, "memory abstraction", MAX_CARD_CHARS)

    def labels(self) -> dict[str, str]:
        """The policy labels this memory sets (card metadata; unset ones are left out)."""
        found = {"sensitivity": self.sensitivity, "info_type": self.info_type,
                 "abstraction": self.abstraction}
        return {k: v for k, v in found.items() if v is not None}


class Question(_Strict):
    """A question with its answer key: which roles can answer before and after ``publish``.

    ``knowers_after`` may be left out when nothing is published (it then equals
    ``knowers_before``); with ``publish`` it is required, because who learns from the board is
    exactly what the question is meant to show.
    """

    text: str
    topic: str
    publish: str | None = None
    knowers_before: list[str]
    knowers_after: list[str]
    note: str = ""

    @model_validator(mode="before")
    @classmethod
    def _default_after(cls, data: Any) -> Any:
        if (
            isinstance(data, Mapping)
            and "knowers_after" not in data
            and data.get("publish") is None
        ):
            return {**data, "knowers_after": data.get("knowers_before", [])}
        return data

    @field_validator("text")
    @classmethod
    def _check_text(cls, v: str) -> str:
        return _text(v, "question text", MAX_QUESTION_CHARS)

    @field_validator("topic")
    @classmethod
    def _check_topic(cls, v: str) -> str:
        return _name(v, "question topic")

    @field_validator("publish")
    @classmethod
    def _check_publish(cls, v: str | None) -> str | None:
        return None if v is None else _name(v, "publish key")

    @field_validator("note")
    @classmethod
    def _check_note(cls, v: str) -> str:
        return _text(v, "question note", MAX_CARD_CHARS) if v else v


class Scenario(_Strict):
    """A whole case file. Build it with :func:`load_scenario` to get file-named errors."""

    id: str
    title: str
    language: str = "en"
    summary: str = ""
    roles: list[RoleSpec]
    principals: list[PrincipalSpec] = []
    memories: dict[str, list[SeedMemory]] = {}
    questions: list[Question] = []
    case_file: CaseFile | None = None
    """What the chief must achieve, what loses the case, and the moves (:mod:`.case_file`)."""
    source_path: Path | None = None

    @field_validator("id")
    @classmethod
    def _check_id(cls, v: str) -> str:
        return _name(v, "scenario id")

    @field_validator("title")
    @classmethod
    def _check_title(cls, v: str) -> str:
        return _text(v, "scenario title", MAX_TITLE_CHARS)

    @field_validator("language")
    @classmethod
    def _check_language(cls, v: str) -> str:
        if not LANGUAGE_RE.match(v):
            raise ValueError(
                f"{short_repr(v)} is not a short language code; use e.g. 'en', 'zh' or 'pt-BR'"
            )
        return v

    @field_validator("summary")
    @classmethod
    def _check_summary(cls, v: str) -> str:
        return _text(v, "scenario summary", MAX_CARD_CHARS) if v else v

    @model_validator(mode="after")
    def _check_references(self) -> Scenario:
        problems = _cross_problems(self)
        if problems:
            raise Problems(problems)
        return self

    @property
    def role_names(self) -> list[str]:
        """Role names in declaration order (the order widgets show them in)."""
        return [r.name for r in self.roles]

    def role(self, name: str) -> RoleSpec:
        """The role called ``name``; raises ``ScenarioError`` listing the roles if there is none."""
        for r in self.roles:
            if r.name == name:
                return r
        raise ScenarioError(
            f"Scenario {self.id!r} has no role {short_repr(name)} "
            f"(roles: {name_list(self.role_names)})."
        )

    def seeds(self) -> Iterator[tuple[str, SeedMemory]]:
        """Every seed memory with its owner, in file order."""
        for role, cards in self.memories.items():
            for card in cards:
                yield role, card

    def seed(self, key: str) -> tuple[str, SeedMemory]:
        """The seed memory called ``key`` and the role that holds it."""
        for role, card in self.seeds():
            if card.key == key:
                return role, card
        keys = name_list([c.key for _, c in self.seeds()])
        raise ScenarioError(
            f"Scenario {self.id!r} has no seed memory {short_repr(key)} (keys: {keys})."
        )

    def to_dict(self) -> dict[str, Any]:
        """The file form (what :func:`load_scenario` reads), without ``source_path``."""
        data = self.model_dump(mode="json", exclude={"source_path"}, exclude_none=False)
        if data.get("case_file") is None:
            data.pop("case_file", None)
        for mems in data.get("memories", {}).values():  # unset labels stay out of the file form
            for mem in mems:
                for label in ("sensitivity", "info_type", "abstraction"):
                    if mem.get(label) is None:
                        mem.pop(label, None)
        return data


def _cross_problems(s: Scenario) -> list[str]:
    """Checks that need more than one field: references between roles, memories and questions."""
    problems: list[str] = []
    names = s.role_names
    roles_list = name_list(names)
    if len(names) < 2:
        problems.append(
            f"roles: a scenario needs at least 2 roles, found {len(names)} "
            "(memory isolation needs someone to be isolated from)"
        )
    seen_roles: set[str] = set()
    for i, name in enumerate(names):
        if name in seen_roles:
            problems.append(f"roles[{i}].name: duplicate role {name!r}")
        seen_roles.add(name)

    seen_principals: set[str] = set()
    for i, spec in enumerate(s.principals):
        if spec.name in seen_roles or spec.name in (BOARD, "chief"):
            what = "a role" if spec.name in seen_roles else "reserved"
            problems.append(f"principals[{i}].name: {spec.name!r} is {what}; a declared "
                            "principal is a requester that is not a role")
        elif spec.name in seen_principals:
            problems.append(f"principals[{i}].name: duplicate principal {spec.name!r}")
        seen_principals.add(spec.name)

    seen_keys: dict[str, str] = {}
    for role, cards in s.memories.items():
        # Role keys of ``memories`` are free text until here: shorten them wherever echoed.
        at_role = field_path(("memories", role))
        if role == BOARD:
            problems.append(
                f"{at_role}: the bulletin board starts empty; it only receives "
                "published copies (give the card to a role and publish it in a question)"
            )
        elif role not in seen_roles:
            problems.append(f"{at_role}: unknown role {short_repr(role)} (roles: {roles_list})")
        for j, card in enumerate(cards):
            if card.key in seen_keys:
                problems.append(
                    f"{at_role}[{j}].key: duplicate key {card.key!r} "
                    f"(already used at {seen_keys[card.key]}); keys are unique per scenario"
                )
            else:
                seen_keys[card.key] = f"{at_role}[{j}]"

    owners: dict[str, str] = {}
    for role, card in s.seeds():
        owners.setdefault(card.key, role)  # the first holder, as seed() reports it
    for i, q in enumerate(s.questions):
        at = f"questions[{i}]"
        # Without publish, an identical knowers_after (often the default) would repeat each problem.
        same = q.publish is None and q.knowers_after == q.knowers_before
        for field in ("knowers_before",) if same else ("knowers_before", "knowers_after"):
            listed: set[str] = set()
            for k, who in enumerate(getattr(q, field)):
                if who == BOARD:
                    problems.append(
                        f"{at}.{field}[{k}]: {BOARD!r} is the bulletin board, not a role; "
                        f"list the roles that can answer (roles: {roles_list})"
                    )
                elif who not in seen_roles:
                    problems.append(
                        f"{at}.{field}[{k}]: unknown role {short_repr(who)} (roles: {roles_list})"
                    )
                elif who in listed:
                    problems.append(f"{at}.{field}[{k}]: {who!r} is listed twice")
                listed.add(who)
        before, after = set(q.knowers_before), set(q.knowers_after)
        if q.publish is None:
            if before != after:
                problems.append(
                    f"{at}.knowers_after: without publish nobody can learn anything, so it must "
                    f"equal knowers_before ({_fmt(q.knowers_before)}), got {_fmt(q.knowers_after)}"
                )
            continue
        if q.publish not in owners:
            keys = name_list(list(owners))
            problems.append(f"{at}.publish: unknown seed memory {q.publish!r} (keys: {keys})")
            continue
        owner = owners[q.publish]
        if owner not in before:
            problems.append(
                f"{at}.knowers_before: {q.publish!r} belongs to {owner!r}, who must be among "
                f"knowers_before (a role can always answer from its own card), "
                f"got {_fmt(q.knowers_before)}"
            )
        lost = [who for who in q.knowers_before if who in seen_roles and who not in after]
        if lost:
            problems.append(
                f"{at}.knowers_after: publishing only adds a board copy, so every role in "
                f"knowers_before must stay; missing {_fmt(lost)}"
            )
    if s.case_file is not None:
        problems += s.case_file.problems(names, owners)
    return problems


def _fmt(names: list[str]) -> str:
    """``[a, b]`` for messages; unknown names in knowers lists are user text, so keep it short."""
    return "[" + name_list(names, empty="") + "]"


def name_list(names: list[str], *, empty: str = "none", limit: int = 10) -> str:
    """``a, b, c`` for messages: at most ``limit`` names, each cut short, then how many more.

    Lists of roles and keys are repeated in many messages; with thousands of them (or one very
    long unknown name) a message would otherwise grow with the input.
    """
    if not names:
        return empty
    shown = [n if len(n) <= 40 else n[:39] + "…" for n in names[:limit]]
    more = f", … ({len(names) - limit:,} more)" if len(names) > limit else ""
    return ", ".join(shown) + more


