"""The storage boundary on real PowerMem + embedded seekdb."""

from __future__ import annotations

import ast
import threading
from pathlib import Path

import numpy as np

from bureau import BOARD

PACKAGE = Path(__file__).resolve().parents[1] / "bureau"


def test_only_the_storage_layer_imports_the_storage_sdks():
    importers = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(n.split(".")[0] in ("powermem", "pyseekdb", "pylibseekdb") for n in names):
                importers.append(path.relative_to(PACKAGE).as_posix())
    assert sorted(set(importers)) == ["storage/gateway.py", "storage/setup.py"]


def test_get_and_delete_by_id_check_case_and_owner(bureau, case):
    gw = bureau.gateway
    secret = case.seed_card("safe-code")
    other = bureau.load_scenario("safe-combination")
    try:
        assert gw.get(case.space, "informant", secret.id) is not None
        assert gw.get(case.space, "detective", secret.id) is None  # right case, wrong owner
        assert gw.get(other.space, "informant", secret.id) is None  # right owner, wrong case
        assert gw.get(case.space, BOARD, secret.id) is None
        assert gw.delete(other.space, "informant", secret.id) is False
        assert gw.delete(case.space, "detective", secret.id) is False
        assert gw.get(case.space, "informant", secret.id) is not None  # still there
    finally:
        bureau.delete_case(other.id)


def test_a_card_read_by_id_is_the_card_powermems_get_gives(bureau, case):
    """``get`` reads one row by primary key without its vector; the card is the one PowerMem's
    own ``get`` (which reads and parses the vector) gives, sealed and clear, every label; and an
    id that is not a card of that scope, or not a BIGINT at all, names nothing."""
    from bureau.storage.gateway import MemoryGateway

    gw = bureau.gateway
    plain = MemoryGateway(bureau.settings.with_(seal=False), gw.memory, gw.encoder)
    meta = {"visibility": "private", "topic": "umbrella", "kind": "note", "abstraction": "a note",
            "source_role": "informant", "sensitivity": "high"}
    cards = [g.add(case.space, "suspect", f"A {how} note about the red umbrella.", meta)
             for g, how in ((gw, "sealed"), (plain, "clear"))]
    for card in cards:
        via_powermem = gw._opened(case.space.store_id, [gw.memory.get(
            int(card.id), user_id=case.space.store_id, agent_id="suspect")])[0]
        assert gw.get(case.space, "suspect", card.id) == gw._card(via_powermem, case.id)
        assert gw.get(case.space, "suspect", card.id) == card
    for odd in (str(2**63), "9" * 30, "0", str(int(cards[0].id) + 1), " " + cards[0].id):
        assert gw.get(case.space, "suspect", odd) is None
    assert gw.get(case.space, "detective", cards[1].id) is None


def test_a_replace_writes_the_same_rows_straight_or_through_sqlalchemy(bureau, case, monkeypatch):
    """Embedded, a card write's ``REPLACE`` is written out here and sent straight to seekdb's
    connection (:func:`bureau.storage.statements.replace_rows`); SQLAlchemy's compiled
    statement, run through pyobvector and pyseekdb, must store the very same row: every column,
    for text that needs escaping (quotes, backslashes, ``%s``, a NUL, newlines, accents) in
    the text columns and the JSON metadata, and several rows in one statement."""
    from functools import partial

    import bureau.storage.statements as statements_module
    from bureau.storage.setup import LOCK, new_card_ids, store_now
    from bureau.storage.statements import replace_rows, statements

    gw = bureau.gateway
    vs = gw.memory.storage.vector_store
    uid = case.space.store_id
    hostile = ["it's \\'; DROP TABLE x; -- 100% %s %(id)s", "Café «Zoë» Ω\nline\ttab\x00end",
               '{"json": "in text"} \\" \\\\']
    vectors = gw.encoder.embed(hostile)
    ids = new_card_ids(len(hostile))

    def records():
        now = store_now()
        out = []
        for i, text, vec in zip(ids, hostile, vectors, strict=True):
            record = vs._build_record_for_insert(vec.tolist(), {
                "data": text, "user_id": uid, "agent_id": "suspect", "run_id": "",
                "actor_id": "", "hash": "h", "created_at": now, "updated_at": now,
                "category": "", "fulltext_content": text,
                "metadata": {"note": text, "n": 1.5, "ok": True, "none": None}})
            record[vs.primary_field] = int(i)
            out.append(record)
        return out

    cols = [c.name for c in vs.table.columns]
    read = (f"SELECT {', '.join(f'`{c}`' for c in cols)} FROM `{vs.collection_name}` WHERE "
            f"`{vs.primary_field}` IN ({', '.join(ids)}) ORDER BY `{vs.primary_field}`")
    written = records()
    stored = []
    for through_engine in (False, True):
        monkeypatch.setattr(statements_module, "statements",
                            partial(statements, through_engine=through_engine))
        with LOCK:
            replace_rows(gw.memory, written)  # the same ids: the second replaces the first
            with statements(gw.memory) as conn:
                stored.append(conn.rows(read))
    assert len(stored[0]) == len(hostile) and stored[0] == stored[1]
    by_col = [dict(zip(cols, row, strict=True)) for row in stored[0]]
    assert [r[vs.text_field] for r in by_col] == hostile
    import json
    assert [json.loads(r[vs.metadata_field])["note"] for r in by_col] == hostile
    with LOCK, statements(gw.memory) as conn:
        conn.run(f"DELETE FROM `{vs.collection_name}` WHERE `{vs.primary_field}` IN "
                 f"({', '.join(ids)})")


def test_a_replace_of_no_rows_or_of_a_number_that_is_not_finite_is_refused(bureau):
    """The written-out ``REPLACE`` refuses what it cannot write faithfully: no rows (an empty
    ``VALUES``), rows naming different columns, and a float that is nan or infinite (pyseekdb's
    renderer would write a bare ``nan``); the statement it writes for a good row names it."""
    import pytest

    from bureau.storage.setup import replace_statement, sql_engine

    vs = bureau.gateway.memory.storage.vector_store
    dialect = sql_engine(bureau.gateway.memory).dialect
    pk = vs.primary_field
    with pytest.raises(ValueError, match="at least one row"):
        replace_statement(vs.table, dialect, [])
    with pytest.raises(ValueError, match="same columns"):
        replace_statement(vs.table, dialect, [{pk: 1}, {pk: 2, vs.text_field: "x"}])
    for bad in (float("nan"), float("inf"), float("-inf")):
        with pytest.raises(ValueError, match="not a finite number"):
            replace_statement(vs.table, dialect, [{pk: 1, vs.text_field: bad}])
    good = replace_statement(vs.table, dialect, [{pk: 7, vs.text_field: "it's"}])
    assert good == (f"REPLACE INTO `{vs.table.name}` (`{pk}`, `{vs.text_field}`) VALUES "
                    "(7, 'it\\'s')")


def test_a_listing_is_the_one_powermems_get_all_gives(bureau, case):
    """``list`` reads a case's rows by id without their vectors: the same cards, in the same
    order, page by page, as PowerMem's ``get_all`` sorted by id, sealed and clear, for one
    owner and for all; another case's cards never appear."""
    from bureau.storage.gateway import MemoryGateway

    gw = bureau.gateway
    plain = MemoryGateway(bureau.settings.with_(seal=False), gw.memory, gw.encoder)
    other = bureau.load_scenario("safe-combination")
    try:
        for g, owner in ((gw, "suspect"), (plain, "suspect"), (plain, "detective")):
            g.add_many(case.space, owner, [(f"Note {i} of {owner}.", {"topic": "t"})
                                           for i in range(3)])
        uid = case.space.store_id

        def via_powermem(owner, page):
            out, offset = [], 0
            while True:
                rows = gw.memory.get_all(user_id=uid, agent_id=owner, limit=page, offset=offset,
                                         sort_by="id", order="asc")["results"]
                out += [gw._card(r, case.id) for r in gw._opened(uid, rows)]
                if len(rows) < page:
                    return out
                offset += page

        for owner in ("suspect", "detective", None):
            for page in (2, 500):
                listed = gw.list(case.space, owner, page=page)
                assert listed == via_powermem(owner, page) and listed
                assert all(c.case_id == case.id for c in listed)
        assert {c.id for c in gw.list(other.space)}.isdisjoint(c.id for c in gw.list(case.space))
    finally:
        bureau.delete_case(other.id)


def test_listing_and_counting_stay_inside_the_case(bureau, case):
    other = bureau.load_scenario("safe-combination")
    try:
        other.whisper("detective", "A fact that only the other case holds.", topic="other")
        seeds = sum(len(m) for m in case.scenario.memories.values())  # six in the safe combination, its decoy included
        assert bureau.gateway.count(case.space) == seeds
        assert bureau.gateway.count(other.space) == seeds + 1
        assert {c.case_id for c in bureau.gateway.list(case.space)} == {case.id}
        assert all("other case" not in c.content for c in bureau.gateway.list(case.space))
    finally:
        bureau.delete_case(other.id)


def test_threads_are_serialised_not_crashing(bureau, case):
    """PowerMem crashes the process under concurrent threads; the gateway's lock prevents it."""
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(5):
                case.whisper("suspect", f"Thread {n} noted clue number {i}.", topic="threads")
                case.interrogate("suspect", f"What did thread {n} note?")
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    seeds = len(case.scenario.memories.get("suspect", []))
    assert bureau.gateway.count(case.space, "suspect") == seeds + 8 * 5


def test_purge_removes_every_card_and_verifies(bureau):
    case = bureau.load_scenario("safe-combination")
    case.publish("informant", case.seed_card("safe-code").id)
    for i in range(30):
        case.whisper("detective", f"Filler note {i} about the garden shed.", topic="filler")
    assert case.reset() == sum(len(m) for m in case.scenario.memories.values()) + 1 + 30
    assert bureau.gateway.count(case.space) == 0
    assert bureau.ledger.publishes.all(case.id) == []
    bureau.delete_case(case.id)
    assert case.id not in [c.case_id for c in bureau.cases()]


def test_scores_are_cosine_similarities(bureau, case):
    q = "What is the combination of the safe in the study?"
    trace = case.retrieve("informant", q)
    card = trace.hits[0]
    v = bureau.gateway.encoder.embed([q, card.content])
    assert abs(card.score - float(v[0] @ v[1])) < 1e-3


def test_bulk_rows_have_the_shape_of_single_adds(bureau, case):
    gw = bureau.gateway
    meta = {"visibility": "private", "topic": "umbrella", "kind": "note"}
    single = gw.add(case.space, "suspect", "A single note about the red umbrella.", meta)
    bulk = gw.add_many(case.space, "suspect", [("A bulk note about the red umbrella.", meta),
                                            ("A bulk note about the blue car.", meta)])
    def raw(card_id):
        return gw.memory.get(int(card_id), user_id=case.space.store_id, agent_id="suspect")

    a, b = raw(single.id), raw(bulk[0].id)
    assert set(a) == set(b) and set(a["metadata"]) == set(b["metadata"])
    assert b["content"].startswith("sealed:1:") and a["content"].startswith("sealed:1:")
    assert "topic" not in b["metadata"]  # sealed with the card (issue 51): read opened
    opened = gw.get(case.space, "suspect", bulk[0].id)
    assert (opened.content, opened.topic) == ("A bulk note about the red umbrella.", "umbrella")
    hits = case.retrieve("suspect", "Who has the red umbrella?").hits
    assert {single.id, bulk[0].id} <= {c.id for c in hits}
    assert all(c.owner == "suspect" for c in hits)
    assert gw.delete(case.space, "suspect", bulk[1].id) and gw.get(case.space, "suspect", bulk[1].id) is None


def test_one_seekdb_connection_serves_every_statement(bureau, case):
    """pyobvector's default pool reopened seekdb's connection (plus ``SET NAMES``) per statement."""
    engine = bureau.gateway.sql_engine
    server = engine.get_execution_options()["seekdb_server"]
    case.retrieve("informant", "Which number opens the safe?")
    conn = server._connection
    assert conn is not None
    card = case.whisper("suspect", "The clock in the hall runs ten minutes slow.", topic="clock")
    case.retrieve("suspect", "Is the hall clock right?")
    bureau.gateway.get(case.space, "suspect", card.id)
    bureau.gateway.list(case.space, "suspect")
    assert server._connection is conn  # never closed and reopened in between


def test_the_case_index_exists_and_searches_stay_exact(bureau, case):
    """The gateway indexes the case column; a scoped search still returns the exact top-k."""
    from sqlalchemy import text

    engine = bureau.gateway.sql_engine
    with engine.connect() as conn:
        indexed = {(str(r[2]), str(r[4])) for r in conn.execute(text("SHOW INDEX FROM bureau_cards"))}
    assert ("idx_bureau_cards_case", "user_id") in indexed
    others = [bureau.load_scenario("safe-combination") for _ in range(2)]
    try:
        for n, topic in enumerate(["garden", "cellar", "attic", "stables", "library", "pantry"]):
            case.whisper("suspect", f"Clue {n}: a muddy boot print was found in the {topic}.")
        case.publish("informant", case.seed_card("safe-code").id)
        gw = bureau.gateway
        for question in ["Where was the boot print?", "What opens the safe?", "Who lied?"]:
            vector, _ = gw.embed_query(question)
            found, _ = gw.search_scopes(case.space, ["suspect", BOARD], vector, 3)
            for scope in ("suspect", BOARD):  # each scope its own exact top-3
                pool = gw.list(case.space, scope)
                cos = gw.encoder.embed([c.content for c in pool]) @ vector
                exact = [pool[i].id for i in np.argsort(-cos, kind="stable")[:3]]
                assert [c.id for c in found[scope]] == exact, (question, scope)
    finally:
        for other in others:
            bureau.delete_case(other.id)
