"""The layers the architecture page draws are the layers the code has (issues 10, 18 and 32).

The floors are declared once, in :data:`FLOORS`; every rule below reads them from there.

* No module imports a module on a higher floor, by any form the source shows: ``import x.y``,
  ``from .. import x``, ``from ..x import n``, imports inside functions, ``if TYPE_CHECKING:``
  imports, ``importlib.import_module("...")``, ``__import__("...")`` and ``getattr(module, "n")``.
* Only the storage and service floors touch the gateway or the ledger; everything else (course
  widgets, attack catalogue, the labs, notebooks) goes through ``Bureau``/``Case``.
* Only the storage layer imports PowerMem/seekdb.
* Rooms (``bureau/service/rooms/``) never import the case, the bureau or the agent handle, and no
  module outside the rooms reaches into a room's private names.
* No module imports private names of another bureau module, nor a bureau module that does not exist.
* The package's imports form no cycle: none through runtime and function-level imports, and none
  through ``TYPE_CHECKING`` imports beyond the ones listed (and reported) in
  :data:`KNOWN_TYPE_CYCLE_EDGES`.
* Everything is built from Settings in one place; a second open applies or refuses, never ignores.

The import reading lives in ``tools/import_graph.py`` (``tools/targets.py`` counts cycles with it
too). The rules are functions of an :class:`import_graph.Package`, so the tests at the end feed
them synthetic modules next to the real ones and show that each rule fires, and stays quiet on a
clean module.
"""

from __future__ import annotations

import ast
import functools
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "bureau"
sys.path.insert(0, str(REPO / "tools"))
import import_graph as ig  # noqa: E402


@dataclass(frozen=True)
class Floor:
    level: int
    title: str
    modules: tuple[str, ...]
    """Dotted prefixes: a module sits on the floor of the longest prefix naming it."""
    inner: bool = False
    """May hold the gateway and the ledger (import them, use ``.gateway``/``.ledger``)."""


FLOORS: tuple[Floor, ...] = (
    Floor(0, "vocabulary: errors, text rules, value types, settings, shipped and data files, "
             "published anchors",
          ("bureau.errors", "bureau.text", "bureau.model", "bureau.settings", "bureau.resources",
           "bureau.datafiles", "bureau.quotas", "bureau.anchors", "bureau.figures",
           "bureau.tenancy", "bureau.bounds")),
    Floor(1, "domain rules without storage",
          ("bureau.embedding", "bureau.scenario", "bureau.scopes", "bureau.tiers",
           "bureau.task_scopes", "bureau.mediation", "bureau.agents", "bureau.responders",
           "bureau.sealing")),
    Floor(2, "storage (PowerMem + seekdb) and the ledger", ("bureau.storage", "bureau.ledger"),
          inner=True),
    Floor(3, "service: Bureau, Case, the agent handles and the rooms; the classroom's tenants "
             "(server, accounts, the progress record in a tenant, the instructor's reads)",
          ("bureau.service", "bureau.service.rooms", "bureau.service.agent", "bureau.classroom"),
          inner=True),
    Floor(4, "labs, the stand-in model, course, CLI, and the package's front door",
          ("bureau.course", "bureau.game", "bureau.labs", "bureau.standin", "bureau.voice", "bureau.mcp_server",
           "bureau.__main__", "bureau.moved", "bureau")),
)
"""The layer order, lowest first. A module may import its own floor and the floors below; only
the inner floors may reach the gateway and the ledger (a lab goes through Bureau/Case)."""

MEASURING_TOOLS = ("bureau.labs.bench",)
"""Compares the service with raw PowerMem calls, so it must reach the gateway's raw baseline."""
STORAGE = ("bureau.storage",)
STORAGE_LIBRARIES = ("powermem", "pyseekdb", "pylibseekdb", "pyobvector")
"""Imported by the storage layer only."""
GATEWAY_AND_LEDGER = next(f for f in FLOORS if f.level == 2).modules
ROOMS = "bureau.service.rooms"
ROOMS_NEVER_IMPORT = ("bureau.service.case", "bureau.service.bureau", "bureau.service.agent")
"""A room is built from a narrow CaseContext, never from the whole case (design 18)."""

HOUSE, HOUSE_RULES, room_of = ig.HOUSE, ig.HOUSE_RULES, ig.room_of
"""The house's rooms and one-way rules live in tools/import_graph.py (it prints them)."""

KNOWN_BREACHES: dict[tuple[str, str], str] = {}
"""(importer, imported) pairs that break the table today, each with why; every one must still
occur (a fixed one must leave this list). Empty: the code keeps the table."""

KNOWN_TYPE_CYCLE_EDGES: dict[tuple[str, str], str] = {
}
"""TYPE_CHECKING imports that close an import cycle today (reported, not yet fixed). Without
them the import graph, TYPE_CHECKING included, has no cycle; each must still close one."""


def _entry(dotted: str) -> str | None:
    """The FLOORS prefix that places ``dotted``: the longest naming it (``bureau`` itself names
    only the package's ``__init__``, so a new top-level module must be added to the table)."""
    entries = [p for f in FLOORS for p in f.modules
               if dotted == p or (dotted.startswith(p + ".") and p != ig.ROOT)]
    return max(entries, key=len) if entries else None


def floor_of(dotted: str) -> Floor | None:
    """The floor of a module (or of a name in it); None if the table does not place it."""
    entry = _entry(dotted)
    return next((f for f in FLOORS if entry in f.modules), None)


def _under(dotted: str, prefixes: tuple[str, ...] | str) -> bool:
    prefixes = (prefixes,) if isinstance(prefixes, str) else prefixes
    return any(dotted == p or dotted.startswith(p + ".") for p in prefixes)


@dataclass(frozen=True)
class Breach:
    rule: str
    module: str
    rel: str
    line: int
    what: str
    imported: str = ""

    def __str__(self) -> str:
        return f"bureau/{self.rel}:{self.line} [{self.rule}] {self.what}"


def _targets(pkg: ig.Package, imp: ig.Import) -> set[str]:
    """What an import reaches: the module that provides it, and the name as written."""
    return {pkg.provider(imp.target), imp.target}


def upward_imports(pkg: ig.Package) -> list[Breach]:
    out = []
    for name, imps in pkg.imports.items():
        here = floor_of(name)
        if here is None:
            continue
        for imp in imps:
            there = floor_of(pkg.provider(imp.target))
            if there is not None and there.level > here.level:
                out.append(Breach(
                    "upward", name, pkg.modules[name].rel, imp.line,
                    f"floor {here.level} imports {pkg.provider(imp.target)} (floor {there.level},"
                    f" {imp.kind} {imp.form})", pkg.provider(imp.target)))
    return out


def house_imports_against_the_flow(pkg: ig.Package) -> list[Breach]:
    """An import a room's rule forbids (:data:`HOUSE_RULES`), by any form the source shows."""
    out = []
    for name, imps in pkg.imports.items():
        here = room_of(name)
        for imp in imps:
            there = room_of(pkg.provider(imp.target))
            if there in HOUSE_RULES.get(here, ()):
                out.append(Breach(
                    "house", name, pkg.modules[name].rel, imp.line,
                    f"{here} imports {pkg.provider(imp.target)} ({there}; {imp.kind} {imp.form})",
                    pkg.provider(imp.target)))
    return out


def outer_touches_gateway_or_ledger(pkg: ig.Package) -> list[Breach]:
    out = []
    for name, src in pkg.modules.items():
        here = floor_of(name)
        if here is None or here.inner or _under(name, MEASURING_TOOLS):
            continue
        for imp in pkg.imports[name]:
            hit = sorted(t for t in _targets(pkg, imp) if _under(t, GATEWAY_AND_LEDGER))
            if hit:
                out.append(Breach("outer", name, src.rel, imp.line,
                                  f"imports {hit[0]} ({imp.kind} {imp.form})", hit[0]))
        out += [Breach("outer", name, src.rel, line, f"uses .{attr}")
                for attr, line in _attributes(src.tree) if attr in ("gateway", "ledger")]
    return out


def storage_libraries_outside_storage(pkg: ig.Package) -> list[Breach]:
    out = []
    for name, src in pkg.modules.items():
        if _under(name, STORAGE):
            continue
        for imp in pkg.all_imports[name]:
            if imp.module.split(".")[0] in STORAGE_LIBRARIES:
                out.append(Breach("storage-sdk", name, src.rel, imp.line,
                                  f"imports {imp.module} ({imp.kind})", imp.module))
    return out


def rooms_import_the_case(pkg: ig.Package) -> list[Breach]:
    out = []
    for name, imps in pkg.imports.items():
        if not _under(name, ROOMS):
            continue
        for imp in imps:
            hit = sorted(t for t in _targets(pkg, imp) if _under(t, ROOMS_NEVER_IMPORT))
            if hit:
                out.append(Breach("room", name, pkg.modules[name].rel, imp.line,
                                  f"a room imports {hit[0]} ({imp.kind} {imp.form})", hit[0]))
    return out


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@functools.cache
def _attributes(tree: ast.Module) -> tuple[tuple[str, int], ...]:
    """Every ``x.attr`` a module reads or writes, with its line (cached per parsed module)."""
    return tuple((n.attr, n.lineno) for n in ast.walk(tree) if isinstance(n, ast.Attribute))


@functools.cache
def _defined_private_names(tree: ast.Module) -> frozenset[str]:
    """Private names a module defines: functions, classes, assigned names and attributes."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return frozenset(n for n in names if _private(n))


def outside_calls_into_room_privates(pkg: ig.Package) -> list[Breach]:
    """``x._name`` in a module outside the rooms, where a room defines ``_name`` and the module
    itself does not (a name the module defines too is taken to be its own: ``self._gateway``
    in the case is the case's, not the room's)."""
    room_privates: dict[str, str] = {}
    for name, src in pkg.modules.items():
        if _under(name, ROOMS):
            for n in _defined_private_names(src.tree):
                room_privates.setdefault(n, src.rel)
    out = []
    for name, src in pkg.modules.items():
        if _under(name, ROOMS) or not room_privates:
            continue
        foreign = set(room_privates) - _defined_private_names(src.tree)
        out += [Breach("room-private", name, src.rel, line,
                       f"reaches into .{attr} (private in bureau/{room_privates[attr]})")
                for attr, line in _attributes(src.tree) if attr in foreign]
    return out


def private_name_imports(pkg: ig.Package) -> list[Breach]:
    out = []
    for name, imps in pkg.imports.items():
        for imp in imps:
            if imp.form in ("from", "getattr") and imp.name and _private(imp.name):
                out.append(Breach("private", name, pkg.modules[name].rel, imp.line,
                                  f"imports {imp.name} from {imp.module}", imp.target))
    return out


def missing_modules(pkg: ig.Package) -> list[Breach]:
    """An import of a bureau module the package does not have (a stale TYPE_CHECKING import,
    a relative import one dot short)."""
    out = []
    for name, imps in pkg.imports.items():
        for imp in imps:
            if imp.form == "getattr":
                continue
            wanted = imp.module
            if wanted not in pkg.modules and not any(m.startswith(wanted + ".")
                                                     for m in pkg.modules):
                out.append(Breach("missing", name, pkg.modules[name].rel, imp.line,
                                  f"imports {wanted}, which bureau does not have ({imp.kind})",
                                  wanted))
    return out


RULES: dict[str, Callable[[ig.Package], list[Breach]]] = {
    "upward": upward_imports,
    "house": house_imports_against_the_flow,
    "outer": outer_touches_gateway_or_ledger,
    "storage-sdk": storage_libraries_outside_storage,
    "room": rooms_import_the_case,
    "room-private": outside_calls_into_room_privates,
    "private": private_name_imports,
    "missing": missing_modules,
}


def _known(b: Breach) -> bool:
    return (b.module, b.imported) in KNOWN_BREACHES


def type_cycles_beyond_known(pkg: ig.Package) -> list[ig.Cycle]:
    drop = set(KNOWN_TYPE_CYCLE_EDGES)
    return ig.cycles(pkg, ig.KINDS, drop=drop)


@pytest.fixture(scope="module")
def package() -> ig.Package:
    return ig.Package.load(PACKAGE)


# --- the real package ---------------------------------------------------------------------------


def test_every_module_has_its_floor(package):
    unplaced = [n for n in package.modules if floor_of(n) is None]
    assert not unplaced, f"add these modules to FLOORS: {unplaced}"


def test_the_table_names_the_rooms_and_the_agents_even_before_they_exist():
    assert floor_of("bureau.service.rooms.context").level == 3
    assert floor_of("bureau.service.agent").level == 3
    assert floor_of("bureau.agents.principals").level == 1
    assert floor_of("bureau.storage.gateway").level == 2 == floor_of("bureau.ledger.rows").level


@pytest.mark.parametrize("rule", sorted(RULES))
def test_the_package_keeps_the_rule(package, rule):
    breaches = [b for b in RULES[rule](package) if not _known(b)]
    assert not breaches, "\n".join(map(str, breaches))


def test_every_known_breach_still_occurs(package):
    seen = {(b.module, b.imported) for rule in RULES.values() for b in rule(package)}
    stale = [k for k in KNOWN_BREACHES if k not in seen]
    assert not stale, f"fixed: remove them from KNOWN_BREACHES: {stale}"


def test_module_imports_form_no_cycle_at_runtime_nor_in_functions(package):
    found = ig.cycles(package, (ig.RUNTIME, ig.FUNCTION))
    assert not found, "\n".join(map(str, found))


def test_type_checking_imports_close_no_cycle_beyond_the_known_ones(package):
    found = type_cycles_beyond_known(package)
    assert not found, "\n".join(map(str, found))


def test_every_known_type_cycle_edge_still_closes_a_cycle(package):
    graph = package.edges(ig.KINDS)
    stale = []
    for edge, _why in KNOWN_TYPE_CYCLE_EDGES.items():
        rest = set(KNOWN_TYPE_CYCLE_EDGES) - {edge}
        if edge[1] not in graph.get(edge[0], {}) or not ig.cycles(package, ig.KINDS, drop=rest):
            stale.append(edge)
    assert not stale, f"no longer a cycle: remove from KNOWN_TYPE_CYCLE_EDGES: {stale}"


def test_notebooks_use_only_the_public_api():
    offenders = []
    for nb in sorted((REPO / "notebooks").glob("*.ipynb")):
        for n, cell in enumerate(json.loads(nb.read_text())["cells"]):
            if cell["cell_type"] != "code":
                continue
            code = "".join(cell["source"])
            lines = [ln for ln in code.splitlines() if not ln.lstrip().startswith(("%", "!"))]
            tree = ast.parse("\n".join(lines))
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute) and (
                        node.attr in ("gateway", "ledger")
                        or (node.attr.startswith("_") and not node.attr.startswith("__"))):
                    offenders.append(f"{nb.name} cell {n}: .{node.attr}")
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                        GATEWAY_AND_LEDGER):
                    offenders.append(f"{nb.name} cell {n}: imports {node.module}")
                if isinstance(node, ast.Import) and any(
                        _under(a.name, GATEWAY_AND_LEDGER) for a in node.names):
                    offenders.append(f"{nb.name} cell {n}: imports {node.names[0].name}")
    assert not offenders, "\n".join(offenders)


# --- the checker catches what it should (synthetic modules, the real package untouched) ---------

CAUGHT = {
    "lab imports the gateway (import x.y)": (
        "outer", [("labs/leakage/x.py", "import bureau.storage.gateway\n")]),
    "widget imports the ledger (from ...ledger)": (
        "outer", [("course/widgets/x.py", "from ...ledger import Tx\n")]),
    "course module imports the ledger (from ..ledger)": (
        "outer", [("course/x.py", "from ..ledger import Tx\n")]),
    "widget's `from ..ledger` is one dot short": (
        "missing", [("course/widgets/x.py", "from ..ledger import Tx\n")]),
    "lab imports the ledger package (from ... import ledger)": (
        "outer", [("labs/leakage/x.py", "from ... import ledger\n")]),
    "room imports the case": (
        "room", [("service/rooms/x.py", "from ..case import Case\n")]),
    "room imports the case through the service package": (
        "room", [("service/rooms/x.py", "from bureau.service import Case\n")]),
    "room imports the agent handle in a function": (
        "room", [("service/rooms/x.py", "def f():\n    from .. import agent\n")]),
    "room reaches the case by getattr": (
        "room", [("service/rooms/x.py",
                  "from ... import service as svc\nCase = getattr(svc, 'case')\n")]),
    "storage imports a lab": (
        "upward", [("storage/x.py", "from ..labs.leakage import runner\n")]),
    "storage imports a lab in a function": (
        "upward", [("storage/x.py", "def f():\n    from bureau.labs.leakage import runner\n")]),
    "rules import the case under TYPE_CHECKING": (
        "upward", [("tiers/x.py", "from typing import TYPE_CHECKING\n"
                                  "if TYPE_CHECKING:\n    from ..service.case import Case\n")]),
    "vocabulary imports the service by import_module": (
        "upward", [("text.py", "import importlib\n"
                            "def f():\n    return importlib.import_module('bureau.service')\n")]),
    "rules import a lab by a relative import_module": (
        "upward", [("scopes/x.py", "from importlib import import_module\n"
                                   "m = import_module('..labs', __package__)\n")]),
    "rules import the course by __import__": (
        "upward", [("agents/x.py", "__import__('bureau.course.cast')\n")]),
    "rules import the front door (from bureau import Bureau)": (
        "upward", [("mediation/x.py", "from bureau import Bureau\n")]),
    "a lab uses .gateway": (
        "outer", [("labs/leakage/x.py", "def f(b):\n    return b.gateway\n")]),
    "the core imports a lab (in a function)": (
        "house", [("service/x.py", "def f():\n    from ..labs.leakage import runner\n")]),
    "the core imports the course": (
        "house", [("mediation/x.py", "from ..course import cast\n")]),
    "the core imports the classroom (as the bureau's opening once did)": (
        "house", [("service/x.py", "def f():\n    from ..classroom.progress import rows\n")]),
    "the core imports the stand-in model under TYPE_CHECKING": (
        "house", [("responders/x.py", "from typing import TYPE_CHECKING\n"
                                      "if TYPE_CHECKING:\n    from ..standin.model import M\n")]),
    "a lab imports the course": (
        "house", [("labs/injection/x.py", "from ...course.widgets.exercises import register\n")]),
    "a lab imports the course by import_module": (
        "house", [("labs/x.py", "import importlib\n"
                                "m = importlib.import_module('bureau.course.cast')\n")]),
    "the service imports PowerMem": (
        "storage-sdk", [("service/x.py", "def f():\n    import powermem\n")]),
    "a private name imported across modules": (
        "private", [("course/x.py", "from ..text import _clip\n")]),
    "the case calls a room's private method": (
        "room-private", [
            ("service/rooms/x.py", "class Room:\n    def _settle(self):\n        pass\n"),
            ("service/y.py", "def f(room):\n    room._settle()\n")]),
}


@pytest.mark.parametrize("rule, sources", CAUGHT.values(), ids=list(CAUGHT))
def test_the_checker_catches(package, rule, sources):
    pkg = package
    for rel, text in sources:
        pkg = pkg.with_source(rel, text)
    mine = {ig.module_name(rel) for rel, _ in sources}
    breaches = [b for b in RULES[rule](pkg) if b.module in mine]
    assert breaches, f"{rule} missed {sources}"


CLEAN = [
    ("labs/leakage/x.py",
     "import importlib\nfrom typing import TYPE_CHECKING\n\nfrom ...errors import BureauError\n"
     "from ...service import Bureau, Case\n\nif TYPE_CHECKING:\n    from ...model import MemoryCard\n"
     "\n\ndef f(case: Case) -> None:\n    from ...standin import model\n"
     "    importlib.import_module('bureau.scenario')\n    return case.cards('x')\n"),
    ("course/x.py", "from ..labs.leakage import lesson\nfrom ..classroom import progress\n"),
    ("service/rooms/x.py",
     "from ...errors import BureauError\nfrom ...ledger import CaseRecord\n"
     "from ...storage.gateway import MemoryGateway\n\n\nclass Room:\n"
     "    def __init__(self, gateway: MemoryGateway):\n        self._gateway = gateway\n\n"
     "    def _settle(self) -> None:\n        self._gateway.forget()\n"),
    ("service/y.py", "class Other:\n    def _settle(self, other):\n        other._settle()\n"),
    ("storage/x.py", "import powermem\n\nfrom ..errors import BureauError\n"
                     "from ..tiers import labels\n"),
]


def test_clean_modules_pass(package):
    pkg = package
    for rel, text in CLEAN:
        pkg = pkg.with_source(rel, text)
    mine = {ig.module_name(rel) for rel, _ in CLEAN}
    breaches = [b for rule in RULES.values() for b in rule(pkg) if b.module in mine]
    assert not breaches, "\n".join(map(str, breaches))
    assert not [c for c in type_cycles_beyond_known(pkg) if c.modules & mine]


CYCLES = {
    "a function-level import closes a loop": (
        (ig.RUNTIME, ig.FUNCTION),
        [("labs/leakage/x.py", "from . import y\n"),
         ("labs/leakage/y.py", "def f():\n    from . import x\n")]),
    "a TYPE_CHECKING import closes a loop": (
        ig.KINDS,
        [("labs/leakage/x.py", "from .y import Y\n"),
         ("labs/leakage/y.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                          "    from .x import X\n")]),
}


@pytest.mark.parametrize("kinds, sources", CYCLES.values(), ids=list(CYCLES))
def test_the_cycle_check_catches(package, kinds, sources):
    pkg = package
    for rel, text in sources:
        pkg = pkg.with_source(rel, text)
    mine = {ig.module_name(rel) for rel, _ in sources}
    found = [c for c in ig.cycles(pkg, kinds, drop=set(KNOWN_TYPE_CYCLE_EDGES))
             if mine <= c.modules]
    assert found
    # ...and only that kind of import closes it: runtime imports alone see no loop
    assert not [c for c in ig.cycles(pkg, (ig.RUNTIME,)) if mine <= c.modules]


# --- settings -----------------------------------------------------------------------------------


def test_a_second_open_applies_what_can_change(bureau):
    from bureau import Bureau

    before = bureau.settings
    try:
        again = Bureau.open(bureau.settings.data_dir, relevance_threshold=0.9, search_limit=3)
        assert again is bureau
        assert bureau.settings.relevance_threshold == 0.9 and bureau.settings.search_limit == 3
    finally:
        bureau.settings = before
    assert bureau.settings.relevance_threshold == before.relevance_threshold


def test_a_second_open_refuses_what_cannot_change_and_names_it(bureau, tmp_path):
    from bureau import Bureau
    from bureau.errors import StoreAlreadyOpenError

    with pytest.raises(StoreAlreadyOpenError) as info:
        Bureau.open(tmp_path / "elsewhere")
    assert "data_dir" in str(info.value)
    with pytest.raises(StoreAlreadyOpenError) as info:
        Bureau.open(bureau.settings.data_dir, collection="other_cards")
    assert "collection" in str(info.value)
    assert bureau.settings.collection == "bureau_cards"
