"""The audit detects what it claims, and state cannot change behind its back (issue 19 §3).

The actor: anyone who can write the ledger file (a copied or synced file, a script with SQL
access) but not the audit key beside it. Each test is one of that actor's attacks, done with
plain ``sqlite3`` on the real file: rewriting an entry and recomputing every plain sha256 hash,
cutting the chain short, wiping it, deleting a revocation row, resetting a budget row, inserting
a grant row, swapping a case's incarnation. Each must be refused with a typed error naming what
failed, and never act on the forged state. The last tests show the limits: the key file's
permissions are enforced, and an actor who also holds the key forges undetected
(docs/threat-model.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import uuid

import pytest

from bureau.errors import AuditKeyError, AuditTamperedError, StateTamperedError
from bureau.ledger import Ledger
from bureau.mediation.audit import GENESIS, entry_hash, legacy_hash, mac, row_mac

SAFE_Q = "What is the combination of the safe in the study?"
BOOT_Q = "What size is the muddy boot print?"
INVESTIGATE = {"recipient": "other-agent", "purpose": "investigation"}



@pytest.fixture
def chain(tmp_path):
    """A ledger with five audit entries (the key and anchor beside it, in ``tmp_path``)."""
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    ledger.cases.add("c1", "s", "t", "tok")
    for i in range(5):
        ledger.mediation.append_audit("c1", "tok", [{"kind": "decision", "card_id": str(i),
                                                     "action": "withhold", "reasons": ["x"]}])
    assert ledger.mediation.verify_audit() == 5
    return ledger


def _sql(path) -> sqlite3.Connection:
    """The attacker's handle on the ledger file: no triggers in the way."""
    db = sqlite3.connect(path, isolation_level=None)
    db.row_factory = sqlite3.Row
    db.execute("DROP TRIGGER IF EXISTS audit_append_only_update")
    db.execute("DROP TRIGGER IF EXISTS audit_append_only_delete")
    return db


def _append_one(ledger):
    ledger.mediation.append_audit("c1", "tok", [{"kind": "decision", "action": "reveal"}])


# -- the chain -----------------------------------------------------------------------------

def test_an_entry_rewritten_with_recomputed_plain_hashes_is_found(chain):
    db = _sql(chain.path)
    rows = [dict(r) for r in db.execute("SELECT * FROM audit ORDER BY seq")]
    prev = rows[1]["hash"]
    for row in rows[2:]:  # entry 3 becomes a reveal; every later link recomputed, unkeyed
        body = row["entry"].replace('"withhold"', '"reveal"') if row["seq"] == 3 else row["entry"]
        digest = legacy_hash(row["seq"], prev, body)
        db.execute("UPDATE audit SET entry = ?, action = ?, prev_hash = ?, hash = ? WHERE seq = ?",
                   (body, "reveal" if row["seq"] == 3 else row["action"], prev, digest,
                    row["seq"]))
        prev = digest
    db.execute("UPDATE audit_head SET hash = ? WHERE id = 1", (prev,))
    with pytest.raises(AuditTamperedError, match="entry 3 was changed"):
        chain.mediation.verify_audit()


def test_a_tail_cut_off_with_its_head_moved_back_is_found(chain):
    db = _sql(chain.path)
    h3 = db.execute("SELECT hash FROM audit WHERE seq = 3").fetchone()[0]
    db.execute("DELETE FROM audit WHERE seq > 3")
    db.execute("UPDATE audit_head SET seq = 3, hash = ? WHERE id = 1", (h3,))
    with pytest.raises(AuditTamperedError, match="ends at entry 3, but the audit anchor recorded "
                                                 "entry 5"):
        chain.mediation.verify_audit()
    with pytest.raises(AuditTamperedError, match="cut off or wiped"):  # and nothing is appended
        _append_one(chain)
    assert db.execute("SELECT max(seq) FROM audit").fetchone()[0] == 3
    with pytest.raises(AuditTamperedError, match="anchor recorded entry 5"):  # after a reopen
        Ledger(chain.path).mediation.verify_audit()


def test_a_wiped_chain_is_found(chain):
    db = _sql(chain.path)
    db.execute("DELETE FROM audit")
    db.execute("DELETE FROM audit_head")
    with pytest.raises(AuditTamperedError, match="ends at entry 0, but the audit anchor recorded "
                                                 "entry 5"):
        chain.mediation.verify_audit()
    with pytest.raises(AuditTamperedError, match="cut off or wiped"):
        _append_one(chain)


def test_the_anchor_follows_every_append_and_an_intact_chain_verifies(chain):
    _append_one(chain)
    anchor = chain.keys.anchor()
    assert (anchor.seq, anchor.legacy) == (6, 0) and chain.mediation.verify_audit() == 6
    assert Ledger(chain.path).mediation.verify_audit() == 6  # reopened: same key, same anchor


def test_a_deferred_anchor_lags_inside_and_catches_up_on_the_way_out(chain):
    """The leak lab's bulk mode (a throw-away data directory): the anchor is written once at
    the end, never ahead of the ledger, and what it lets through while it lags is named."""
    with chain.keys.deferred():
        with chain.keys.deferred():  # nested: only the outermost writes
            _append_one(chain)
        _append_one(chain)
        assert chain.keys.anchor().seq == 5  # lagging, as after a power loss: allowed
        assert chain.mediation.verify_audit() == 7
    assert chain.keys.anchor().seq == 7 and Ledger(chain.path).mediation.verify_audit() == 7
    # The price, said in its docstring: a cut made while it lags goes unseen until the end...
    with chain.keys.deferred():
        _append_one(chain)
        db = _sql(chain.path)
        h7 = db.execute("SELECT hash FROM audit WHERE seq = 7").fetchone()[0]
        db.execute("DELETE FROM audit WHERE seq > 7")
        db.execute("UPDATE audit_head SET seq = 7, hash = ? WHERE id = 1", (h7,))
        assert chain.mediation.verify_audit() == 7
    # ...and is found as soon as the anchor catches up.
    with pytest.raises(AuditTamperedError, match="anchor recorded entry 8"):
        chain.mediation.verify_audit()


# -- the key file --------------------------------------------------------------------------

def test_the_key_is_owner_only_and_refused_when_others_may_read_it(chain, tmp_path):
    key = tmp_path / "audit.key"
    assert key.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "audit.anchor").stat().st_mode & 0o777 == 0o600
    assert len(bytes.fromhex(key.read_text().strip())) == 32
    os.chmod(key, 0o640)
    with pytest.raises(AuditKeyError, match="readable or writable by other users"):
        Ledger(chain.path)
    os.chmod(key, 0o600)
    assert Ledger(chain.path).mediation.verify_audit() == 5


def test_a_missing_key_or_anchor_is_refused_not_replaced(chain, tmp_path):
    key, anchor = tmp_path / "audit.key", tmp_path / "audit.anchor"
    saved = key.read_bytes()
    key.unlink()
    with pytest.raises(AuditKeyError, match="missing, but the ledger .* holds a keyed audit"):
        Ledger(chain.path)
    assert not key.exists()  # no new key was made to hide the old chain
    fd = os.open(key, os.O_CREAT | os.O_WRONLY, 0o600)
    os.write(fd, saved)
    os.close(fd)
    anchor.unlink()
    with pytest.raises(AuditTamperedError, match="anchor .* is missing"):
        Ledger(chain.path).mediation.verify_audit()
    key.write_text("00" * 32 + "\n")  # another key: the anchor and the chain fail under it
    anchor.write_text(json.dumps({"seq": 5, "hash": "0" * 64, "legacy": 0, "mac": "x"}))
    with pytest.raises(AuditTamperedError, match="not signed with the audit key"):
        Ledger(chain.path).mediation.verify_audit()


def test_an_old_unkeyed_ledger_is_verified_anchored_and_signed_once(tmp_path):
    """A ledger from before the keyed audit: plain sha256 links, state rows without a MAC."""
    path = tmp_path / "bureau.sqlite3"
    Ledger(path).cases.add("old", "s", "t", "tok")
    for f in ("audit.key", "audit.anchor"):
        (tmp_path / f).unlink()
    db = _sql(path)
    prev = GENESIS
    for seq in (1, 2, 3):
        body = json.dumps({"kind": "revocation", "action": "revoke", "card_id": f"c{seq}"})
        digest = hashlib.sha256(f"{seq}\n{prev}\n{body}".encode()).hexdigest()
        db.execute("INSERT INTO audit (seq, case_id, token, kind, action, entry, prev_hash, hash)"
                   " VALUES (?, 'old', 'tok', 'revocation', 'revoke', ?, ?, ?)",
                   (seq, body, prev, digest))
        db.execute("INSERT INTO card_limits (case_id, card_id, owner, revoked_at, reason)"
                   " VALUES ('old', ?, 'detective', 1.0, 'r')", (f"c{seq}",))
        prev = digest
    db.execute("REPLACE INTO audit_head (id, seq, hash) VALUES (1, 3, ?)", (prev,))
    ledger = Ledger(path)  # migrates: key made, chain anchored at its legacy head, rows signed
    anchor = ledger.keys.anchor()
    assert anchor.legacy == 3 and not anchor.migrating
    assert ledger.mediation.verify_audit() == 4  # the three old entries and the seal of "old"
    assert {r["card_id"] for r in ledger.mediation.card_limits("old")} == {"c1", "c2", "c3"}
    # the old entries stay protected: editing one and recomputing its plain links is found
    db = _sql(path)  # the reopen put the triggers back
    old = db.execute("SELECT entry FROM audit WHERE seq = 2").fetchone()[0]
    edited = old.replace("revoke", "reveal")
    h2 = legacy_hash(2, db.execute("SELECT hash FROM audit WHERE seq = 1").fetchone()[0], edited)
    db.execute("UPDATE audit SET entry = ?, hash = ? WHERE seq = 2", (edited, h2))
    db.execute("UPDATE audit SET prev_hash = ?, hash = ? WHERE seq = 3",
               (h2, legacy_hash(3, h2, db.execute("SELECT entry FROM audit WHERE seq = 3")
                                .fetchone()[0])))
    with pytest.raises(AuditTamperedError, match="entry 4: its link to entry 3 was changed"):
        Ledger(path).mediation.verify_audit()


def test_a_holder_of_the_key_forges_undetected(chain, tmp_path):
    """Not detected, by design (docs/threat-model.md): the key is the trust root."""
    key = bytes.fromhex((tmp_path / "audit.key").read_text().strip())
    db = _sql(chain.path)
    rows = [dict(r) for r in db.execute("SELECT * FROM audit ORDER BY seq")]
    prev = rows[1]["hash"]
    for row in rows[2:]:
        if row["seq"] == 3:
            row["entry"], row["action"] = row["entry"].replace("withhold", "reveal"), "reveal"
        row["prev_hash"] = prev
        row["hash"] = entry_hash(key, row)
        db.execute("UPDATE audit SET entry = ?, action = ?, prev_hash = ?, hash = ? WHERE seq = ?",
                   (row["entry"], row["action"], prev, row["hash"], row["seq"]))
        prev = row["hash"]
    db.execute("UPDATE audit_head SET hash = ? WHERE id = 1", (prev,))
    body = json.dumps([5, prev, 0, False])
    (tmp_path / "audit.anchor").write_text(json.dumps(
        {"seq": 5, "hash": prev, "legacy": 0, "migrating": False, "mac": mac(key, body)}))
    assert chain.mediation.verify_audit() == 5
    assert chain.mediation.audit_counts("c1", "tok") == {"withhold": 4, "reveal": 1}


# -- state rows, on the real store -----------------------------------------------------------

def _db(bureau) -> sqlite3.Connection:
    return _sql(bureau.ledger.path)


def test_a_deleted_revocation_row_does_not_bring_the_card_back(case, bureau):
    copy = case.publish("detective", case.seed_card("footprint").id)
    original = case.seed_card("footprint")
    case.revoke(original.id)  # the original and its board copy
    db = _db(bureau)
    saved = [dict(r) for r in db.execute("SELECT * FROM card_limits WHERE case_id = ?",
                                         (case.id,))]
    assert {r["card_id"] for r in saved} == {original.id, copy.id}
    db.execute("DELETE FROM card_limits WHERE case_id = ? AND card_id = ?", (case.id, copy.id))
    for read in (lambda: case.interrogate("suspect", BOOT_Q), lambda: case.cards("detective"),
                 lambda: case.audit(), lambda: bureau.case(case.id).interrogate("informant",
                                                                                 BOOT_Q)):
        with pytest.raises(StateTamperedError, match="card_limits rows of case") as err:
            read()
        assert err.value.table == "card_limits" and original.content not in str(err.value)
    # the row back as it was: the case reads again, the card still revoked everywhere
    db.execute("INSERT INTO card_limits VALUES (:case_id, :card_id, :owner, :expires_at,"
               " :revoked_at, :reason, :mac)", [r for r in saved if r["card_id"] == copy.id][0])
    assert not case.interrogate("suspect", BOOT_Q).known
    assert set(case.audit().set_index("card_id").loc[[original.id, copy.id], "card_state"]) \
        == {"revoked"}


def test_an_edited_revocation_or_expiry_row_is_refused_by_name(case, bureau):
    card = case.seed_card("footprint")
    case.revoke(card.id)
    db = _db(bureau)
    db.execute("UPDATE card_limits SET revoked_at = NULL WHERE case_id = ? AND card_id = ?",
               (case.id, card.id))
    with pytest.raises(StateTamperedError, match=f"card_limits row .*'{card.id}'") as err:
        case.interrogate("detective", BOOT_Q)
    assert err.value.row == {"case_id": case.id, "card_id": card.id}
    with pytest.raises(StateTamperedError):  # the operator's view too: never "live"
        case.audit()


def test_a_reset_budget_row_is_refused(mediated, case, bureau):
    detective = case.agent("detective")
    assert detective.consult("informant", SAFE_Q, **INVESTIGATE).decisions[0].action == "abstract"
    db = _db(bureau)
    where = ("case_id = ?", (case.id,))
    [spent] = [r["spent"] for r in db.execute(f"SELECT spent FROM budget WHERE {where[0]}",
                                              where[1])]
    assert spent > 0
    db.execute(f"UPDATE budget SET spent = 0 WHERE {where[0]}", where[1])
    with pytest.raises(StateTamperedError, match="budget row") as err:
        detective.consult("informant", SAFE_Q, **INVESTIGATE)
    assert err.value.table == "budget"
    saved = dict(db.execute(f"SELECT * FROM budget WHERE {where[0]}", where[1]).fetchone())
    db.execute(f"DELETE FROM budget WHERE {where[0]}", where[1])  # deleted outright: same
    with pytest.raises(StateTamperedError, match="budget rows of case"):
        detective.consult("informant", SAFE_Q, **INVESTIGATE)
    db.execute("INSERT INTO budget VALUES (:case_id, :requester, :owner, :spent, :mac)",
               {**saved, "spent": spent})
    assert detective.consult("informant", SAFE_Q, **INVESTIGATE).decisions[0].action == "abstract"


def test_an_inserted_grant_row_is_refused(mediated, case, bureau):
    card = case.seed_card("safe-code")
    detective = case.agent("detective")
    before = detective.consult("informant", SAFE_Q, **INVESTIGATE)
    assert card.content not in before.answer.text
    db = _db(bureau)
    row = {"grant_id": "g-" + uuid.uuid4().hex[:10], "case_id": case.id, "card_id": card.id,
           "requester": "detective", "recipient": None, "purpose": None, "action": "reveal",
           "created_at": 1.0, "expires_at": None, "revoked_at": None}
    for forged in (None, row_mac(os.urandom(32), "grants", row)):  # unsigned; another key
        db.execute("INSERT INTO grants VALUES (:grant_id, :case_id, :card_id, :requester,"
                   " :recipient, :purpose, :action, :created_at, :expires_at, :revoked_at,"
                   " :mac)", {**row, "mac": forged})
        with pytest.raises(StateTamperedError, match="grants row") as err:
            detective.consult("informant", SAFE_Q, **INVESTIGATE)
        assert err.value.table == "grants" and card.content not in str(err.value)
        with pytest.raises(StateTamperedError):
            case.disclosure.grants()
        db.execute("DELETE FROM grants WHERE grant_id = ?", (row["grant_id"],))
    assert detective.consult("informant", SAFE_Q, **INVESTIGATE).decisions


def test_a_swapped_incarnation_cannot_shed_the_case_state(case, bureau):
    """Change the case's token and delete its limits: fresh handles would see a clean case."""
    card = case.seed_card("footprint")
    case.revoke(card.id)
    db = _db(bureau)
    db.execute("DELETE FROM card_limits WHERE case_id = ?", (case.id,))
    db.execute("UPDATE cases SET token = 'forged' WHERE case_id = ?", (case.id,))
    with pytest.raises(StateTamperedError, match="cases row") as err:
        bureau.case(case.id).interrogate("detective", BOOT_Q)
    assert err.value.table == "cases"
    db.execute("UPDATE cases SET token = ? WHERE case_id = ?", (case.token, case.id))


def test_a_reset_clears_the_state_and_reseals_it(case, bureau):
    """The legitimate way to forget state: a reset (or delete) seals the empty state."""
    card = case.seed_card("footprint")
    case.revoke(card.id)
    db = _db(bureau)
    db.execute("UPDATE card_limits SET revoked_at = NULL WHERE case_id = ?", (case.id,))
    with pytest.raises(StateTamperedError):
        case.interrogate("detective", BOOT_Q)
    case.reset()
    assert bureau.ledger.mediation.card_limits(case.id) == []
    case.interrogate("detective", BOOT_Q)  # reads again
    assert bureau.ledger.mediation.verify_audit() >= 2


def test_a_key_whose_anchor_is_being_written_is_waited_for_not_refused(chain, tmp_path):
    """Two processes opening one new store at once (two instances on one server): one links
    the key, then writes the anchor, both under the head lock. The other must wait for that
    lock and find the anchor, not read the gap as a chain cut short (it did, once, in CI)."""
    import threading

    anchor = tmp_path / "audit.anchor"
    saved = anchor.read_bytes()
    anchor.unlink()
    writer = sqlite3.connect(chain.path, isolation_level=None, timeout=30)
    writer.execute("BEGIN IMMEDIATE")  # the other process, between the key and the anchor
    opened: list[object] = []
    opener = threading.Thread(target=lambda: opened.append(_open_or_error(chain.path)))
    opener.start()
    opener.join(0.5)
    assert opener.is_alive(), "the opener did not wait for the head lock"
    anchor.write_bytes(saved)
    writer.execute("COMMIT")
    opener.join(30)
    assert not opener.is_alive()
    assert not isinstance(opened[0], Exception), opened[0]
    assert opened[0].mediation.verify_audit() == 5
    # with no one holding the lock, a missing anchor is still a chain cut short
    anchor.unlink()
    with pytest.raises(AuditTamperedError, match="anchor .* is missing"):
        Ledger(chain.path)


def _open_or_error(path):
    try:
        return Ledger(path)
    except Exception as exc:  # noqa: BLE001 - handed back to the test thread
        return exc
