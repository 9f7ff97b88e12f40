"""Scenarios: a case file on disk that says who the roles are, what each one privately knows and
which questions the course asks, with the answer key (who should know, before and after a
publication).

Roles are data, not an enum: a scenario may declare any number of them (at least two, or there is
nothing to isolate). Every check runs when the file is loaded, before a single card is written,
and every error names the file and the field path (``questions[0].knowers_before[1]: ...``) so a
teacher editing YAML by hand can find the mistake without reading this module. Unknown fields are
refused because a misspelt ``knowers_afer`` that silently fell back to a default would turn the
answer key into a lie.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from .errors import InvalidTextError, ScenarioError
from .model import BOARD
from .text import MAX_CARD_CHARS, MAX_QUESTION_CHARS, clean_name, clean_text

REPO_ROOT = Path(__file__).resolve().parent.parent
SCENARIO_DIR = REPO_ROOT / "scenarios"
"""Where shipped scenarios live; ``load_scenario("safe-combination")`` looks here."""

SUFFIXES = (".yaml", ".yml", ".json")
MAX_TITLE_CHARS = 120
"""Titles are shown as headings in widgets and tables; a paragraph belongs in ``summary``."""
MAX_FILE_BYTES = 1_000_000
"""A scenario is a handful of facts; a megabyte means the wrong file was picked."""
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


class SeedMemory(_Strict):
    """A card a role holds privately when the case opens; ``key`` lets questions refer to it."""

    key: str
    topic: str
    kind: str = "fact"
    content: str

    @field_validator("key", "topic", "kind")
    @classmethod
    def _check_slug(cls, v: str, info: ValidationInfo) -> str:
        return _name(v, f"memory {info.field_name}")

    @field_validator("content")
    @classmethod
    def _check_content(cls, v: str) -> str:
        return _text(v, "memory content", MAX_CARD_CHARS)


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
            raise ValueError(f"{v!r} is not a short language code; use e.g. 'en', 'zh' or 'pt-BR'")
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
            f"Scenario {self.id!r} has no role {name!r} (roles: {', '.join(self.role_names)})."
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
        keys = ", ".join(c.key for _, c in self.seeds()) or "none"
        raise ScenarioError(f"Scenario {self.id!r} has no seed memory {key!r} (keys: {keys}).")

    def to_dict(self) -> dict[str, Any]:
        """The file form (what :func:`load_scenario` reads), without ``source_path``."""
        return self.model_dump(mode="json", exclude={"source_path"})


def _cross_problems(s: Scenario) -> list[str]:
    """Checks that need more than one field: references between roles, memories and questions."""
    problems: list[str] = []
    names = s.role_names
    roles_list = ", ".join(names)
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

    seen_keys: dict[str, str] = {}
    for role, cards in s.memories.items():
        if role == BOARD:
            problems.append(
                f"memories.{role}: the bulletin board starts empty; it only receives "
                "published copies (give the card to a role and publish it in a question)"
            )
        elif role not in seen_roles:
            problems.append(f"memories.{role}: unknown role {role!r} (roles: {roles_list})")
        for j, card in enumerate(cards):
            if card.key in seen_keys:
                problems.append(
                    f"memories.{role}[{j}].key: duplicate key {card.key!r} "
                    f"(already used at {seen_keys[card.key]}); keys are unique per scenario"
                )
            else:
                seen_keys[card.key] = f"memories.{role}[{j}]"

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
                        f"{at}.{field}[{k}]: unknown role {who!r} (roles: {roles_list})"
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
            keys = ", ".join(owners) or "none"
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
    return "[" + ", ".join(names) + "]"


# --- loading ---------------------------------------------------------------------------------


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys (PyYAML silently keeps the last one)."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    result: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in result:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        result[key] = loader.construct_object(value_node, deep=True)
    return result


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,  # type: ignore[arg-type]
)


class _DuplicateJSONKey(ValueError):
    """A JSON object repeats a key (``json`` would silently keep the last one)."""


def _unique_json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateJSONKey(key)
        result[key] = value
    return result


def _display(path: Path) -> str:
    """``scenarios/x.yaml`` for shipped files, the path as given otherwise."""
    try:
        return path.resolve().relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return str(path)


def _read(path: Path, shown: str) -> Any:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ScenarioError(f"{shown}: cannot read the file ({exc.strerror}).") from None
    if len(raw) > MAX_FILE_BYTES:
        raise ScenarioError(
            f"{shown}: the file has {len(raw):,} bytes; a scenario is at most {MAX_FILE_BYTES:,}.",
            "Check that you picked the scenario file and not a data dump.",
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(
            f"{shown}: not UTF-8 (byte {exc.start}).", "Save the file as UTF-8."
        ) from None
    if path.suffix == ".json":
        try:
            return json.loads(text, object_pairs_hook=_unique_json_object)
        except json.JSONDecodeError as exc:
            raise ScenarioError(
                f"{shown}: line {exc.lineno}, column {exc.colno}: invalid JSON: {exc.msg}."
            ) from None
        except _DuplicateJSONKey as exc:
            raise ScenarioError(
                f"{shown}: invalid JSON: duplicate key {exc.args[0]!r}.",
                "Keep one of them: JSON readers would otherwise silently keep only the last.",
            ) from None
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass: no code runs
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        hint = (
            "Keep one of them: YAML would otherwise silently keep only the last."
            if problem.startswith("duplicate key")
            else "Check the indentation and quoting around that line."
        )
        raise ScenarioError(f"{shown}: {where}invalid YAML: {problem}.", hint) from None


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


_MODEL_AT: dict[str, type[BaseModel]] = {
    "roles": RoleSpec,
    "memories": SeedMemory,
    "questions": Question,
}


def _fields_of(loc: tuple[int | str, ...]) -> list[str]:
    """The allowed field names of the object that holds ``loc[-1]`` (for 'did you mean')."""
    model: type[BaseModel] = _MODEL_AT.get(str(loc[0]), Scenario) if len(loc) > 1 else Scenario
    return [f for f in model.model_fields if f != "source_path"]


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
            close = difflib.get_close_matches(name, allowed, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"allowed: {', '.join(allowed)}"
            out.append(f"{_loc(loc)}: unknown field ({hint})")
            continue
        if kind == "missing":
            msg = "required field is missing"
            if loc[-1] == "knowers_after":
                msg += " (with publish, list the roles that can answer once the card is public)"
        elif kind == "value_error":
            msg = str(ctx.get("error", err["msg"]))
        else:
            given = err["input"]
            shown_input = repr(given) if len(repr(given)) <= 60 else repr(given)[:57] + "..."
            msg = f"{err['msg']} (got {type(given).__name__} {shown_input})"
            if isinstance(given, bool):
                msg += "; quote it: YAML reads yes/no/on/off/true/false as booleans"
        out.append(f"{_loc(loc) or '(top level)'}: {msg}")
    return out


def parse_scenario(data: Any, *, source: Path | str | None = None) -> Scenario:
    """Validate already-parsed data (a dict) into a :class:`Scenario`, or raise ``ScenarioError``."""
    path = Path(source) if source is not None else None
    shown = _display(path) if path is not None else "<scenario>"
    if data is None:
        raise ScenarioError(
            f"{shown}: the file is empty.", "See scenarios/README.md for the format."
        )
    if not isinstance(data, dict):
        raise ScenarioError(
            f"{shown}: the top level must be a mapping of fields (id, title, roles, ...), "
            f"not {type(data).__name__}.",
            "See scenarios/README.md for the format.",
        )
    if "source_path" in data:
        raise ScenarioError(
            f"{shown}: source_path: unknown field (set by the loader, not the file)"
        )
    try:
        scenario = Scenario.model_validate({**data, "source_path": path})
    except ValidationError as exc:
        lines = _messages(exc)
        if len(lines) == 1:
            raise ScenarioError(f"{shown}: {lines[0]}") from None
        body = "\n".join(f"  {line}" for line in lines)
        raise ScenarioError(f"{shown}: {len(lines)} problems:\n{body}") from None
    if path is not None and _in_scenario_dir(path) and scenario.id != path.stem:
        raise ScenarioError(
            f"{shown}: id: {scenario.id!r} must match the file name {path.stem!r}, "
            f"so that load_scenario({scenario.id!r}) finds it"
        )
    return scenario


def _in_scenario_dir(path: Path) -> bool:
    return path.resolve().parent == SCENARIO_DIR.resolve()


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
            raise ScenarioError(f"{as_text}: not a scenario file; use a .yaml, .yml or .json file.")
        if not path.is_file():
            raise ScenarioError(f"{as_text}: no such file.")
        return parse_scenario(_read(path, _display(path)), source=path)
    matches = [p for p in _scenario_files() if p.stem == as_text]
    if len(matches) > 1:
        raise ScenarioError(
            f"Scenario {as_text!r} is ambiguous: {', '.join(_display(p) for p in matches)}.",
            "Keep one file per id, or pass the path you mean.",
        )
    if not matches:
        known = ", ".join(p.stem for p in _scenario_files()) or "none"
        raise ScenarioError(
            f"No scenario {as_text!r} in {_display(SCENARIO_DIR)}/ (available: {known}).",
            "Pass an id from that list or a path to a .yaml/.yml/.json file.",
        )
    return parse_scenario(_read(matches[0], _display(matches[0])), source=matches[0])


def list_scenarios() -> list[Scenario]:
    """Every shipped scenario, sorted by id; one broken file fails loudly rather than vanishing."""
    scenarios = [parse_scenario(_read(p, _display(p)), source=p) for p in _scenario_files()]
    ids = [s.id for s in scenarios]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ScenarioError(
            f"{_display(SCENARIO_DIR)}/: more than one file for id(s) {', '.join(dupes)}.",
            "Keep one file per id.",
        )
    return sorted(scenarios, key=lambda s: s.id)
