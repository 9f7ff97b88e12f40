"""The layers the README draws are the layers the code has (issue 10).

* Only the storage layer imports PowerMem/seekdb (``test_gateway.py``).
* Only the storage, ledger and service layers touch the gateway or the ledger; everything else
  (course widgets, attack catalogue, the lab, notebooks) goes through ``Bureau``/``Case``.
* No module imports private names of another bureau module.
* The package's module-level imports form no cycle.
* Everything is built from Settings in one place; a second open applies or refuses, never ignores.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from bureau.errors import StoreAlreadyOpenError

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "bureau"
INNER = ("storage", "ledger", "service")
"""Layers allowed to hold the gateway and the ledger."""
MEASURING_TOOLS = {"bench.py"}
"""Compares the service with raw PowerMem calls, so it must reach the gateway's raw baseline."""


def _modules() -> dict[str, ast.Module]:
    return {p.relative_to(PACKAGE).as_posix(): ast.parse(p.read_text())
            for p in sorted(PACKAGE.rglob("*.py"))}


def _module_name(rel: str) -> str:
    parts = ["bureau", *rel[:-3].split("/")]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(rel: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    pkg = _module_name(rel).split(".")
    if not rel.endswith("__init__.py"):
        pkg = pkg[:-1]
    base = pkg[: len(pkg) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _outer(rel: str) -> bool:
    return rel.split("/")[0] not in INNER and rel not in MEASURING_TOOLS


def test_outer_layers_never_touch_the_gateway_or_the_ledger():
    offenders = []
    for rel, tree in _modules().items():
        if not _outer(rel):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("gateway", "ledger"):
                offenders.append(f"{rel}:{node.lineno} .{node.attr}")
            if isinstance(node, ast.ImportFrom):
                target = _resolve(rel, node)
                if target.startswith(("bureau.storage", "bureau.ledger")):
                    offenders.append(f"{rel}:{node.lineno} imports {target}")
    assert not offenders, "\n".join(offenders)


def test_no_module_imports_private_names_of_another():
    offenders = []
    for rel, tree in _modules().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and _resolve(rel, node).startswith("bureau"):
                offenders += [f"{rel}:{node.lineno} {a.name}" for a in node.names
                              if a.name.startswith("_") and a.name != "__version__"]
    assert not offenders, "\n".join(offenders)


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
                        ("bureau.storage", "bureau.ledger")):
                    offenders.append(f"{nb.name} cell {n}: imports {node.module}")
    assert not offenders, "\n".join(offenders)


def _module_level_imports(rel: str, tree: ast.Module) -> set[str]:
    """Imports that run when the module is imported (not in functions or TYPE_CHECKING)."""
    out: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, ast.ImportFrom):
                target = _resolve(rel, node)
                if target.startswith("bureau"):
                    out.add(target)
                    out.update(f"{target}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                out.update(a.name for a in node.names if a.name.startswith("bureau"))
            elif isinstance(node, ast.If | ast.Try):
                visit(node.body)
                visit(getattr(node, "orelse", []))

    visit(tree.body)
    return out


def test_module_imports_form_no_cycle():
    mods = {_module_name(rel): (rel, tree) for rel, tree in _modules().items()}
    graph = {name: {t for t in _module_level_imports(rel, tree) if t in mods and t != name}
             for name, (rel, tree) in mods.items()}
    # A package's __init__ re-exporting its own submodules is not a loop between concepts.
    for name in graph:
        graph[name] = {t for t in graph[name] if not t.startswith(name + ".")}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def dfs(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt):] + [nxt] if nxt in path else [node, nxt])
            elif nxt not in state:
                dfs(nxt, [*path, nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            dfs(name, [name])
    assert not cycles, cycles


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

    with pytest.raises(StoreAlreadyOpenError) as info:
        Bureau.open(tmp_path / "elsewhere")
    assert "data_dir" in str(info.value)
    with pytest.raises(StoreAlreadyOpenError) as info:
        Bureau.open(bureau.settings.data_dir, collection="other_cards")
    assert "collection" in str(info.value)
    assert bureau.settings.collection == "bureau_cards"
