"""The SQLite ledger keeps one connection per thread and always hands it back clean."""

from __future__ import annotations

import threading

import pytest

from bureau.ledger import Ledger


@pytest.fixture()
def ledger(tmp_path) -> Ledger:
    return Ledger(tmp_path / "ledger.sqlite3")


def _count(ledger: Ledger) -> int:
    with ledger.tx() as db:
        return db.one("SELECT count(*) AS n FROM events")["n"]


def test_a_thread_reuses_its_connection(ledger):
    with ledger.connect() as first:
        pass
    with ledger.connect(immediate=True) as second:
        pass
    assert first is second
    seen: list[object] = []

    def other() -> None:
        with ledger.connect() as db:
            seen.append(db)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen and seen[0] is not first  # SQLite connections are not shared across threads


def test_a_failed_transaction_rolls_back_and_the_connection_stays_usable(ledger):
    ledger.append_event("case-1", "whisper", {"role": "detective"})
    with pytest.raises(RuntimeError), ledger.tx(write=True) as db:
        db.run("DELETE FROM events")
        raise RuntimeError("boom")
    assert _count(ledger) == 1  # the delete was rolled back
    ledger.append_event("case-1", "whisper", {"role": "suspect"})
    assert _count(ledger) == 2


def test_a_transaction_inside_another_gets_its_own_connection(ledger):
    with ledger.tx() as outer:
        outer.one("SELECT count(*) AS n FROM events")
        ledger.append_event("case-1", "publish", {"role": "informant"})  # commits on its own
    assert _count(ledger) == 1
