"""A deleted or reset case is dead for every holder (issue 9, item 3).

Holders are Case objects in this process and in others. Every operation on a deleted case must
raise ``UnknownCaseError``, and an id used again must start empty even if an old holder kept
writing: cards live in a namespace made for one incarnation of the case.
"""

from __future__ import annotations

import json

import pytest
from conftest import run_python

from bureau.errors import UnknownCaseError
from bureau.model import BOARD

Q = "What is the combination of the safe in the study?"

OPERATIONS = {
    "whisper": lambda c: c.whisper("detective", "A ghost note about the safe code 0427."),
    "retrieve": lambda c: c.retrieve("detective", Q),
    "interrogate": lambda c: c.interrogate("informant", Q),
    "publish": lambda c: c.publish("informant", "1"),
    "cards": lambda c: c.cards("detective"),
    "card": lambda c: c.card("detective", "1"),
    "agent": lambda c: c.agent("detective"),
    "requester": lambda c: c.requester("chief"),
    "export": lambda c: c.agent("detective").export(),
    "agent-recall": lambda c: c.agent("detective").recall(Q),
    "agent-consult": lambda c: c.agent("detective").consult("informant", Q),
    "agent-note": lambda c: c.agent("detective").note("A ghost note about the safe code 0427."),
    "start-run": lambda c: c.agent("detective").start_run(),
    "task-scopes": lambda c: c.agent("detective").scopes.create("ghosts"),
    "events": lambda c: c.events(),
    "stage": lambda c: c.stage(),
    "spaces": lambda c: c.spaces(),
    "seed_card": lambda c: c.seed_card("safe-code"),
    "knowers": lambda c: c.knowers(Q),
    "recover": lambda c: c.recover(),
    "reset": lambda c: c.reset(),
}


@pytest.mark.parametrize("op", list(OPERATIONS))
def test_every_operation_on_a_deleted_case_raises(bureau, op):
    case = bureau.load_scenario("safe-combination", case_id=f"dead-{op}")
    case.publish("informant", case.seed_card("safe-code").id)
    bureau.delete_case(case.id)
    with pytest.raises(UnknownCaseError):
        OPERATIONS[op](case)
    with pytest.raises(UnknownCaseError):
        bureau.case(case.id)
    assert bureau.ledger.cases.get(case.id) is None


def test_a_reused_id_starts_empty_even_after_ghost_writes(bureau):
    old = bureau.load_scenario("safe-combination", case_id="reused-id")
    old_space = old.space
    old.publish("informant", old.seed_card("safe-code").id)
    bureau.delete_case("reused-id")
    # An old holder that slipped past the check (a race) writes into the retired namespace.
    bureau.gateway.add(old_space, "detective", "A ghost card written after the delete.",
                       {"visibility": "private", "topic": "ghost", "kind": "note"})
    new = bureau.load_scenario("safe-combination", case_id="reused-id")
    try:
        assert new.space != old_space
        spaces = new.spaces()
        assert spaces[BOARD] == []
        assert all("ghost" not in c.content for v in spaces.values() for c in v)
        assert not new.interrogate("detective", Q).known
        assert [e.type for e in new.events()][0] == "case.created"
        with pytest.raises(UnknownCaseError):  # the old holder is still dead
            old.whisper("detective", "Another ghost.")
        # The next check sweeps the retired namespace's ghost card.
        assert bureau.check_store()["swept"] == 1
        assert old_space.store_id not in bureau.gateway.spaces()
    finally:
        bureau.delete_case("reused-id")


def test_reset_moves_the_case_to_a_fresh_namespace(bureau, case):
    before = case.space
    case.publish("informant", case.seed_card("safe-code").id)
    case.reset(reseed=True)
    after = case.space
    assert after != before and after.case_id == before.case_id
    bureau.gateway.add(before, "detective", "A late write from a holder that missed the reset.",
                       {"visibility": "private", "topic": "late", "kind": "note"})
    assert case.spaces()[BOARD] == []
    assert all("late write" not in c.content for v in case.spaces().values() for c in v)
    assert not case.interrogate("detective", Q).known
    assert case.interrogate("informant", Q).known  # reseeded
    bureau.check_store()
    assert before.store_id not in bureau.gateway.spaces()


DELETE_AND_RECREATE = """
import json, sys
from bureau import Bureau
b = Bureau.open()
b.delete_case(sys.argv[1])
new = b.load_scenario("safe-combination", case_id=sys.argv[1])
print(json.dumps({"space": new.space.store_id}))
"""


def test_a_delete_in_another_process_kills_this_processs_holder(bureau, data_dir, tmp_path):
    case = bureau.load_scenario("safe-combination", case_id="other-process-delete")
    case.publish("informant", case.seed_card("safe-code").id)
    case.whisper("detective", "The detective's own note about the garden shed.")
    proc = run_python(DELETE_AND_RECREATE.replace("sys.argv[1]", repr(case.id)), cwd=tmp_path)
    new_space = json.loads(proc.stdout.strip().splitlines()[-1])["space"]
    try:
        for op in OPERATIONS.values():
            with pytest.raises(UnknownCaseError):
                op(case)
        fresh = bureau.case(case.id)  # re-attaches to the new incarnation
        assert fresh is not case and fresh.space.store_id == new_space
        assert fresh.spaces()[BOARD] == []
        assert all("garden shed" not in c.content for c in fresh.spaces()["detective"])
    finally:
        bureau.delete_case(case.id)
