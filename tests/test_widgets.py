"""Widget wiring without a kernel: click buttons, set values, assert bureau state and widget HTML.

``button.click()`` runs the on_click handlers and assigning ``widget.value`` fires observers, as a
browser would (see /work/shared/notes/notebook-testing.md §2). Every console, spaces view and
stage subscribes to the session's bureau, so each test closes what it built.
"""

from __future__ import annotations

import logging
import re
import time
from html import escape as esc

import pytest
from conftest import REPO, run_python
from leakcheck import holds

from bureau import BOARD
from bureau.course.attacks import pick_target, run_all, stage_peek
from bureau.course.cast import Cast
from bureau.course.widgets import (
    EXERCISES,
    check,
    make_attack_report,
    make_console,
    make_environment_report,
    make_spaces,
    make_stage,
    make_xray,
    plots,
)
from bureau.course.widgets.console import NEW
from bureau.course.widgets.stage import latest_case_id
from bureau.errors import BureauError
from bureau.scenario import list_scenarios
from bureau.service import faults
from bureau.service.read_paths import as_text

SAFE_Q = "What is the combination of the safe in the study?"
GARDENER = "The gardener is called Albert Finch."


@pytest.fixture
def closing():
    """Collect widget states; close (unsubscribe, stop pollers) after the test."""
    states = []
    yield states.append
    for s in states:
        s.close()


@pytest.fixture
def no_callback_errors(caplog):
    """Handler errors are only logged by ipywidgets and bureau (G6): fail on any such record."""
    caplog.set_level(logging.ERROR)
    yield
    bad = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not bad, [r.getMessage() for r in bad]


def console_for(bureau, case, closing, role=None):
    box, ui = make_console(bureau, case)
    closing(ui)
    if role:
        ui.role_rail.value = role
    return box, ui


# -- console --------------------------------------------------------------------------------------
def test_console_has_css_hooks_and_case_roles(bureau, case, closing):
    box, ui = console_for(bureau, case, closing)
    assert "bureau-console" in box._dom_classes
    assert ui.case is case and ui.case_picker.value == case.id
    assert [v for _, v in ui.role_rail.options] == case.role_names
    assert SAFE_Q in [v for _, v in ui.suggestions.options]
    for w, css in [
        (ui.whisper_button, "bureau-whisper"),
        (ui.ask_button, "bureau-ask"),
        (ui.error, "bureau-error"),
        (ui.case_picker, "bureau-case-picker"),
        (ui.role_rail, "bureau-roles"),
    ]:
        assert css in w._dom_classes
    assert all("bureau-publish" in b._dom_classes for b in ui.publish_buttons.values())


def test_whisper_via_console_appears_in_spaces(bureau, case, closing, no_callback_errors):
    _, ui = console_for(bureau, case, closing, role="suspect")
    ui.whisper_text.value = GARDENER
    ui.whisper_topic.value = "staff"
    ui.whisper_button.click()
    assert ui.last_error is None, ui.error.value
    card = ui.last_card
    assert card is not None and card.owner == "suspect" and card.topic == "staff"
    assert card.id in {c.id for c in case.cards("suspect")}
    assert card.id not in {c.id for c in case.cards("detective")}
    assert GARDENER in ui.spaces.html.value  # the chief's spaces view redrew on the event
    assert f'data-card-id="{card.id}"' in ui.spaces.html.value
    assert ui.whisper_text.value == ""  # cleared for the next whisper
    assert card.id in ui.publish_buttons  # a publish button for the new private card
    assert any("whispered" in o.get("text", "") for o in ui.log.outputs)  # append_stdout


def test_suggested_question_fills_the_question_box(bureau, case, closing):
    _, ui = console_for(bureau, case, closing)
    ui.suggestions.value = SAFE_Q
    assert ui.question.value == SAFE_Q


def test_ask_shows_xray_scopes_hits_and_misses(bureau, case, closing, no_callback_errors):
    _, ui = console_for(bureau, case, closing, role="detective")
    ui.question.value = SAFE_Q
    ui.ask_button.click()
    assert ui.last_error is None, ui.error.value
    assert ui.last_answer is not None and not ui.last_answer.known
    assert 'data-known="false"' in ui.answer.value
    html = ui.xray.html.value
    assert ui.xray.trace.searched_scopes == ["detective", BOARD]
    assert 'data-scope="detective"' in html and f'data-scope="{BOARD}"' in html
    assert "bureau-badge miss" in html and "threshold" in html and "0.45" in html
    assert "below threshold" in html  # the detective's own cards came back, not relevant
    assert not holds(html, "0427")  # the informant's card was never in reach

    ui.role_rail.value = "informant"
    ui.ask_button.click()
    assert ui.last_answer.known
    html = ui.xray.html.value
    hit = case.seed_card("safe-code")
    assert f'data-card-id="{hit.id}"' in html
    assert "<td>informant</td>" in html  # stored owner shown
    assert "bureau-bar" in html and "ms" in html  # latency bars
    assert "evidence" in html  # mode


def test_publish_button_updates_board_and_stage(bureau, case, closing, no_callback_errors):
    _, ui = console_for(bureau, case, closing, role="informant")
    stage_box, stage = make_stage(bureau, case)
    closing(stage)
    assert "bureau-stage" in stage_box._dom_classes
    source = case.seed_card("safe-code")
    before = stage.refreshes
    assert not holds(stage.html.value, "0427")  # private until published
    ui.publish_buttons[source.id].click()
    assert ui.last_error is None, ui.error.value
    board = case.spaces()[BOARD]
    assert [c.source_id for c in board] == [source.id]
    assert ui.last_published.id == board[0].id
    assert stage.refreshes > before  # redrawn through the bureau's events
    assert "0427" in stage.html.value and "from informant" in stage.html.value
    button = ui.publish_buttons[source.id]
    assert button.disabled and "On board" in button.description
    assert "copied to board" in ui.spaces.html.value
    assert case.card("informant", source.id).visibility == "private"  # the original stays


def test_browser_click_message_reaches_the_handler(bureau, case, closing):
    """The frontend's click message (private API, notes §2) runs the same handler."""
    _, ui = console_for(bureau, case, closing, role="detective")
    ui.whisper_text.value = "The study window was left open."
    ui.whisper_button._handle_custom_msg({"event": "click"}, [])
    assert ui.last_card is not None and ui.last_card.owner == "detective"


def test_refusals_show_message_and_hint_never_a_traceback(bureau, case, closing):
    _, ui = console_for(bureau, case, closing, role="detective")
    ui.whisper_text.value = "   "
    ui.whisper_button.click()
    assert ui.last_error is not None and isinstance(ui.last_error, BureauError)
    assert "bureau-errorbox" in ui.error.value and "💡" in ui.error.value
    assert "Traceback" not in ui.error.value and 'File "' not in ui.error.value
    # a forged publish: the detective publishing the informant's card
    ui.publish(case.seed_card("safe-code").id)
    assert type(ui.last_error).__name__ == "UnknownCardError"
    assert "only publish its own" in ui.error.value
    assert case.spaces()[BOARD] == []
    # the next successful action clears the error
    ui.question.value = "What did the hallway camera record?"
    ui.ask_button.click()
    assert ui.last_error is None and ui.error.value == ""


def test_case_picker_opens_existing_and_new_cases(bureau, case, closing):
    _, ui = console_for(bureau, None, closing)
    values = [v for _, v in ui.case_picker.options]
    assert case.id in values and NEW + "the-mole" in values
    ui.case_picker.value = case.id
    assert ui.case is case
    ui.case_picker.value = NEW + "the-mole"
    try:
        assert ui.case is not None and ui.case.scenario.id == "the-mole"
        assert ui.case_picker.value == ui.case.id
        assert [v for _, v in ui.role_rail.options] == ["detective", "informant", "harbourmaster"]
        assert ui.spaces.case is ui.case
        assert "Where will the stolen diamonds be handed over?" in [
            v for _, v in ui.suggestions.options
        ]
    finally:
        bureau.delete_case(ui.case.id)


def test_console_without_case_refuses_politely(bureau, closing):
    _, ui = console_for(bureau, None, closing)
    ui.question.value = "anything?"
    ui.ask_button.click()
    assert "No case is open" in ui.error.value


# -- X-ray and spaces -----------------------------------------------------------------------------
def test_xray_renders_a_trace(case):
    box, x = make_xray()
    assert "bureau-xray" in box._dom_classes and "ask a question" in x.html.value
    trace = case.retrieve("informant", SAFE_Q)
    x.show(trace)
    assert x.trace is trace and 'data-scope="informant"' in x.html.value
    assert "1 hit(s)" in x.html.value


def test_spaces_view_as_role_locks_other_spaces(bureau, case, closing):
    box, sp = make_spaces(case, viewer="suspect")
    closing(sp)
    assert "bureau-spaces" in box._dom_classes
    html = sp.html.value
    alibi = case.seed_card("alibi").content
    assert alibi in html
    for key in ("safe-code", "cctv", "footprint", "butler-thursdays"):
        assert case.seed_card(key).content not in html
    assert html.count("🔒 private to informant") == 2
    assert html.count("🔒 private to detective") == 2
    sp.view_as.value = ""  # the chief sees everything
    assert case.seed_card("safe-code").content in sp.html.value
    sp.view_as.value = "detective"
    assert case.seed_card("safe-code").content not in sp.html.value
    assert case.seed_card("cctv").content in sp.html.value


def test_spaces_board_shows_each_copy_source(bureau, case, closing):
    _, sp = make_spaces(case)
    closing(sp)
    source = case.seed_card("footprint")
    copy = case.publish("detective", source.id)
    assert f'data-card-id="{copy.id}"' in sp.html.value  # live: redrawn on the event
    assert "from <b>detective</b>" in sp.html.value and source.id in sp.html.value


# -- stage ----------------------------------------------------------------------------------------
def test_stage_never_shows_private_text_question_or_answer(bureau, case, closing):
    _, ui = console_for(bureau, case, closing, role="suspect")
    _, stage = make_stage(bureau, case)
    closing(stage)
    secret_q = "Where exactly did the suspect hide the spare key zq7?"
    ui.whisper_text.value = "I hid the spare key zq7 under the third flowerpot."
    ui.whisper_button.click()
    ui.question.value = secret_q
    ui.ask_button.click()
    answer_text = ui.last_answer.text
    ui.role_rail.value = "detective"
    ui.publish_buttons[case.seed_card("footprint").id].click()
    html = stage.html.value
    published = {c.content for c in case.spaces()[BOARD]}
    for role, cards in case.spaces().items():
        for c in cards:
            if role != BOARD and c.content not in published:
                assert c.content not in html, f"private text of {role} on stage"
    assert "zq7" not in html and secret_q not in html and answer_text not in html
    assert "🔒" in html and "Last retrieval" in html and "suspect" in html
    assert case.seed_card("footprint").content in html  # published: public now
    assert stage_peek(case, asked=[secret_q]).blocked


def test_stage_counts_and_last_retrieval_come_from_outward_paths(bureau, case, closing):
    _, stage = make_stage(bureau, case)
    closing(stage)
    case.retrieve("detective", SAFE_Q)
    assert stage.snapshot == case.stage()
    html = stage.html.value
    for role, n in case.stage()["private_counts"].items():
        assert f'data-role="{role}"' in html and f"🔒 {n}" in html
    assert 'data-scope="detective"' in html and "searched by detective" in html


def test_stage_follows_the_newest_case_in_process(bureau, closing):
    _, stage = make_stage(bureau)  # no case: follow the most recent one
    closing(stage)
    assert stage.follow
    new = bureau.load_scenario("ward-seven")
    try:
        assert stage.case_id == new.id == latest_case_id(bureau)
        assert 'data-role="pharmacist"' in stage.html.value
    finally:
        bureau.delete_case(new.id)


def test_stage_polls_changes_made_by_another_process(bureau, case, closing):
    """Voilà serves the stage in its own kernel: it must see the console's process's changes."""
    _, stage = make_stage(bureau, case)
    closing(stage)
    seq, refreshes = stage.last_seq, stage.refreshes
    code = (
        "from bureau import Bureau\n"
        f"case = Bureau.open().case({case.id!r})\n"
        "case.whisper('suspect', 'A taxi driver saw me near the Rialto at 23:50.')\n"
        "case.publish('informant', case.seed_card('butler-thursdays').id)\n"
    )
    run_python(code, cwd=REPO)  # BUREAU_DATA_DIR is inherited: same store, second process
    stage.start_polling(0.2)
    deadline = time.monotonic() + 20
    while stage.refreshes == refreshes and time.monotonic() < deadline:
        time.sleep(0.1)
    stage.stop()
    assert stage.last_seq > seq
    html = stage.html.value
    assert "Dover" in html  # the published copy
    assert "taxi" not in html  # the whisper: counted, never shown
    assert f"🔒 {case.stage()['private_counts']['suspect']}" in html


# -- the case file (issue 49) --------------------------------------------------------------------
def _stage_case_block(html: str) -> str:
    """The stage's case-file part (the board beside it may show a published answer: public)."""
    m = re.search(r'<div class="bureau-stage-case".*?</div></div>', html, re.S)
    assert m, "the stage shows no case file"
    return m.group(0)


def _private_texts(case) -> list[str]:
    """Every card's text no observer may see: the private cards not copied to the board."""
    published = {c.content for c in case.spaces()[BOARD]}
    return [c.content for role, cards in case.spaces().items() if role != BOARD
            for c in cards if c.content not in published]


def _rule_texts(case) -> list[str]:
    """What the operator's panel says of each rule: its text (naming a role's card) and why."""
    from bureau.game import score

    return [r.text for r in score(case).rules] + [r.why for r in case.scenario.case_file.never]


def test_console_case_file_follows_a_winning_line(bureau, case, closing, no_callback_errors):
    """Goal, question and asker, every rule kept with its why, moves and par; then the winning
    line played in the console: the verdict turns to solved. Never an answer token."""
    from bureau.course import progress
    _, ui = console_for(bureau, case, closing, role="detective")
    cf = case.scenario.case_file
    panel = ui.case_file.value
    assert 'data-status="open"' in panel and "cannot answer yet" in panel
    assert esc(cf.goal) in panel and esc(cf.question) in panel and f"<b>{cf.asker}</b>" in panel
    assert all(esc(rule.why) in panel for rule in cf.never)
    assert panel.count('data-kept="true"') == len(cf.never) + 1 and "✗" not in panel
    assert 'used <span class="used">0</span>' in panel and 'par <span class="par">3</span>' in panel
    ui.question.value = cf.question
    ui.ask_button.click()
    assert 'used <span class="used">1</span>' in ui.case_file.value  # redrawn after the action
    ui.role_rail.value = "informant"
    ui.publish_buttons[case.seed_card("safe-code").id].click()
    ui.role_rail.value = "detective"
    ui.ask_button.click()
    assert ui.last_answer.known and ui.last_error is None
    panel = ui.case_file.value
    assert 'data-status="solved"' in panel and "Solved in 3 moves (par 3)" in panel
    assert "interrogate 2, publish 1" in panel and "✗" not in panel
    assert not [t for t in cf.answer if holds(panel, t)], "the case file shows the answer"
    rows = progress.cases_table(bureau.settings.data_dir)
    mine = rows[rows["case"] == case.id].to_dict("records")
    assert mine == [{"case": case.id, "scenario": "safe-combination", "status": "solved",
                     "moves": 3, "rules kept": "4/4"}]


def test_console_case_file_follows_a_losing_line_and_events_from_outside(bureau, closing):
    """The-mole: the decoy published (by code, not the console: the case's events redraw the
    panel), the rule shows broken with why, the verdict lost."""
    case = bureau.load_scenario("the-mole")
    try:
        _, ui = console_for(bureau, case, closing, role="detective")
        cf = case.scenario.case_file
        case.publish("harbourmaster", case.seed_card("decoy").id)
        panel = ui.case_file.value
        assert 'data-status="lost"' in panel and "Lost: never publish the harbourmaster" in panel
        assert '<tr data-rule="0" data-kept="false">' in panel and "✗ broken" in panel
        assert "(it was published)" in panel and esc(cf.never[0].why) in panel
        assert not [t for t in cf.answer if holds(panel, t)]
        assert ui.last_score.status == "lost"
    finally:
        bureau.delete_case(case.id)


def test_a_case_without_a_case_file_shows_nothing_new(bureau, closing):
    from bureau.scenario import load_scenario

    plain = load_scenario("safe-combination").model_copy(update={"case_file": None})
    case = bureau.create_case(plain)
    try:
        _, ui = console_for(bureau, case, closing, role="informant")
        _, stage = make_stage(bureau, case)
        closing(stage)
        ui.publish_buttons[case.seed_card("safe-code").id].click()
        assert ui.last_error is None and ui.case_file.value == "" and ui.last_score is None
        assert "bureau-stage-case" not in stage.html.value and stage.game is None
    finally:
        bureau.delete_case(case.id)


def test_stage_shows_the_case_numbers_goal_and_question_and_no_text(bureau, case, closing):
    """A winning line on the stage: status, moves and rules kept follow ``numbers()``; the goal
    and the question are shown; no rule, no why, no verdict, no private card, and no answer
    token until the answer is published (then the board, public, shows it; the case file part
    still does not)."""
    from bureau.game import score

    _, stage = make_stage(bureau, case)
    closing(stage)
    cf = case.scenario.case_file
    block = _stage_case_block(stage.html.value)
    assert 'data-status="open"' in block and esc(cf.goal) in block and esc(cf.question) in block
    assert '<span class="bureau-stage-moves">0</span>' in block
    assert '<span class="bureau-stage-rules">4/4</span>' in block
    case.interrogate(cf.asker, cf.question)
    html = stage.html.value
    assert '<span class="bureau-stage-moves">1</span>' in _stage_case_block(html)
    assert not [t for t in cf.answer if holds(html, t)]
    case.publish("informant", case.seed_card("safe-code").id)
    case.interrogate(cf.asker, cf.question)
    html = stage.html.value
    block = _stage_case_block(html)
    numbers = score(case).numbers()
    assert stage.game["numbers"] == numbers and numbers["status"] == "solved"
    assert '<span class="bureau-stage-status">solved</span>' in block
    assert '<span class="bureau-stage-moves">3</span>' in block
    assert not [t for t in cf.answer if holds(block, t)]
    assert not [t for t in _private_texts(case) if t in html]
    assert not [t for t in _rule_texts(case) if esc(t) in html or t in html]
    assert "Solved in" not in html and cf.asker + "</b>" not in block


def test_stage_after_a_losing_line_shows_lost_and_no_text(bureau, closing):
    case = bureau.load_scenario("the-mole")
    try:
        _, stage = make_stage(bureau, case)
        closing(stage)
        cf = case.scenario.case_file
        case.publish("harbourmaster", case.seed_card("decoy").id)
        case.interrogate(cf.asker, cf.question)
        html = stage.html.value
        block = _stage_case_block(html)
        assert '<span class="bureau-stage-status">lost</span>' in block
        assert '<span class="bureau-stage-rules">2/3</span>' in block
        assert not [t for t in cf.answer if holds(html, t)]
        assert not [t for t in _private_texts(case) if t in html]
        assert not [t for t in _rule_texts(case) if esc(t) in html or t in html]
        assert "decoy" not in block and "Lost" not in html
    finally:
        bureau.delete_case(case.id)


# -- bureau events robustness ---------------------------------------------------------------------
def test_a_failing_listener_cannot_break_a_publish(bureau, case):
    def broken(event):
        raise RuntimeError("widget bug")

    unsubscribe = bureau.subscribe(broken)
    try:
        copy = case.publish("informant", case.seed_card("safe-code").id)
    finally:
        unsubscribe()
    assert copy.owner == BOARD and len(case.spaces()[BOARD]) == 1


# -- exercises, attacks, environment, plots -------------------------------------------------------
LESSON_EXERCISES = ["00-counts", "01-gardener", "02-suspect-question", "03-footprint", "04b-peek"]
"""Exercises of lessons 00-04, whose solutions run against a plain safe-combination case."""
SCENARIO_EXERCISES = ["00-counts", "01-gardener", "02-suspect-question", "03-footprint"]
"""Exercises of lessons 00-03, which follow the lesson's ``scenario`` parameter."""
SCENARIOS = ["safe-combination", "the-mole", "ward-seven"]


def _solve(bureau, case, exercise_id: str):
    """Run the solution shown in the lesson's <details> in a lesson-like namespace; its answer."""
    ns = {
        "case": case,
        "cast": Cast.of(case),
        "bureau": bureau,
        "faults": faults,
        "BureauError": BureauError,
        "answer": None,
        "caught": None,
    }
    ns.update(zip(("informant", "detective", "suspect"), Cast.of(case).story_roles(), strict=True))
    if exercise_id == "04b-peek":  # lesson 04's namespace: the attack target it picked
        from bureau.course import attacks

        ns["target"] = attacks.pick_target(case)
    exec(EXERCISES[exercise_id].solution, ns)
    return ns["caught"] if exercise_id == "04b-peek" else ns["answer"]


@pytest.mark.parametrize("exercise_id", LESSON_EXERCISES)
def test_exercise_solutions_pass_and_blank_answers_do_not(bureau, case, exercise_id):
    assert not check(exercise_id, case, None)
    verdict = check(exercise_id, case, _solve(bureau, case, exercise_id))
    assert verdict.ok, verdict.message
    assert 'data-ok="true"' in verdict._repr_html_()


@pytest.mark.parametrize("scenario", SCENARIOS[1:])
@pytest.mark.parametrize("exercise_id", SCENARIO_EXERCISES)
def test_exercises_follow_the_scenario(bureau, scenario, exercise_id):
    """The same solution text solves the exercise in every shipped case; blanks never do."""
    case = bureau.load_scenario(scenario)
    try:
        assert not check(exercise_id, case, None)
        verdict = check(exercise_id, case, _solve(bureau, case, exercise_id))
        assert verdict.ok, verdict.message
    finally:
        bureau.delete_case(case.id)


def test_exercise_solutions_name_no_role_or_card():
    """A solution is shown once for every scenario, so it may name roles and cards only via cast."""
    names = {r.name for s in list_scenarios() for r in s.roles}
    names |= {m.key for s in list_scenarios() for _, m in s.seeds()}
    for exercise_id in SCENARIO_EXERCISES:
        quoted = set(re.findall(r'"([a-z][a-z0-9_-]*)"', EXERCISES[exercise_id].solution))
        assert not quoted & names, (exercise_id, quoted & names)


def test_exercise_checks_explain_wrong_answers(case):
    v = check("00-counts", case, {"detective": 9})
    assert not v and "missing" in v.message
    v = check("02-suspect-question", case, SAFE_Q)
    assert not v and "suspect" in v.message
    case.whisper("detective", GARDENER)
    case.whisper("suspect", GARDENER)
    v = check("01-gardener", case)
    assert not v and "detective" in v.message


def test_peek_check_passes_only_on_the_bureaus_own_refusal(case):
    """Lesson 04's exercise tests the agent boundary itself: an UnknownCardError the learner
    built, one the operator's API raised, or one for a made-up id or a card the role may read
    does not pass; only the handle refusing another role's real card does."""
    from bureau.errors import UnknownCardError

    secret = case.seed_card("safe-code")

    def caught(call):
        try:
            call()
        except BureauError as exc:
            return exc
        raise AssertionError("no refusal")

    assert not check("04b-peek", case, UnknownCardError("suspect has no card"))  # made by hand
    v = check("04b-peek", case, caught(lambda: case.card("suspect", secret.id)))
    assert not v and "agent handle" in v.message  # the operator's API, not the agent's boundary
    v = check("04b-peek", case, caught(lambda: case.agent("suspect").card("made-up-id")))
    assert not v and "No card of this case" in v.message
    v = check("04b-peek", case, caught(lambda: case.agent("suspect").card(secret.id)))
    assert v and "informant" in v.message


def test_exercise_checks_name_the_scenarios_roles(bureau):
    case = bureau.load_scenario("the-mole")
    try:
        v = check("00-counts", case, None)
        assert not v and "'detective'" in v.message
        v = check("01-gardener", case)
        assert not v and "harbourmaster" in v.message and "suspect" not in v.message
        v = check("02-suspect-question", case, "Is someone feeding the police false tips?")
        assert not v and v.message.startswith("The harbourmaster finds no card")
        v = check("03-footprint", case)
        assert not v and "blue-van" in v.message  # the card the mole's case publishes
    finally:
        bureau.delete_case(case.id)


def test_every_attack_is_blocked_with_a_reason(bureau, case):
    other = bureau.load_scenario("safe-combination")
    try:
        results = run_all(case, other)
    finally:
        bureau.delete_case(other.id)
    assert len(results) >= 12  # 3 single attacks, 7 tamperings, the stage peek, the timing guess
    assert results[-1].name == "Side channel: timing guesses" and results[-1].details["ranks"]
    for r in results:
        assert r.blocked, r
        assert r.reason and not r.leaked
        # Lesson 04b's table names what stopped each attack and the actor it holds against.
        assert r.mechanism and r.against.startswith(("an agent: ", "an observer: ")), r
    refused = {r.name: r.refusal for r in results if r.refusal}
    assert "BoardNotWritableError" in refused["Ask as the board"]
    assert "UnknownCardError" in refused["Publish someone else's card"]
    assert "UnknownCardError" in refused["Cross-case publish"]
    box, _ = make_attack_report(results)
    assert "bureau-attacks" in box._dom_classes
    target = pick_target(case)
    assert target.card.content not in as_text([r.details for r in results])


def test_environment_checks_all_pass(bureau):
    box, checks = make_environment_report(bureau)
    failed = [c for c in checks if not c.ok]
    assert not failed, failed
    names = " ".join(c.name for c in checks)
    assert "Model file hash verified" in names and "Tokenizer hash verified" in names
    assert str(bureau.settings.data_dir.parent) not in box.children[1].value  # no absolute path
    disk = next(c for c in checks if c.name == "Free disk space")  # issue 35
    assert " free (writes stop below 17 MB; a new data directory needs 2.55 GB)" in disk.detail


def test_plots_have_labels_and_a_finding_title(bureau, case):
    fig, traces = plots.best_scores(case, SAFE_Q)
    ax = fig.axes[0]
    assert ax.get_xlabel() and ax.get_ylabel()
    # the informant holds the answer, the suspect its decoy: both clear the threshold
    assert ax.get_title() == "Only informant and suspect find(s) a card above the threshold"
    for fig in (
        plots.cards_per_space(case),
        plots.latency_by_scope(traces),
        plots.board_copies(
            [("start", 0), ("crash", 1), ("recover", 0), ("retry", 1)], [0, 1, 0, 0]
        ),
    ):
        ax = fig.axes[0]
        assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title()
    assert "recover() removed it" in fig.axes[0].get_title()


def test_similarity_primer_scores_the_answer_and_its_decoy_above_the_threshold(bureau, case):
    """Lesson 02's primer figure: real MiniLM cosines, the same numbers the X-ray reports."""
    question = Cast.of(case).secret.question
    cards = [(f"{role}: {m.key}", m.content) for role, m in case.scenario.seeds()]
    thr = bureau.settings.relevance_threshold
    fig, scores = plots.similarities(bureau.encoder, question, cards, thr)
    ax = fig.axes[0]
    assert ax.get_xlabel() and ax.get_ylabel()
    above = [label for (label, _), s in zip(cards, scores, strict=True) if s >= thr]
    assert above == ["informant: safe-code", "suspect: wrong-code"]  # the answer and its decoy
    assert ax.get_title() == f"2 of 6 cards clear the threshold {thr:.2f}"
    hit = case.retrieve("informant", question).hits[0]
    assert abs(hit.score - scores[0]) < 0.01  # what the X-ray calls the score
