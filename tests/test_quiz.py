"""Quizzes, prediction boxes and the progress record (issue 21 §4).

The quiz content is data, so its shape is checked here (every lesson 00-08 has questions, each
with one right answer and an explanation per choice); the widgets are driven as a learner
would (pick, click), and what they record is read back from the progress file.
"""

from __future__ import annotations

import stat

import pytest

from bureau.course import progress
from bureau.course.quiz import last_prediction, predict, questions, quiz
from bureau.course.widgets import check

LESSONS = [f"{n:02d}" for n in range(9)]


def test_every_lesson_has_three_or_more_well_formed_questions():
    qs = questions()
    assert set(LESSONS) <= set(qs)
    ids = [q.id for lesson in qs.values() for q in lesson]
    assert len(ids) == len(set(ids))
    for lesson in LESSONS:
        assert len(qs[lesson]) >= 3, lesson
        for q in qs[lesson]:
            assert q.id.startswith(f"q{lesson}-") and q.question.endswith("?")
            assert len(q.choices) >= 3 and 0 <= q.answer < len(q.choices)
            assert all(c.text.strip() and len(c.why) > 20 for c in q.choices), q.id
            assert q.choices[q.answer].why.startswith("Right."), q.id
            assert not any(c.why.startswith("Right.") for i, c in enumerate(q.choices)
                           if i != q.answer), q.id


def test_grading_explains_every_choice():
    q = questions()["03"][0]
    ok, why = q.grade(q.answer)
    assert ok and why.startswith("Right.")
    wrong = (q.answer + 1) % len(q.choices)
    assert q.grade(wrong) == (False, q.choices[wrong].why)
    with pytest.raises(IndexError):
        q.grade(len(q.choices))


def test_a_learner_answers_and_the_record_keeps_the_latest(bureau):
    box = quiz("02", bureau)
    st = box.state
    st.buttons[0].click()
    assert "Pick an answer first" in st.feedback[0].value
    q = questions()["02"][0]
    st.radios[0].index = (q.answer + 1) % len(q.choices)
    st.buttons[0].click()
    assert 'data-ok="false"' in st.feedback[0].value
    st.radios[0].index = q.answer
    st.buttons[0].click()
    assert 'data-ok="true"' in st.feedback[0].value and "Right." in st.feedback[0].value
    row = _row(bureau, "02")
    assert row["quiz right"] >= 1 and row["quiz answered"] >= 1
    latest = progress.attempts(bureau.settings.data_dir)
    latest = latest[latest["item"] == q.id].iloc[-1]
    assert latest["ok"] == 1 and latest["detail"] == str(q.answer)  # the latest answer counts
    path = progress.progress_path(bureau.settings.data_dir)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def _row(bureau, lesson):
    """The lesson's progress row now (the bureau's data directory is shared by the session's
    tests, so the tests compare before and after)."""
    return progress.progress_table(bureau.settings.data_dir, LESSONS).set_index("lesson").loc[
        lesson]


def test_checks_and_predictions_are_recorded(bureau, case):
    before_00, before_08 = _row(bureau, "00"), _row(bureau, "08")
    check("00-counts", case, None)  # not yet
    truth = {r: n for r, n in case.stage()["private_counts"].items()}
    assert check("00-counts", case, truth).ok
    box = predict("08-inside-run", bureau)
    text, save, said = box.state
    save.click()
    assert "Write something first" in said.value
    text.value = "  The answer will quote the page but not call it known.  "
    save.click()
    assert said.value == "saved"
    assert last_prediction("08-inside-run", bureau) == ("The answer will quote the page but not "
                                                        "call it known.")
    after_00, after_08 = _row(bureau, "00"), _row(bureau, "08")
    assert after_00["check attempts"] - before_00["check attempts"] == 2
    assert after_00["checks passed"] == max(1, before_00["checks passed"])  # one distinct id
    assert after_08["predictions"] == max(1, before_08["predictions"])


def test_a_record_that_cannot_be_written_does_not_stop_the_lesson(tmp_path):
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    progress.record(blocked, "quiz", "q01-1", True)  # no exception
    assert progress.progress_table(blocked).empty
    with pytest.raises(ValueError):
        progress.record(tmp_path, "grade", "q01-1", True)


def test_a_lesson_outside_a_classroom_does_not_load_the_classroom_driver():
    """Every lesson imports the progress record; only a classroom tenant needs pymysql (about
    60 ms of every lesson's start-up when it was imported with the module)."""
    import subprocess
    import sys

    code = ("import sys, bureau, bureau.course, bureau.course.progress; "
            "print('pymysql' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"
