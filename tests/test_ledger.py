"""The SQLite ledger keeps one connection per thread and always hands it back clean; its stores
share that connection, so an operation across stores is one transaction."""

from __future__ import annotations

import threading

import pytest

from bureau.ledger import BaseLedger, Ledger
from bureau.ledger.connection import Connection


@pytest.fixture()
def ledger(tmp_path) -> Ledger:
    return Ledger(tmp_path / "ledger.sqlite3")


def _count(ledger: Ledger) -> int:
    with ledger.connection.tx() as db:
        return db.one("SELECT count(*) AS n FROM events")["n"]


def test_a_thread_reuses_its_connection(ledger):
    with ledger.connection.connect() as first:
        pass
    with ledger.connection.connect(immediate=True) as second:
        pass
    assert first is second
    seen: list[object] = []

    def other() -> None:
        with ledger.connection.connect() as db:
            seen.append(db)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen and seen[0] is not first  # SQLite connections are not shared across threads


def test_a_failed_transaction_rolls_back_and_the_connection_stays_usable(ledger):
    ledger.event_log.append("case-1", "whisper", {"role": "detective"})
    with pytest.raises(RuntimeError), ledger.connection.tx(write=True) as db:
        db.run("DELETE FROM events")
        raise RuntimeError("boom")
    assert _count(ledger) == 1  # the delete was rolled back
    ledger.event_log.append("case-1", "whisper", {"role": "suspect"})
    assert _count(ledger) == 2


def test_a_transaction_inside_another_gets_its_own_connection(ledger):
    with ledger.connection.tx() as outer:
        outer.one("SELECT count(*) AS n FROM events")
        ledger.event_log.append("case-1", "publish", {"role": "informant"})  # commits on its own
    assert _count(ledger) == 1


# -- one store per feature over one connection (issue 18) ------------------------------------

def test_the_stores_share_one_connection_and_a_reset_is_one_transaction(ledger, monkeypatch):
    assert isinstance(ledger.connection, Connection)
    ledger.cases.add("c1", "s", "t", "tok")
    ledger.publishes.restore("c1", "src", "detective", "copy")
    ledger.run_records.add("r1", "c1", "tok", "detective")

    def fail(db, case_id):
        raise RuntimeError("the last store fails")

    monkeypatch.setattr(ledger.run_records, "clear_case", fail)
    with pytest.raises(RuntimeError):
        ledger.cases.bump_epoch("c1", "tok")
    # nothing of the reset happened: not the epoch, not the other stores' deletions
    assert ledger.cases.get("c1").epoch == 0
    assert ledger.publishes.get("c1", "src") is not None
    assert ledger.cases.retired_spaces() == set()
    monkeypatch.undo()
    old = ledger.cases.bump_epoch("c1", "tok")
    assert (old.epoch, ledger.cases.get("c1").epoch) == (0, 1)
    assert ledger.publishes.get("c1", "src") is None and ledger.run_records.get("r1") is None
    assert ledger.cases.retired_spaces() == {old.space.store_id}


def test_a_delete_forgets_every_store_but_the_audit_chain(ledger):
    ledger.cases.add("c1", "s", "t", "tok")
    ledger.event_log.append_many("c1", [("case.created", {})], "tok")
    ledger.publishes.add_cleanup("c1", "card", "board", "r")
    ledger.mediation.limit_cards("c1", "tok", [("card", "detective")], revoke=True,
                                 audit=[{"kind": "decision", "action": "revoke"}])
    ledger.task_scope_records.create("c1", "tok", "ops", "detective")
    ledger.cases.delete("c1", "tok")
    assert ledger.cases.get("c1") is None and ledger.event_log.read("c1") == []
    assert ledger.publishes.cleanup_tasks("c1") == [] and ledger.mediation.card_limits("c1") == []
    assert ledger.task_scope_records.all("c1") == []
    assert [e["action"] for e in ledger.mediation.audit_entries("c1", "tok")] == ["revoke"]


def test_the_ledger_is_only_its_stores():
    """No flat operation is left on the composite: every caller names the feature's store."""
    flat = {n for n, v in vars(BaseLedger).items() if callable(v) and not n.startswith("_")}
    assert flat == {"close"}


