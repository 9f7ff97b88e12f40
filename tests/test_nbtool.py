"""tools/nbtool.py's navigation: nav cells, lesson 00's contents and the notebooks README table
come from one table (``COURSE``), so adding a lesson is a notebook plus one row.

These tests read and rewrite copies of the notebooks; no kernel runs.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import nbformat
import pytest
from conftest import REPO

NB_DIR = REPO / "notebooks"


@pytest.fixture(scope="module")
def nbtool():
    spec = importlib.util.spec_from_file_location("nbtool", REPO / "tools" / "nbtool.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def course_copy(nbtool, tmp_path: Path) -> Path:
    """The notebooks folder's lessons and README, copied (nav rewrites them in place)."""
    for lesson in nbtool.COURSE:
        shutil.copy(NB_DIR / lesson.file, tmp_path / lesson.file)
    shutil.copy(NB_DIR / "README.md", tmp_path / "README.md")
    return tmp_path


def test_navigation_and_contents_are_up_to_date_with_the_table(nbtool):
    """Fails when a nav cell, lesson 00's contents or the README table lags behind COURSE:
    run ``python tools/nbtool.py nav``."""
    stale, broken = nbtool.nav(NB_DIR, write=False)
    assert not stale and not broken, stale + broken


def test_the_table_lists_every_numbered_notebook_in_order(nbtool):
    files = [le.file for le in nbtool.COURSE]
    assert files == sorted(p.name for p in NB_DIR.glob("[0-9][0-9]_*.ipynb"))
    for le in nbtool.COURSE:
        assert le.title.startswith(le.file[:2] + " · ") and le.summary
        heading = nbformat.read(NB_DIR / le.file, as_version=4).cells[1].source.splitlines()[0]
        assert heading == f"# {le.title}", f"{le.file}: its heading and COURSE differ"


def test_nav_cells_link_the_neighbours(nbtool):
    first, middle, last = nbtool.nav_cell(0), nbtool.nav_cell(1), nbtool.nav_cell(len(nbtool.COURSE) - 1)
    assert first.startswith("<!--NAVIGATION-->\n◀ (start) | [Contents](00_welcome.ipynb#Contents)")
    assert f"[◀ {nbtool.COURSE[0].title}]({nbtool.COURSE[0].file})" in middle
    assert f"[{nbtool.COURSE[2].title} ▶]({nbtool.COURSE[2].file})" in middle
    assert last.rstrip().endswith("(end) ▶\n<!--/NAVIGATION-->")


def test_nav_rewrites_a_stale_cell_and_nothing_else(nbtool, course_copy: Path):
    path = course_copy / "02_interrogate.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells[-1].source = "<!--NAVIGATION-->\n[◀ old](old.ipynb)\n<!--/NAVIGATION-->"
    nbformat.write(nb, path)
    other = (course_copy / "01_whisper.ipynb").read_bytes()

    stale, broken = nbtool.nav(course_copy, write=False)
    assert stale == ["02_interrogate.ipynb: navigation or contents out of date with COURSE"]
    assert not broken
    assert nbtool.main(["nav", "--check", str(course_copy)]) == 1

    assert nbtool.main(["nav", str(course_copy)]) == 0
    assert nbtool.nav(course_copy, write=False) == ([], [])
    fixed = nbformat.read(path, as_version=4)
    assert fixed.cells[-1].source == fixed.cells[0].source == nbtool.nav_cell(2)
    assert nbtool.problems(path, fixed) == []  # still to the outputs policy
    assert (course_copy / "01_whisper.ipynb").read_bytes() == other


def _extra(nbtool, course_copy: Path) -> str:
    """A notebook numbered after the last lesson, copied from lesson 01; its file name."""
    name = f"{len(nbtool.COURSE):02d}_extra.ipynb"
    shutil.copy(course_copy / "01_whisper.ipynb", course_copy / name)
    return name


def test_a_new_lesson_without_a_row_is_reported(nbtool, course_copy: Path):
    name = _extra(nbtool, course_copy)
    _, broken = nbtool.nav(course_copy, write=False)
    assert broken == [f"{name}: not in COURSE (tools/nbtool.py): add a row for it"]
    assert nbtool.main(["nav", str(course_copy)]) == 1


def test_adding_a_row_regenerates_every_link_and_table(nbtool, course_copy: Path, monkeypatch):
    name, last = _extra(nbtool, course_copy), nbtool.COURSE[-1].file
    row = nbtool.Lesson(name, f"{name[:2]} · Extra", "one more thing")
    monkeypatch.setattr(nbtool, "COURSE", [*nbtool.COURSE, row])
    stale, broken = nbtool.nav(course_copy)
    assert not broken
    assert {s.split(":")[0] for s in stale} == {last, name, "00_welcome.ipynb", "README.md"}
    before_new = nbformat.read(course_copy / last, as_version=4)
    assert f"[{row.title} ▶]({name})" in before_new.cells[0].source
    assert nbformat.read(course_copy / name, as_version=4).cells[-1].source == nbtool.nav_cell(
        len(nbtool.COURSE) - 1)
    welcome = nbformat.read(course_copy / "00_welcome.ipynb", as_version=4)
    assert any(f"| [{row.title}]({name}) | one more thing |" in c.source for c in welcome.cells)
    assert f"[`{name}`]({name}) | one more thing |" in \
        (course_copy / "README.md").read_text(encoding="utf-8")
