"""Scenarios: a case file on disk that says who the roles are, what each one privately knows and
which questions the course asks, with the answer key (who should know, before and after a
publication).

Roles are data, not an enum: a scenario may declare any number of them (at least two, or there is
nothing to isolate). Every check runs when the file is loaded, before a single card is written,
and every error names the file and the field path (``questions[0].knowers_before[1]: ...``) so a
teacher editing YAML by hand can find the mistake without reading this module. Unknown fields are
refused because a misspelt ``knowers_afer`` that silently fell back to a default would turn the
answer key into a lie.

Bad input costs little: a scenario is a handful of facts, so the file size, the nesting depth, the
number of values (counted *after* YAML aliases are expanded, which defeats "billion laughs" files)
and the total text are all capped before anything expensive runs (bureau.datafiles reads the file,
with the caps in :data:`LIMITS`), and every message that echoes the input is cut short. Whatever
the file or dict holds, the caller gets a ``ScenarioError`` in milliseconds, never a
``RecursionError``, a ``TypeError`` or an exhausted machine.
"""

from __future__ import annotations

import difflib
import re
import reprlib
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from .datafiles import (
    PLAIN_SCALARS,
    Limits,
    clip,
    clip_path,
    field_path,
    read_data,
    shape_problem,
)
from .errors import InvalidTextError, ScenarioError
from .model import BOARD
from .resources import shipped_root
from .text import MAX_CARD_CHARS, MAX_QUESTION_CHARS, clean_name, clean_text, short_repr

SHIPPED_ROOT = shipped_root()
"""The repository root in a checkout, ``bureau/_shipped`` when installed (see bureau.resources)."""
SCENARIO_DIR = SHIPPED_ROOT / "scenarios"
"""Where shipped scenarios live; ``load_scenario("safe-combination")`` looks here."""

SUFFIXES = (".yaml", ".yml", ".json")
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


class _Problems(ValueError):
    """Cross-field problems, each already prefixed with its field path.

    Carried through pydantic's wrapping (``ctx["error"]``) so the loader can report every problem
    on its own line instead of one opaque ``Value error``.
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


def _name(value: str, what: str) -> str:
    try:
        return clean_name(value, what=what)
    except InvalidTextError as exc:
        raise ValueError(str(exc)) from None


def _text(value: str, what: str, max_chars: int) -> str:
    try:
        return clean_text(value, what=what, max_chars=max_chars)
    except InvalidTextError as exc:
        raise ValueError(str(exc)) from None


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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
            raise _Problems(problems)
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
            f"(roles: {_names(self.role_names)})."
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
        keys = _names([c.key for _, c in self.seeds()])
        raise ScenarioError(
            f"Scenario {self.id!r} has no seed memory {short_repr(key)} (keys: {keys})."
        )

    def to_dict(self) -> dict[str, Any]:
        """The file form (what :func:`load_scenario` reads), without ``source_path``."""
        data = self.model_dump(mode="json", exclude={"source_path"})
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
    roles_list = _names(names)
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
            keys = _names(list(owners))
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
    return problems


def _fmt(names: list[str]) -> str:
    """``[a, b]`` for messages; unknown names in knowers lists are user text, so keep it short."""
    return "[" + _names(names, empty="") + "]"


def _names(names: list[str], *, empty: str = "none", limit: int = 10) -> str:
    """``a, b, c`` for messages: at most ``limit`` names, each cut short, then how many more.

    Lists of roles and keys are repeated in many messages; with thousands of them (or one very
    long unknown name) a message would otherwise grow with the input.
    """
    if not names:
        return empty
    shown = [n if len(n) <= 40 else n[:39] + "…" for n in names[:limit]]
    more = f", … ({len(names) - limit:,} more)" if len(names) > limit else ""
    return ", ".join(shown) + more


# --- loading ---------------------------------------------------------------------------------


def _display(path: Path) -> str:
    """``scenarios/x.yaml`` for shipped files, else the path as given (cut if absurdly long)."""
    try:
        text = path.resolve().relative_to(SHIPPED_ROOT).as_posix()
    except (ValueError, OSError, RuntimeError):  # elsewhere, a NUL byte, a symlink loop
        text = str(path)
    return clip_path(text)


def _read(path: Path) -> Any:
    """The file's data, read within :data:`LIMITS` (see bureau.datafiles), or ``ScenarioError``."""
    return read_data(path, _display(path), LIMITS, ScenarioError)


_MODEL_AT: dict[str, type[BaseModel]] = {
    "roles": RoleSpec,
    "memories": SeedMemory,
    "questions": Question,
}


def _fields_of(loc: tuple[int | str, ...]) -> list[str]:
    """The allowed field names of the object that holds ``loc[-1]`` (for 'did you mean')."""
    model: type[BaseModel] = _MODEL_AT.get(str(loc[0]), Scenario) if len(loc) > 1 else Scenario
    return [f for f in model.model_fields if f != "source_path"]


class _Brief(reprlib.Repr):
    """``reprlib`` limits for inputs echoed in messages: a few items, two levels."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 2
        self.maxdict = self.maxlist = self.maxtuple = self.maxset = self.maxfrozenset = 4
        self.maxstring = self.maxlong = self.maxother = 40

    def repr_instance(self, x: Any, level: int) -> str:
        if type(x) in PLAIN_SCALARS:  # bool, None, float, dates: short and safe to repr
            return clip(repr(x), self.maxother)
        return f"<{clip(type(x).__name__, 40)}>"  # never a foreign __repr__


_BRIEF = _Brief()


def _preview(value: Any) -> str:
    """``repr`` of an offending input in at most 60 characters, computed in bounded time.

    The full ``repr`` of an alias bomb's shared lists is exponentially long; strings keep their
    plain ``repr`` prefix (what the messages always showed), containers show a few items.
    """
    try:
        text = repr(value[:100]) if type(value) is str else _BRIEF.repr(value)
    except Exception:  # noqa: BLE001 - a message about bad input must not fail on it
        text = f"<{clip(type(value).__name__, 40)}>"
    return text if len(text) <= 60 else text[:57] + "..."


def _messages(exc: ValidationError) -> list[str]:
    """pydantic errors, rewritten as ``field.path: what is wrong`` lines."""
    out: list[str] = []
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        kind = err["type"]
        ctx = err.get("ctx") or {}
        if isinstance(ctx.get("error"), _Problems):
            out.extend(ctx["error"].problems)
            continue
        if kind == "extra_forbidden":
            allowed = _fields_of(loc)
            name = str(loc[-1])
            # difflib is quadratic-ish in the name: a field name longer than 64 is no typo.
            close = difflib.get_close_matches(name, allowed, n=1) if len(name) <= 64 else []
            hint = f"did you mean {close[0]!r}?" if close else f"allowed: {', '.join(allowed)}"
            out.append(f"{field_path(loc)}: unknown field ({hint})")
            continue
        if kind == "missing":
            msg = "required field is missing"
            if loc[-1] == "knowers_after":
                msg += " (with publish, list the roles that can answer once the card is public)"
        elif kind == "value_error":
            msg = str(ctx.get("error", err["msg"]))
        else:
            given = err["input"]
            msg = f"{err['msg']} (got {clip(type(given).__name__, 40)} {_preview(given)})"
            if isinstance(given, bool):
                msg += "; quote it: YAML reads yes/no/on/off/true/false as booleans"
        out.append(f"{field_path(loc) or '(top level)'}: {msg}")
    return out


def _problem_report(shown: str, lines: list[str]) -> str:
    """One problem on the line, or a list of at most ``MAX_PROBLEM_LINES``, each cut short."""
    lines = [clip(line, 1000) for line in lines]
    if len(lines) == 1:
        return f"{shown}: {lines[0]}"
    body = [f"  {line}" for line in lines[:MAX_PROBLEM_LINES]]
    if len(lines) > MAX_PROBLEM_LINES:
        body.append(f"  ... and {len(lines) - MAX_PROBLEM_LINES:,} more")
    return f"{shown}: {len(lines)} problems:\n" + "\n".join(body)


def parse_scenario(
    data: Any, *, source: Path | str | None = None, limits: Limits = LIMITS
) -> Scenario:
    """Validate already-parsed data (a dict) into a :class:`Scenario`, or raise ``ScenarioError``.

    ``data`` may come from anywhere (a JSON snapshot, a notebook), so its shape is checked here
    too, not only in the file loader. ``limits``: the caps of that check; a lab that builds a
    scenario itself from a benchmark (:data:`LAB_LIMITS`, the poisoning lab's 2,000-card victim
    memory) may pass wider ones; files are always read within :data:`LIMITS`.
    """
    path = Path(source) if source is not None else None
    shown = _display(path) if path is not None else "<scenario>"
    if data is None:
        raise ScenarioError(
            f"{shown}: the file is empty.", "See scenarios/README.md for the format."
        )
    if not isinstance(data, dict):
        raise ScenarioError(
            f"{shown}: the top level must be a mapping of fields (id, title, roles, ...), "
            f"not {clip(type(data).__name__, 40)}.",
            "See scenarios/README.md for the format.",
        )
    problem = shape_problem(data, limits)
    if problem is not None:
        raise ScenarioError(f"{shown}: {problem}.", SIZE_HINT)
    if "source_path" in data:
        raise ScenarioError(
            f"{shown}: source_path: unknown field (set by the loader, not the file)"
        )
    try:
        scenario = Scenario.model_validate({**data, "source_path": path})
    except ValidationError as exc:
        raise ScenarioError(_problem_report(shown, _messages(exc))) from None
    if path is not None and _in_scenario_dir(path) and scenario.id != path.stem:
        raise ScenarioError(
            f"{shown}: id: {scenario.id!r} must match the file name {short_repr(path.stem)}, "
            f"so that load_scenario({scenario.id!r}) finds it"
        )
    return scenario


def _in_scenario_dir(path: Path) -> bool:
    try:
        return path.resolve().parent == SCENARIO_DIR.resolve()
    except (OSError, RuntimeError):
        return False


def _scenario_files() -> list[Path]:
    if not SCENARIO_DIR.is_dir():
        return []
    return sorted(p for p in SCENARIO_DIR.iterdir() if p.suffix in SUFFIXES and p.is_file())


def load_scenario(id_or_path: str | Path) -> Scenario:
    """Load a shipped scenario by id (``"safe-combination"``) or any .yaml/.yml/.json file."""
    as_text = str(id_or_path)
    if isinstance(id_or_path, Path) or as_text.endswith(SUFFIXES) or "/" in as_text:
        path = Path(id_or_path)
        if path.suffix not in SUFFIXES:
            raise ScenarioError(
                f"{clip_path(as_text)}: not a scenario file; use a .yaml, .yml or .json file."
            )
        # No is_file() pre-check: datafiles.read_bytes opens once and tells a missing file, a
        # directory, a FIFO and a symlink loop apart (is_file() calls them all "no such file").
        return parse_scenario(_read(path), source=path)
    matches = [p for p in _scenario_files() if p.stem == as_text]
    if len(matches) > 1:
        raise ScenarioError(
            f"Scenario {as_text!r} is ambiguous: {', '.join(_display(p) for p in matches)}.",
            "Keep one file per id, or pass the path you mean.",
        )
    if not matches:
        known = _names([p.stem for p in _scenario_files()], limit=50)
        raise ScenarioError(
            f"No scenario {short_repr(as_text)} in {_display(SCENARIO_DIR)}/ (available: {known}).",
            "Pass an id from that list or a path to a .yaml/.yml/.json file.",
        )
    return parse_scenario(_read(matches[0]), source=matches[0])


def list_scenarios() -> list[Scenario]:
    """Every shipped scenario, sorted by id; one broken file fails loudly rather than vanishing."""
    scenarios = [parse_scenario(_read(p), source=p) for p in _scenario_files()]
    ids = [s.id for s in scenarios]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ScenarioError(
            f"{_display(SCENARIO_DIR)}/: more than one file for id(s) {', '.join(dupes)}.",
            "Keep one file per id.",
        )
    return sorted(scenarios, key=lambda s: s.id)
