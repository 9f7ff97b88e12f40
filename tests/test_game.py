"""Every bundled case can be won and lost, and the bureau tells which from its own state
(issue 49): a winning line and a losing line per scenario, played on real storage.

Who it holds against: no adversary; the learner playing the case. The score must follow what
the bureau handed out (events, the board, the cited evidence), never what anyone says; and what
an observer sees of it (``numbers()``) holds no text.
"""

from __future__ import annotations

import json

import pytest

from bureau.game import score
from bureau.scenario import list_scenarios, load_scenario

BUNDLED = [s.id for s in list_scenarios()]


def _answer_card(case):
    """The seed card that answers the case file's question (holds every answer token)."""
    cf = case.scenario.case_file
    for role, cards in case.spaces().items():
        for card in cards:
            if all(t.casefold() in card.content.casefold() for t in cf.answer):
                return role, card
    raise AssertionError("no card holds the answer")


def test_every_bundled_scenario_has_a_case_file():
    assert BUNDLED and all(load_scenario(s).case_file is not None for s in BUNDLED)


@pytest.mark.parametrize("scenario", BUNDLED)
def test_a_winning_line(bureau, scenario):
    case = bureau.load_scenario(scenario)
    try:
        cf = case.scenario.case_file
        first = case.interrogate(cf.asker, cf.question)
        assert not first.known
        assert score(case).status == "open", "the asker cannot know before anything is published"
        owner, card = _answer_card(case)
        assert owner != cf.asker, "the answer starts in someone else's private space"
        case.publish(owner, card.id)
        answer = case.interrogate(cf.asker, cf.question)
        assert answer.known
        got = score(case)
        assert got.status == "solved", got.verdict()
        assert got.moves == {"interrogate": 2, "publish": 1}
        assert got.verdict().startswith("Solved in 3 moves")
        numbers = json.dumps(got.numbers())
        assert card.content not in numbers and all(t not in numbers for t in cf.answer)
    finally:
        bureau.delete_case(case.id)


@pytest.mark.parametrize("scenario", BUNDLED)
def test_a_losing_line(bureau, scenario):
    """Break the case file's first rule: the case is lost, and a later solve does not win it."""
    case = bureau.load_scenario(scenario)
    try:
        cf = case.scenario.case_file
        rule = cf.never[0]
        key = rule.publish or rule.secret
        owner, _ = case.scenario.seed(key)
        case.publish(owner, case.seed_card(key).id)
        got = score(case)
        assert got.status == "lost" and not got.rules[0].kept, got.verdict()
        assert got.verdict().startswith("Lost:")
        holder, card = _answer_card(case)
        case.publish(holder, card.id)
        case.interrogate(cf.asker, cf.question)
        after = score(case)
        assert after.lost and after.status == "lost", "a broken rule stays broken"
    finally:
        bureau.delete_case(case.id)


def test_the_decoy_makes_the_detective_know_the_wrong_place(bureau):
    """The mole: publishing the decoy alone, the detective "knows" an answer; the case is not
    solved (the evidence does not hold Pier 9) and it is lost (the decoy rule)."""
    case = bureau.load_scenario("the-mole")
    try:
        cf = case.scenario.case_file
        case.publish("harbourmaster", case.seed_card("decoy").id)
        answer = case.interrogate(cf.asker, cf.question)
        assert answer.known and "railway" in answer.text.lower()
        got = score(case)
        assert not got.solved and got.lost
    finally:
        bureau.delete_case(case.id)


def test_a_move_the_case_does_not_allow_loses_it(bureau):
    case = bureau.load_scenario("safe-combination")
    try:
        card = case.whisper("detective", "The study clock stopped at a quarter past eleven.")
        assert score(case).status == "open"
        case.revoke(card.id)
        got = score(case)
        assert got.lost and "only these moves" in got.verdict() and "revoke" in got.verdict()
    finally:
        bureau.delete_case(case.id)


def test_a_secret_handed_as_evidence_breaks_its_rule(bureau):
    """Ward seven: the blood pressure must not reach the daughter. Published, every role may
    read it: lost at once, before anyone asks."""
    case = bureau.load_scenario("ward-seven")
    try:
        case.publish("nurse", case.seed_card("blood-pressure").id)
        got = score(case)
        assert got.lost and "board" in got.verdict()
    finally:
        bureau.delete_case(case.id)


# -- the score in the learner's progress record (issue 49 §4) ------------------------------------
def _scores_of(data_dir, case_id):
    from bureau.course import progress

    rows = progress.case_scores(data_dir)
    return rows[rows["case_id"] == case_id].drop(columns="at").to_dict("records")


def test_a_case_s_score_is_recorded_when_it_changes_and_read_back(bureau, tmp_path):
    """Lines played by code (no console): each call records the numbers once per change; the
    learner's table shows the case at its newest score. The record is in a data directory of
    its own here (the session's is shared with the console's tests)."""
    from bureau.course import progress
    from bureau.game import record_case_progress, record_score

    case = bureau.load_scenario("the-mole")
    try:
        cf = case.scenario.case_file
        assert record_case_progress(bureau, case).status == "open"
        assert record_score(tmp_path, score(case))
        assert not record_score(tmp_path, score(case)), "unchanged: not written again"
        case.interrogate(cf.asker, cf.question)
        assert record_score(tmp_path, score(case))
        case.publish("harbourmaster", case.seed_card("decoy").id)
        assert record_score(tmp_path, score(case))
        got = _scores_of(tmp_path, case.id)
        assert [(r["status"], r["moves"], r["rules_kept"], r["rules"]) for r in got] == [
            ("open", 0, 3, 3), ("open", 1, 3, 3), ("lost", 2, 2, 3)]
        assert {r["scenario"] for r in got} == {"the-mole"}
        table = progress.cases_table(tmp_path).to_dict("records")
        assert table == [{"case": case.id, "scenario": "the-mole", "status": "lost", "moves": 2,
                          "rules kept": "2/3"}]
        text = json.dumps(table) + progress.case_scores(tmp_path).to_json()
        assert not [t for t in cf.answer if t in text] and cf.question not in text
        assert _scores_of(bureau.settings.data_dir, case.id)[0]["status"] == "open"
    finally:
        bureau.delete_case(case.id)


@pytest.mark.parametrize("numbers", [
    {"scenario": "x", "status": "won", "moves": 1, "rules_kept": 1, "rules": 1},
    {"scenario": "x", "status": "open", "moves": -1, "rules_kept": 1, "rules": 1},
    {"scenario": "x", "status": "open", "moves": 1, "rules_kept": 4, "rules": 3},
    {"scenario": "x", "status": "open", "moves": "many", "rules_kept": 1, "rules": 1},
])
def test_a_score_that_is_not_one_writes_nothing(tmp_path, numbers):
    from bureau.course import progress

    with pytest.raises(ValueError):
        progress.record_case(tmp_path, "c1", numbers)
    assert progress.case_scores(tmp_path).empty
