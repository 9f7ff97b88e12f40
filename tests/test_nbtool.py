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
    for lesson in nbtool.present(NB_DIR):
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
    assert files == sorted(files)
    assert [le.file for le in nbtool.present(NB_DIR)] == sorted(
        p.name for p in [*NB_DIR.glob("[0-9][0-9]_*.ipynb"), *NB_DIR.glob("[0-9][0-9][a-z]_*.ipynb")])
    for le in nbtool.present(NB_DIR):
        number = le.file.split("_")[0]
        assert le.title.startswith(number + (" · Deep dive: " if le.deep_dive else " · "))
        assert le.summary and le.deep_dive == (len(number) == 3)
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
    assert stale == ["02_interrogate.ipynb: navigation, contents or time out of date with COURSE"]
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
    name, last = _extra(nbtool, course_copy), nbtool.present(course_copy)[-1].file
    row = nbtool.Lesson(name, f"{name[:2]} · Extra", "one more thing")
    monkeypatch.setattr(nbtool, "COURSE", [*nbtool.COURSE, row])
    stale, broken = nbtool.nav(course_copy)
    assert not broken
    assert {s.split(":")[0] for s in stale} == {last, name, "00_welcome.ipynb", "README.md"}
    before_new = nbformat.read(course_copy / last, as_version=4)
    assert f"[{row.title} ▶]({name})" in before_new.cells[0].source
    course = nbtool.present(course_copy)
    assert course[-1] == row
    assert nbformat.read(course_copy / name, as_version=4).cells[-1].source == nbtool.nav_cell(
        len(course) - 1, course)
    welcome = nbformat.read(course_copy / "00_welcome.ipynb", as_version=4)
    assert any(f"| [{row.title}]({name}) | one more thing |" in c.source for c in welcome.cells)
    assert f"[`{name}`]({name}) | going further | one more thing |" in \
        (course_copy / "README.md").read_text(encoding="utf-8")


def test_a_row_before_its_notebook_is_left_out_of_every_link(nbtool, course_copy: Path, monkeypatch):
    """A row may land before its lesson (another branch writes it): nav links only lessons
    that exist, so no link dangles, and adds the new one once its notebook appears."""
    row = nbtool.Lesson(f"{len(nbtool.COURSE):02d}_later.ipynb", f"{len(nbtool.COURSE):02d} · Later",
                        "written elsewhere", 10)
    monkeypatch.setattr(nbtool, "COURSE", [*nbtool.COURSE, row])
    assert nbtool.nav(course_copy, write=False) == ([], [])
    welcome = nbformat.read(course_copy / "00_welcome.ipynb", as_version=4)
    assert not any(row.file in c.source for c in welcome.cells)
    shutil.copy(course_copy / "01_whisper.ipynb", course_copy / row.file)
    stale, broken = nbtool.nav(course_copy)
    assert not broken and any(s.startswith("00_welcome.ipynb") for s in stale)
    welcome = nbformat.read(course_copy / "00_welcome.ipynb", as_version=4)
    assert any(f"| [{row.title}]({row.file}) | written elsewhere | 10 min |" in c.source
               for c in welcome.cells)


def test_nav_only_rewrites_the_lessons_it_is_given(nbtool, course_copy: Path, monkeypatch):
    """``nav --only FILE``: one engineer regenerates their lessons and leaves the rest (and the
    README) for whoever owns them; what is left stale is still reported."""
    first = nbtool.COURSE[0]
    monkeypatch.setattr(nbtool, "COURSE", [first._replace(minutes=(first.minutes or 0) + 5),
                                           *nbtool.COURSE[1:]])
    readme = (course_copy / "README.md").read_bytes()
    assert nbtool.main(["nav", str(course_copy), "--only", "01_whisper.ipynb"]) == 0
    assert (course_copy / "README.md").read_bytes() == readme
    stale, _ = nbtool.nav(course_copy, write=False)
    assert {s.split(":")[0] for s in stale} == {"00_welcome.ipynb", "README.md"}


def test_the_contents_gives_each_lessons_time_and_the_totals(nbtool):
    course = nbtool.present(NB_DIR)
    cell = nbtool.contents_cell(course)
    for le in course:
        mark = nbtool.DEEP_DIVE_MARK if le.deep_dive else ""
        assert f"| [{le.title}]({le.file}) | {mark}{le.summary} | {le.minutes} min |" in cell
    core = sum(le.minutes for le in course if le.core)
    assert f"**The core path**: the game, and the workshop's path, {core // 60} h " \
        f"{core % 60:02d} min in all." in cell
    # the core rows come before "Going further", every other row after it
    further_at = cell.index("**Going further**")
    for le in course:
        assert (cell.index(f"[{le.title}]") < further_at) == le.core, le.file


def test_the_core_path_is_the_game_and_fits_the_workshop(nbtool):
    """Issue 49 §2-3: lessons 00-06 are the core path; it takes at most 150 minutes and each of
    its lessons at most 25, by the time model; every deep dive and going-further lesson is out."""
    course = nbtool.present(NB_DIR)
    core = nbtool.core_path(course)
    assert [le.file[:2] for le in core] == ["00", "01", "02", "03", "04", "05", "06"]
    assert not any(le.deep_dive for le in core)
    assert all(le.minutes is not None and le.minutes <= nbtool.CORE_LESSON_MINUTES for le in core)
    assert sum(le.minutes for le in core) <= nbtool.CORE_MINUTES
    for le in course:
        if not le.core and not le.deep_dive:
            assert "Going further" in le.title, le.file
        if le.deep_dive:
            assert "Deep dive" in le.title, le.file


def test_deep_dives_sit_beside_their_lesson_outside_the_path(nbtool):
    """Issue 34 §6: a deep dive's navigation leads back to its lesson and on to the next one;
    the main lessons' navigation skips it; the tables mark it, outside the workshop's total."""
    course = nbtool.present(NB_DIR)
    dives = [i for i, le in enumerate(course) if le.deep_dive]
    assert len(dives) >= 3
    for i in dives:  # a lesson may have several (05b, 05c): each sits after its lesson
        dive, parent = course[i], nbtool.parent_of(course[i], course)
        p = course.index(parent)
        assert all(le.deep_dive and le.file[:2] == dive.file[:2] for le in course[p + 1:i + 1])
        after = next(le for le in course[i + 1:] if not le.deep_dive)
        cell = nbtool.nav_cell(i, course)
        assert f"[◀ {parent.title}]({parent.file})" in cell
        assert f"[{after.title} ▶]({after.file})" in cell
        assert dive.file not in nbtool.nav_cell(p, course)  # the lesson's own nav skips it
        assert f"[{after.title} ▶]" in nbtool.nav_cell(p, course)
    kit = nbtool.kit_table(course)
    core = nbtool.core_path(course)
    assert f"| **the workshop: the {len(core)} lessons of the core path** |" in kit
    assert kit.count("| going further |") == len(course) - len(core)
    assert nbtool.readme_table(course).count(nbtool.DEEP_DIVE_MARK) == len(dives)


def test_a_lessons_opening_block_states_the_time_in_the_table(nbtool):
    """A lesson that opens with "Prerequisites · Time · You will be able to…" says the same
    time as the contents (both come from measuring it with ``nbtool.py time``)."""
    opened = 0
    for le in nbtool.present(NB_DIR):
        head = nbformat.read(NB_DIR / le.file, as_version=4).cells[1].source
        if "**Time**" in head:
            opened += 1
            assert f"**Time** · about {le.minutes} min" in head, le.file
    assert opened >= 5


def test_learner_minutes_counts_what_issue_49_names(nbtool):
    """A lesson with a known count: 800 words (4 min at 200 a minute), a table and a figure
    shown (a minute each; a print and an assignment show nothing), one exercise (8), the quiz
    (3) and 90 s of running: 4 + 2 + 8 + 3 + 1.5 = 18.5, rounded up to 19."""
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(nbtool.nav_cell(0)),  # generated: not counted
        nbformat.v4.new_markdown_cell(" ".join(["word"] * nbtool.PROSE_WPM * 4)),
        nbformat.v4.new_code_cell("x = 1\nprint(x)"),
        nbformat.v4.new_code_cell("table = frame()\ntable"),
        nbformat.v4.new_code_cell("display(figure())\ny = 2"),
        nbformat.v4.new_code_cell('check("01-whisper", case, None)'),
        nbformat.v4.new_code_cell('quiz("01", bureau)'),
    ])
    minutes, parts = nbtool.learner_minutes(nb, run_seconds=90)
    assert parts["words"] == nbtool.PROSE_WPM * 4 and parts["things shown"] == 2
    assert (parts["exercises"], parts["quiz"]) == (nbtool.EXERCISE_MIN, nbtool.QUIZ_MIN)
    assert minutes == 19
    # Two exercises count twice (the old model gave a flat 8 minutes for any number).
    nb.cells.insert(-1, nbformat.v4.new_code_cell('check("01-gardener", case)'))
    assert nbtool.learner_minutes(nb, run_seconds=90)[0] == 27
    # A deep dive without an exercise or a quiz gets no time for them.
    nb.cells = nb.cells[:-3]
    assert nbtool.learner_minutes(nb, run_seconds=90)[0] == 8


def test_a_lesson_time_said_differently_anywhere_is_stale(nbtool, course_copy: Path):
    """Issue 34 §2: one number per lesson (``COURSE``, from ``nbtool.py time``) in the lesson's
    header, the lessons table and the instructor kit; a header or a kit row that disagrees is
    reported, and ``nav`` writes the table's number back."""
    shutil.copy(NB_DIR / "INSTRUCTOR.md", course_copy / "INSTRUCTOR.md")
    assert nbtool.nav(course_copy, write=False) == ([], [])
    path = course_copy / "05_measuring_leakage.ipynb"
    nb = nbformat.read(path, as_version=4)
    minutes = next(le for le in nbtool.COURSE if le.file == path.name).minutes
    assert f"**Time** · about {minutes} min" in nb.cells[1].source
    nb.cells[1].source = nb.cells[1].source.replace(f"about {minutes} min", "about 35 min")
    nbformat.write(nb, path)
    kit = course_copy / "INSTRUCTOR.md"
    row = f"(00_welcome.ipynb) | core path | {nbtool.COURSE[0].minutes} min |"
    assert row in kit.read_text(encoding="utf-8")
    kit.write_text(kit.read_text(encoding="utf-8").replace(row, "(00_welcome.ipynb) | core path | 15–20 min |"),
                   encoding="utf-8")
    stale, _ = nbtool.nav(course_copy, write=False)
    assert stale == ["05_measuring_leakage.ipynb: navigation, contents or time out of date with "
                     "COURSE", "INSTRUCTOR.md: lesson times out of date with COURSE"]
    nbtool.nav(course_copy)
    assert nbtool.nav(course_copy, write=False) == ([], [])
    assert f"about {minutes} min" in nbformat.read(path, as_version=4).cells[1].source


def test_every_lessons_time_is_what_its_notebook_gives(nbtool, course_copy: Path, monkeypatch):
    """Issue 34 §2: ``COURSE`` holds what ``nbtool.py time`` computes, so a lesson whose prose
    grew (or shrank) since it was timed is reported; planted: a row that says 5 minutes."""
    assert nbtool.stale_times(NB_DIR) == []
    first = nbtool.COURSE[0]
    monkeypatch.setattr(nbtool, "COURSE", [first._replace(minutes=5), *nbtool.COURSE[1:]])
    found = nbtool.stale_times(course_copy)
    assert len(found) == 1 and found[0].startswith(f"{first.file}: COURSE says 5 min"), found


def test_a_cell_id_in_an_nbformat_4_4_notebook_is_reported(nbtool, tmp_path: Path):
    """Lesson 07 once held cell ids at nbformat 4.4 (invalid: Jupyter warns on every open);
    ``check`` reports them and ``clean`` drops them."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# a")])
    nb.metadata = {"kernelspec": dict(nbtool.KERNELSPEC)}
    nb.nbformat_minor = 4
    path = tmp_path / "x.ipynb"
    assert "id" in nb.cells[0]
    path.write_text(nbformat.writes(nb, version=4), encoding="utf-8")
    assert any("a cell id is invalid" in p for p in nbtool.problems(path, nb))
    assert nbtool.problems(path, nbtool.clean(nb)) == []
