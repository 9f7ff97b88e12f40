"""Every import a bureau module makes, read statically, and the cycles they close (issue 18).

One copy, used by ``tests/test_layers.py`` (the layer rules) and ``tools/targets.py`` (the cycle
count). It reads source text only and never imports the package, so a synthetic module can be fed
to it next to the real ones.

An import is recorded with the line it sits on and one of three kinds:

* ``runtime``: runs when the module is imported (module level, class bodies, ``try``/``if``);
* ``function``: inside a ``def``/``lambda`` body (runs when that function is called);
* ``type``: inside ``if TYPE_CHECKING:`` (never runs; only the type checker follows it).

Forms read: ``import x`` / ``import x.y``, ``from x import n``, relative ``from .. import n`` and
``from ..x import n``, ``importlib.import_module("x")`` / ``import_module(".x", __package__)``,
``__import__("x")``, and ``getattr(m, "n")`` where ``m`` is a name the same module bound to a
module by an import. Only string constants are visible; computed names are not.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

RUNTIME, FUNCTION, TYPE = "runtime", "function", "type"
KINDS = (RUNTIME, FUNCTION, TYPE)
ROOT = "bureau"


@dataclass(frozen=True)
class Source:
    """One module of the package: its dotted name, its path under the package, its tree."""

    name: str
    rel: str
    tree: ast.Module

    @property
    def is_package(self) -> bool:
        return self.rel.endswith("__init__.py")


@dataclass(frozen=True)
class Import:
    """One imported thing. ``module`` is the module part the statement names (``bureau.ledger``
    for ``from ..ledger import Tx``), ``name`` the imported name (None for ``import x.y``), and
    ``target`` the two together (``bureau.ledger.Tx``)."""

    line: int
    kind: str
    form: str  # "import" | "from" | "dynamic" | "getattr"
    module: str
    name: str | None = None
    alias: str | None = None

    @property
    def target(self) -> str:
        return f"{self.module}.{self.name}" if self.name else self.module


def module_name(rel: str, root: str = ROOT) -> str:
    parts = [root, *rel[:-3].split("/")]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def source(rel: str, text: str, root: str = ROOT) -> Source:
    """A module from its path under the package (``leakage/x.py``) and its text."""
    return Source(module_name(rel, root), rel, ast.parse(text))


def load_package(package_dir: Path, root: str = ROOT) -> dict[str, Source]:
    """Every ``.py`` module under ``package_dir``, keyed by dotted name."""
    return {s.name: s for s in (source(p.relative_to(package_dir).as_posix(), p.read_text(), root)
                                for p in sorted(package_dir.rglob("*.py")))}


def _relative(src: Source, level: int, module: str | None) -> str:
    if not level:
        return module or ""
    pkg = src.name.split(".")
    if not src.is_package:
        pkg = pkg[:-1]
    base = pkg[: len(pkg) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _const_str(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _dynamic(src: Source, call: ast.Call) -> str | None:
    """The module an ``import_module``/``__import__`` call names, when it is a string constant
    (a relative name needs ``package=`` as a string constant or ``__package__``)."""
    func = call.func
    fname = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if fname not in ("import_module", "__import__") or not call.args:
        return None
    name = _const_str(call.args[0])
    if name is None or not name.startswith("."):
        return name
    if fname != "import_module":
        return None
    package = next((k.value for k in call.keywords if k.arg == "package"),
                   call.args[1] if len(call.args) > 1 else None)
    anchor = _const_str(package)
    if anchor is None and isinstance(package, ast.Name) and package.id == "__package__":
        anchor = src.name if src.is_package else src.name.rpartition(".")[0]
    if anchor is None:
        return None
    rest = name.lstrip(".")
    base = anchor.split(".")
    base = base[: len(base) - (len(name) - len(rest) - 1)]
    return ".".join(base + ([rest] if rest else []))


def _bindings(src: Source) -> dict[str, str]:
    """Local names bound to a dotted target by an import anywhere in the module (for
    ``getattr(m, "n")``): ``import a.b as m``, ``from a import b``, ``m = import_module("a.b")``."""
    bound: dict[str, str] = {}
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    bound[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    bound.setdefault(top, top)
        elif isinstance(node, ast.ImportFrom):
            mod = _relative(src, node.level, node.module)
            for a in node.names:
                bound[a.asname or a.name] = f"{mod}.{a.name}"
        elif (isinstance(node, ast.Assign) and len(node.targets) == 1
              and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Call)):
            target = _dynamic(src, node.value)
            if target is not None:
                bound[node.targets[0].id] = target
    return bound


def imports(src: Source) -> list[Import]:
    """Every import in one module (of any package, not only bureau), with its kind, by line."""
    found: list[Import] = []
    bound = _bindings(src)

    def walk(node: ast.AST, kind: str) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                walk(child, TYPE)
            for child in node.orelse:
                walk(child, kind)
            return
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            inner = TYPE if kind == TYPE else FUNCTION
            body = node.body if isinstance(node.body, list) else [node.body]
            later = {id(b) for b in body}
            for child in ast.iter_child_nodes(node):
                # decorators, defaults and annotations run with the enclosing code; the body later
                walk(child, inner if id(child) in later else kind)
            return
        if isinstance(node, ast.Import):
            found.extend(Import(node.lineno, kind, "import", a.name, None, a.asname)
                         for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            mod = _relative(src, node.level, node.module)
            found.extend(Import(node.lineno, kind, "from", mod, a.name, a.asname)
                         for a in node.names)
        elif isinstance(node, ast.Call):
            target = _dynamic(src, node)
            attr = _const_str(node.args[1]) if len(node.args) >= 2 else None
            if target is not None:
                found.append(Import(node.lineno, kind, "dynamic", target))
            elif (isinstance(node.func, ast.Name) and node.func.id == "getattr" and attr
                  and isinstance(node.args[0], ast.Name) and node.args[0].id in bound):
                found.append(Import(node.lineno, kind, "getattr", bound[node.args[0].id], attr))
        for child in ast.iter_child_nodes(node):
            walk(child, kind)

    for stmt in src.tree.body:
        walk(stmt, RUNTIME)
    return sorted(found, key=lambda i: i.line)


def internal(imps: Iterable[Import], root: str = ROOT) -> list[Import]:
    """The imports of ``root`` itself or its submodules."""
    return [i for i in imps if i.module == root or i.module.startswith(root + ".")]


class Package:
    """The modules of a package (the real ones, or with a synthetic one added) and their
    imports of the package itself."""

    def __init__(self, modules: Mapping[str, Source],
                 _known: Mapping[str, list[Import]] | None = None):
        self.modules = dict(modules)
        self.all_imports = {n: list(_known[n]) if _known and n in _known else imports(src)
                            for n, src in self.modules.items()}
        """Every import of each module, of any package (PowerMem's too)."""
        self.imports = {n: internal(imps) for n, imps in self.all_imports.items()}
        """Each module's imports of the package itself."""
        self._reexports = {
            name: {i.alias or i.name: i.target for i in self.imports[name]
                   if i.form == "from" and i.kind == RUNTIME and i.name}
            for name, src in self.modules.items() if src.is_package}

    @classmethod
    def load(cls, package_dir: Path, root: str = ROOT) -> Package:
        return cls(load_package(package_dir, root))

    def with_source(self, rel: str, text: str) -> Package:
        """This package with one more (or one replaced) module."""
        extra = source(rel, text)
        known = {n: i for n, i in self.all_imports.items() if n != extra.name}
        return Package({**self.modules, extra.name: extra}, known)

    def provider(self, dotted: str, _depth: int = 0) -> str:
        """The module that defines ``dotted``: itself if it is a module; through a package's
        re-exports (``bureau.service.Case`` -> ``bureau.service.case``); else its longest prefix
        that is a module (``bureau.ledger.Tx`` -> ``bureau.ledger``); unknown: ``dotted``."""
        if dotted in self.modules:
            return dotted
        head, _, last = dotted.rpartition(".")
        if not head:
            return dotted
        via = self._reexports.get(head, {}).get(last)
        if via and via != dotted and _depth < 20:
            return self.provider(via, _depth + 1)
        got = self.provider(head, _depth + 1)
        return got if got in self.modules else dotted

    def edges(self, kinds: Iterable[str] = KINDS) -> dict[str, dict[str, list[Import]]]:
        """module -> module it imports -> the imports that make the edge. A module's own
        ancestors (imported before it anyway) and a package's own submodules (a package
        re-exporting its parts is not a loop between concepts) make no edge."""
        wanted = set(kinds)
        graph: dict[str, dict[str, list[Import]]] = {n: {} for n in self.modules}
        for name, imps in self.imports.items():
            for imp in imps:
                if imp.kind not in wanted:
                    continue
                targets = {self.provider(imp.target)}
                if imp.form == "from" and imp.module in self.modules:
                    targets.add(imp.module)  # `from pkg import n` runs pkg/__init__ too
                for t in targets:
                    if (t not in self.modules or t == name or name.startswith(t + ".")
                            or t.startswith(name + ".")):
                        continue
                    graph[name].setdefault(t, []).append(imp)
        return graph


@dataclass(frozen=True)
class Cycle:
    """One group of modules that import each other in a loop, and one loop through it."""

    modules: frozenset[str]
    steps: tuple[str, ...]
    kinds: frozenset[str]
    """The kinds of import the loop shown takes (``{"runtime", "type"}``: closed by a
    TYPE_CHECKING import)."""

    def __str__(self) -> str:
        return " -> ".join(self.steps)


def _groups(graph: Mapping[str, Iterable[str]]) -> Iterator[list[str]]:
    """Strongly connected components (Tarjan), iteratively, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    group.append(w)
                    if w == v:
                        break
                yield sorted(group)


def cycles(package: Package, kinds: Iterable[str] = KINDS,
           drop: Iterable[tuple[str, str]] = ()) -> list[Cycle]:
    """One entry per group of modules that import each other in a loop, counting only imports of
    ``kinds`` and leaving out the ``drop`` edges (importer, imported); each shows its shortest
    loop through the group's first module, every step with its file, line and kind."""
    graph = package.edges(kinds)
    for a, b in drop:
        graph.get(a, {}).pop(b, None)
    out = []
    for group in _groups(graph):
        if len(group) < 2:
            continue
        members, start = set(group), group[0]
        prev: dict[str, str] = {}
        frontier = [start]
        while frontier and start not in prev:  # breadth first, back to start
            nxt = []
            for v in frontier:
                for w in sorted(graph[v]):
                    if w in members and w not in prev:
                        prev[w] = v
                        nxt.append(w)
            frontier = nxt
        path = [start, prev[start]]
        while path[-1] != start:
            path.append(prev[path[-1]])
        path.reverse()
        steps, used = [start], set()
        for a, b in zip(path, path[1:], strict=False):
            imp = min(graph[a][b], key=lambda i: KINDS.index(i.kind))
            used.add(imp.kind)
            steps.append(f"({package.modules[a].rel}:{imp.line} {imp.kind}) {b}")
        out.append(Cycle(frozenset(group), tuple(steps), frozenset(used)))
    return out


# --- the house: rooms beside the core, and which way imports may go (issue 32) -----------------
HOUSE: dict[str, tuple[str, ...]] = {
    "labs": ("bureau.labs", "bureau.standin", "bureau.voice"),
    "course": ("bureau.course", "bureau.game"),
    "classroom": ("bureau.classroom",),
    "front door": ("bureau.__main__", "bureau.mcp_server", "bureau.moved"),
}
"""The rooms of the house beside the core (every other module; ``bureau/__init__`` is the front
door too): what measures isolation (the labs, and the stand-in model and the local voice they
and the lessons use), what teaches it (the course, and the game its core lessons play), what
serves it to a room (the classroom)."""
HOUSE_RULES: dict[str, tuple[str, ...]] = {
    "core": ("labs", "course", "classroom", "front door"),
    "labs": ("course", "front door"),
}
"""Imports go one way: the core never imports the labs, the course or the classroom; a lab never
imports the course (the course may import a lab, never the reverse)."""
ROOM_ORDER = ("core", "labs", "classroom", "course", "front door")


def room_of(dotted: str) -> str:
    """The room of the house a module sits in (``core`` unless :data:`HOUSE` names it)."""
    if dotted == ROOT:
        return "front door"
    return next((room for room, prefixes in HOUSE.items()
                 if any(dotted == p or dotted.startswith(p + ".") for p in prefixes)), "core")


def room_edges(package: Package) -> dict[tuple[str, str], int]:
    """How many imports lead from each room to each other room (any kind)."""
    counts: dict[tuple[str, str], int] = {}
    for src, targets in package.edges(KINDS).items():
        for dst, imps in targets.items():
            a, b = room_of(src), room_of(dst)
            if a != b:
                counts[(a, b)] = counts.get((a, b), 0) + len(imps)
    return counts


def main() -> int:
    """``python tools/import_graph.py``: the rooms, their sizes, and the imports between them;
    exit 1 when an import runs against :data:`HOUSE_RULES`."""
    package = Package.load(Path(__file__).resolve().parent.parent / ROOT)
    sizes: dict[str, int] = {}
    for name in package.modules:
        sizes[room_of(name)] = sizes.get(room_of(name), 0) + 1
    print("rooms (modules): " + ", ".join(f"{r} ({sizes.get(r, 0)})" for r in ROOM_ORDER))
    edges = room_edges(package)
    print(f"{'from':<12}{'to':<12}{'imports':>8}  allowed")
    bad = 0
    for (a, b), n in sorted(edges.items(), key=lambda e: (ROOM_ORDER.index(e[0][0]),
                                                          ROOM_ORDER.index(e[0][1]))):
        ok = b not in HOUSE_RULES.get(a, ())
        bad += not ok
        print(f"{a:<12}{b:<12}{n:>8}  {'yes' if ok else 'NO'}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
