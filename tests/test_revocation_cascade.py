"""Revocation and expiry follow the content, everywhere it went (issue 19 §1).

On real PowerMem + embedded seekdb + MiniLM. Each test copies a secret the ways the bureau
copies text (publish, promote, a publish in flight or left by a crash, a task-scope write made
from a card or pasted by its owner, repair after the ledger was lost), then revokes or expires
the original, and sweeps every read path of every role (:data:`ROLE_READ_PATHS`) and every
outward view (:data:`OUTWARD_READ_PATHS`) for the secret's text. Agents act through their
handles (``case.agent(role)``); the operator holds the case.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid

import pytest
from conftest import REPO, run_python

from bureau import BOARD
from bureau.errors import CardRevokedError, UnknownCardError, UnknownScopeKeyError
from bureau.mediation.derivation import TOMBSTONE_OWNER
from bureau.service import publish as publish_mod
from bureau.service.read_paths import OUTWARD_READ_PATHS, ROLE_READ_PATHS, as_text

PROBE = "Where is the silver key hidden?"
PROBES = (PROBE, "silver key hidden inside the clock")


def _secret(tag: str) -> str:
    """A text no other test writes (a random word, so a match is this test's text)."""
    return f"The silver key {tag} is hidden inside the clock {uuid.uuid4().hex[:8]}."


def _leaks(case, text: str) -> list[str]:
    """Every read path (for every role) and outward view that returns ``text``."""
    found = []
    for role in case.role_names:
        for name, read in ROLE_READ_PATHS.items():
            for probe in PROBES:  # never the text itself: a trace repeats its question
                if text in as_text(read(case, role, probe)):
                    found.append(f"{name} as {role}")
                    break
    for name, read in OUTWARD_READ_PATHS.items():
        if text in as_text(read(case)):
            found.append(name)
    return found


def _stored(case, text: str) -> list[str]:
    """Owners of the cards in the store that still hold ``text`` (erased on revocation)."""
    return [c.owner for c in case.bureau.gateway.list(case.space) if text in c.content]


# -- seen today: promote, then revoke the original -------------------------------------------

def test_a_promoted_copy_is_revoked_with_its_original_and_cannot_be_published(case):
    text = _secret("promoted")
    informant = case.agent("informant")
    whisper = case.whisper("informant", text, topic="key")
    informant.publish(whisper.id)
    promoted = case.promote("informant", whisper.id)
    assert promoted.promoted_from == whisper.id
    assert text in as_text(case.agent("detective").recall(PROBE))  # on the board, before

    revoked = case.revoke(whisper.id)
    assert promoted.id in revoked and whisper.id in revoked and len(revoked) == 3
    with pytest.raises(UnknownCardError):  # the promoted copy is as dead as its original
        informant.publish(promoted.id)
    with pytest.raises(UnknownCardError):
        case.promote("informant", whisper.id)
    assert _leaks(case, text) == []
    assert _stored(case, text) == []  # erased from the store, not only hidden


def test_a_copy_of_a_promoted_copy_goes_with_the_original(case):
    text = _secret("grandchild")
    whisper = case.whisper("suspect", text)
    promoted = case.promote("suspect", whisper.id)
    board = case.agent("suspect").publish(promoted.id)
    assert board.source_id == promoted.id
    assert set(case.revoke(whisper.id)) == {whisper.id, promoted.id, board.id}
    assert _leaks(case, text) == []


# -- seen today: a publish in flight, a crashed publish, recover() ------------------------------

@pytest.mark.parametrize("point", ["publish.after_reserve", "publish.after_copy_written"])
def test_a_revoke_during_a_publish_in_flight_reaches_the_copy(bureau, case, monkeypatch, point):
    """The publisher stalls at ``point`` while the operator revokes; when it resumes, its copy
    must not become a publication (it is deleted and the publish refused)."""
    text = _secret(f"inflight-{point}")
    source = case.whisper("informant", text)
    stalled, resume = threading.Event(), threading.Event()
    real_hit = publish_mod.faults.hit
    slow: list[threading.Thread] = []

    def hit(name: str) -> None:
        if name == point and threading.current_thread() in slow:
            stalled.set()
            resume.wait(30)
        real_hit(name)

    monkeypatch.setattr(publish_mod.faults, "hit", hit)
    result: dict[str, object] = {}

    def publish() -> None:
        try:
            result["copy"] = case.agent("informant").publish(source.id)
        except Exception as exc:  # noqa: BLE001 - checked below
            result["copy"] = exc

    worker = threading.Thread(target=publish)
    slow.append(worker)
    worker.start()
    assert stalled.wait(30)
    case.revoke(source.id)
    assert _leaks(case, text) == []  # while the publisher is stalled
    resume.set()
    worker.join(30)
    assert isinstance(result["copy"], CardRevokedError | UnknownCardError), result
    rec = bureau.ledger.publishes.get(case.id, source.id)
    assert rec is not None and rec.blocked and rec.status != "ready"
    case.recover()
    assert _leaks(case, text) == []
    assert _stored(case, text) == []


def test_a_revoke_after_a_crashed_publish_is_not_undone_by_recover(bureau, case, monkeypatch):
    """A publisher dies after writing its copy, before marking it ready (simulated in process:
    the fault raises and nothing compensates, as after a power cut); the lease runs out; the
    operator revokes; ``recover()`` must not complete the publish."""
    monkeypatch.setattr(bureau, "settings", bureau.settings.with_(publish_lease_s=0.2))
    text = _secret("crashed")
    source = case.whisper("informant", text)
    monkeypatch.setattr(publish_mod.Publisher, "_compensate", lambda *a, **k: None)
    monkeypatch.setattr(publish_mod.faults, "_armed", {"publish.before_mark_ready": "raise"})
    with pytest.raises(Exception):  # noqa: B017,PT011 - the simulated crash
        case.publish("informant", source.id)
    monkeypatch.setattr(publish_mod.faults, "_armed", {})
    rec = bureau.ledger.publishes.get(case.id, source.id)
    assert rec is not None and rec.status == "pending"  # what a crash leaves
    left = [c for c in bureau.gateway.list(case.space, BOARD) if c.source_id == source.id]
    assert len(left) == 1  # its copy is on the board
    time.sleep(0.3)  # the dead publisher's lease is over

    revoked = case.revoke(source.id)
    assert left[0].id in revoked
    stats = case.recover()
    assert stats["completed"] == 0
    assert _leaks(case, text) == []
    assert _stored(case, text) == []
    assert bureau.ledger.publishes.get(case.id, source.id).status != "ready"
    with pytest.raises(UnknownCardError):
        case.publish("informant", source.id)


def test_recover_deletes_a_copy_written_after_the_revocation(bureau, case, monkeypatch):
    """The worst interleaving: the copy lands after the revocation listed the board and the
    publisher dies before it can undo it. Every read path drops it at once (its source is
    revoked), and ``recover()`` deletes it."""
    text = _secret("late")
    source = case.whisper("informant", text)
    case.revoke(source.id)
    late = bureau.gateway.add(case.space, BOARD, text, publish_mod._copy_meta(source))
    assert _leaks(case, text) == []
    assert case.recover()["revoked"] == 1
    assert bureau.gateway.get(case.space, BOARD, late.id) is None


# -- seen today: expire does not cascade --------------------------------------------------------

def test_expiry_of_an_original_reaches_its_copies(case):
    text = _secret("expiring")
    whisper = case.whisper("informant", text)
    case.agent("informant").publish(whisper.id)
    case.expire(whisper.id, 0.4)
    promoted = case.promote("informant", whisper.id)  # a copy made after the expire call
    board = case.agent("informant").publish(promoted.id)
    assert text in as_text(case.agent("detective").recall(PROBE))
    time.sleep(0.6)
    assert _leaks(case, text) == []
    for cid in (promoted.id, board.id):
        with pytest.raises(UnknownCardError):
            case.agent("informant").card(cid)
    with pytest.raises(UnknownCardError):  # re-derivation from an expired card is refused
        case.promote("informant", whisper.id)


def test_the_operators_view_drops_an_expired_card_at_its_time(case):
    """``case.spaces()`` showed an expired card until some later call swept its text (found by
    the hostile-argument fuzz, which saw a card count drop during an unrelated refused call)."""
    text = _secret("operator-view")
    whisper = case.whisper("informant", text)
    case.expire(whisper.id, 0.3)
    assert whisper.id in [c.id for c in case.spaces()["informant"]]
    time.sleep(0.5)
    assert whisper.id not in [c.id for c in case.spaces()["informant"]]
    assert text not in as_text(case.spaces())


# -- seen today: task-scope values -----------------------------------------------------------------

def _scope(case, name: str):
    informant, detective = case.agent("informant"), case.agent("detective")
    informant.scopes.create(name)
    informant.scopes.invite(name, "detective")
    detective.scopes.accept(name)
    return informant, detective


def test_a_scope_value_written_from_a_card_is_revoked_with_the_card(case):
    text = _secret("scope-from-card")
    informant, detective = _scope(case, "heist")
    whisper = case.whisper("informant", text)
    board = informant.publish(whisper.id)
    detective.scopes.write("heist", "key", from_card=board.id)  # the detective copies the board
    informant.scopes.write("heist", "where", from_card=whisper.id)
    assert detective.scopes.read("heist", "key").text == text
    case.revoke(whisper.id)
    assert _leaks(case, text) == []
    assert _stored(case, text) == []
    assert detective.scopes.keys("heist") == []
    with pytest.raises(UnknownScopeKeyError):
        informant.scopes.read("heist", "where")
    with pytest.raises(UnknownCardError):  # a revoked card is not written anew
        informant.scopes.write("heist", "again", from_card=whisper.id)


def test_a_value_pasted_by_the_owner_is_revoked_and_leaves_the_history(case):
    text = _secret("scope-pasted")
    informant, detective = _scope(case, "pasted")
    whisper = case.whisper("informant", text)
    informant.scopes.write("pasted", "key", text)  # typed in verbatim, no link
    first = informant.scopes.read("pasted", "key")
    detective.scopes.write("pasted", "key", "Never mind.", read_version=first.version)
    assert [w.text for w in detective.scopes.history("pasted", "key")] == [text, "Never mind."]
    case.revoke(whisper.id)
    assert _leaks(case, text) == []
    assert [w.text for w in detective.scopes.history("pasted", "key")] == ["Never mind."]
    assert detective.scopes.read("pasted", "key").text == "Never mind."


def test_the_operator_revokes_expires_and_grants_a_scope_value_by_its_id(case):
    informant, detective = _scope(case, "direct")
    text, other = _secret("scope-direct"), _secret("scope-expire")
    w = informant.scopes.write("direct", "a", text)
    assert w.card_id and informant.scopes.read("direct", "a").card_id == w.card_id
    grant = case.grant(w.card_id, requester="detective")
    assert grant.card_id == w.card_id
    assert case.revoke(w.card_id)[0] == w.card_id
    assert _leaks(case, text) == []
    assert detective.scopes.keys("direct") == []
    assert [h.text for h in detective.scopes.history("direct", "a")] == []
    e = detective.scopes.write("direct", "b", other)
    case.expire(e.card_id, 0.3)
    assert informant.scopes.read("direct", "b").text == other
    time.sleep(0.5)
    assert _leaks(case, other) == []
    assert informant.scopes.keys("direct") == []


# -- seen today: repair --adopt after the ledger was deleted -----------------------------------------

SETUP = """
import json, time
from bureau import Bureau
b = Bureau.open()
case = b.load_scenario("safe-combination", case_id="kept")
inf = case.agent("informant")
inf.scopes.create("s")
revoked = case.whisper("informant", "REVOKED-TEXT the silver key is in the clock.")
inf.publish(revoked.id)
case.promote("informant", revoked.id)
inf.scopes.write("s", "k", from_card=revoked.id)
expired = case.whisper("detective", "EXPIRED-TEXT the ladder is in the barn.")
case.agent("detective").publish(expired.id)
case.revoke(revoked.id)
case.expire(expired.id, 0.5)
time.sleep(0.7)
print(json.dumps({"ok": True}))
"""

CHECK = """
import json
from bureau import Bureau
from bureau.service.read_paths import OUTWARD_READ_PATHS, ROLE_READ_PATHS, as_text
b = Bureau.open()
case = b.case("kept")
case.recover()
seen = []
for role in case.role_names:
    for name, read in ROLE_READ_PATHS.items():
        got = as_text(read(case, role, "Where is the silver key? the ladder?"))
        seen += [f"{name}/{role}/{t}" for t in ("REVOKED-TEXT", "EXPIRED-TEXT") if t in got]
for name, read in OUTWARD_READ_PATHS.items():
    got = as_text(read(case))
    seen += [f"{name}/{t}" for t in ("REVOKED-TEXT", "EXPIRED-TEXT") if t in got]
stored = [c.owner for c in b.gateway.list(case.space) if "REVOKED-TEXT" in c.content]
states = sorted(set(case.audit().card_state.dropna()))
print(json.dumps({"seen": seen, "stored": stored, "states": states}))
"""


def test_revocation_and_expiry_survive_the_loss_of_the_ledger(tmp_path):
    data = tmp_path / "store"
    env = {"BUREAU_DATA_DIR": str(data)}
    run_python(SETUP, cwd=tmp_path, env=env)
    for f in data.glob("bureau.sqlite3*"):
        f.unlink()
    report = subprocess.run(
        [sys.executable, "-m", "bureau", "repair", "--adopt"], cwd=tmp_path, text=True,
        capture_output=True, env={**env, "PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        timeout=180,
    )
    assert report.returncode == 0, report.stderr
    out = json.loads(run_python(CHECK, cwd=tmp_path, env=env).stdout.strip().splitlines()[-1])
    assert out["seen"] == [] and out["stored"] == []
    assert "adopted: " in report.stdout and "re-applied from tombstones" in report.stdout
    assert "revoked" in out["states"] and "expired" in out["states"]


def test_tombstones_hold_ids_and_no_text(case):
    text = _secret("tombstone")
    whisper = case.whisper("informant", text)
    case.revoke(whisper.id)
    stones = case.bureau.gateway.list(case.space, TOMBSTONE_OWNER)
    assert stones and all(text not in s.content for s in stones)
    assert any(whisper.id in json.loads(s.content)["cards"][0] for s in stones)
    assert TOMBSTONE_OWNER not in case.spaces()
