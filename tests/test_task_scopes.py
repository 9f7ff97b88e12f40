"""Shared task scopes (issue 14) on real PowerMem + embedded seekdb + MiniLM, across processes.

* non-members and not-yet-accepted invitees read and write nothing of a scope, on any read path,
  and are refused with the same words whether the scope exists or not;
* a removed member loses access on every read path at once, also when another process removes
  it, and also for a holder in another process that opened the case before the removal;
* only the owner manages; transfer, archive (read-only) and delete (cards purged, verified);
* the inbox: in order, per role, resumable by cursor, ids/names/versions only;
* keyed writes: Lamport versions, a total order every observer agrees on, stale writes reported
  and kept; two processes writing the same keys for 100 rounds converge for every reader;
* the server ledger creates the same tables and applies the same rules.
"""

from __future__ import annotations

import itertools
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, finish, run_python
from test_publish_server import seekdb_server, server_key  # noqa: F401 - a module fixture

from bureau import BOARD
from bureau.errors import (
    InvalidArgumentError,
    InvalidTextError,
    MembershipError,
    NoInvitationError,
    NotScopeOwnerError,
    ScopeArchivedError,
    ScopeExistsError,
    UnknownCardError,
    UnknownScopeKeyError,
    UnknownTaskScopeError,
)
from bureau.scopes import readable_scopes
from bureau.service.read_paths import OUTWARD_READ_PATHS, ROLE_READ_PATHS, as_text
from bureau.task_scopes import ScopeWrite, order_key, winner

PLAN = "Team plan: we meet at the marigold greenhouse behind the museum at 02:15."
ROUTE = "Escape route: the quartermaster tunnel under the old tram depot."
STASH = "The suspect's own scope: the ledger is hidden inside the cello case."
PLAN_Q = "Where does the team meet for the museum job?"
PROBES = [PLAN_Q, "What is the escape route?", "Where is the ledger hidden?"]
ECHO = re.compile(r"has no card '\d+'")
"""A tool's refusal repeats the card id its caller passed in (the same words for any id): the
read paths try every id of the case, so that echo is not a card showing up."""


def _log_ids(case, name):
    return [c.id for c in case.bureau.gateway.list(case.space, f"task:{name}:log")]


def _all_scope_ids(case, name):
    gw = case.bureau.gateway
    return [c.id for owner in (f"task:{name}", f"task:{name}:log")
            for c in gw.list(case.space, owner)]


@pytest.fixture
def team(case):
    """``heist``: owner detective, member informant, suspect only invited (not accepted).
    ``stash``: owner suspect, alone. (Set up by the operator through the task-scopes room,
    acting role first; the tests act through the agents' handles.)"""
    scopes = case.task_scopes
    scopes.create("detective", "heist")
    scopes.invite("heist", "detective", "informant")
    scopes.accept("heist", "informant")
    scopes.invite("heist", "detective", "suspect")
    scopes.write("heist", "detective", "meeting-point", PLAN)
    scopes.write("heist", "informant", "escape-route", ROUTE)
    scopes.create("suspect", "stash")
    scopes.write("stash", "suspect", "hiding-place", STASH)
    return case


def _seen(case, viewer, forbidden):
    """Every (read path, forbidden string) a role's reads show."""
    found = []
    for name, read in ROLE_READ_PATHS.items():
        for probe in PROBES:
            seen = ECHO.sub("has no card <id>", as_text(read(case, viewer, probe)))
            found += [(name, x) for x in forbidden if x in seen]
    return sorted(set(found))


def _scope_secrets(case, name, keys):
    """Texts, card ids (values and log) and keys of a scope: what a non-member must not see."""
    spaces = case.spaces()
    texts = [c.content for owner in (f"task:{name}", f"task:{name}:log")
             for c in spaces.get(owner, [])]
    assert texts, "the scope holds cards (else the check below could not fail)"
    return [*texts, *_all_scope_ids(case, name), *keys]


# -- who can read: members only --------------------------------------------------------------

def test_members_search_their_scopes_and_cards_keep_the_stored_owner(team):
    case = team
    trace = case.retrieve("informant", PLAN_Q)
    assert trace.searched_scopes == ["informant", BOARD, "task:heist"]
    [scope] = [s for s in trace.scopes if s.scope == "task:heist"]
    [hit] = [c for c in scope.hits if c.content == PLAN]
    assert (hit.owner, hit.source_role, hit.topic) == (
        "task:heist", "detective", "meeting-point")
    answer = case.interrogate("informant", PLAN_Q)
    assert answer.known and "marigold" in answer.text and "task scope heist" in answer.text
    assert hit.id in answer.cited
    # every role read path shows the member the scope's current values
    listed = {c.id: c for c in case.cards("informant")}
    assert hit.id in listed and listed[hit.id].owner == "task:heist"
    assert case.card("informant", hit.id).content == PLAN
    assert PLAN in as_text(case.agent("informant").export())
    assert ROUTE in as_text(case.agent("detective").export())
    assert case.agent("informant").scopes.read("heist", "meeting-point").text == PLAN
    assert case.agent("informant").scopes.keys("heist") == ["escape-route", "meeting-point"]
    assert "informant" in case.knowers(PLAN_Q) and "detective" in case.knowers(PLAN_Q)
    # the owner of another scope searches only its own scopes
    assert case.retrieve("suspect", PLAN_Q).searched_scopes == ["suspect", BOARD, "task:stash"]
    assert "suspect" not in case.knowers(PLAN_Q)


@pytest.mark.parametrize("viewer,scope,keys", [
    ("suspect", "heist", ["meeting-point", "escape-route"]),  # invited, not accepted
    ("detective", "stash", ["hiding-place"]),  # never invited
    ("informant", "stash", ["hiding-place"]),
])
def test_non_members_and_invitees_see_nothing_on_any_read_path(team, viewer, scope, keys):
    case = team
    forbidden = _scope_secrets(case, scope, keys)
    assert _seen(case, viewer, forbidden) == []
    assert f"task:{scope}" not in case.scopes_for(viewer)
    assert f"task:{scope}" not in case.retrieve(viewer, PLAN_Q).searched_scopes
    for cid in _all_scope_ids(case, scope):
        with pytest.raises(UnknownCardError):
            case.card(viewer, cid)
    for call in (lambda: case.agent(viewer).scopes.read(scope, keys[0]),
                 lambda: case.agent(viewer).scopes.keys(scope),
                 lambda: case.agent(viewer).scopes.history(scope, keys[0]),
                 lambda: case.agent(viewer).scopes.info(scope)):
        with pytest.raises(UnknownTaskScopeError):
            call()
    before = _all_scope_ids(case, scope)
    with pytest.raises(UnknownTaskScopeError):
        case.agent(viewer).scopes.write(scope, "meeting-point", "An intruder's note.")
    assert _all_scope_ids(case, scope) == before  # refused before anything was stored
    # the outward views show ids and counts, never a scope's text
    for read in OUTWARD_READ_PATHS.values():
        seen = as_text(read(case))
        assert not [t for t in (PLAN, ROUTE, STASH) if t in seen]


def test_an_invitee_reads_after_accepting_and_its_inbox_showed_nothing_before(team):
    case = team
    before = as_text(case.agent("suspect").scopes.inbox())
    for secret in (PLAN, ROUTE, '"meeting-point"', '"escape-route"'):
        assert secret not in before
    assert [i.kind for i in case.agent("suspect").scopes.inbox().items if i.scope == "heist"] == [
        "scope.invited"]
    case.agent("suspect").scopes.accept("heist")
    assert case.agent("suspect").scopes.read("heist", "escape-route").text == ROUTE
    assert ROUTE in as_text(case.cards("suspect"))


def test_the_refusal_is_the_same_for_a_scope_that_exists_and_one_that_does_not(team,
                                                                                 monkeypatch):
    case = team
    gw = case.bureau.gateway
    touched: list[str] = []
    for method in ("add", "get", "list", "count", "delete", "search_scopes", "search_scope"):
        real = getattr(gw, method)
        monkeypatch.setattr(gw, method, lambda *a, _m=method, _r=real, **k: (
            touched.append(_m), _r(*a, **k))[1])
    calls = {
        "read": lambda n, r: case.agent(r).scopes.read(n, "meeting-point"),
        "keys": lambda n, r: case.agent(r).scopes.keys(n),
        "history": lambda n, r: case.agent(r).scopes.history(n, "meeting-point"),
        "info": lambda n, r: case.agent(r).scopes.info(n),
        "write": lambda n, r: case.agent(r).scopes.write(n, "meeting-point", "A note.",
                                                         read_version=1),
        "invite": lambda n, r: case.agent(r).scopes.invite(n, "detective"),
        "remove": lambda n, r: case.agent(r).scopes.remove(n, "detective"),
        "transfer": lambda n, r: case.agent(r).scopes.transfer(n, "detective"),
        "archive": lambda n, r: case.agent(r).scopes.archive(n),
        "delete": lambda n, r: case.agent(r).scopes.delete(n),
        "accept": lambda n, r: case.agent(r).scopes.accept(n),
        "decline": lambda n, r: case.agent(r).scopes.decline(n),
    }
    for op, call in calls.items():
        answers = []
        for name in ("stash", "nowhere"):  # stash exists, the informant is not in it
            touched.clear()
            with pytest.raises((UnknownTaskScopeError, NoInvitationError)) as info:
                call(name, "informant")
            answers.append((type(info.value), str(info.value).replace(name, "<name>"),
                            tuple(touched)))
        assert answers[0] == answers[1], op
        assert answers[0][2] == (), op  # refused before the store was asked anything


def test_readable_scopes_only_ever_adds_task_scopes():
    assert readable_scopes("detective") == ["detective", BOARD]
    assert readable_scopes("detective", ["task:a", "task:b", "task:a"]) == [
        "detective", BOARD, "task:a", "task:b"]
    for bad in ("informant", BOARD, "task:a:log", "task:", "run:x:informant"):
        with pytest.raises(ValueError):
            readable_scopes("detective", [bad])


# -- removal: at once, everywhere, in every process -------------------------------------------

def test_a_removed_member_loses_access_everywhere_at_once(team):
    case = team
    assert _seen(case, "informant", [PLAN]) != []  # it saw the plan while a member
    case.agent("detective").scopes.remove("heist", "informant")
    forbidden = [PLAN, *_all_scope_ids(case, "heist")]
    assert _seen(case, "informant", forbidden) == []
    with pytest.raises(UnknownTaskScopeError):
        case.agent("informant").scopes.write("heist", "escape-route", "I am still here.")
    # its inbox keeps what it was told while a member (names and versions), no text
    inbox = as_text(case.agent("informant").scopes.inbox())
    assert "scope.removed" in inbox and PLAN not in inbox and ROUTE not in inbox


CHILD_REMOVE = """
import sys
from bureau import Bureau
Bureau.open().case(sys.argv[1]).agent("detective").scopes.remove("heist", "informant")
"""

CHILD_HOLDER = r"""
import json, sys, time
from pathlib import Path
from bureau import Bureau
from bureau.errors import UnknownTaskScopeError
from bureau.service.read_paths import ROLE_READ_PATHS, as_text

sync, case_id, plan = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
case = Bureau.open().case(case_id)
informant = case.agent("informant")
before = informant.scopes.read("heist", "meeting-point").text == plan
(sync / "ready").touch()
deadline = time.time() + 120
while not (sync / "removed").exists():
    if time.time() > deadline:
        sys.exit("never removed")
    time.sleep(0.01)
leaks = [name for name, read in ROLE_READ_PATHS.items()
         if plan in as_text(read(case, "informant", "Where does the team meet?"))]
try:
    informant.scopes.read("heist", "meeting-point")
    refused = False
except UnknownTaskScopeError:
    refused = True
print(json.dumps({"before": before, "leaks": leaks, "refused": refused}))
"""


def spawn(code: str, *args: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args], cwd=cwd,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_removal_in_another_process_takes_effect_here_at_once(team, tmp_path):
    case = team
    assert case.interrogate("informant", PLAN_Q).known
    run_python(CHILD_REMOVE.replace("sys.argv[1]", repr(case.id)), cwd=tmp_path)
    assert not case.interrogate("informant", PLAN_Q).known
    assert _seen(case, "informant", [PLAN, *_all_scope_ids(case, "heist")]) == []


def test_a_holder_in_another_process_loses_access_when_the_owner_removes_it(team, tmp_path):
    case = team
    sync = tmp_path / "sync"
    sync.mkdir()
    child = spawn(CHILD_HOLDER, str(sync), case.id, PLAN, cwd=tmp_path)
    deadline = time.monotonic() + 120
    while not (sync / "ready").exists() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    case.agent("detective").scopes.remove("heist", "informant")
    (sync / "removed").touch()
    [got] = finish(child)
    assert got == {"before": True, "leaks": [], "refused": True}


# -- managing: owner only; transfer, archive, delete ------------------------------------------

def test_only_the_owner_manages_and_ownership_moves_to_a_member_only(team):
    case = team
    with pytest.raises(NotScopeOwnerError):
        case.agent("informant").scopes.invite("heist", "suspect")
    with pytest.raises(NotScopeOwnerError):
        case.agent("informant").scopes.remove("heist", "detective")
    with pytest.raises(NotScopeOwnerError):
        case.agent("informant").scopes.archive("heist")
    with pytest.raises(MembershipError):
        case.agent("detective").scopes.transfer("heist", "suspect")  # invited, not accepted
    with pytest.raises(MembershipError):
        case.agent("detective").scopes.remove("heist", "detective")  # the owner stays
    with pytest.raises(MembershipError):
        case.agent("detective").scopes.invite("heist", "informant")  # already a member
    with pytest.raises(ScopeExistsError):
        case.agent("informant").scopes.create("heist")
    assert case.agent("informant").scopes.info("heist").owner == "detective"

    moved = case.agent("detective").scopes.transfer("heist", "informant")
    assert (moved.owner, moved.members) == ("informant", ("detective", "informant"))
    with pytest.raises(NotScopeOwnerError):
        case.agent("detective").scopes.remove("heist", "informant")  # no longer the owner
    case.agent("informant").scopes.remove("heist", "detective")  # the new owner removes the old
    with pytest.raises(UnknownTaskScopeError):
        case.agent("detective").scopes.read("heist", "meeting-point")
    assert case.agent("informant").scopes.read("heist", "meeting-point").text == PLAN
    assert [e.type for e in case.events()][-2:] == ["scope.transferred", "scope.removed"]


def test_archive_is_read_only_and_delete_purges_every_card(team):
    case = team
    case.agent("detective").scopes.archive("heist")
    assert case.agent("informant").scopes.info("heist").state == "archived"
    with pytest.raises(ScopeArchivedError):
        case.agent("informant").scopes.write("heist", "meeting-point", "A late change.",
                                             read_version=1)
    with pytest.raises(ScopeArchivedError):
        case.agent("suspect").scopes.accept("heist")  # membership is frozen too
    with pytest.raises(ScopeArchivedError):
        case.agent("detective").scopes.remove("heist", "informant")
    assert case.agent("informant").scopes.read("heist", "meeting-point").text == PLAN  # readable
    assert case.interrogate("informant", PLAN_Q).known

    gw = case.bureau.gateway
    assert gw.count(case.space, "task:heist") == 2 and gw.count(case.space, "task:heist:log") == 2
    case.agent("detective").scopes.delete("heist")
    assert gw.count(case.space, "task:heist") == 0 and gw.count(case.space, "task:heist:log") == 0
    assert not [c for cards in case.spaces().values() for c in cards
                if c.content in (PLAN, ROUTE)]
    purged = [e.payload for e in case.bureau.event_log(case.id) if e.type == "scope.purged"]
    assert purged == [{"scope": "heist", "deleted": 4}]  # the operator's record names it
    assert [e.payload for e in case.events() if e.type == "scope.purged"] == [{"deleted": 4}]
    for role in case.role_names:
        with pytest.raises(UnknownTaskScopeError):
            case.agent(role).scopes.read("heist", "meeting-point")
        assert "task:heist" not in case.scopes_for(role)
        assert not case.interrogate(role, PLAN_Q).known
    with pytest.raises(UnknownTaskScopeError):
        case.agent("detective").scopes.delete("heist")
    with pytest.raises(ScopeExistsError):  # the name is never used again
        case.agent("detective").scopes.create("heist")
    for role in ("detective", "informant", "suspect"):  # the pending invitee hears of it too
        inbox = case.agent(role).scopes.inbox()
        assert [i.kind for i in inbox.items if i.scope == "heist"][-1] == "scope.deleted"


def test_decline_and_a_withdrawn_invitation(case):
    case.agent("informant").scopes.create("tips")
    case.agent("informant").scopes.invite("tips", "suspect")
    case.agent("suspect").scopes.decline("tips")
    with pytest.raises(NoInvitationError):
        case.agent("suspect").scopes.accept("tips")
    case.agent("informant").scopes.invite("tips", "suspect")  # invited again
    case.agent("informant").scopes.remove("tips", "suspect")  # and withdrawn
    with pytest.raises(NoInvitationError):
        case.agent("suspect").scopes.accept("tips")
    assert [m.scope for m in case.agent("suspect").scopes.mine()] == []
    assert [(m.scope, m.state) for m in case.agent("informant").scopes.mine()] == [
        ("tips", "member")]


# -- inbox -----------------------------------------------------------------------------------

def test_inbox_in_order_per_role_and_resumable_by_cursor(case):
    case.agent("detective").scopes.create("ops")
    case.agent("detective").scopes.invite("ops", "informant")
    case.agent("informant").scopes.accept("ops")
    first = case.agent("detective").scopes.write("ops", "status", "Status: the van is parked.")
    case.agent("informant").scopes.write("ops", "status", "Status: the van left.",
                                         read_version=first.version)
    case.agent("informant").scopes.write("ops", "status", "Status: stale news.")  # version 1: stale
    case.agent("detective").scopes.transfer("ops", "informant")
    case.agent("informant").scopes.archive("ops")
    full = case.agent("informant").scopes.inbox()
    kinds = [i.kind for i in full.items]
    assert kinds == ["scope.invited", "scope.accepted", "scope.write", "scope.write.stale",
                     "scope.transferred", "scope.archived"]
    assert [i.cursor for i in full.items] == list(range(1, 7))  # numbered per role
    assert full.next_cursor == 6
    assert full.items[2].details == {"scope": "ops", "key": "status", "version": 1,
                                     "writer": "detective", "seq": full.items[2].details["seq"]}
    assert full.items[3].details["winning_version"] == 2
    assert [i.kind for i in case.agent("detective").scopes.inbox().items] == [
        "scope.created", "scope.invited", "scope.accepted", "scope.write", "scope.transferred",
        "scope.archived"]
    # read in pages of two, resuming from each next_cursor
    got, cursor = [], 0
    while True:
        page = case.agent("informant").scopes.inbox(cursor=cursor, limit=2)
        if not page.items:
            assert page.next_cursor == cursor
            break
        got += page.items
        cursor = page.next_cursor
    assert got == list(full.items)
    assert case.agent("informant").scopes.inbox(cursor=4).items == full.items[4:]
    assert case.agent("suspect").scopes.inbox().items == ()
    assert "Status:" not in as_text(full)  # notices never carry text
    for bad in (-1, True, "3", 1.5):
        with pytest.raises(InvalidArgumentError):
            case.agent("informant").scopes.inbox(cursor=bad)
    with pytest.raises(InvalidArgumentError):
        case.agent("informant").scopes.inbox(limit=0)


# -- keyed writes: versions, the order, stale writes ----------------------------------------------

def test_versions_first_write_update_and_stale(case):
    case.agent("detective").scopes.create("notes")
    case.agent("detective").scopes.invite("notes", "suspect")
    case.agent("suspect").scopes.accept("notes")
    a = case.agent("detective").scopes.write("notes", "alibi", "The suspect was at the opera.")
    assert (a.version, a.stale, a.winning_version) == (1, False, 1)
    v = case.agent("suspect").scopes.read("notes", "alibi")
    assert (v.version, v.writer, v.text) == (1, "detective", "The suspect was at the opera.")
    b = case.agent("suspect").scopes.write("notes", "alibi", "The suspect was at the cinema.",
                                           read_version=v.version)
    assert (b.version, b.stale) == (2, False)
    late = case.agent("detective").scopes.write("notes", "alibi", "Opera, surely.", read_version=0)
    assert (late.version, late.stale, late.winning_version, late.winning_writer) == (
        1, True, 2, "suspect")
    now = case.agent("detective").scopes.read("notes", "alibi")
    assert (now.version, now.writer, now.text) == (2, "suspect", "The suspect was at the cinema.")
    history = case.agent("suspect").scopes.history("notes", "alibi")
    assert [(w.version, w.outcome, w.current) for w in history] == [
        (1, "won", False), (2, "won", True), (1, "stale", False)]
    assert history[2].text == "Opera, surely." and history[2].writer == "detective"
    # searches return the winner only; the stale text and the superseded one are not searchable
    trace = case.retrieve("detective", "Where was the suspect, the opera or the cinema?")
    [scope] = [s for s in trace.scopes if s.scope == "task:notes"]
    shown = [c.content for c in (*scope.hits, *scope.below_threshold)]
    assert shown == ["The suspect was at the cinema."]
    assert case.bureau.gateway.count(case.space, "task:notes") == 1
    # a card that shows no current value (a settle cut short by a crash) is never returned
    orphan = case.bureau.gateway.add(case.space, "task:notes", "The suspect was at the zoo.",
                                     {"visibility": "private", "topic": "alibi"})
    trace = case.retrieve("detective", "Was the suspect at the zoo?")
    [scope] = [s for s in trace.scopes if s.scope == "task:notes"]
    assert [c.content for c in (*scope.hits, *scope.below_threshold)] == [
        "The suspect was at the cinema."]
    assert orphan.id not in {c.id for c in case.cards("detective")}
    with pytest.raises(UnknownCardError):
        case.card("detective", orphan.id)
    assert "zoo" not in case.interrogate("suspect", "Was the suspect at the zoo?").text
    stale = [i for i in case.agent("detective").scopes.inbox().items
             if i.kind == "scope.write.stale"]
    assert [i.details["seq"] for i in stale] == [late.seq]
    with pytest.raises(UnknownScopeKeyError):
        case.agent("detective").scopes.read("notes", "motive")


def test_bad_writes_are_refused_before_anything_is_stored(case):
    case.agent("detective").scopes.create("desk")
    for kwargs in ({"read_version": -1}, {"read_version": True}, {"read_version": "1"},
                   {"read_version": 1.0}, {"read_version": 10**30}, {"read_version": 2**62}):
        with pytest.raises(InvalidArgumentError):
            case.agent("detective").scopes.write("desk", "k", "text", **kwargs)
    with pytest.raises(InvalidTextError):
        case.agent("detective").scopes.write("desk", "Bad Key", "text")
    with pytest.raises(InvalidTextError):
        case.agent("detective").scopes.write("desk", "k", "   ")
    with pytest.raises(InvalidTextError):
        case.agent("detective").scopes.create("task:x")  # ':' never enters a scope name
    assert _all_scope_ids(case, "desk") == []
    assert case.agent("detective").scopes.keys("desk") == []


def _w(seq, version, at, writer, card):
    return ScopeWrite(seq, "s", "k", version, writer, at, None, "won", card)


def test_the_order_is_total_and_the_winner_does_not_depend_on_arrival_order():
    writes = [_w(1, 1, 10.0, "detective", "5"), _w(2, 2, 11.0, "informant", "6"),
              _w(3, 2, 12.0, "detective", "7"),       # same version, later: wins over seq 2
              _w(4, 2, 12.0, "suspect", "8"),         # same version and time: writer id decides
              _w(5, 1, 99.0, "suspect", "9")]         # late but a lower version: loses
    expected = writes[3]
    for perm in itertools.permutations(writes):
        assert winner(perm) is expected
    assert len({w.order for w in writes}) == len(writes)
    assert order_key(2, 12.0, "suspect", "8") > order_key(2, 12.0, "detective", "99")


def test_the_ledger_decides_equal_versions_by_timestamp_then_writer(bureau, case):
    case.task_scopes.create("detective", "race")
    case.task_scopes.invite("race", "detective", "informant")
    case.task_scopes.accept("race", "informant")
    scopes, t = bureau.ledger.task_scope_records, time.time()

    def rec(writer, version, at, card):
        return scopes.record_write(case.id, case.token, "race", writer, "k", version,
                                   version - 1, at, card)[0]

    assert not rec("detective", 1, t, "100").stale
    assert not rec("informant", 2, t + 2, "101").stale
    late = rec("detective", 2, t + 1, "102")  # same version, earlier timestamp: recorded, stale
    assert (late.stale, late.winning_writer) == (True, "informant")
    assert rec("detective", 2, t + 2, "103").stale  # same time: writer id 'detective' < 'informant'
    assert not rec("informant", 2, t + 2, "104").stale  # same time, same writer, greater card
    hist = scopes.history(case.id, "race", "detective", "k")
    assert [h.outcome for h in hist] == ["won", "won", "stale", "stale", "won"]
    assert winner(random.sample(hist, len(hist))).seq == hist[-1].seq


# -- two processes, 100 rounds, the same keys ---------------------------------------------------

CHILD_WRITER = r"""
import json, sys, time
from pathlib import Path
from bureau import Bureau
from bureau.errors import UnknownScopeKeyError

sync, name, case_id, role, rounds = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], \
    int(sys.argv[5])
from bureau.quotas import Quotas
bureau = Bureau.open()
bureau.settings = bureau.settings.with_(quotas=Quotas.off())  # a race, not a rate, under test
case = bureau.case(case_id)
scopes = case.agent(role).scopes
(sync / f"ready-{name}").touch()
deadline = time.time() + 300

def wait_for(prefix):
    while len(list(sync.glob(prefix + "-*"))) < 2:
        if time.time() > deadline:
            sys.exit(f"the other process never reached {prefix}")
        time.sleep(0.005)

wait_for("ready")
results = []
for i in range(rounds):
    for key in ("status", "plan"):
        try:
            read = scopes.read("ops", key).version
        except UnknownScopeKeyError:
            read = None
        if i % 10 == 9 and read is not None and read >= 2:
            read -= 2  # a writer working from an old read: always stale
        r = scopes.write("ops", key, f"{role} says {key} of round {i}", read_version=read)
        results.append({"seq": r.seq, "key": key, "stale": r.stale, "version": r.version,
                        "winning_version": r.winning_version})
(sync / f"done-{name}").touch()
wait_for("done")
final = {}
for key in ("status", "plan"):
    v = scopes.read("ops", key)
    final[key] = [v.text, v.version, v.writer, v.written_at]
print(json.dumps({"results": results, "final": final}))
"""

ROUNDS = 100


def test_two_processes_writing_the_same_keys_converge(bureau, case, tmp_path):
    case.task_scopes.create("detective", "ops")
    case.task_scopes.invite("ops", "detective", "informant")
    case.task_scopes.accept("ops", "informant")
    sync = tmp_path / "sync"
    sync.mkdir()
    start = time.perf_counter()
    procs = [spawn(CHILD_WRITER, str(sync), name, case.id, role, str(ROUNDS), cwd=tmp_path)
             for name, role in (("a", "detective"), ("b", "informant"))]
    results = finish(*procs, timeout=600)
    elapsed = time.perf_counter() - start

    # every reader -- both processes and this one -- sees the same value, version and writer
    mine = {}
    for key in ("status", "plan"):
        v = case.agent("detective").scopes.read("ops", key)
        mine[key] = [v.text, v.version, v.writer, v.written_at]
    assert results[0]["final"] == results[1]["final"] == mine

    reported = {r["seq"]: r for res in results for r in res["results"]}
    assert len(reported) == 2 * 2 * ROUNDS
    for key in ("status", "plan"):
        history = case.agent("informant").scopes.history("ops", key)
        assert len(history) == 2 * ROUNDS  # nothing lost, stale writes included
        # the ledger decided each write against everything recorded before it
        best = None
        for w in history:
            assert w.stale == (best is not None and w.order <= best.order), w
            assert reported[w.seq]["stale"] == w.stale  # and told its writer so
            if not w.stale:
                best = w
        # the current value is the greatest write, whatever order one learns them in
        current = [w for w in history if w.current]
        assert current == [best]
        for _ in range(5):
            assert winner(random.sample(history, len(history))) == best
        assert mine[key][:3] == [best.text, best.version, best.writer]
    # every stale write was reported to its writer: in its result and in its inbox
    stale = {seq for seq, r in reported.items() if r["stale"]}
    assert len(stale) >= 2 * 2 * (ROUNDS // 10)  # the deliberate ones at least
    noticed = {i.details["seq"] for role in ("detective", "informant")
               for i in case.agent(role).scopes.inbox(limit=1000).items
               if i.kind == "scope.write.stale"}
    assert noticed == stale
    # searches see one card per key: the winner
    gw = bureau.gateway
    assert gw.count(case.space, "task:ops") == 2
    assert gw.count(case.space, "task:ops:log") == 2 * 2 * ROUNDS
    shown = {c.content for c in case.cards("informant") if c.owner == "task:ops"}
    assert shown == {mine["status"][0], mine["plan"][0]}
    print(f"\n2 processes x {ROUNDS} rounds x 2 keys: {len(stale)} stale writes reported, "
          f"{elapsed:.1f} s including process starts")


CHILD_SLOT = r"""
import json, sys, time
from pathlib import Path
import powermem.utils.utils as ids
from bureau import Bureau

sync, name = Path(sys.argv[1]), sys.argv[2]
Bureau.open()
gen = ids.get_snowflake_generator()
(sync / f"ready-{name}").touch()
deadline = time.time() + 120
while len(list(sync.glob("ready-*"))) < 2 and time.time() < deadline:
    time.sleep(0.01)
print(json.dumps([gen.datacenter_id, gen.worker_id]))
"""


def test_processes_sharing_a_store_never_make_the_same_card_ids(bureau, tmp_path):
    """PowerMem's card ids are Snowflake ids inserted with REPLACE INTO: two processes with the
    same (datacenter, worker) ids overwrite each other's cards when they add in the same
    millisecond (the convergence test above lost cards that way). Each process that shares a
    data directory holds its own slot."""
    import powermem.utils.utils as ids

    sync = tmp_path / "sync"
    sync.mkdir()
    slots = finish(*[spawn(CHILD_SLOT, str(sync), name, cwd=tmp_path) for name in "ab"])
    gen = ids.get_snowflake_generator()
    mine = [gen.datacenter_id, gen.worker_id]
    assert len({tuple(s) for s in [*slots, mine]}) == 3, (slots, mine)


# -- the server ledger -------------------------------------------------------------------------

def test_the_server_ledger_has_the_tables_and_the_rules(seekdb_server):  # noqa: F811
    from bureau.ledger.server import ServerLedger

    ledger = ServerLedger(seekdb_server, key_path=server_key(seekdb_server))
    scopes = ledger.task_scope_records
    case_id = f"scopes-{os.getpid()}-{int(time.time())}"
    try:
        with ledger.connection.tx() as db:
            tables = {next(iter(r.values())) for r in db.all("SHOW TABLES")}
        assert {f"bureau_task_scope{t}" for t in ("s", "_members", "_writes", "_keys",
                                                  "_inbox")} <= tables
        ledger.cases.add(case_id, "safe-combination", "t", "tok")
        scopes.create(case_id, "tok", "ops", "detective")
        with pytest.raises(ScopeExistsError):
            scopes.create(case_id, "tok", "ops", "informant")
        scopes.change(case_id, "tok", "invite", "ops", "detective", "informant")
        with pytest.raises(UnknownTaskScopeError):
            scopes.access(case_id, "ops", "informant")
        scopes.change(case_id, "tok", "accept", "ops", "informant")
        t = time.time()
        first, _ = scopes.record_write(case_id, "tok", "ops", "informant", "plan", 1, None,
                                       t, "11")
        late, _ = scopes.record_write(case_id, "tok", "ops", "detective", "plan", 1, None,
                                      t - 1, "12")
        assert (first.stale, late.stale, late.winning_writer) == (False, True, "informant")
        assert scopes.settle_key(case_id, "ops", "plan", first.seq, None, "21")
        assert not scopes.settle_key(case_id, "ops", "plan", first.seq, None, "22")
        assert scopes.member_view(case_id, "informant") == {"task:ops": frozenset({"21"})}
        assert scopes.member_view(case_id, "suspect") == {}
        kinds = [i.kind for i in scopes.inbox_page(case_id, "detective", 0, 100)]
        assert kinds == ["scope.created", "scope.invited", "scope.accepted", "scope.write",
                         "scope.write.stale"]
        assert [i.cursor for i in scopes.inbox_page(case_id, "detective", 3, 100)] == [4, 5]
        scopes.change(case_id, "tok", "remove", "ops", "detective", "informant")
        assert scopes.member_view(case_id, "informant") == {}
        ledger.cases.delete(case_id, "tok")
        with ledger.connection.tx() as db:
            left = db.one("SELECT COUNT(*) AS n FROM bureau_task_scope_inbox WHERE case_id = ?",
                          (case_id,))
        assert int(left["n"]) == 0
    finally:
        ledger.close()
