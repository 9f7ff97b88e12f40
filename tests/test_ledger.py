"""The SQLite ledger keeps one connection per thread and always hands it back clean; its stores
share that connection, so an operation across stores is one transaction."""

from __future__ import annotations

import ast
import threading
from pathlib import Path

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
    ledger.mediation.limit_card("c1", "tok", "card", "detective", revoke=True,
                                audit=[{"kind": "decision", "action": "revoke"}])
    ledger.task_scope_records.create("c1", "tok", "ops", "detective")
    ledger.cases.delete("c1", "tok")
    assert ledger.cases.get("c1") is None and ledger.event_log.read("c1") == []
    assert ledger.publishes.cleanup_tasks("c1") == [] and ledger.mediation.card_limits("c1") == []
    assert ledger.task_scope_records.all("c1") == []
    assert [e["action"] for e in ledger.mediation.audit_entries("c1", "tok")] == ["revoke"]


TRANSITIONAL_CALLERS = ("bureau/service/case.py", "bureau/service/runs.py",
                        "bureau/service/shared_scopes.py", "bureau/service/rooms/")
"""The only files still calling the old flat names (the transitional block of BaseLedger)."""


def _ledger_call(node: ast.AST, names: set[str]) -> str | None:
    """``x.ledger.<name>(...)`` or ``ledger.<name>(...)`` with ``name`` in ``names``."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in names):
        return None
    owner = node.func.value
    held = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", None)
    return node.func.attr if held == "ledger" else None


def test_only_the_service_files_being_rewritten_call_the_old_flat_names():
    old = {n for n, v in vars(BaseLedger).items()
           if callable(v) and not n.startswith("_") and n != "close"}
    assert {"get_case", "runs", "events", "task_scopes"} <= old
    repo = Path(__file__).resolve().parents[1]
    offenders = []
    for path in sorted([*repo.glob("bureau/**/*.py"), *repo.glob("tests/*.py")]):
        rel = path.relative_to(repo).as_posix()
        if rel.startswith((*TRANSITIONAL_CALLERS, "bureau/ledger/")):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if name := _ledger_call(node, old):
                offenders.append(f"{rel}:{node.lineno} ledger.{name}(...)")
    assert not offenders, "\n".join(offenders)
