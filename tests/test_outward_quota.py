"""Outward views say no more than the threat model allows, and growth is bounded (issue 19 §7);
every consult is audited and charged, released or not (issue 19 §2).

On real storage: an observer reading ``case.events()`` and ``case.stage()`` (and the stage
widget built from them) after task-scope and run activity finds no scope name, key, member or
invitee in the scope events and no run id anywhere; a role cannot reattach another role's run
by an id it read; a probing loop meets a typed quota refusal that changes nothing; a consult
that releases nothing still leaves its audit entry and counts against the requester's quota.
"""

from __future__ import annotations

import statistics
import time
from contextlib import contextmanager

import pytest

from bureau.errors import (
    ConfigurationError,
    QuotaExceededError,
    UnknownCaseError,
    UnknownRunError,
)
from bureau.quotas import QuotaMeter, Quotas
from bureau.service.read_paths import as_text
from bureau.settings import Settings

SAFE_Q = "What is the combination of the safe in the study?"
NOTHING_Q = "Which tide tables does the lighthouse keeper of Brest publish?"
SCOPE, KEY = "zephyr-stakeout", "rendezvous-point"
ROLES = ("detective", "informant", "suspect")


@contextmanager
def quotas(bureau, **limits):
    """Run the block under these limits (the rest off), then restore the settings."""
    before = bureau.settings
    bureau.settings = before.with_(quotas=Quotas(**{**vars(Quotas.off()), **limits}))
    try:
        yield
    finally:
        bureau.settings = before


def _state(bureau, case) -> tuple:
    """Everything a refused call must leave as it was: the operator's event log, the audit,
    every space's cards, the task scopes."""
    return (len(bureau.event_log(case.id)), len(case.audit()),
            {k: len(v) for k, v in case.spaces().items()},
            bureau.ledger.mediation.verify_audit())


def _scope_and_run_activity(case):
    detective, informant = case.agent("detective"), case.agent("informant")
    detective.scopes.create(SCOPE)
    detective.scopes.invite(SCOPE, "informant")
    informant.scopes.accept(SCOPE)
    detective.scopes.invite(SCOPE, "suspect")
    case.agent("suspect").scopes.decline(SCOPE)
    detective.scopes.write(SCOPE, KEY, "Pier 9 at dawn, bring the ledger")
    informant.recall("Where do we meet at dawn?")  # searches the task scope
    run = detective.start_run()
    run.tool_output("The harbour master logs every boat at Pier 9.", "https://harbour.example")
    run.retrieve("Who logs the boats at the pier?")
    run_id = run.id
    run.end()
    return run_id


# -- §7: what observers see ---------------------------------------------------------------------
def test_observers_see_no_scope_member_invitee_or_run_id(bureau, case):
    run_id = _scope_and_run_activity(case)
    from bureau.course.widgets.stage import stage_game, stage_html

    events = case.events()
    outward = (as_text(events) + as_text(case.stage())
               + stage_html(case.stage(), events, stage_game(case)))
    for secret in (SCOPE, "zephyr", KEY, "rendezvous", run_id, f"run:{run_id}", "task:zephyr"):
        assert secret not in outward, secret
    scope_events = [e for e in events if e.type.startswith("scope.")]
    assert {e.type for e in scope_events} >= {"scope.created", "scope.invited",
                                               "scope.accepted", "scope.declined",
                                               "scope.written"}  # counts per kind stay
    for e in scope_events:  # no owner, member, invitee or writer
        assert not any(role in as_text(e.payload) for role in ROLES), e
    for e in events:
        if e.type in ("run.started", "run.ended"):
            assert "run_id" not in e.payload and e.payload["role"] == "detective"
    searched = [e.payload["searched_scopes"] for e in events if e.type == "retrieval.completed"]
    assert ["informant", "board", "task:*"] in searched  # the kind, not the name
    assert any("run:*" in s for s in searched)
    # The operator's own record keeps every detail.
    log = as_text(bureau.event_log(case.id))
    assert SCOPE in log and run_id in log and "informant" in log


def test_another_roles_run_id_is_refused_exactly_like_an_unknown_id(case):
    run = case.agent("detective").start_run()
    suspect = case.agent("suspect")
    unknown = "0123456789ab" if run.id != "0123456789ab" else "ba9876543210"

    def refusal(rid: str) -> tuple[str, str, float]:
        start = time.perf_counter()
        with pytest.raises(UnknownRunError) as info:
            suspect.run(rid)
        took = time.perf_counter() - start
        return type(info.value).__name__, str(info.value).replace(rid, "<id>"), took

    try:
        theirs, other = [], []
        for _ in range(40):
            theirs.append(refusal(run.id))
            other.append(refusal(unknown))
        assert {t[:2] for t in theirs} == {o[:2] for o in other} and len({t[:2] for t in theirs}) == 1
        a = statistics.median(t[2] for t in theirs)
        b = statistics.median(o[2] for o in other)
        assert abs(a - b) < 0.002 + max(a, b), (a, b)  # the same ledger read either way
        assert case.agent("detective").run(run.id).id == run.id  # its own role reattaches
    finally:
        run.end()


# -- §7: quotas ---------------------------------------------------------------------------------
def test_a_probing_loop_meets_the_consult_quota_and_the_refusal_changes_nothing(bureau, case):
    suspect = case.agent("suspect")
    with quotas(bureau, consults_per_minute=5):
        for _ in range(5):
            suspect.consult("informant", SAFE_Q)
        before = _state(bureau, case)
        with pytest.raises(QuotaExceededError) as info:
            suspect.consult("informant", SAFE_Q)
        assert "suspect" in str(info.value) and "5 consults per minute" in str(info.value)
        assert "consults_per_minute" in info.value.hint and 0 < info.value.retry_after_s <= 60
        result = suspect.call_tool("consult", {"owner": "informant", "question": SAFE_Q})
        assert result == {"ok": False, "error": "QuotaExceededError",
                          "message": result["message"]}
        with pytest.raises(QuotaExceededError):
            suspect.ask(SAFE_Q)  # its own memory counts too
        assert _state(bureau, case) == before  # nothing searched, charged, audited or told
        case.agent("detective").ask(SAFE_Q)  # another principal has its own window
        case.requester("chief").consult("informant", SAFE_Q)  # the operator is never limited


def test_a_handle_on_a_deleted_case_hears_that_the_case_is_gone_not_about_its_quota(bureau):
    """The order of the checks: a spent quota on a case that no longer exists is not what the
    caller needs to hear (and waiting for the window would not help)."""
    case = bureau.load_scenario("safe-combination", case_id="quota-then-gone")
    suspect = case.agent("suspect")
    with quotas(bureau, consults_per_minute=1):
        suspect.consult("informant", SAFE_Q)
        with pytest.raises(QuotaExceededError):
            suspect.consult("informant", SAFE_Q)
        bureau.delete_case(case.id)
        with pytest.raises(UnknownCaseError):
            suspect.consult("informant", SAFE_Q)
        with pytest.raises(UnknownCaseError):
            suspect.ask(SAFE_Q)


def test_a_consult_that_releases_nothing_is_audited_and_charged(bureau, case):
    detective = case.agent("detective")
    with quotas(bureau, consults_per_minute=2):
        before = case.audit()
        m = detective.consult("informant", NOTHING_Q)
        assert m.released == [] and not m.answer.known
        new = case.audit().iloc[len(before):]
        assert len(new) == 1  # exactly one entry for the invocation
        entry = new.iloc[0]
        assert (entry["kind"], entry["action"], entry["requester"]) == (
            "invocation", "consult", "detective")
        assert entry["invocation_id"] == m.invocation.id and entry["card_owner"] == "informant"
        assert NOTHING_Q not in as_text(case.audit().to_dict("records"))
        # What the requester holds names no card of the informant's.
        informant_ids = {c.id for c in case.spaces()["informant"]}
        assert not any(cid in as_text(m) for cid in informant_ids)
        # Its own memory, pass-through: audited as well.
        detective.ask(NOTHING_Q)
        assert len(case.audit()) == len(before) + 2
        with pytest.raises(QuotaExceededError):  # both counted against the quota
            detective.consult("informant", NOTHING_Q)
    assert case.stage()["mediation"].get("consult") is None  # the stage counts decisions only


def test_a_consult_with_decisions_writes_its_invocation_entry_first(bureau, case):
    before = len(case.audit())
    m = case.agent("detective").consult("informant", SAFE_Q)  # the closed policy withholds
    new = case.audit().iloc[before:]
    assert list(new["kind"]) == ["invocation"] + ["decision"] * (len(new) - 1) and len(new) > 1
    assert (new["invocation_id"] == m.invocation.id).all()
    assert case.audit().iloc[-1]["action"] == "withhold"  # the decisions follow it


def test_audit_growth_per_principal_is_capped(bureau, case):
    suspect = case.agent("suspect")
    with quotas(bureau, audit_entries_per_minute=3):
        for _ in range(3):  # one invocation entry each, nothing relevant
            suspect.consult("informant", NOTHING_Q)
        before = _state(bureau, case)
        with pytest.raises(QuotaExceededError, match="audit entries per minute"):
            suspect.consult("informant", NOTHING_Q)
        assert _state(bureau, case) == before


def test_scope_writes_are_rate_limited_before_anything_is_stored(bureau, case):
    detective = case.agent("detective")
    detective.scopes.create(SCOPE)
    with quotas(bureau, scope_writes_per_minute=2):
        detective.scopes.write(SCOPE, KEY, "one")
        detective.scopes.write(SCOPE, KEY, "two")
        before = (_state(bureau, case), detective.scopes.history(SCOPE, KEY))
        with pytest.raises(QuotaExceededError, match="task-scope writes per minute"):
            detective.scopes.write(SCOPE, KEY, "three")
        assert (_state(bureau, case), detective.scopes.history(SCOPE, KEY)) == before
        assert detective.scopes.read(SCOPE, KEY).text == "two"


def test_a_runs_tool_output_is_capped(bureau, case):
    with quotas(bureau, run_tool_outputs=2), case.agent("detective").start_run() as run:
        run.tool_output("page one", "web")
        run.tool_output("page two", "web")
        before = _state(bureau, case)
        with pytest.raises(QuotaExceededError, match="2 tool outputs in one run"):
            run.tool_output("page three", "web")
        assert len(run.cards()) == 2 and _state(bureau, case) == before


def test_an_inbox_keeps_only_its_newest_notices(bureau, case):
    detective, informant = case.agent("detective"), case.agent("informant")
    detective.scopes.create(SCOPE)
    detective.scopes.invite(SCOPE, "informant")
    informant.scopes.accept(SCOPE)
    seen = informant.scopes.inbox().next_cursor
    with quotas(bureau, inbox_length=3):
        for i in range(6):
            detective.scopes.write(SCOPE, f"k{i}", f"value {i}")
    page = informant.scopes.inbox(seen)
    assert [n.details["key"] for n in page.items] == ["k3", "k4", "k5"]
    assert page.next_cursor == seen + 6  # the cursor still counts every notice


# -- settings -----------------------------------------------------------------------------------
def test_quota_settings_are_validated_and_read_from_the_environment(monkeypatch, tmp_path):
    assert Settings(data_dir=tmp_path).quotas == Quotas()
    assert Quotas().consults_per_minute == 120
    monkeypatch.setenv("BUREAU_QUOTAS", "consults_per_minute=600, inbox_length=none")
    q = Settings.from_env(data_dir=tmp_path).quotas
    assert (q.consults_per_minute, q.inbox_length, q.scope_writes_per_minute) == (600, None, 120)
    monkeypatch.setenv("BUREAU_QUOTAS", "off")
    assert Settings.from_env(data_dir=tmp_path).quotas == Quotas.off()
    for bad in ("consults=5", "consults_per_minute=lots", "consults_per_minute"):
        monkeypatch.setenv("BUREAU_QUOTAS", bad)
        with pytest.raises(ConfigurationError, match="BUREAU_QUOTAS"):
            Settings.from_env(data_dir=tmp_path)
    for bad in (0, -1, True, 2.5, "5"):
        with pytest.raises(ConfigurationError):
            Quotas(consults_per_minute=bad)
    with pytest.raises(ConfigurationError):
        Settings(data_dir=tmp_path, quotas={"consults_per_minute": 5})


def test_the_window_slides(monkeypatch):
    now = [1000.0]
    meter = QuotaMeter(clock=lambda: now[0])
    for _ in range(3):
        meter.take("suspect", "consults_per_minute", 3, what="consults")
    with pytest.raises(QuotaExceededError) as info:
        meter.take("suspect", "consults_per_minute", 3, what="consults")
    assert info.value.retry_after_s == pytest.approx(60.0)
    now[0] += 30
    with pytest.raises(QuotaExceededError) as info:
        meter.take("suspect", "consults_per_minute", 3, what="consults")
    assert info.value.retry_after_s == pytest.approx(30.0)
    now[0] += 30.01
    meter.take("suspect", "consults_per_minute", 3, what="consults")
    meter.take("detective", "consults_per_minute", 3, what="consults")  # its own window
