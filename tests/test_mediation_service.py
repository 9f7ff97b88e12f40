"""Purpose-bound mediation on real PowerMem + embedded seekdb + MiniLM (issue 13): revocation
and expiry on every read path (in two processes and after a reopen), the audit ledger (durable,
append-only, tamper-evident, lean), grants and the disclosure budget through the service."""

from __future__ import annotations

import json
import re
import sqlite3
import time

import pytest
from conftest import run_python
from leakcheck import holds

from bureau import BOARD
from bureau.errors import (
    AuditTamperedError,
    CardRevokedError,
    InvalidArgumentError,
    UnknownCardError,
    UnknownGrantError,
    UnknownPrincipalError,
)
from bureau.ledger import Ledger
from bureau.mediation.policy import default_policy_path
from bureau.service.read_paths import OUTWARD_READ_PATHS, ROLE_READ_PATHS, as_text

SAFE_Q = "What is the combination of the safe in the study?"
BOOT_Q = "What size is the muddy boot print?"
INVESTIGATE = {"recipient": "other-agent", "purpose": "investigation"}
"""The detective consulting a colleague for an investigation (``case.agent("detective")``)."""
PROBES = [SAFE_Q, BOOT_Q, "hidden garden note", "alibi for Friday night"]
ECHO = re.compile(r"has no card '\d+'")
"""A tool's refusal repeats the card id its caller passed in (the same words for any id): the
read paths try every id of the case, so that echo is not a card showing up."""



def _seen_everywhere(case, ids, texts):
    """Every (path, viewer) where a dead card's id or text shows up."""
    found = []
    for viewer in case.role_names:
        for name, read in ROLE_READ_PATHS.items():
            for probe in PROBES:
                seen = ECHO.sub("has no card <id>", as_text(read(case, viewer, probe)))
                found += [(name, viewer, x) for x in [*ids, *texts] if x in seen]
    for name, read in OUTWARD_READ_PATHS.items():
        seen = as_text(read(case))
        found += [(name, "-", t) for t in texts if t in seen]  # events carry ids on purpose
    return found


def _dead_cards(case):
    """A revoked board copy and an expired private card (seconds after whispering it)."""
    copy = case.publish("detective", case.seed_card("footprint").id)
    note = case.whisper(
        "suspect", "A hidden garden note: the spade is behind the shed.", topic="garden"
    )
    assert BOOT_Q and case.interrogate("informant", BOOT_Q).known
    case.revoke(copy.id)
    case.expire(note.id, 0.05)
    time.sleep(0.1)
    return copy, note


def test_revoked_and_expired_cards_vanish_from_every_read_path(case):
    copy, note = _dead_cards(case)
    assert not _seen_everywhere(case, [copy.id, note.id], [note.content])
    assert "muddy boot" not in as_text(case.stage())
    # the revoked copy is gone for everyone; the detective's original stays its own
    assert not case.interrogate("informant", BOOT_Q).known
    assert case.interrogate("detective", BOOT_Q).known
    for viewer in case.role_names:
        with pytest.raises(UnknownCardError):
            case.card(viewer, copy.id)
    with pytest.raises(UnknownCardError):
        case.card("suspect", note.id)
    stage = case.stage()
    assert stage["board"] == [] and stage["private_counts"]["suspect"] == 2  # alibi, decoy
    assert not case.knowers("hidden garden note spade shed")
    audit = case.audit()
    states = dict(zip(audit.card_id, audit.card_state, strict=False))
    assert states[copy.id] == "revoked" and states[note.id] == "expired"
    assert {"revoke", "expire"} <= set(audit.action)


def test_revocation_is_final_and_cascades_to_the_copy(case):
    source = case.seed_card("safe-code")
    copy = case.publish("informant", source.id)
    assert sorted(case.revoke(source.id)) == sorted([source.id, copy.id])
    assert not case.interrogate("informant", SAFE_Q).known
    assert not case.interrogate("detective", SAFE_Q).known
    with pytest.raises(UnknownCardError):
        case.publish("informant", source.id)
    other = case.seed_card("cctv")
    board = case.publish("detective", other.id)
    case.revoke(board.id)
    with pytest.raises(CardRevokedError):
        case.publish("detective", other.id)
    assert case.card("detective", other.id).id == other.id  # the original stays private
    with pytest.raises(InvalidArgumentError):
        case.publish("detective", case.seed_card("footprint").id, ttl_s=0)


def test_a_published_copy_with_a_ttl_expires(case):
    copy = case.publish("informant", case.seed_card("safe-code").id, ttl_s=0.3)
    assert case.interrogate("detective", SAFE_Q).known
    time.sleep(0.4)
    assert not case.interrogate("detective", SAFE_Q).known
    assert copy.id not in as_text(case.cards("detective"))


REVOKE_IN_OTHER_PROCESS = """
import json, sys
from bureau import Bureau
c = Bureau.open().case(sys.argv[1])
print(json.dumps({"revoked": c.revoke(sys.argv[2])}))
"""

READ_IN_OTHER_PROCESS = """
import json, re, sys, time
from bureau import Bureau
from bureau.service.read_paths import OUTWARD_READ_PATHS, ROLE_READ_PATHS, as_text
b = Bureau.open()
c = b.case(sys.argv[1])
dead, text = sys.argv[2].split(","), sys.argv[3]
leaks = []
for viewer in c.role_names:
    for name, read in ROLE_READ_PATHS.items():
        seen = re.sub("has no card '[0-9]+'", "<id>",
                      as_text(read(c, viewer, "What size is the muddy boot print?")))
        leaks += [name for x in [*dead, text] if x in seen]
leaks += [name for name, read in OUTWARD_READ_PATHS.items() if text in as_text(read(c))]
audit = c.audit()
first = c.agent("detective").consult("informant",
                                     "What is the combination of the safe in the study?",
                                     recipient="other-agent", purpose="investigation")
new = c.audit().iloc[len(audit):]  # withheld: the operator reads why, the requester does not
new = new[new.kind == "decision"]  # (after the consult's own invocation entry)
print(json.dumps({"leaks": leaks, "states": dict(zip(audit.card_id, audit.card_state)),
                  "verified": b.ledger.mediation.verify_audit(),
                  "released": [d.card_id for d in first.decisions],
                  "known": first.answer.known,
                  "budget": [[r.requester, r.action, r.reasons] for r in new.itertuples()]}))
"""


def test_revocation_works_across_processes_and_after_a_reopen(bureau, mediated, tmp_path):
    case = bureau.load_scenario("safe-combination", case_id="revoke-two-processes")
    try:
        copy = case.publish("detective", case.seed_card("footprint").id)
        assert case.interrogate("suspect", BOOT_Q).known
        # another process revokes: this process's holder stops seeing the copy at once
        out = run_python(
            REVOKE_IN_OTHER_PROCESS.replace("sys.argv[1]", repr(case.id)).replace(
                "sys.argv[2]", repr(copy.id)
            ),
            cwd=tmp_path,
        )
        assert json.loads(out.stdout.strip().splitlines()[-1])["revoked"] == [copy.id]
        assert not case.interrogate("suspect", BOOT_Q).known
        assert not _seen_everywhere(case, [copy.id], [])
        # this process expires a card and spends the detective's whole budget on the informant
        note = case.whisper("suspect", "A hidden garden note: the spade is behind the shed.")
        case.expire(note.id, 0.05)
        detective = case.agent("detective")
        for _ in range(4):
            assert (
                detective.consult("informant", SAFE_Q, **INVESTIGATE).decisions[0].action
                == "abstract"
            )
        time.sleep(0.1)
        # a fresh process (a restart) sees both, the chain holds, and the budget is spent
        out = run_python(
            READ_IN_OTHER_PROCESS.replace("sys.argv[1]", repr(case.id))
            .replace("sys.argv[2]", repr(f"{copy.id},{note.id}"))
            .replace("sys.argv[3]", repr(note.content)),
            cwd=tmp_path,
            env={"BUREAU_POLICY": str(default_policy_path())},
        )
        got = json.loads(out.stdout.strip().splitlines()[-1])
        assert got["leaks"] == []
        assert got["states"][copy.id] == "revoked" and got["states"][note.id] == "expired"
        assert got["verified"] >= 6
        # the requester gets nothing of a withheld card; the operator's audit says why
        assert got["released"] == [] and not got["known"]
        assert got["budget"] == [["detective", "withhold", "budget-exhausted"]]
    finally:
        bureau.delete_case(case.id)


def test_same_question_different_requesters_and_purposes(mediated, case):
    own = case.agent("informant").consult("informant", SAFE_Q)
    colleague = case.agent("detective").consult("informant", SAFE_Q, **INVESTIGATE)
    press = case.requester("press").consult(
        "informant", SAFE_Q, recipient="external", purpose="investigation"
    )
    assert "0427" in own.answer.text
    assert colleague.decisions[0].action == "abstract"
    assert "four-digit code" in colleague.answer.text and not holds(colleague.answer.text, "0427")
    assert colleague.answer.cited == (case.seed_card("safe-code").id,)
    # the press is handed no decision of a withheld card (only released ones); the audit says why
    assert press.decisions == () and not press.answer.known
    assert case.audit().iloc[-1].reasons == "recipient-too-broad"
    assert (
        case.agent("detective")
        .consult("informant", SAFE_Q, recipient="other-agent", purpose="gossip")
        .answer.text
        == "I don't know."
    )
    table = case.audit()
    assert list(table.action) == ["consult", "reveal"] + ["consult", "abstract"] + [
        "consult", "withhold"] * 2  # every consult: its invocation entry, then its decisions
    assert set(table.policy_version) == {"2026-12-05.1"}
    assert case.stage()["mediation"] == {"reveal": 1, "abstract": 1, "withhold": 2}


def test_grants_need_approval_expire_and_can_be_revoked(mediated, case):
    code = case.seed_card("safe-code").id
    chief = case.requester("chief")
    review = {"recipient": "human-reviewer", "purpose": "investigation"}
    # withheld: the chief's handle gets no decision for it; the audit names the reason
    refused = chief.consult("informant", SAFE_Q, **review)
    assert refused.decisions == () and not refused.answer.known
    last = case.audit().iloc[-1]
    assert (last.requester, last.card_id, last.reasons) == (
        "chief",
        code,
        "human-approval-required",
    )
    g = case.grant(code, requester="chief", recipient="human-reviewer", ttl_s=0.5)
    assert chief.consult("informant", SAFE_Q, **review).answer.known
    case.revoke_grant(g.grant_id)
    assert not chief.consult("informant", SAFE_Q, **review).answer.known
    with pytest.raises(UnknownGrantError):
        case.revoke_grant(g.grant_id)
    case.grant(code, requester="chief", ttl_s=0.2)
    time.sleep(0.3)
    assert not chief.consult("informant", SAFE_Q, **review).answer.known
    assert [g.state(time.time()) for g in case.disclosure.grants()] == ["revoked", "expired"]


def test_budget_refusal_says_why(mediated, case):
    detective = case.agent("detective")
    answers = [detective.consult("informant", SAFE_Q, **INVESTIGATE) for _ in range(5)]
    assert [m.decisions[0].action for m in answers[:4]] == ["abstract"] * 4
    # the fifth is withheld: the detective is handed no decision for it, the audit says why
    assert answers[-1].decisions == () and not answers[-1].answer.known
    audit = case.audit()
    audit = audit[audit.kind == "decision"]  # each consult's invocation entry left out
    assert list(audit.action) == ["abstract"] * 4 + ["withhold"]
    assert audit.iloc[-1].reasons == "budget-exhausted"
    # the operator's own X-ray (the disclosure room, unfiltered) carries the figures
    xray = case.disclosure.consult(
        case.disclosure.principal("detective"), "informant", SAFE_Q, **INVESTIGATE
    )
    assert xray.decisions[0].reasons == ("budget-exhausted",)
    assert "detective has spent 1.00 of its 1.00 disclosure budget" in xray.decisions[0].message
    # another requester has its own budget
    assert (
        case.agent("suspect")
        .consult("informant", SAFE_Q, recipient="other-agent", purpose="investigation")
        .decisions[0]
        .action
        == "abstract"
    )
    # a renamed detective does not: an undeclared name is no principal, so no fresh budget
    with pytest.raises(UnknownPrincipalError):
        case.requester("detective-2")


def test_the_audit_holds_no_card_text_or_question(mediated, case):
    case.agent("detective").consult("informant", SAFE_Q, **INVESTIGATE)
    case.agent("detective").consult("suspect", "What is the alibi for Friday night?", **INVESTIGATE)
    case.revoke(case.seed_card("cctv").id)
    entries = case.bureau.ledger.mediation.audit_entries(case.id, case.token)
    text = json.dumps(entries)
    for _, mem in case.scenario.seeds():
        assert mem.content not in text and (mem.abstraction or "@@") not in text
    assert SAFE_Q not in text and not holds(text, "0427") and "Rialto" not in text


def test_audit_ledger_is_append_only_and_detects_an_altered_entry(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    ledger.cases.add("c1", "s", "t", "tok")
    for i in range(5):
        ledger.mediation.append_audit(
            "c1",
            "tok",
            [{"kind": "decision", "card_id": str(i), "action": "withhold", "reasons": ["x"]}],
        )
    assert ledger.mediation.verify_audit() == 5
    db = sqlite3.connect(tmp_path / "ledger.sqlite3")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        db.execute("UPDATE audit SET action = 'reveal' WHERE seq = 2")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        db.execute("DELETE FROM audit WHERE seq = 5")
    # someone with file access drops the guard and rewrites entry 3: the chain names it
    db.execute("DROP TRIGGER audit_append_only_update")
    row = db.execute("SELECT entry FROM audit WHERE seq = 3").fetchone()[0]
    db.execute("UPDATE audit SET entry = ? WHERE seq = 3", (row.replace('"withhold"', '"reveal"'),))
    db.commit()
    with pytest.raises(AuditTamperedError, match="entry 3 was changed"):
        ledger.mediation.verify_audit()
    db.execute("UPDATE audit SET entry = ? WHERE seq = 3", (row,))
    db.commit()
    reopened = Ledger(tmp_path / "ledger.sqlite3")
    assert reopened.mediation.verify_audit() == 5  # durable, intact again
    db.execute("DROP TRIGGER audit_append_only_delete")
    db.execute("DELETE FROM audit WHERE seq = 5")
    db.commit()
    with pytest.raises(AuditTamperedError, match="ends at entry 4"):
        ledger.mediation.verify_audit()
    db.execute("DELETE FROM audit WHERE seq = 2")
    db.commit()
    with pytest.raises(AuditTamperedError, match="entry 2 is missing"):
        ledger.mediation.verify_audit()


def test_audit_outlives_the_case(mediated, bureau):
    case = bureau.load_scenario("safe-combination")
    case.agent("detective").consult("informant", SAFE_Q, **INVESTIGATE)
    token = case.token
    bureau.delete_case(case.id)
    entries = bureau.ledger.mediation.audit_entries(case.id, token)
    assert [e["action"] for e in entries] == ["consult", "abstract"]
    assert bureau.ledger.mediation.verify_audit() >= 1


def test_whisper_and_scenarios_carry_the_labels(case):
    card = case.whisper(
        "detective",
        "The study window latch is broken.",
        topic="window",
        sensitivity="internal",
        info_type="evidence",
        abstraction="Something about the study is broken.",
    )
    got = case.card("detective", card.id)
    assert (got.sensitivity, got.info_type, got.abstraction) == (
        "internal",
        "evidence",
        "Something about the study is broken.",
    )
    code = case.seed_card("safe-code")
    assert (code.sensitivity, code.info_type) == ("restricted", "access-code")
    assert not holds(code.abstraction, "0427")
    assert "sensitivity" not in as_text(case.events())  # outward events carry no labels
    assert BOARD not in case.role_names


def test_the_stage_widget_shows_mediation_counts_only():
    """The projector shows how many decisions of each kind, never which card or why."""
    from bureau.course.widgets.stage import stage_html

    snapshot = {
        "case_id": "c",
        "title": "t",
        "private_counts": {"detective": 2},
        "board": [],
        "last_retrieval": None,
        "mediation": {"withhold": 3, "abstract": 1},
    }
    html = stage_html(snapshot)
    assert "withhold 3" in html and "abstract 1" in html
    assert "mediation" not in stage_html({**snapshot, "mediation": {}})


def test_lesson_07_requests_table_lists_the_requests_it_makes(case):
    """Lesson 07 prints the five requests before the learner predicts: the table must be the
    requests ``same_question`` makes, each with the handle it goes through."""
    from bureau.course.purpose import PurposeCast, requests_table

    requests = PurposeCast.of(case).requests()
    table = requests_table(case)
    assert list(table["request"]) == list(requests)
    for (_, row), (name, kwargs) in zip(table.iterrows(), requests.values(), strict=True):
        assert f'"{name}")' in row["asked through"]
        assert row["recipient"] == kwargs.get("recipient", "-")
        assert row["purpose"] == kwargs.get("purpose", "-")
    assert 'case.requester("chief")' in set(table["asked through"])
    assert 'case.agent("detective")' in set(table["asked through"])


def test_lesson_07_mediation_lab_names_the_wiring_check(bureau):
    """Policy e in lesson 07, on the bundled mini set: the headline leads with the wiring check
    (named as one, 0 raw private reveals), its cases are deleted, and the plot draws the random
    line beside the content mediator."""
    from bureau.course.purpose import mediation_lab
    from bureau.labs.leakage.lesson import MINI

    before = {c.case_id for c in bureau.cases()}
    lab = mediation_lab(bureau, limit=10, path=str(MINI))
    assert {c.case_id for c in bureau.cases()} == before
    first = lab.headline().splitlines()[0]
    assert first.startswith("wiring check") and " 0 of " in first
    assert lab.measured["wiring_check"]["private_card_decisions"] > 0
    fig = lab.plot()
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any("random" in t for t in labels) and any("wiring check" in t for t in labels)
