"""The learner's progress table lists every lesson and every deep dive (issue 50 §6).

A deep dive's quiz answers, predictions and checks are its own row, not folded into its
lesson's or dropped: the ids carry the deep dive's number (``q05b-1``, ``04b-timing``), and the
table lists the whole course (``progress.COURSE``) in course order, each row even before the
learner has recorded anything there. Needs no store: the record is a file in a folder.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from bureau.course import progress
from bureau.course.quiz import predict, questions, quiz

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted([*(REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"),
                    *(REPO / "notebooks").glob("[0-9][0-9][a-z]_*.ipynb")])
RECORDED = re.compile(r'\b(predict|reveal|check|application|quiz)\("([0-9a-z-]+)"')


def _learner(tmp_path: Path) -> SimpleNamespace:
    """What the quiz and prediction widgets read of a bureau: its data directory."""
    return SimpleNamespace(settings=SimpleNamespace(data_dir=tmp_path))


def test_the_course_list_is_the_notebooks():
    assert list(progress.COURSE) == [p.name.split("_")[0] for p in NOTEBOOKS]
    assert set(progress.DEEP_DIVES) >= {"04b", "05b", "05c", "06b", "07b", "08b"}


@pytest.mark.parametrize("item, lesson", [
    ("q03-2", "03"), ("03-footprint", "03"), ("q05b-1", "05b"), ("04b-timing", "04b"),
    ("05c-rule", "05c"), ("q08b-2", "08b"), ("junk", "?"),
])
def test_an_id_belongs_to_the_notebook_it_names(item, lesson):
    assert progress.lesson_of(item) == lesson


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_recorded_id_of_a_notebook_lands_in_its_own_row(path):
    """Each quiz, prediction, check and application id a notebook records names that notebook,
    so a deep dive's answers are its own row of the table (not its lesson's)."""
    nb = nbformat.read(path, as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    number = path.name.split("_")[0]
    for kind, item in RECORDED.findall(code):
        if kind == "quiz":
            assert item == number, f"{path.name}: quiz({item!r})"
            assert all(progress.lesson_of(q.id) == number for q in questions()[item])
        else:
            assert progress.lesson_of(item) == number, f"{path.name}: {kind}({item!r})"


def test_the_table_lists_the_deep_dives_with_their_quiz_answers(tmp_path):
    learner = _learner(tmp_path)
    empty = progress.progress_table(tmp_path)
    assert list(empty["lesson"]) == list(progress.COURSE)  # every row, before any answer
    assert empty.drop(columns="lesson").to_numpy().sum() == 0

    # 04b's quiz, answered in its own widget: one right, one wrong
    box = quiz("04b", learner)
    first, second = questions()["04b"][:2]
    box.state.radios[0].value = first.answer
    box.state.buttons[0].click()
    box.state.radios[1].value = (second.answer + 1) % len(second.choices)
    box.state.buttons[1].click()
    # 08b's quiz, 05c's prediction, 07b's check
    box = quiz("08b", learner)
    box.state.radios[0].value = questions()["08b"][0].answer
    box.state.buttons[0].click()
    text, save, _ = predict("05c-gatemem-boundary", learner).state
    text.value = "Fewer violations, most of the utility kept."
    save.click()
    progress.record(tmp_path, "check", "07b-forget-for-good", True)

    table = progress.progress_table(tmp_path).set_index("lesson")
    assert list(table.index) == list(progress.COURSE)
    assert table.loc["04b", ["quiz right", "quiz answered"]].tolist() == [1, 2]
    assert table.loc["08b", ["quiz right", "quiz answered"]].tolist() == [1, 1]
    assert table.loc["05c", "predictions"] == 1
    assert table.loc["07b", "checks passed"] == 1
    # nothing was folded into the lessons the deep dives belong to
    assert table.loc[["04", "05", "07", "08"]].to_numpy().sum() == 0


def test_an_unknown_lesson_still_shows_after_the_course(tmp_path):
    progress.record(tmp_path, "quiz", "q99-1", True)
    progress.record(tmp_path, "check", "oddity", True)
    lessons = list(progress.progress_table(tmp_path)["lesson"])
    assert lessons == [*progress.COURSE, "99", "?"]
    assert list(progress.progress_table(tmp_path, ["04b"])["lesson"]) == ["04b"]
