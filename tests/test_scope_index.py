"""The scope cache (issue 36) returns exactly seekdb's exact search, in every process.

Real seekdb, real MiniLM. The reference is ``MemoryGateway.search_scopes_exact``: seekdb scans
every row of each scope, ``ORDER BY cosine_distance, id LIMIT k``. The cached search must give
the same cards, in the same order, with the same scores and the same empty scopes, on random
stores of several sizes (with exact duplicates, so ties at the k-th place are decided by id),
sealed (issue 51: the store's vector column is noise, the matrices hold the opened vectors and
the exact reference opens them afresh for each search) and not,
after deletes, revocation, expiry, forgetting and reset, and after a writer in another process
(writing sealed) changed the scope. Actor: an agent or operator asking after a card was taken
away must not get it back from this process's copy of the vectors.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from conftest import REPO

from bureau.errors import ConfigurationError
from bureau.labs.bench.runner import questions, synthetic_cards
from bureau.model import BOARD
from bureau.settings import Settings
from bureau.storage.gateway import MemoryGateway
from bureau.storage.scope_index import BAND, ScopeIndex

OWNERS = ["detective", BOARD, "suspect", "nobody"]
CLEAR = ["clerk-a", "clerk-b", "clerk-c", "nobody"]
"""Scopes the scenario seeds nothing into (its seed cards are sealed), written in clear."""


def _same(gw, case, qs, ks=(1, 5, 12), owners=OWNERS) -> int:
    """Cached and exact search agree on every question and k; returns the cards compared."""
    compared = 0
    for q in qs:
        vector, _ = gw.embed_query(q)
        for k in ks:
            cached, _ = gw.search_scopes(case.space, owners, vector, k)
            exact, _ = gw.search_scopes_exact(case.space, owners, vector, k)
            for owner in owners:
                got = [(c.id, c.owner, c.content, c.score) for c in cached[owner]]
                want = [(c.id, c.owner, c.content, c.score) for c in exact[owner]]
                assert [g[:3] for g in got] == [w[:3] for w in want], (q, k, owner)
                assert all(abs(g[3] - w[3]) <= 1e-6 for g, w in zip(got, want, strict=True))
                compared += len(want)
    return compared


def _fill(gw, case, n: int, seed: int, owners=OWNERS) -> None:
    rng = random.Random(seed)
    texts = synthetic_cards(n, seed=seed)
    texts += rng.sample(texts, max(2, n // 20))  # exact duplicates: ties decided by id
    rng.shuffle(texts)
    meta = {"visibility": "private", "topic": "bench", "kind": "note"}
    for i, owner in enumerate(owners[:3]):
        gw.add_many(case.space, owner, [(t, meta) for t in texts[i::3]])


@pytest.mark.parametrize(("n", "sealed"), [(30, True), (400, True), (1500, True),
                                           (30, False), (400, False)])
def test_cached_search_equals_seekdbs_exact_search(bureau, n, sealed):
    gw, owners = bureau.gateway, OWNERS
    if not sealed:  # the same store written and searched in clear
        gw = MemoryGateway(bureau.settings.with_(seal=False), gw.memory, gw.encoder)
        owners = CLEAR
    me = owners[0]
    case = bureau.load_scenario("safe-combination")
    uid = case.space.store_id
    try:
        _fill(gw, case, n, seed=n, owners=owners)
        assert gw.sealer.sealed_scope(uid, me) == sealed  # a sealed scope: searched here
        qs = questions(6, f"equal-{n}") + synthetic_cards(3, seed=n)  # and cards' own texts
        assert _same(gw, case, qs, owners=owners) > 0
        held = gw.scopes.get(uid, me)
        assert held.n == gw.count(case.space, me)
        card = gw.list(case.space, me)[-1]
        clear = gw.encoder.embed([card.content])[0]
        row = held.vecs[list(held.ids[: held.n]).index(int(card.id))]
        cos = float(clear @ row / np.linalg.norm(row))
        assert cos > 0.99 and held.sealed == sealed, cos  # the card's own vector, opened
        # writes of this process update the matrices in place, and stay exact
        doomed = [c.id for c in gw.list(case.space, me)[:: max(1, n // 10)]]
        for cid in doomed:
            assert gw.delete(case.space, me, cid)
        gw.add(case.space, me, "A second brass key was found in the greenhouse at dawn.",
               {"visibility": "private", "topic": "bench", "kind": "note"})
        assert gw.scopes.get(uid, me).n == gw.count(case.space, me)
        assert not set(map(int, doomed)) & set(held.ids[: held.n].tolist())
        _same(gw, case, qs[:4] + ["Who found a brass key in the greenhouse?"], owners=owners)
        fp = gw.scope_search.footprint()
        assert 0 < fp["ratio"] <= bureau.settings.scope_cache
    finally:
        gw.purge_case(case.space)
        bureau.delete_case(case.id)
    assert not any(key[0] == uid for key in gw.scopes._scopes)  # the purge forgot them


def test_a_scope_holding_sealed_and_unsealed_cards_is_searched_exactly(bureau):
    """Cards written unsealed (before sealing, or with ``BUREAU_SEAL=0``) and sealed ones in
    one scope: the scope is searched in the process (its matrix holds the unsealed cards'
    vectors as stored, the sealed ones' opened), the same cards and scores as the exact
    reference, the unsealed cards found as the sealed ones are, both before and after a matrix
    is built; a sealed card forgotten leaves, an unsealed one stays."""
    gw = bureau.gateway
    plain = MemoryGateway(bureau.settings.with_(seal=False), gw.memory, gw.encoder)
    case = bureau.load_scenario("safe-combination")
    uid = case.space.store_id
    meta = {"visibility": "private", "topic": "bench", "kind": "note"}
    texts = synthetic_cards(40, seed=51)
    try:
        clear = plain.add_many(case.space, "detective", [(t, meta) for t in texts[:20]])
        qs = [texts[3], texts[25], *questions(3, "mixed")]
        _same(gw, case, qs[:1], owners=["detective"])  # a matrix of clear cards only
        sealed = gw.add_many(case.space, "detective", [(t, meta) for t in texts[20:30]])
        held = gw.scopes.get(uid, "detective")
        assert held.sealed and held.clear == {int(c.id) for c in clear}
        plain.add_many(case.space, "detective", [(t, meta) for t in texts[30:]])
        _same(gw, case, qs, owners=["detective"])
        for q, want in ((texts[3], clear[3].id), (texts[25], sealed[5].id)):
            vector, _ = gw.embed_query(q)
            assert gw.search_scopes(case.space, ["detective"], vector, 1)[0]["detective"][
                0].id == want
        gw.scopes.forget(uid, "detective")  # built afresh from the store: the same
        _same(gw, case, qs, owners=["detective"])
        assert gw.scopes.get(uid, "detective").clear >= {int(c.id) for c in clear}
        assert gw.delete(case.space, "detective", sealed[5].id)
        vector, _ = gw.embed_query(texts[25])
        found = gw.search_scopes(case.space, ["detective"], vector, 40)[0]["detective"]
        assert sealed[5].id not in {c.id for c in found} and len(found) == 40  # 41 left
    finally:
        bureau.delete_case(case.id)


def test_revocation_and_reset_reach_the_cache(bureau, case):
    gw = bureau.gateway
    copy = case.publish("informant", case.seed_card("safe-code").id)
    q = "What is the combination of the safe in the study?"
    vector, _ = gw.embed_query(q)
    found, _ = gw.search_scopes(case.space, ["detective", BOARD], vector, 5)
    assert copy.id in [c.id for c in found[BOARD]]
    case.revoke(copy.source_id or case.seed_card("safe-code").id)
    found, _ = gw.search_scopes(case.space, ["detective", BOARD], vector, 5)
    assert copy.id not in [c.id for c in found[BOARD]]
    _same(gw, case, [q])
    held = gw.scopes.get(case.space.store_id, BOARD)
    assert int(copy.id) not in held.ids[: held.n].tolist()
    old = case.space.store_id
    case.reset()
    assert not any(key[0] == old for key in gw.scopes._scopes)
    assert not case.retrieve("detective", q).hits
    _same(gw, case, [q])


def test_expired_and_forgotten_cards_never_come_back_from_the_cache(bureau, case):
    """Expiry and forgetting delete the rows (and destroy the keys): the cards leave the
    matrices. A key destroyed while its row is still there (a crash between the two steps of
    a forget) takes its vector out of the matrix at the next search that would rank it, and
    the next card moves up, as in a matrix opened afresh."""
    gw, uid = bureau.gateway, case.space.store_id
    soon = case.whisper("detective", "The bus timetable to the harbour changed in May.")
    gone = case.whisper("detective", "The spare key is taped under the third stair.")
    shown = case.publish("detective", gone.id)
    half = case.whisper("detective", "The cellar door squeaks when it rains.")
    qs = ["When did the harbour bus timetable change?", "Where is the spare key?",
          "Which door squeaks in the rain?"]
    for q in qs:  # the matrices are built and hold all four cards
        vector, _ = gw.embed_query(q)
        found, _ = gw.search_scopes(case.space, ["detective", BOARD], vector, 3)
        assert found["detective"][0].id in {soon.id, gone.id, half.id}
    case.expire(soon.id, 0.2)
    time.sleep(0.3)
    case.cards("detective")  # any read after the expiry fell due
    assert set(case.forget(gone.id)) >= {gone.id, shown.id}
    gw.sealer.forget(uid, "detective", [half.id])  # the key only: the row stays, as noise
    taken = {soon.id, gone.id, shown.id, half.id}
    for owner in ("detective", BOARD):
        held = gw.scopes.get(uid, owner)
        assert held is not None
        assert not {soon.id, gone.id, shown.id} & set(map(str, held.ids[: held.n].tolist()))
    held = gw.scopes.get(uid, "detective")
    assert int(half.id) in held.ids[: held.n].tolist()  # until a search ranks it
    for q in qs:
        vector, _ = gw.embed_query(q)
        for k in (1, 3, 8):
            found, _ = gw.search_scopes(case.space, ["detective", BOARD], vector, k)
            assert not taken & {c.id for cs in found.values() for c in cs}
        assert not taken & {c.id for s in case.retrieve("detective", q).scopes
                            for c in (*s.hits, *s.below_threshold)}
    _same(gw, case, qs, ks=(1, 3, 8))
    assert int(half.id) not in held.ids[: held.n].tolist()


WRITER = textwrap.dedent("""
    import json, sys, time
    from bureau import Bureau
    from bureau.model import BOARD
    bureau = Bureau.open()
    case = bureau.case(sys.argv[1])
    gw = bureau.gateway
    doomed = json.loads(sys.argv[2])
    meta = {"visibility": "private", "topic": "bench", "kind": "note"}
    new = []
    for i in range(int(sys.argv[3])):
        new += [c.id for c in gw.add_many(case.space, "detective",
                                          [(f"Writer note {i}: the cellar lamp was lit.", meta)])]
        if doomed:
            gw.delete(case.space, "detective", doomed.pop())
        time.sleep(0.05)
    print(json.dumps(new))
""")


def _writer(case, doomed: list[str], n: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, case.id, json.dumps(doomed), str(n)], cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)


def test_a_writer_in_another_process_is_seen(bureau):
    """This process's matrices are built, then another process adds and deletes cards in the
    scope (while this one keeps searching): every later search equals the exact one."""
    gw = bureau.gateway
    case = bureau.load_scenario("safe-combination")
    try:
        _fill(gw, case, 150, seed=5)
        qs = ["Who lit the cellar lamp?", *questions(3, "writer")]
        _same(gw, case, qs, ks=(5,))  # matrices built before the writer
        doomed = [c.id for c in gw.list(case.space, "detective")[:6]]
        proc = _writer(case, doomed, 12)
        while proc.poll() is None:  # searching while the other process writes
            vector, _ = gw.embed_query(qs[0])
            gw.search_scopes(case.space, OWNERS, vector, 5)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err[-3000:]
        new = json.loads(out.strip().splitlines()[-1])
        _same(gw, case, qs)
        vector, _ = gw.embed_query(qs[0])
        found, _ = gw.search_scopes(case.space, ["detective"], vector, 12)
        assert set(new) <= {c.id for c in found["detective"]}
        held = gw.scopes.get(case.space.store_id, "detective")
        assert not set(map(int, doomed)) & set(held.ids[: held.n].tolist())
        assert held.n == gw.count(case.space, "detective")
        assert {c.id for c in gw.list(case.space, "detective") if c.id in new} == set(new)
        vs = gw.memory.storage.vector_store
        with gw.sql_engine.connect() as conn:  # the writer wrote sealed (the default)
            bodies = conn.exec_driver_sql(
                f"SELECT `{vs.text_field}` FROM `{vs.collection_name}` WHERE "
                f"`{vs.primary_field}` IN ({', '.join(new)})").fetchall()
        assert len(bodies) == len(new) and all(b[0].startswith("sealed:1:") for b in bodies)
    finally:
        bureau.delete_case(case.id)


def test_a_write_here_after_a_writer_elsewhere_does_not_hide_the_others_cards(bureau):
    """This process's write counts its matrix one version on without reading the store's
    version back. Another process writes first (its cards are not in this process's matrix),
    then this process writes before any search: the store's version is two steps on, so the
    very next search must see the matrix is behind and rebuild it, not trust it because this
    process's own write was counted. Actor: an operator or agent asking after another process
    (a classroom learner's second kernel, a worker) wrote."""
    gw = bureau.gateway
    case = bureau.load_scenario("safe-combination")
    try:
        _fill(gw, case, 60, seed=9)
        qs = ["Who lit the cellar lamp?"]
        _same(gw, case, qs, ks=(5,))  # matrices built
        uid = case.space.store_id
        before = gw.scopes.get(uid, "detective").version
        proc = _writer(case, [], 3)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-3000:]
        theirs = set(json.loads(out.strip().splitlines()[-1]))
        meta = {"visibility": "private", "topic": "bench", "kind": "note"}
        mine = gw.add_many(case.space, "detective", [("My note: the cellar lamp was lit.", meta)])
        held = gw.scopes.get(uid, "detective")
        assert held.version == before + 1  # counted, not read back
        vector, _ = gw.embed_query(qs[0])
        found, _ = gw.search_scopes(case.space, ["detective"], vector, 8)
        assert theirs | {mine[0].id} <= {c.id for c in found["detective"]}
        rebuilt = gw.scopes.get(uid, "detective")
        assert rebuilt.version == before + 4 and rebuilt.n == gw.count(case.space, "detective")
        _same(gw, case, qs)
    finally:
        bureau.delete_case(case.id)


def test_matrix_candidates_hold_the_exact_top_k_and_the_bound():
    """Unit check of :class:`ScopeMatrix`: candidates include the exact top-k (float64),
    appends and drops keep ids and rows together, memory stays within the bound."""
    rng = np.random.default_rng(3)
    index = ScopeIndex(16, 1.5)
    m = index.new("case", "role", version=0)
    vecs = rng.standard_normal((500, 16)).astype(np.float32)
    m.append(range(1, 501), vecs)
    m.drop(range(1, 501, 3))
    ids, kept = m.ids[: m.n], m.vecs[: m.n]
    assert np.array_equal(kept, vecs[ids - 1])
    for _ in range(20):
        q = rng.standard_normal(16).astype(np.float32)
        exact = 1 - (kept.astype(np.float64) @ q) / (
            np.linalg.norm(kept.astype(np.float64), axis=1) * np.linalg.norm(q))
        top = set(ids[np.argsort(exact, kind="stable")[:7]].tolist())
        cands = set(m.candidates(q, 7))
        assert top <= cands and len(cands) <= 7 + np.sum(exact <= np.sort(exact)[6] + 2 * BAND)
    assert index.footprint()["ratio"] <= 1.5
    m.drop(ids[:300].tolist())
    assert index.footprint()["ratio"] <= 1.5
    index.forget("case")
    assert index.footprint()["cards"] == 0


def test_the_cache_setting_is_checked():
    assert Settings(scope_cache=0).scope_cache == 0
    for bad in (0.5, 1.0, 9, True, "big"):
        with pytest.raises(ConfigurationError):
            Settings(scope_cache=bad)


def test_the_cache_can_be_turned_off_from_the_environment(monkeypatch):
    monkeypatch.setenv("BUREAU_SCOPE_CACHE", "0")
    assert Settings.from_env().scope_cache == 0
    monkeypatch.setenv("BUREAU_SCOPE_CACHE", "0.9")
    with pytest.raises(ConfigurationError, match="BUREAU_SCOPE_CACHE"):
        Settings.from_env()


def test_the_cache_is_turned_off_and_on_in_an_open_bureau(bureau, case):
    """``bureau.settings = ...with_(scope_cache=0)`` reaches the gateway: nothing is held, the
    search is PowerMem's own and finds the same card; back on, the matrices are rebuilt."""
    gw, before = bureau.gateway, bureau.settings
    q = "What is the combination of the safe in the study?"
    on = [c.id for s in case.retrieve("informant", q).scopes for c in s.hits]
    try:
        bureau.settings = before.with_(scope_cache=0)
        assert not gw.scopes.enabled and gw.scope_search.footprint()["scopes"] == 0
        off = [c.id for s in case.retrieve("informant", q).scopes for c in s.hits]
        assert off == on and on
        assert gw.scope_search.footprint()["scopes"] == 0
    finally:
        bureau.settings = before
    assert gw.scopes.enabled
    assert [c.id for s in case.retrieve("informant", q).scopes for c in s.hits] == on
    assert gw.scope_search.footprint()["scopes"] >= 2


def test_a_purge_rebuilds_the_matrix_at_the_writer_not_at_the_next_reader(bureau, case):
    """Issue 36 and the timing rule: a write that cannot bring a matrix along (a purged scope)
    rebuilds it at once, so the next role to search the board does not pay for a build whose
    presence would tell it whether another role had searched since."""
    gw = bureau.gateway
    uid = case.space.store_id
    case.publish("informant", case.seed_card("safe-code").id)
    vector, _ = gw.embed_query("the safe")
    gw.search_scopes(case.space, ["detective", BOARD], vector, 5)
    before = gw.scopes.get(uid, BOARD)
    assert before is not None and before.n >= 1
    gw.purge_owner(case.space, BOARD)
    after = gw.scopes.get(uid, BOARD)
    assert after is not None and after is not before and after.n == 0  # built by the purge
    found, _ = gw.search_scopes(case.space, ["detective", BOARD], vector, 5)
    assert found[BOARD] == [] and gw.scopes.get(uid, BOARD) is after  # the reader built nothing
