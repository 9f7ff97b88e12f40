"""Sealed memory (issue 31): card text sealed under per-card keys, forgetting that reaches the
disk. Each test names the actor it holds against: someone with a copy of the data directory or
the database's files (the observer of the disk), the database administrator, an agent.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import uuid

import numpy as np
import pytest
from conftest import REPO
from sqlalchemy import text

from bureau.errors import ForgetRefusedError, SealKeysLostError, UnknownCardError
from bureau.model import BOARD
from bureau.sealing import KeyStore
from bureau.sealing.cipher import row_ad, seal, unseal
from bureau.sealing.keys import _name, parse_scope_file
from bureau.sealing.rotation import rotation
from bureau.sealing.vectors import noise, open_vectors, seal_vector
from bureau.service.faults import FORGET_POINTS
from bureau.storage.gateway import MemoryGateway


# -- the parts, without a store ----------------------------------------------------------------
def test_a_sealed_text_opens_only_in_its_own_row():
    """The administrator copies a sealed text into another scope, card or field: it does not
    open there (the associated data binds it to its row)."""
    key = os.urandom(32)
    own = row_ad("case:a#1:0", "detective", "11", "content")
    token = seal(key, "The vault code is 7-1-4.", own)
    assert token.startswith("sealed:1:") and "vault" not in token
    assert unseal(key, token, own) == "The vault code is 7-1-4."
    for other in (row_ad("case:a#1:0", "suspect", "11", "content"),
                  row_ad("case:b#1:0", "detective", "11", "content"),
                  row_ad("case:a#1:0", "detective", "12", "content"),
                  row_ad("case:a#1:0", "detective", "11", "meta")):
        assert unseal(key, token, other) is None
    assert unseal(os.urandom(32), token, own) is None


def test_a_sealed_vector_opens_only_in_its_own_row_and_the_column_holds_noise():
    """The administrator holds a sealed card's vector token: without the card's key it opens
    nowhere, moved to another row (scope, card, field) it does not open, and a token altered by
    one character is refused, never read as some other vector. What the store's vector column
    holds instead is noise: unit length, independent of the text (a guess's embedding scores
    against it as against a random direction) and fresh for every row."""
    rng = np.random.default_rng(5)
    v = rng.standard_normal((6, 384)).astype(np.float32)
    keys = {str(i): os.urandom(32) for i in range(6)}
    rows = [(str(i), seal_vector(keys[str(i)], v[i], "ns", "detective", str(i)))
            for i in range(6)]
    kept, opened = open_vectors(keys, "ns", "detective", rows, 384)
    assert kept == [str(i) for i in range(6)] and np.array_equal(opened, v)
    assert open_vectors(keys, "ns", "suspect", rows, 384)[0] == []  # another scope
    assert open_vectors(keys, "ns2", "detective", rows, 384)[0] == []  # another case
    swapped = [("0", rows[1][1]), ("1", rows[0][1])]
    assert open_vectors(keys, "ns", "detective", swapped, 384)[0] == []  # another card's
    forgotten = {k: key for k, key in keys.items() if k != "2"}
    assert open_vectors(forgotten, "ns", "detective", rows, 384)[0] == ["0", "1", "3", "4", "5"]
    token = rows[3][1]
    bad = token[:40] + ("A" if token[40] != "A" else "B") + token[41:]
    assert open_vectors(keys, "ns", "detective", [("3", bad)], 384)[0] == []
    wrong_keys = {k: os.urandom(32) for k in keys}
    assert open_vectors(wrong_keys, "ns", "detective", rows, 384)[0] == []
    filler = noise(2000, 384)
    assert np.allclose(np.linalg.norm(filler, axis=1), 1, atol=1e-5)
    assert np.abs(filler @ (v[0] / np.linalg.norm(v[0]))).max() < 0.3  # no direction of it
    assert not np.array_equal(noise(1, 384), noise(1, 384))


def test_a_draw_gives_the_same_rotation_for_good():
    """The retired rotation is still redrawn from a v1 scope's key when a store written before
    issue 51 is migrated, so a draw may never change: these entries were drawn by the first
    version of each draw (draw 2: before its fill was rewritten); vectors turned then must
    turn back now."""
    q1, q2 = rotation(b"k" * 32, 384, 1), rotation(b"k" * 32, 384, 2)
    assert np.allclose(q1[0, :3], [-0.09618770451094116, -0.029839267506720887,
                                   0.012190180450006428], rtol=0, atol=1e-12)
    assert np.allclose(q2[0, :3], [-0.09836359554327223, 0.05828092893865713,
                                   -0.043128752906544075], rtol=0, atol=1e-12)
    assert np.allclose(q2[383, -3:], [-0.10779104071907125, -0.01587764161676177,
                                      0.00589279527951094], rtol=0, atol=1e-12)
    assert abs(q2[100, 200] - 0.01853549673612409) < 1e-12


def test_an_opened_card_is_served_again_only_while_its_key_and_row_are_the_same(
        tmp_path, monkeypatch):
    """The sealer keeps what a search opened for the next search of the same scopes (the leak
    lab opens each card ~15 times), but a card forgotten by another process (another key store
    on the same folder), a row altered or copied by the administrator, and a forgotten scope
    or case are never served from it; and a card one role's search opened is opened afresh for
    another role (the agent timing its search learns nothing of who asked what before)."""
    import bureau.sealing as sealing

    a, b = sealing.Sealer(tmp_path / "seal.keys"), sealing.Sealer(tmp_path / "seal.keys")
    _, sealed = a.seal("ns", "board", [(str(i), t, {"abstraction": f"about {i}", "topic": "t"})
                                       for i, t in enumerate(TEXTS[:3])])
    rows = [{"id": str(i), "agent_id": "board", "memory": body, "metadata": dict(meta)}
            for i, (body, meta) in enumerate(sealed)]
    calls = []
    real = sealing.unseal
    monkeypatch.setattr(sealing, "unseal", lambda *x: calls.append(1) or real(*x))
    detective, suspect = ("detective", "board"), ("suspect", "board")
    first = a.open_rows("ns", rows, detective)
    assert [r["content"] for r in first] == TEXTS[:3] and len(calls) == 6  # text and metadata
    assert first[1]["metadata"] == {"abstraction": "about 1", "topic": "t"}
    first[1]["metadata"]["abstraction"] = "changed by a caller"
    again = a.open_rows("ns", rows, detective)
    assert again == a.open_rows("ns", rows, detective) and len(calls) == 6  # no AES-GCM
    assert again[1]["metadata"]["abstraction"] == "about 1"  # a caller's change is its own
    assert a.open_rows("ns", rows, suspect) == again and len(calls) == 12  # its own opening
    assert a.open_rows("ns", rows) == again and len(calls) == 18  # no reader: nothing kept
    assert a.open_rows("ns", rows) == again and len(calls) == 24
    swapped = [{**rows[0], "memory": rows[1]["memory"]}, {**rows[2], "id": "1"}]
    assert a.open_rows("ns", swapped, detective) == []  # moved tokens: bound to their rows
    assert b.forget("ns", "board", ["0"]) == 1  # another process destroys card 0's key
    assert [r["id"] for r in a.open_rows("ns", rows, detective)] == ["1", "2"]
    assert a.forget("ns", "board", ["1"]) == 1  # a forget here drops it for every reader
    assert {s[3] for s in a._opened} == {"0", "2"}  # 0: kept here, never served again
    assert a.forget_scope("ns", "board") and a.open_rows("ns", rows, detective) == []
    assert not a._opened and not a._opened_in
    monkeypatch.setattr(sealing, "OPENED_CAP", 2)  # bounded: the oldest go first
    _, more = a.seal("ns2", "x1", [(str(i), t, {}) for i, t in enumerate(TEXTS[:3])])
    a.open_rows("ns2", [{"id": str(i), "agent_id": "x1", "memory": body, "metadata": m}
                        for i, (body, m) in enumerate(more)], ("x1",))
    assert [s[3] for s in a._opened] == ["1", "2"] and a._opened_in == {"ns2": set(a._opened)}
    a.forget_namespace("ns2")
    assert not a._opened and not a._opened_in


def test_destroyed_keys_leave_no_old_copy_in_the_key_store(tmp_path):
    """A forgotten card's wrapped key is in no file of the key store afterwards (rewritten to a
    new file and renamed, never edited in place), and a second holder (another process) that
    had read it before no longer finds it."""
    store, other = KeyStore(tmp_path / "seal.keys"), KeyStore(tmp_path / "seal.keys")
    _, keys = store.new_cards("ns", "detective", ["1"])
    keys.update(store.new_cards("ns", "detective", ["2"])[1])  # appended to the same file
    path = store.scope_path("ns", "detective")
    wrapped = parse_scope_file(path.read_bytes())[1]
    assert set(wrapped) == {"1", "2"} and path.read_bytes().count(b"\n") == 2
    assert path.stat().st_mode & 0o777 == 0o600 and store.root.stat().st_mode & 0o777 == 0o700
    assert other.data_keys("ns", "detective", ["1", "2"]) == keys  # cached by the other holder
    inode = path.stat().st_ino
    assert store.forget_cards("ns", "detective", ["1"]) == 1
    assert path.stat().st_ino != inode
    blob = b"".join(p.read_bytes() for p in store.root.rglob("*") if p.is_file())
    assert wrapped["1"].encode() not in blob and wrapped["2"].encode() in blob
    assert keys["1"].hex().encode() not in blob and keys["1"] not in blob
    assert other.data_keys("ns", "detective", ["1", "2"]) == {"2": keys["2"]}
    assert not [p for p in store.root.rglob("*") if p.name.endswith(".tmp")]
    store.forget_cards("ns", "detective", ["2"])
    assert not path.exists()  # the scope key goes with the last card
    assert other.scope_key("ns", "detective") is None
    assert store.held() == {"scopes": 0, "card_keys": 0}


def test_a_new_card_appends_its_key_and_a_torn_append_loses_no_other_card(tmp_path):
    """A card added to a scope costs one appended, fsynced line (not a rewrite of the scope's
    every key: the write cost, issue 31 §4). A line a crash cut short is skipped by every
    reader and the next append starts a fresh line; a forget folds the lines into one file."""
    store = KeyStore(tmp_path / "seal.keys")
    _, keys = store.new_cards("ns", "s", ["1", "2"])
    path = store.scope_path("ns", "s")
    inode = path.stat().st_ino
    keys.update(store.new_cards("ns", "s", ["3"])[1])
    assert path.stat().st_ino == inode  # appended in place, not rewritten
    with open(path, "ab") as f:  # a crash mid-append: half a line, no newline
        f.write(b'{"cards":{"9":"AAAA')
    keys.update(store.new_cards("ns", "s", ["4"])[1])
    fresh = KeyStore(tmp_path / "seal.keys")  # another process reading the file
    assert fresh.data_keys("ns", "s", ["1", "2", "3", "4", "9"]) == keys
    assert store.forget_cards("ns", "s", ["2"]) == 1
    assert path.stat().st_ino != inode and path.read_bytes().count(b"\n") == 1
    assert KeyStore(tmp_path / "seal.keys").data_keys("ns", "s", ["1", "2", "3", "4"]) == {
        c: keys[c] for c in ("1", "3", "4")}
    for i in range(70):  # many appends fold into one line again (a reader's parse stays short)
        store.new_cards("ns", "s", [f"m{i}"])
    assert path.read_bytes().count(b"\n") <= 65
    assert len(KeyStore(tmp_path / "seal.keys").data_keys(
        "ns", "s", ["1", "3", "4", *(f"m{i}" for i in range(70))])) == 73


@pytest.mark.parametrize("head", [{"v": 1, "rotation": 99}, {"v": 1, "rotation": "2"},
                                  {"v": 1, "rotation": True}, {"v": 1, "rotation": None},
                                  {"v": 1, "rotation": 0}, {"v": 2, "rotation": 2}, {"v": 3},
                                  {"v": True}, {"v": "2"}])
def test_a_key_file_naming_an_unknown_version_or_draw_is_a_lost_key_file(tmp_path, head):
    """A damaged or foreign head (a v1 file naming a draw this bureau does not have, or the
    right number as a string or a boolean; a v2 file naming a draw; a version this bureau does
    not know) is refused when the file is read, as a typed error naming the file: a v1 scope's
    vectors could not be turned back by a guessed draw."""
    store = KeyStore(tmp_path / "seal.keys")
    store.new_cards("ns", "s", ["1"])
    path = store.scope_path("ns", "s")
    lines = path.read_bytes().split(b"\n")
    first = json.loads(lines[0])
    assert first["v"] == 2 and "rotation" not in first
    assert KeyStore(store.root).scope_key("ns", "s").draw is None
    for good in ({"v": 1}, {"v": 1, "rotation": 2}):  # what an issue-31 store wrote
        path.write_bytes(b"\n".join([json.dumps({**first, **good}).encode(), *lines[1:]]))
        assert KeyStore(store.root).scope_key("ns", "s").draw == good.get("rotation", 1)
    path.write_bytes(b"\n".join([json.dumps({**{k: v for k, v in first.items() if k != "v"},
                                             **head}).encode(), *lines[1:]]))
    for reader in (store, KeyStore(store.root)):  # the holder that wrote it, and a fresh one
        with pytest.raises(SealKeysLostError, match=f"{path}.*not a key file"):
            reader.scope_key("ns", "s")
        with pytest.raises(SealKeysLostError, match="not a key file"):
            reader.data_keys("ns", "s", ["1"])


# -- the store ---------------------------------------------------------------------------------
def _raw(gw, space, ids):
    """The store's own rows (every column, by name: embedded seekdb names result columns
    ``column_N``), as the administrator or a backup sees them."""
    vs = gw.memory.storage.vector_store
    with gw.sql_engine.connect() as conn:
        cols = [str(r[0]) for r in conn.execute(text(f"SHOW COLUMNS FROM `{vs.collection_name}`"))]
        rows = conn.execute(text(
            f"SELECT {', '.join(f'`{c}`' for c in cols)} FROM `{vs.collection_name}` "
            "WHERE `user_id` = :u"), {"u": space.store_id}).fetchall()
    rows = [dict(zip(cols, r, strict=True)) for r in rows]
    return [r for r in rows if str(r[vs.primary_field]) in ids]


def _vector(value) -> np.ndarray:
    return np.asarray(json.loads(value) if isinstance(value, str | bytes) else value, float)


TEXTS = [
    "The gardener keeps the shed key behind the loose brick.",
    "The safe in the study opens with 7-1-4-9.",
    "Mrs Pike saw a red umbrella near the station at nine.",
    "The night train to Leeds left twenty minutes late.",
    "A blue car was parked outside the bakery all evening.",
    "The butler burned a letter in the kitchen stove.",
    "The study window was forced from the outside.",
    "Someone paid the cab driver in old banknotes.",
]
QUESTIONS = ["Where is the shed key?", "How does the safe open?", "Who had an umbrella?",
             "Which train was late?", "What was burned?"]


@contextlib.contextmanager
def _sealed_and_clear(bureau):
    """The bureau's (sealed) gateway and an unsealed twin on the same store and encoder, each
    with a fresh case of its own (deleted afterwards)."""
    gw = bureau.gateway
    plain = MemoryGateway(bureau.settings.with_(seal=False), gw.memory, gw.encoder)
    a, b = bureau.load_scenario("safe-combination"), bureau.load_scenario("safe-combination")
    try:
        yield gw, plain, a, b
    finally:
        bureau.delete_case(a.id)
        bureau.delete_case(b.id)


def _assert_same_searches(gw, plain, a, b):
    """Every question finds the same cards, in the same order, with the same cosine, in the
    sealed case ``a`` as in the clear case ``b``; returns each question's vector and sealed hits."""
    found = []
    for q in QUESTIONS:
        vec, _ = gw.embed_query(q)
        sa, _ = gw.search_scopes(a.space, ["x1", "x2", BOARD], vec, 3)
        sb, _ = plain.search_scopes(b.space, ["x1", "x2", BOARD], vec, 3)
        for owner in ("x1", "x2"):
            assert [c.content for c in sa[owner]] == [c.content for c in sb[owner]]
            assert np.allclose([c.score for c in sa[owner]], [c.score for c in sb[owner]],
                               atol=2e-6)
        found.append((vec, sa))
    return found


def test_sealed_search_is_card_for_card_the_unsealed_search(bureau):
    """Sealing changes no search result: the same cards, in the same order, with the same
    cosine, through the union search, one scope's search and the exact reference; while what
    the database holds is ciphertext (text, the labels that name content, the vector) and a
    noise vector column (the administrator's dictionary attack finds nothing)."""
    with _sealed_and_clear(bureau) as (gw, plain, a, b):
        made = {}
        for g, c in ((gw, a), (plain, b)):
            made[c.id] = g.add_many(c.space, "x1", [(t, {"topic": "t"}) for t in TEXTS[:6]])
            made[c.id] += [g.add(c.space, "x2", t, {"abstraction": f"about {i}"})
                           for i, t in enumerate(TEXTS[3:])]
        for vec, sa in _assert_same_searches(gw, plain, a, b):
            ea, _ = gw.search_scopes_exact(a.space, ["x1", "x2", BOARD], vec, 3)
            eb, _ = plain.search_scopes_exact(b.space, ["x1", "x2", BOARD], vec, 3)
            for owner in ("x1", "x2"):
                one_a, _ = gw.search_scope(a.space, owner, vec, 3)
                assert [c.id for c in one_a] == [c.id for c in sa[owner]] == [
                    c.id for c in ea[owner]]
                assert [c.content for c in ea[owner]] == [c.content for c in eb[owner]]
                assert np.allclose([c.score for c in ea[owner]], [c.score for c in eb[owner]],
                                   atol=2e-6)
        assert gw.get(a.space, "x2", made[a.id][-1].id).abstraction == "about 4"
        vs = gw.memory.storage.vector_store
        ids = {c.id for c in made[a.id]}
        sealed_rows = _raw(gw, a.space, ids)
        assert len(sealed_rows) == len(ids)
        clear = gw.encoder.embed(TEXTS)
        for row in sealed_rows:
            assert row[vs.text_field].startswith("sealed:1:")
            assert row["fulltext_content"] == row[vs.text_field]
            meta = json.loads(row[vs.metadata_field])
            assert "about" not in json.dumps(meta) and "topic" not in meta
            assert meta["vector"].startswith("sealed:1:")
            cos = clear @ _vector(row[vs.vector_field])
            assert np.abs(cos).max() < 0.35  # no guess among the texts matches
        for row in _raw(gw, b.space, {c.id for c in made[b.id]}):
            assert (clear @ _vector(row[vs.vector_field])).max() > 0.99  # unsealed: it does


def test_no_sealed_row_keeps_a_label_that_names_or_links_its_content(bureau, case):
    """The administrator reads every row of a case after seeds, a publish, a promotion and
    task-scope writes copied from cards: no sealed row keeps in clear a label that names the
    scenario's seed (``seed_key``, its topic, kind, type), links a copy to its source
    (``source_id``, ``promoted_from``, ``copied_from``, ``source_role``) or fingerprints the
    text (``content_hash``); the labels come back opened, the listings that filter on them
    still find the copies, and revoking the source still reaches every copy (issue 51)."""
    from bureau.sealing import CLEAR_META

    gw, ns = bureau.gateway, case.space.store_id
    informant = case.agent("informant")
    informant.scopes.create("heist")
    informant.scopes.invite("heist", "detective")
    case.agent("detective").scopes.accept("heist")
    source = case.whisper("informant", "The getaway van is parked behind the mill.", topic="van")
    board = informant.publish(source.id)
    promoted = case.promote("informant", source.id)
    informant.scopes.write("heist", "where", from_card=source.id)
    informant.scopes.write("heist", "pasted", "The getaway van is parked behind the mill.")
    seed = case.seed_card("safe-code")
    assert (board.source_id, promoted.promoted_from, seed.seed_key) == (
        source.id, source.id, "safe-code")
    vs = gw.memory.storage.vector_store
    with gw.sql_engine.connect() as conn:
        rows = conn.execute(text(
            f"SELECT `{vs.primary_field}`, `agent_id`, `{vs.text_field}`, `{vs.metadata_field}` "
            f"FROM `{vs.collection_name}` WHERE `user_id` = :u"), {"u": ns}).fetchall()
    sealed = [(str(i), o, json.loads(m)) for i, o, body, m in rows if body.startswith("sealed:1:")]
    assert len(sealed) >= 9
    for _cid, owner, meta in sealed:
        assert set(meta) <= set(CLEAR_META) | {"sealed", "vector"}, (owner, sorted(meta))
        blob = json.dumps({k: v for k, v in meta.items() if k not in ("sealed", "vector")})
        for named in (source.id, "safe-code", "van", "informant", "access-code"):
            assert named not in blob, (owner, named)
    # opened, the links are there; the listings that filter on them find the copies
    assert [c.id for c in gw.list(case.space, BOARD, where={"source_id": source.id})] == [
        board.id]
    assert [c.id for c in gw.list(case.space, "informant",
                                  where={"promoted_from": source.id})] == [promoted.id]
    assert gw.list(case.space, "informant", where={"seed_key": "safe-code"})[0].id == seed.id
    reached = set(case.revoke(source.id))
    assert {source.id, board.id, promoted.id} <= reached and len(reached) >= 6


def test_forgetting_destroys_every_copys_key_and_a_restored_backup_stays_noise(bureau, case):
    """The operator forgets a published card; the administrator then restores the rows from a
    backup taken before (as seekdb's redo log and old blocks keep them): nothing reads again."""
    gw, ns = bureau.gateway, case.space.store_id
    card = case.whisper("detective", "The spare key is taped under the third stair.")
    copy = case.publish("detective", card.id)
    backup = _raw(gw, case.space, {card.id, copy.id})
    assert len(backup) == 2
    assert set(case.forget(card.id)) >= {card.id, copy.id}
    keys = gw.sealer.keys
    assert keys.data_keys(ns, "detective", [card.id]) == {}
    assert keys.data_keys(ns, BOARD, [copy.id]) == {}
    vs = gw.memory.storage.vector_store
    with gw.sql_engine.begin() as conn:
        for row in backup:
            cols = ", ".join(f"`{k}`" for k in row)
            conn.execute(text(f"INSERT INTO `{vs.collection_name}` ({cols}) VALUES "
                              f"({', '.join(':' + k for k in row)})"), row)
    assert len(_raw(gw, case.space, {card.id, copy.id})) == 2  # the rows are back ...
    assert gw.get(case.space, "detective", card.id) is None  # ... as noise
    assert {card.id, copy.id}.isdisjoint(c.id for c in gw.list(case.space))
    vec, _ = gw.embed_query("Where is the spare key?")
    found, _ = gw.search_scopes(case.space, ["detective", BOARD], vec, 5)
    assert {card.id, copy.id}.isdisjoint(c.id for cs in found.values() for c in cs)
    assert gw.purge_case(case.space) >= 2  # and they go with the case


def test_an_agent_forgets_its_own_notes_and_nothing_else(case):
    agent = case.agent("detective")
    note = agent.note("I parked behind the bakery at eight.")
    whispered = case.whisper("detective", "The informant owes the suspect money.")
    with pytest.raises(ForgetRefusedError):
        agent.forget(whispered.id)
    with pytest.raises(UnknownCardError):
        agent.forget(case.whisper("suspect", "The suspect hid the ledger.").id)
    assert agent.forget(note.id) == [note.id]
    with pytest.raises(UnknownCardError):
        agent.card(note.id)
    assert case.bureau.gateway.sealer.keys.data_keys(
        case.space.store_id, "detective", [note.id, whispered.id]).keys() == {whispered.id}


def test_an_expiry_reset_session_end_and_delete_destroy_their_keys(bureau):
    """Each way of forgetting a role's text destroys the keys it stored under."""
    keys = bureau.gateway.sealer.keys
    c = bureau.load_scenario("safe-combination")
    ns = c.space.store_id
    soon = c.whisper("detective", "The bus timetable changed in May.")
    c.expire(soon.id, 0.2)
    session = c.whisper("informant", "I was at the docks last night.", tier="session")
    lasting = c.whisper("informant", "The docks close at ten.", tier="long-term")
    time.sleep(0.3)
    c.cards("detective")  # any read after the expiry fell due
    assert keys.data_keys(ns, "detective", [soon.id]) == {}
    c.end_session("informant")
    assert keys.data_keys(ns, "informant", [session.id, lasting.id]).keys() == {lasting.id}
    assert (keys.root / _name(ns)).is_dir()
    c.reset()
    assert not (keys.root / _name(ns)).exists()  # the old namespace's every scope key
    c.whisper("detective", "A fresh start.")
    ns2 = c.space.store_id
    assert (keys.root / _name(ns2)).is_dir()
    bureau.delete_case(c.id)
    assert not (keys.root / _name(ns2)).exists()


def test_removing_a_members_values_destroys_their_keys_and_keeps_the_rest(case):
    """The scope's owner removes a member and its values: every write the member made (its
    history and the value it shows) is forgotten, their data keys destroyed and in no file of
    the key store afterwards (actor: someone with a copy of the data directory, key store
    included); the owner's values, and a plain removal's, stay readable."""
    from bureau.errors import UnknownScopeKeyError
    from bureau.task_scopes import log_owner_id, scope_owner_id

    keys, ns = case.bureau.gateway.sealer.keys, case.space.store_id
    boss, mole = case.agent("detective"), case.agent("informant")
    boss.scopes.create("plan")
    boss.scopes.invite("plan", "informant")
    mole.scopes.accept("plan")
    boss.scopes.write("plan", "route", "The van leaves by the north gate.")
    mine = [mole.scopes.write("plan", "stash", "The cash sits in locker 17."),
            mole.scopes.write("plan", "stash", "The cash moved to locker 23.", read_version=1)]
    boss.scopes.write("plan", "alarm", "The alarm is off from two to three.")
    mole.scopes.write("plan", "alarm", "The alarm code is 4-4-1-9.", read_version=1)
    owners = (log_owner_id("plan"), scope_owner_id("plan"))
    before = {o: parse_scope_file(keys.scope_path(ns, o).read_bytes())[1] for o in owners}
    theirs = {c.id for o in owners for c in case.bureau.gateway.list(case.space, o)
              if c.source_role == "informant"}
    assert {w.card_id for w in mine} <= theirs and len(theirs) >= 5  # 3 writes, 2 shown

    boss.scopes.remove("plan", "informant", forget_values=True)

    for o in owners:
        assert not keys.data_keys(ns, o, theirs)
    blob = b"".join(p.read_bytes() for p in keys.root.rglob("*") if p.is_file())
    gone = [w for o in owners for cid, w in before[o].items() if cid in theirs]
    kept = [w for o in owners for cid, w in before[o].items() if cid not in theirs]
    assert gone and kept
    assert not [w for w in gone if w.encode() in blob]  # no old copy left in the store
    assert all(w.encode() in blob for w in kept)
    assert boss.scopes.read("plan", "route").text == "The van leaves by the north gate."
    for key in ("stash", "alarm"):  # the member's current values went with it
        with pytest.raises(UnknownScopeKeyError):
            boss.scopes.read("plan", key)
    assert [w.text for w in boss.scopes.history("plan", "alarm")] == [
        "The alarm is off from two to three."]
    # a plain removal keeps the values (and their keys)
    case.agent("suspect").scopes.create("alibi")
    case.agent("suspect").scopes.invite("alibi", "detective")
    boss.scopes.accept("alibi")
    w = boss.scopes.write("alibi", "where", "At the cinema until eleven.")
    case.agent("suspect").scopes.remove("alibi", "detective")
    assert case.agent("suspect").scopes.read("alibi", "where").text == "At the cinema until eleven."
    assert keys.data_keys(ns, log_owner_id("alibi"), [w.card_id])


def test_a_sealed_write_makes_its_keys_durable_while_it_embeds(bureau, case, monkeypatch):
    """The write cost (issue 31 §4): a sealed write's keys reach the key store (appended,
    fsynced) while its text is being embedded, not after; no row is written before both are
    done, so an embedding that fails leaves no card (its keys, made for nothing, open nothing)."""
    gw, ns = bureau.gateway, case.space.store_id
    path = gw.sealer.keys.scope_path(ns, "informant")

    def held() -> int:
        return len(parse_scope_file(path.read_bytes())[1]) if path.exists() else 0

    before, seen, real = held(), [], gw.encoder.embed

    def embed(texts, *args, **kwargs):
        deadline = time.monotonic() + 5
        while held() == before and time.monotonic() < deadline:
            time.sleep(0.01)
        seen.append(held() > before)
        return real(texts, *args, **kwargs)

    monkeypatch.setattr(gw.encoder, "embed", embed)
    card = case.whisper("informant", "The overlap canary sits under the third stair.")
    assert seen[:1] == [True]
    assert card.id in {c.id for c in case.cards("informant")}

    def broken(texts, *args, **kwargs):
        raise RuntimeError("the encoder died")

    monkeypatch.setattr(gw.encoder, "embed", broken)
    n = gw.count(case.space, "informant")
    with pytest.raises(Exception, match="encoder died"):
        case.whisper("informant", "This text never reaches the store.")
    assert gw.count(case.space, "informant") == n


def test_a_lost_key_store_is_a_typed_error_naming_it(bureau, case):
    keys = bureau.gateway.sealer.keys
    away = keys.root.with_name("seal.keys.away")
    keys.root.rename(away)
    try:
        with pytest.raises(SealKeysLostError, match="seal.keys"):
            case.cards("detective")
        with pytest.raises(SealKeysLostError, match="cannot be read"):
            bureau.gateway.check_seal_keys()  # what every open checks first
    finally:
        away.rename(keys.root)
    assert case.cards("detective")


# -- a crash at each step of forgetting, and the canary on disk ----------------------------------
CHILD_FORGET = r"""
import json, sys
from bureau import Bureau
b = Bureau.open()
c = b.load_scenario("safe-combination")
card = c.whisper("detective", sys.argv[1])
copy = c.publish("detective", card.id)
c.interrogate("informant", "What is the code word?")
print(json.dumps({"case": c.id, "ids": {card.id: "detective", copy.id: "board"}}), flush=True)
c.forget(card.id)
print("forgot", flush=True)
"""

CHILD_AFTER = r"""
import json, sys
from bureau import Bureau
b = Bureau.open()
case = b.case(sys.argv[1])
ids = json.loads(sys.argv[2])
case.recover()
keys = b.gateway.sealer.keys
ns = case.space.store_id
left = {cid: owner for cid, owner in ids.items() if keys.data_keys(ns, owner, [cid])}
rows = [c.id for c in b.gateway.list(case.space) if c.id in ids]
print(json.dumps({"keys_left": left, "rows": rows}))
"""


def _grep(data_dir, needle: str) -> list[str]:
    out = subprocess.run(["grep", "-rlaF", needle, str(data_dir)], capture_output=True, text=True)
    return out.stdout.split()


@pytest.mark.parametrize("point", FORGET_POINTS)
def test_a_kill_at_each_step_of_forgetting_leaves_nothing_readable(tmp_path, point):
    """SIGKILL inside ``case.forget`` (after the ledger's limit; after a key, before its row):
    the next process finishes the job: every key destroyed, every row gone; and the canary was
    never on disk in clear (the observer's ``grep`` of the data directory)."""
    canary = f"code word CANARY{uuid.uuid4().hex[:12]}"
    env = {**os.environ, "PYTHONPATH": str(REPO), "BUREAU_DATA_DIR": str(tmp_path),
           "BUREAU_FAULT": f"{point}:kill"}
    proc = subprocess.run([sys.executable, "-c", CHILD_FORGET, canary], env=env, text=True,
                          capture_output=True, timeout=240, cwd=tmp_path)
    assert proc.returncode == -9, proc.stderr[-2000:]
    first = json.loads(proc.stdout.splitlines()[0])
    assert "forgot" not in proc.stdout
    proc2 = subprocess.run([sys.executable, "-c", CHILD_AFTER, first["case"],
                            json.dumps(first["ids"])], env={**env, "BUREAU_FAULT": ""},
                           text=True, capture_output=True, timeout=240, cwd=tmp_path)
    assert proc2.returncode == 0, proc2.stderr[-2000:]
    state = json.loads(proc2.stdout.splitlines()[-1])
    assert state == {"keys_left": {}, "rows": []}
    assert _grep(tmp_path, "CANARY") == []


def test_the_canary_is_on_disk_after_a_plain_delete_and_not_after_a_sealed_forget(tmp_path):
    """The measurement the issue starts from, both ways: unsealed, ``grep -rlaF`` finds the
    forgotten canary in seekdb's files; sealed, in no file of the data directory."""
    found = {}
    for flag in ("0", "1"):
        data = tmp_path / f"seal-{flag}"
        data.mkdir()
        canary = f"code word CANARY{uuid.uuid4().hex[:12]}"
        env = {**os.environ, "PYTHONPATH": str(REPO), "BUREAU_DATA_DIR": str(data),
               "BUREAU_SEAL": flag}
        env.pop("BUREAU_FAULT", None)
        proc = subprocess.run([sys.executable, "-c", CHILD_FORGET, canary], env=env,
                              text=True, capture_output=True, timeout=240, cwd=tmp_path)
        assert proc.returncode == 0 and "forgot" in proc.stdout, proc.stderr[-2000:]
        found[flag] = _grep(data, canary.split()[-1])
    assert any("seekdb" in f for f in found["0"]), found
    assert found["1"] == [], found


def test_the_sealing_page_shows_the_labs_own_table():
    """docs/sealing.md's forgetting table is the one the lab writes from its kept rows
    (``python -m bureau forgetting --docs``), not a hand-typed copy; and the rows hold what
    the page says they hold: every operation, both settings, the classroom's commands; unsealed,
    every attack names the canaries (the observer's tools work); sealed, no canary in clear and
    no attack without the key store beyond what chance gives 20 canaries (issue 51)."""
    from bureau.labs.forgetting.lab import ATTACKS, CLASSROOM_OPERATIONS, GEOMETRY, OPERATIONS
    from bureau.labs.forgetting.report import docs_block, read_rows, table_in

    rows = read_rows(REPO / "docs" / "forgetting.json")
    assert table_in(REPO / "docs" / "sealing.md") == docs_block(rows)
    assert {(r["sealed"], r["operation"]) for r in rows} == {
        (s, op) for s in (False, True) for op in OPERATIONS + CLASSROOM_OPERATIONS}
    assert all(r["plaintext_found"] == 0 for r in rows if r["sealed"])
    assert all(r["plaintext_found"] == r["canaries"] for r in rows if not r["sealed"])
    assert all(r["canaries"] >= 11 and all(a in r for a in ATTACKS) for r in rows)
    assert all(r[a] >= 0.9 for r in rows if not r["sealed"] for a in GEOMETRY)
    sealed = [r for r in rows if r["sealed"]]
    assert all(r[a] <= 0.2 for r in sealed for a in (*GEOMETRY, "top1_files_only"))
    hits = sum(r[a] * r["trials"] for r in sealed for a in GEOMETRY)
    assert hits / sum(r["trials"] for r in sealed for _ in GEOMETRY) <= 0.04  # chance: 2 %


def test_lesson_07s_look_at_the_disk_and_its_exercise(bureau, case):
    """The lesson's table is a measurement: the unsealed canary is found in the running store's
    files after ``forget`` and the sealed one is not; the exercise passes only for a card
    forgotten (not kept, not merely revoked) whose key is gone."""
    from bureau.course.forgetting import SOLUTION, forget_and_look
    from bureau.course.purpose import PurposeCast
    from bureau.course.widgets.exercises import check

    table = forget_and_look(case).set_index("setting")
    assert table.loc["unsealed", "files holding the canary"] != "none"
    assert table.loc["sealed", "files holding the canary"] == "none"
    assert not table["key left in the key store"].any()
    assert not check("07b-forget-for-good", case, None)
    kept = case.whisper("detective", "The gate sticks in the rain.")
    assert "still there" in check("07b-forget-for-good", case, kept.id).message
    case.revoke(kept.id)
    assert "revoked, not forgotten" in check("07b-forget-for-good", case, kept.id).message
    ns = {"case": case, "cast": PurposeCast.of(case)}
    exec(SOLUTION, ns)
    verdict = check("07b-forget-for-good", case, ns["my_card"])
    assert verdict.ok, verdict.message


def test_lesson_07bs_sentence_reads_the_canary_table():
    """Issue 50 §3: the deep dive says where each canary was found from its own table, in
    words (the redo log), so its prose never names a file the run did not find."""
    import pandas as pd

    from bureau.course.forgetting import file_kind, said

    table = pd.DataFrame([
        {"setting": "unsealed", "forgotten": "yes", "key left in the key store": False,
         "files holding the canary": "seekdb/store/redo/sys/log_stream/log/0, "
                                     "seekdb/store/sstable/block_3"},
        {"setting": "sealed", "forgotten": "yes", "key left in the key store": False,
         "files holding the canary": "none"}])
    assert said(table).splitlines() == [
        "Unsealed, the forgotten canary is still in 2 files (a data file, the redo log); it "
        "never had a key.",
        "Sealed, the forgotten canary is in no file; the key store holds no key for it."]
    assert file_kind("seal.keys/ab/cd") == "the key store" and file_kind("odd/file") == "odd/file"
    note = pd.DataFrame([{"note": "your memory lives on the classroom server"}])
    assert said(note) == "your memory lives on the classroom server"
