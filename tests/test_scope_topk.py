"""Every scope gets its own top-k (issue 9, item 7), and the fast path returns exactly that."""

from __future__ import annotations

import pytest

from bureau.model import BOARD

Q = "What is the combination of the safe in the study?"


def test_own_similar_notes_do_not_push_a_relevant_board_copy_out(bureau, case):
    # Twelve of the detective's own notes, each closer to the question than anything else.
    for n in range(12):
        case.whisper("detective", f"Note {n}: I still do not know the combination of the safe "
                                  f"in the study; attempt {n} failed.")
    copy = case.publish("informant", case.seed_card("safe-code").id)
    trace = case.retrieve("detective", Q)
    board = next(s for s in trace.scopes if s.scope == BOARD)
    assert [c.id for c in board.hits] == [copy.id]
    assert board.hits[0].score >= trace.threshold
    assert BOARD not in trace.misses
    own = next(s for s in trace.scopes if s.scope == "detective")
    assert len(own.hits) + len(own.below_threshold) == bureau.settings.search_limit
    answer = case.interrogate("detective", Q)  # the copy is evidence the responder was handed
    assert answer.known and copy.id in [c.id for c in answer.trace.hits]


def test_the_xray_never_calls_a_scope_with_cards_empty(case):
    case.publish("informant", case.seed_card("safe-code").id)
    for role in case.role_names:
        trace = case.retrieve(role, "Who is the victim's lawyer?")  # nobody knows
        for scope in trace.scopes:
            stored = len(case.cards(role)) if scope.scope == role else 1
            if scope.scope == role:
                stored -= 1  # cards(role) lists the board copy too
            if stored:
                assert scope.hits or scope.below_threshold, (role, scope.scope)


def test_a_statement_gives_the_same_rows_straight_or_through_sqlalchemy(bureau, case):
    """Embedded, the search and version statements go straight to seekdb's connection
    (:mod:`bureau.storage.statements`): the same statement text must give the very rows the
    SQLAlchemy / pyobvector / pyseekdb way gives, values and types alike -- card rows with
    their distance, the versions, a page of vectors, an empty result, text with accents,
    quotes and a ``%s`` -- and a search made either way is the same search."""
    from functools import partial

    import bureau.storage.scope_search as scope_search
    from bureau.storage.statements import statements

    odd = "Café «Zoë» at 5 o'clock; 100% sure; a \\ and a %s; Ω"
    case.whisper("detective", odd)
    gw = bureau.gateway
    vector, _ = gw.embed_query(Q)
    owners = ["detective", BOARD, "informant"]
    parts = []
    search = gw.scope_search
    real_union = search._union
    search._union = lambda ps: parts.append(ps) or real_union(ps)
    try:
        straight, _ = gw.search_scopes(case.space, owners, vector, 5)
    finally:
        search._union = real_union
    vs = gw.memory.storage.vector_store
    uid = case.space.store_id
    table = vs.collection_name
    cols = search._columns()
    union = (f"SELECT {', '.join(f'u.`{c}`' for c in [*cols, '_dist'])} FROM ("
             + " UNION ALL ".join([*parts[0], f"(SELECT {', '.join(['NULL'] * 7)})"]) + ") AS u")
    sqls = [union,
            f"SELECT `agent_id`, `version` FROM `{scope_search.versions_table(table)}` "
            f"WHERE `user_id` = '{uid}'",
            f"SELECT `{vs.primary_field}`, `{vs.vector_field}`, `created_at`, `metadata` "
            f"FROM `{table}` WHERE `user_id` = '{uid}' ORDER BY `{vs.primary_field}`",
            f"SELECT `{vs.primary_field}` FROM `{table}` WHERE `user_id` = 'no such case'",
            "SELECT 'Café «Zoë» Ω, 100%s', 'it''s', 1.5, NULL"]  # sealed rows hold no accent
    with statements(gw.memory) as a, statements(gw.memory, through_engine=True) as b:
        assert type(a).__name__ == "_Embedded" and type(b).__name__ == "_Engine"
        for sql in sqls:
            rows_a, rows_b = a.rows(sql), b.rows(sql)
            assert rows_a == rows_b, sql[:80]
            assert [list(map(type, r)) for r in rows_a] == [list(map(type, r)) for r in rows_b]
        assert len(a.rows(sqls[1])) >= 3 and a.rows(sqls[3]) == []
        assert a.rows(sqls[4])[0][:2] == ("Café «Zoë» Ω, 100%s", "it's")
    with pytest.MonkeyPatch.context() as m:
        m.setattr(scope_search, "statements", partial(statements, through_engine=True))
        search.index.forget(uid)
        engine_way, _ = gw.search_scopes(case.space, owners, vector, 5)
    assert {o: [(c.id, c.score, c.content) for c in straight[o]] for o in owners} == \
           {o: [(c.id, c.score, c.content) for c in engine_way[o]] for o in owners}
    assert odd in [c.content for c in straight["detective"]]


@pytest.mark.parametrize("limit", [1, 3, 5, 20])
def test_one_statement_equals_powermems_search_per_scope(bureau, limit):
    cases = [bureau.load_scenario("safe-combination") for _ in range(3)]
    try:
        for n, c in enumerate(cases):
            for i in range(8):
                c.whisper("detective", f"Case {n} note {i}: a grey raincoat seen near the "
                                       f"{['garden', 'cellar', 'attic', 'study'][i % 4]}.")
            c.publish("informant", c.seed_card("safe-code").id)
            c.publish("detective", c.seed_card("cctv").id)
        gw = bureau.gateway
        for c in cases:
            for question in (Q, "Who wore a grey raincoat?", "Where is the attic?"):
                vector, _ = gw.embed_query(question)
                owners = ["detective", BOARD, "suspect"]
                fast, _ = gw.search_scopes(c.space, owners, vector, limit)
                for owner in owners:
                    slow, _ = gw.search_scope(c.space, owner, vector, limit)
                    assert [(x.id, x.score, x.owner, x.content) for x in fast[owner]] == \
                           [(x.id, x.score, x.owner, x.content) for x in slow], (question, owner)
                    assert all(x.case_id == c.id for x in fast[owner])
    finally:
        for c in cases:
            bureau.delete_case(c.id)


def test_a_search_of_empty_scopes_returns_nothing_without_parsing_the_statement(
        bureau, case, monkeypatch):
    """A search whose scopes hold no card (a fresh board, a role with no memory) returns an
    empty list per scope, and never sends the driver down its empty-result path: there
    pyobvector parses the whole ~20 kB statement with sqlglot to name the columns (~6 ms of
    Python a search; the leak lab makes hundreds of such searches)."""
    from functools import partial

    import pyobvector.client.seekdb_engine as seekdb_engine

    import bureau.storage.scope_search as scope_search
    from bureau.storage.statements import statements

    # The way a statement takes through SQLAlchemy (a server store's; embedded statements go
    # straight to seekdb's connection and never meet pyobvector's cursor at all).
    monkeypatch.setattr(scope_search, "statements", partial(statements, through_engine=True))
    parsed = []
    monkeypatch.setattr(seekdb_engine, "_description_from_select",
                        lambda sql: parsed.append(sql) or [])
    gw = bureau.gateway
    vector, _ = gw.embed_query(Q)
    found, _ = gw.search_scopes(case.space, [BOARD, "nobody-here"], vector, 5)
    assert found == {BOARD: [], "nobody-here": []}
    full, _ = gw.search_scopes(case.space, ["informant", BOARD], vector, 5)
    assert full[BOARD] == [] and full["informant"]  # the NULL row is never a card
    assert all(c.id and c.owner == "informant" for c in full["informant"])
    assert parsed == []


def test_the_query_literal_names_every_float32_exactly():
    """The search statement's literal must give seekdb the very float32 values PowerMem's own
    literal gives (the test above compares scores on real seekdb); here the round trip itself,
    parsed as float32 directly and as a double then rounded, over random unit vectors and the
    float32 extremes (subnormals, the largest, signed zero)."""
    import numpy as np

    from bureau.storage.rows import vector_literal

    rng = np.random.default_rng(31)
    vectors = [v / np.linalg.norm(v) for v in rng.standard_normal((200, 384))]
    info = np.finfo(np.float32)
    edges = np.array([0.0, -0.0, info.tiny, info.smallest_subnormal, -info.smallest_subnormal,
                      info.max, -info.max, info.eps, 1 - info.epsneg, 1 / 3], dtype=np.float32)
    vectors.append(np.resize(edges, 384))
    for v in vectors:
        want = np.asarray(v).astype(np.float32)
        text = vector_literal(v)[1:-1].split(",")
        assert np.array_equal(np.array(text, dtype=np.float32), want)
        assert np.array_equal(np.array([float(t) for t in text]).astype(np.float32), want)
        assert np.array_equal(np.signbit(np.array(text, dtype=np.float32)), np.signbit(want))
        # the same text as writing each number on its own (the literal seekdb has always parsed)
        assert vector_literal(v) == "[" + ",".join(f"{x:.9g}" for x in want.tolist()) + "]"
    assert vector_literal(np.zeros(3)) == "[0,0,0]" and vector_literal(np.zeros(0)) == "[]"
