"""The floor plan (issue 32 §2): the labs in one room with one entry convention, no file in the
package over 600 lines, and old import paths of moved modules still working, with a warning, for
one release. The one-way rules between the rooms are in ``tests/test_layers.py``."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from bureau.labs import LABS
from bureau.moved import MOVED

REPO = Path(__file__).resolve().parents[1]
MAX_LINES = 600


def test_no_module_of_the_package_is_over_600_lines():
    long = {str(p.relative_to(REPO)): n for p in (REPO / "bureau").rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"split these by concern: {long}"


@pytest.mark.parametrize("lab", LABS, ids=[lab.name for lab in LABS])
def test_every_lab_has_the_same_entry_points(lab):
    package = importlib.import_module(lab.package)
    cli = lab.cli()
    assert callable(cli.add_arguments) and callable(cli.run)
    assert callable(package.run)
    report = importlib.import_module(f"{lab.package}.report")
    assert callable(report.write_outputs)
    with pytest.raises(AttributeError):
        package.no_such_entry  # noqa: B018 - the lazy lookup refuses what it does not offer


@pytest.mark.parametrize("old", ["bureau.leakage.runner", "bureau.poisoning.corpus",
                                 "bureau.course.standin_model", "bureau.bench",
                                 "bureau.course.injection", "bureau.classroom.connection",
                                 "bureau.peers.report"])
def test_an_old_import_path_warns_and_gives_the_same_module(old):
    for name in [n for n in sys.modules if n == old or n.startswith(old + ".")]:
        del sys.modules[name]  # a test before this one may have imported it already
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    assert module is importlib.import_module(MOVED[old])
    assert any(issubclass(w.category, DeprecationWarning) and MOVED[old] in str(w.message)
               for w in caught), [str(w.message) for w in caught]


def test_every_moved_name_resolves():
    missing = [new for new in MOVED.values() if importlib.util.find_spec(new) is None]
    assert not missing


@pytest.mark.parametrize("argv", [["-m", "bureau.leakage", "--help"],
                                  ["-m", "bureau.poisoning", "--help"],
                                  ["-m", "bureau", "leakage", "--help"]])
def test_the_old_and_new_command_lines_still_start(argv):
    done = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=120,
                          cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "--out" in done.stdout


def test_the_import_graph_shows_the_rooms_with_no_import_against_the_flow():
    done = subprocess.run([sys.executable, "tools/import_graph.py"], capture_output=True,
                          text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    for room in ("core", "labs", "classroom", "course"):
        assert f"{room} (" in done.stdout.splitlines()[0]


def test_the_architecture_page_names_every_module_of_the_tree():
    """The floor plan on the page matches the tree: a new module must be placed there too."""
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = [str(p.relative_to(REPO)) for p in sorted((REPO / "bureau").rglob("*.py"))
               if p.name not in ("__init__.py", "__main__.py") and f"`{p.name}`" not in page
               and f"{p.stem}.py" not in page]
    assert not missing, f"docs/architecture.md does not place: {missing}"
