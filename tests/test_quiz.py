"""Quizzes, prediction boxes and the progress record (issue 21 §4).

The quiz content is data, so its shape is checked here (every lesson 00-08 has questions, each
with one right answer and an explanation per choice); the widgets are driven as a learner
would (pick, click), and what they record is read back from the progress file.
"""

from __future__ import annotations

import stat

import pytest

from bureau.course import progress
from bureau.course.quiz import last_prediction, predict, questions, quiz, reveal
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
    st.radios[0].value = (q.answer + 1) % len(q.choices)
    st.buttons[0].click()
    assert 'data-ok="false"' in st.feedback[0].value
    st.radios[0].value = q.answer
    st.buttons[0].click()
    assert 'data-ok="true"' in st.feedback[0].value and "Right." in st.feedback[0].value
    row = _row(bureau, "02")
    assert row["quiz right"] >= 1 and row["quiz answered"] >= 1
    latest = progress.attempts(bureau.settings.data_dir)
    latest = latest[latest["item"] == q.id].iloc[-1]
    # The latest answer counts, recorded as the choice (its text), not the position it had.
    assert latest["ok"] == 1 and latest["detail"] == q.choices[q.answer].text
    path = progress.progress_path(bureau.settings.data_dir)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_choices_are_shuffled_per_learner_and_stable_for_each(bureau):
    """Each learner sees a question's choices in an order of their own, the same on every
    load; the radio's values stay the choices' indices in the file, so grading is unchanged."""
    from bureau.course.quiz import choice_order, learner_key

    box, again = quiz("03", bureau), quiz("03", bureau)
    assert box.state.orders == again.state.orders
    for q, radio, order in zip(questions()["03"], box.state.radios, box.state.orders, strict=True):
        assert [v for _, v in radio.options] == order
        assert [t for t, _ in radio.options] == [q.choices[i].text for i in order]
    all_qs = [q for lesson in questions().values() for q in lesson]
    me = [choice_order(q, learner_key(bureau)) for q in all_qs]
    assert me != [choice_order(q, "/some/other/learner") for q in all_qs]
    assert me != [list(range(len(q.choices))) for q in all_qs]


POSITION_LIMIT = LONGEST_LIMIT = 0.40
"""Issue 34 §3: no position holds more than 40 % of the right answers, and the right answer is
the longest choice in at most 40 % of the questions: a skimming learner cannot score."""


def test_right_answers_are_not_given_away_by_position_or_length():
    from collections import Counter

    from bureau.course.quiz import choice_order

    all_qs = [q for lesson in questions().values() for q in lesson]
    learners = [f"/learners/{n}" for n in range(200)]
    where = Counter(choice_order(q, who).index(q.answer) for q in all_qs for who in learners)
    total = sum(where.values())
    assert max(where.values()) / total <= POSITION_LIMIT, where
    longest = [q.id for q in all_qs
               if len(q.choices[q.answer].text) >= max(len(c.text) for c in q.choices)]
    assert len(longest) / len(all_qs) <= LONGEST_LIMIT, (len(longest), len(all_qs), longest)
    # Nor the shortest: trimming right answers must not make brevity the new tell.
    shortest = [q.id for q in all_qs
                if len(q.choices[q.answer].text) <= min(len(c.text) for c in q.choices)]
    assert len(shortest) / len(all_qs) <= LONGEST_LIMIT, (len(shortest), len(all_qs), shortest)


def test_the_position_check_fails_on_an_unshuffled_quiz():
    """The planted defect: the file's own order (no shuffle) fails the 40 % position limit."""
    from collections import Counter

    all_qs = [q for lesson in questions().values() for q in lesson]
    where = Counter(q.answer for q in all_qs)
    if max(where.values()) / len(all_qs) <= POSITION_LIMIT:
        pytest.skip("the file's own order happens to be balanced")
    assert max(where.values()) / len(all_qs) > POSITION_LIMIT


# -- length tells (issue 50 §2) ------------------------------------------------------------------
RANK_MARGIN = 0.15
"""No length rank (shortest, middle, longest…) holds the right answer in more than 1/n + 15 % of
the questions with n choices: "pick the longest" (or "never the long one") scores no better than
a little above chance."""
PAD_LIMIT = 1.3
"""No wrong choice is more than 1.3 × as long as the longest of the others: a padded, hedged
wrong choice is a tell of its own (issue 50 §2: 72-89 characters beside right answers of ~45)."""


def length_rank_shares(qs) -> dict[int, list[float]]:
    """For each number of choices n, the share of those questions whose right answer has each
    length rank (0 the shortest). A right answer as long as k others splits its count between
    the ranks they share, so ties neither hide nor make a tell."""
    counts: dict[int, list[float]] = {}
    for q in qs:
        lengths = [len(c.text) for c in q.choices]
        mine = lengths[q.answer]
        below, same = sum(n < mine for n in lengths), sum(n == mine for n in lengths)
        row = counts.setdefault(len(lengths), [0.0] * len(lengths))
        for rank in range(below, below + same):
            row[rank] += 1 / same
    return {n: [c / sum(row) for c in row] for n, row in counts.items()}


def padded_choices(qs) -> list[tuple[str, int, float]]:
    """``(question id, choice, ratio)`` for each wrong choice longer than :data:`PAD_LIMIT` × the
    longest other choice of its question."""
    found = []
    for q in qs:
        for i, c in enumerate(q.choices):
            others = max(len(o.text) for j, o in enumerate(q.choices) if j != i)
            if i != q.answer and len(c.text) > PAD_LIMIT * others:
                found.append((q.id, i, round(len(c.text) / others, 2)))
    return found


def length_tells(qs) -> list[str]:
    """What gives the right answers away by length, in words (empty: nothing)."""
    tells = [f"with {n} choices, length rank {rank} holds the right answer in "
             f"{share:.0%} of the questions (limit {1 / n + RANK_MARGIN:.0%})"
             for n, shares in length_rank_shares(qs).items()
             for rank, share in enumerate(shares) if share > 1 / n + RANK_MARGIN]
    tells += [f"{qid}: choice {i} is {ratio} × the longest other" for qid, i, ratio
              in padded_choices(qs)]
    return tells


def _all_questions():
    return [q for lesson in questions().values() for q in lesson]


def test_no_length_rank_and_no_padded_choice_gives_the_answer_away():
    qs = _all_questions()
    assert len(qs) >= 30
    assert length_tells(qs) == []


def test_the_length_check_fails_on_a_planted_tell():
    """Planted defects on copies of the shipped questions: right answers made the longest (the
    old position tell moved to length), then right answers made the shortest, then one wrong
    choice padded with a hedge; each is caught, and the real file is not."""
    from dataclasses import replace

    from bureau.course.quiz import Choice

    def with_text(q, i, text):
        choices = list(q.choices)
        choices[i] = Choice(text, choices[i].why)
        return replace(q, choices=tuple(choices))

    qs = _all_questions()
    longest = [with_text(q, q.answer, q.choices[q.answer].text
                         + "!" * (1 + max(len(c.text) for c in q.choices)
                                  - len(q.choices[q.answer].text)))
               for q in qs]
    assert any("rank 2" in t for t in length_tells(longest)), length_tells(longest)
    assert not padded_choices(longest)  # one character longer: the rank alone tells
    shortest = [with_text(q, q.answer, q.choices[q.answer].text[:1]) for q in qs]
    assert any("rank 0" in t for t in length_tells(shortest))
    q = qs[0]
    wrong = (q.answer + 1) % len(q.choices)
    hedged = with_text(q, wrong, q.choices[wrong].text.rstrip(".")
                       + ", at least in most of the cases the lesson happens to show.")
    assert padded_choices([hedged, *qs[1:]]) == [(q.id, wrong, padded_choices([hedged])[0][2])]
    assert length_tells(qs) == []


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
    shown = reveal("08-inside-run", bureau, "quoted as untrusted")
    assert repr(shown).splitlines() == [
        "You predicted: The answer will quote the page but not call it known.",
        "This run:      quoted as untrusted"]
    assert "<b>This run:</b> quoted as untrusted" in shown._repr_html_()
    assert repr(reveal("08-never-predicted", bureau, 1)).startswith("Predict first:")
    after_00, after_08 = _row(bureau, "00"), _row(bureau, "08")
    assert after_00["check attempts"] - before_00["check attempts"] == 2
    assert after_00["checks passed"] - before_00["checks passed"] in (0, 1)
    assert check("00-counts", case, truth).ok  # passed again: the same id counts once
    assert _row(bureau, "00")["checks passed"] == after_00["checks passed"]
    assert after_08["predictions"] == max(1, before_08["predictions"])


def test_a_record_that_cannot_be_written_does_not_stop_the_lesson(tmp_path):
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    progress.record(blocked, "quiz", "q01-1", True)  # no exception
    assert progress.progress_table(blocked)["quiz answered"].sum() == 0  # every row empty
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


def test_the_instructor_page_counts_predictions_never_their_text():
    """Issue 34 §3: the instructor's page counts each learner's predictions (distinct prompts)
    beside checks and quiz answers; the prediction's text is never read."""
    from bureau.classroom import instructor, progress

    # The page's own statement has no detail column to read (issue 37 §3): rows arrive as
    # (lesson, kind, item, ok), newest first.
    assert "detail" not in progress.page_query("learner_ann")
    attempts = [("02", "quiz", "q02-1", 1),
                ("09", "prediction", "09-gullible-tools", None),
                ("08", "prediction", "08-inside-run", None),
                ("08", "prediction", "08-inside-run", None)]
    row = instructor._progress(attempts)
    assert row["predictions"] == 2 and row["quiz_answered"] == 1
    page = instructor.room_html([{"learner": "ann", **row, "case": None, "roles": {}, "board": 0,
                                  "events": 0}])
    assert '<td class="predictions">2</td>' in page and "<th>predictions</th>" in page


# -- application questions (issue 34 §3) -----------------------------------------------------------
def test_an_application_answer_is_read_as_a_learner_writes_it():
    from bureau.course.quiz import grade_application, read_number

    for written in ("25.5", "25.5 %", "25,5", " 25.50% ", "about 25.5"):
        assert read_number(written) == 25.5, written
    assert read_number("1,234.5") == 1234.5 and read_number("−3") == -3.0
    for not_one in ("", "abc", "25 or 26"):
        assert read_number(not_one) is None, not_one
    assert grade_application(25.5, "25,5") == (True, "")
    assert grade_application(25.5, "25.9", tolerance=0.5)[0] is True
    assert grade_application(25.5, "26.1", tolerance=0.5)[0] is False
    assert grade_application(3, "3.0")[0] is True and grade_application(3, "4")[0] is False
    # a wrong number gets a direction, never the value
    high, low = grade_application(25.5, "30")[1], grade_application(25.5, "20")[1]
    assert "lower" in high and "higher" in low and "25" not in high + low
    # not an answer (nothing written, or no single number): graded as nothing, not as wrong
    assert grade_application(25.5, "  ")[0] is None
    assert grade_application(25.5, "25 or 26")[0] is None
    # a reading in words: equal ignoring case and spaces
    assert grade_application("the Board", " THE board")[0] is True
    assert grade_application("the board", "the boards")[0] is False


def test_an_application_question_records_every_try_and_keeps_its_value_back(bureau):
    from bureau.course.quiz import REVEAL_AFTER, application

    before = _row(bureau, "01")
    box = application("01-reading-test", bureau, "How many cards?", 12, unit="cards")
    assert "bureau-application" in box._dom_classes
    st = box.state
    st.button.click()  # nothing written: a nudge, no record
    assert "Write your answer first" in st.feedback.value and st.tries == []
    st.text.value = "14"
    st.button.click()
    assert 'data-ok="false"' in st.feedback.value and "lower" in st.feedback.value
    assert "12" not in st.feedback.value, "the first wrong try must not give the value away"
    for _ in range(REVEAL_AFTER - 2):
        st.button.click()
        assert "12" not in st.feedback.value
    st.button.click()  # the REVEAL_AFTER-th wrong try: now the value, so nobody is stuck
    assert "This run's value: 12 cards" in st.feedback.value
    st.text.value = "12 cards"
    st.button.click()
    assert 'data-ok="true"' in st.feedback.value and "Right" in st.feedback.value
    rows = progress.attempts(bureau.settings.data_dir)
    mine = rows[(rows["kind"] == "application") & (rows["item"] == "01-reading-test")]
    assert list(mine["ok"]) == [0] * REVEAL_AFTER + [1]
    assert list(mine["detail"])[-1] == "12 cards" and set(mine["lesson"]) == {"01"}
    after = _row(bureau, "01")
    assert after["applications"] == before["applications"] + 1
    assert after["quiz answered"] == before["quiz answered"]  # counted apart from the quiz


def test_an_application_question_takes_only_a_real_value():
    from bureau.course.quiz import application

    with pytest.raises(TypeError):
        application("01-x", None, "How many?", True)
    with pytest.raises(TypeError):
        application("01-x", None, "How many?", None)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        application("01-x", None, "How many?", float("nan"))
    with pytest.raises(ValueError):
        application("01-x", None, "How many?", 1.0, tolerance=-1)


def test_the_instructor_page_counts_application_questions():
    """Right (at any try) of tried, per learner; never what the learner typed."""
    from bureau.classroom import instructor

    attempts = [("02", "application", "02-latency", 1),   # newest first: right at last
                ("02", "application", "02-latency", 0),
                ("03", "application", "03-crash", 0)]
    row = instructor._progress(attempts)
    assert (row["applications_right"], row["applications_tried"]) == (1, 2)
    page = instructor.room_html([{"learner": "ann", **row, "case": None, "roles": {}, "board": 0,
                                  "events": 0}])
    assert '<td class="applications">1/2</td>' in page and "<th>applications</th>" in page


# -- application answers, computed out of sight (issue 50 §2) ---------------------------------------
def test_the_core_path_answers_read_the_run_they_ask_about(case):
    """Lessons 00-03 on a real case: the values the boxes check are the ones the lessons print."""
    from bureau.course import answers
    from bureau.course.cast import Cast
    from bureau.course.saga_story import SagaStory
    from bureau.errors import BureauError
    from bureau.service import faults

    informant, detective, _ = Cast.of(case).story_roles()
    # three "never" rules and the moves rule of the safe-combination's case file
    assert answers.of("00-rules", case) == len(case.scenario.case_file.never) + 1 == 4
    before = answers.of("01-detective-reads", case, detective)
    assert before == len(case.cards(detective))
    case.whisper(informant, "The gardener waters the roses at dawn.")
    assert answers.of("01-detective-reads", case, detective) == before  # not the detective's
    case.whisper(detective, "The study's window was open.")
    assert answers.of("01-detective-reads", case, detective) == before + 1
    answer = case.interrogate(detective, case.scenario.case_file.question)
    assert answers.of("02-scopes", answer) == 2  # its own space and the board
    spare = Cast.of(case).spare
    story = SagaStory(case, case.seed_card(spare.key))
    story.record("before")
    with pytest.raises(BureauError):
        with faults.armed("publish.after_copy_written"), faults.armed("publish.during_compensation"):
            case.publish(spare.owner, story.card.id)
    story.record("crash")
    assert answers.of("03-crash-cleanups", story) == 1


def test_the_lab_answers_count_what_their_tables_show(monkeypatch):
    """Lessons 04-08 on stand-ins of the labs' objects: each answer is the count its question
    names, and nothing else."""
    from types import SimpleNamespace

    import pandas as pd

    from bureau.course import answers, purpose
    from bureau.labs.leakage.lesson import SHARED_POOL

    results = [SimpleNamespace(blocked=b) for b in (True, False, True, True)]
    assert answers.of("04-blocked", results) == 3
    pairs = pd.DataFrame({"label": ["private", "private", "private", "shareable"],
                          "requester": ["a", "a", "b", "a"], "owner": ["b", "a", "a", "b"],
                          "retrieved": [1, 1, 0, 1]})
    result = SimpleNamespace(policy=lambda name: pairs if name == SHARED_POOL else None)
    assert answers.of("05-pairs-retrieved", result) == 1  # own and shareable pairs do not count
    report = SimpleNamespace(counts=lambda system: {"naive": (5, 12), "bureau": (0, 12)}[system])
    assert answers.of("06-pool-disclosures", report) == 5
    asked = []

    def audit_of(case, *asks):
        asked.append((case, asks))
        return pd.DataFrame({"action": ["abstract", "abstract", "withhold", "abstract", "reveal"]})

    monkeypatch.setattr(purpose, "audit_of", audit_of)
    assert answers.of("07-budget-abstracts", "the case", ["a1", "a2"]) == 3
    assert asked == [("the case", ("a1", "a2"))]
    table = pd.DataFrame({"hijack_evidence_undefended_count": [0, 3, 1]})
    assert answers.of("08-hijacked-undefended", table) == 3


def test_the_closing_answer_is_the_figures_longest_bar():
    from bureau.course import answers
    from bureau.course.closing import peer_reports, plot_peer_reports

    reports = peer_reports()
    bars = [p.get_width() for p in plot_peer_reports(reports).axes[0].patches]
    assert answers.of("09-longest-bar", reports) == max(bars)


def test_an_unknown_application_has_no_answer():
    from bureau.course import answers

    assert "02-scopes" in answers.items()
    with pytest.raises(KeyError, match="no answer for application '02-nope'"):
        answers.of("02-nope")
