"""Bad input raises a typed error that says what to do, and changes nothing in the store."""

from __future__ import annotations

import pytest

from bureau.errors import (
    BoardNotWritableError,
    BureauError,
    InvalidTextError,
    UnknownCardError,
    UnknownCaseError,
    UnknownRoleError,
)


def snapshot(case):
    """Everything observable about a case's storage and ledger."""
    b = case.bureau
    cards = sorted((c.owner, c.id, c.content, c.visibility, c.topic, c.kind)
                   for cs in case.spaces().values() for c in cs)
    pubs = sorted((p.source_id, p.status, p.copy_id) for p in b.ledger.publishes.all(case.id))
    return cards, pubs, len(case.events()), b.ledger.publishes.cleanup_tasks(case.id)


CASES = {
    "whisper to unknown role": (lambda c: c.whisper("butler", "I polished the silver."),
                                UnknownRoleError, "Roles in this case"),
    "whisper to the board": (lambda c: c.whisper("board", "Everyone should know this."),
                             BoardNotWritableError, "publish"),
    "empty whisper": (lambda c: c.whisper("detective", ""), InvalidTextError, "empty"),
    "blank whisper": (lambda c: c.whisper("detective", " \n\t "), InvalidTextError, "empty"),
    "20,000-character whisper": (lambda c: c.whisper("detective", "x" * 20_000),
                                 InvalidTextError, "20,000 characters"),
    "NUL in whisper": (lambda c: c.whisper("detective", "safe\x00code"), InvalidTextError,
                       "U+0000"),
    "escape sequence in whisper": (lambda c: c.whisper("detective", "\x1b[2Jhidden"),
                                   InvalidTextError, "U+001B"),
    "zero-width space in whisper": (lambda c: c.whisper("detective", "pass\u200bword"),
                                    InvalidTextError, "U+200B"),
    "non-string whisper": (lambda c: c.whisper("detective", 42), InvalidTextError, "string"),
    "bad topic": (lambda c: c.whisper("detective", "A fact.", topic="Drop Table"),
                  InvalidTextError, "lowercase"),
    "interrogate unknown role": (lambda c: c.interrogate("butler", "Who is it?"),
                                 UnknownRoleError, "butler"),
    "interrogate the board": (lambda c: c.interrogate("board", "What is posted?"),
                              BoardNotWritableError, "not a role"),
    "empty question": (lambda c: c.interrogate("detective", "   "), InvalidTextError, "empty"),
    "control character in question": (lambda c: c.interrogate("detective", "code?\x07"),
                                      InvalidTextError, "U+0007"),
    "publish unknown card": (lambda c: c.publish("informant", "999999999999999999"),
                             UnknownCardError, "no card"),
    "publish a non-numeric id": (lambda c: c.publish("informant", "'; DROP TABLE x; --"),
                                 UnknownCardError, "no card"),
    "publish another role's card": (lambda c: c.publish("detective", c.seed_card("safe-code").id),
                                    UnknownCardError, "own private cards"),
    "publish from the board": (lambda c: c.publish("board", c.seed_card("safe-code").id),
                               BoardNotWritableError, "not a role"),
    "get a card of another role": (lambda c: c.card("suspect", c.seed_card("safe-code").id),
                                   UnknownCardError, "no card"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_is_refused_and_changes_nothing(case, name):
    action, error, message = CASES[name]
    before = snapshot(case)
    with pytest.raises(error) as info:
        action(case)
    assert isinstance(info.value, BureauError)
    assert message in str(info.value)
    assert snapshot(case) == before


def test_unknown_case(bureau):
    with pytest.raises(UnknownCaseError, match="load_scenario"):
        bureau.case("no-such-case")


def test_unknown_scenario_changes_nothing(bureau):
    before = [c.case_id for c in bureau.cases()]
    with pytest.raises(BureauError):
        bureau.load_scenario("no-such-scenario")
    assert [c.case_id for c in bureau.cases()] == before
