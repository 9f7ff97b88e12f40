"""Reading scenarios: a file or a dict through :mod:`bureau.datafiles` (within :data:`LIMITS`),
validation errors turned into one short message per problem, each naming the file and the field
path, and the shipped scenarios found by id."""



from __future__ import annotations

import difflib
import reprlib
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ValidationError,
)

from ..datafiles import (
    PLAIN_SCALARS,
    Limits,
    clip,
    clip_path,
    field_path,
    read_data,
    shape_problem,
)
from ..errors import ScenarioError
from ..resources import shipped_root
from ..text import short_repr
from .schema import (
    LIMITS,
    MAX_PROBLEM_LINES,
    SIZE_HINT,
    Problems,
    Question,
    RoleSpec,
    Scenario,
    SeedMemory,
    name_list,
)

SHIPPED_ROOT = shipped_root()
"""The repository root in a checkout, ``bureau/_shipped`` when installed (see bureau.resources)."""
SCENARIO_DIR = SHIPPED_ROOT / "scenarios"
"""Where shipped scenarios live; ``load_scenario("safe-combination")`` looks here."""
SUFFIXES = (".yaml", ".yml", ".json")


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
        if isinstance(ctx.get("error"), Problems):
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
        known = name_list([p.stem for p in _scenario_files()], limit=50)
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
