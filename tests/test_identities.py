"""Identities are validated whole and mean one thing everywhere (issue 9, item 2).

The store compares its case column case-, accent- and trailing-space-insensitively; the ledger
and the file system do not. Every id therefore has to be refused unless it is the one canonical
spelling, before anything is written, and case creation has to be all or nothing.
"""

from __future__ import annotations

import pytest

from bureau import BOARD
from bureau.errors import BureauError, InvalidTextError, ScenarioError, UnknownRoleError
from bureau.scenario import load_scenario, parse_scenario

LONG = "a" * 40  # past the 32 characters the old code validated


def _nothing_left(bureau, case_id: str) -> None:
    assert bureau.ledger.cases.get(case_id) is None
    assert all(r.case_id != case_id for r in bureau.cases())
    folder = bureau.settings.data_dir / "cases"
    assert not (folder / f"{case_id}.json").exists()


@pytest.mark.parametrize("bad", [
    LONG + "/../../escape",          # a path after character 32
    LONG + "/x",
    LONG + "\x00nul",                # NUL after character 32
    "b" * 200,                       # too long for the store's column
    LONG + "X",                      # upper case: the store would equal it to ...x
    LONG + "\u00e9",                 # an accent: the store would equal it to ...e
    LONG + " ",                      # trailing space: the store ignores it
    LONG + "\n",                     # a final newline: ``$`` would have let it through
    "..",
    "",
    "Safe",
])
def test_bad_case_ids_are_refused_before_anything_is_written(bureau, tmp_path, bad):
    scenario = load_scenario("safe-combination")
    before = {r.case_id for r in bureau.cases()}
    spaces_before = bureau.gateway.spaces()
    with pytest.raises(InvalidTextError):
        bureau.create_case(scenario, case_id=bad)
    assert {r.case_id for r in bureau.cases()} == before
    assert bureau.gateway.spaces() == spaces_before
    outside = bureau.settings.data_dir.parent / "escape.json"
    assert not outside.exists()


def test_ids_the_store_would_treat_as_equal_cannot_both_exist(bureau):
    scenario = load_scenario("safe-combination")
    first = bureau.create_case(scenario, case_id=LONG + "x")
    try:
        for twin in (LONG + "X", LONG + "x ", "A" * 40 + "x"):
            with pytest.raises(BureauError):
                bureau.create_case(scenario, case_id=twin)
        # the first case is untouched and still works on every path
        assert first.interrogate("informant", "What is the combination of the safe?").known
        assert first.stage()["private_counts"] == {
            role: len(first.scenario.memories.get(role, [])) for role in first.role_names}
    finally:
        bureau.delete_case(first.id)
    _nothing_left(bureau, LONG + "x")


def test_the_same_id_twice_is_a_typed_error_and_changes_nothing(bureau):
    from bureau.errors import CaseExistsError

    case = bureau.load_scenario("safe-combination", case_id="twice-used")
    try:
        cards = {k: [c.id for c in v] for k, v in case.spaces().items()}
        with pytest.raises(CaseExistsError):
            bureau.load_scenario("the-mole", case_id="twice-used")
        assert {k: [c.id for c in v] for k, v in case.spaces().items()} == cards
        assert bureau.case("twice-used").scenario.id == "safe-combination"
    finally:
        bureau.delete_case("twice-used")


@pytest.mark.parametrize("name", ["board\n", "detective\n", "detective ", "Detective",
                                  "d\u00e9tective"])
def test_names_ending_in_a_newline_or_differing_in_spelling_are_refused(case, name):
    with pytest.raises(UnknownRoleError):
        case.whisper(name, "A note.")
    with pytest.raises(UnknownRoleError):
        case.interrogate(name, "Who opened the safe?")
    with pytest.raises(InvalidTextError):
        case.whisper("detective", "A note.", topic=name)
    with pytest.raises(InvalidTextError):
        case.whisper("detective", "A note.", kind=name)


def test_a_scenario_cannot_declare_board_with_a_newline(tmp_path):
    data = load_scenario("safe-combination").to_dict()
    data["roles"][0]["name"] = "board\n"
    with pytest.raises(ScenarioError):
        parse_scenario(data, source=tmp_path / "x.yaml")


def test_role_returns_the_scenarios_own_name(case):
    asked = "".join(["detec", "tive"])
    assert asked is not case.role_names[0] or True
    got = case.role(asked)
    assert got == "detective" and type(got) is str
    assert any(got is r for r in case.scenario.role_names)

    class Sneaky(str):
        def __eq__(self, other):  # equal to every role, and to the board
            return True

        __hash__ = str.__hash__

    with pytest.raises(UnknownRoleError):
        case.role(Sneaky("detective"))
    with pytest.raises(UnknownRoleError):
        case.interrogate(Sneaky("x"), "What is the combination of the safe?")
    assert BOARD not in case.role_names


def test_case_creation_is_atomic(bureau, monkeypatch):
    """A failure while seeding leaves no ledger row, snapshot or card, and the id is free."""
    gw = bureau.gateway
    real = gw.add_many
    calls = {"n": 0}

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:  # the first role's cards are written, then the store fails
            raise OSError("disk full (injected)")
        return real(*args, **kwargs)

    spaces_before = gw.spaces()
    monkeypatch.setattr(gw, "add_many", flaky)
    with pytest.raises(OSError):
        bureau.load_scenario("safe-combination", case_id="atomic-create")
    monkeypatch.setattr(gw, "add_many", real)
    _nothing_left(bureau, "atomic-create")
    assert gw.spaces() == spaces_before
    case = bureau.load_scenario("safe-combination", case_id="atomic-create")
    try:
        assert sum(len(v) for v in case.spaces().values()) == sum(len(m) for m in case.scenario.memories.values())
    finally:
        bureau.delete_case(case.id)
