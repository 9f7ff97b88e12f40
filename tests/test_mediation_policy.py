"""Purpose-bound mediation on plain data (issue 13): the decision table, policy errors, the
distinctive-terms checker and the disclosure budget. No store needed: decisions are pure."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bureau.errors import ConfigurationError, PolicyError
from bureau.mediation.abstraction import distinctive_terms, leaked_terms
from bureau.mediation.grants import Grant
from bureau.mediation.invocation import Invocation
from bureau.mediation.mediator import REASONS, MediationContext, PolicyMediator
from bureau.mediation.policy import default_policy_path, load_policy, parse_policy
from bureau.model import BOARD, MemoryCard
from bureau.settings import Settings

NOW = time.time()


def card(cid: str = "1", owner: str = "informant", visibility: str = "private",
         sensitivity: str | None = None, info_type: str | None = None,
         abstraction: str | None = None, source_role: str | None = None) -> MemoryCard:
    return MemoryCard(id=cid, case_id="c", owner=owner, visibility=visibility,  # type: ignore[arg-type]
                      topic="t", kind="fact", content=f"Secret number {cid}0427 in Dover.",
                      created_at="", source_role=source_role, sensitivity=sensitivity,
                      info_type=info_type, abstraction=abstraction, score=0.9)


CODE = {"sensitivity": "restricted", "info_type": "access-code",
        "abstraction": "A four-digit code opens it."}
ALIBI = {"owner": "suspect", "sensitivity": "confidential", "info_type": "alibi",
         "abstraction": "At a public place late."}
ROUTINE = {"sensitivity": "personal", "info_type": "staff-routine"}  # no abstraction
EVIDENCE = {"owner": "detective", "sensitivity": "internal", "info_type": "evidence"}
PUBLIC = {"owner": BOARD, "visibility": "public", "source_role": "detective"}
PLAIN: dict = {}


def inv(owner="informant", requester=None, recipient="same-agent", task=None, purpose=None):
    return Invocation.make("c", owner, "q?", requester=requester, recipient=recipient, task=task,
                           purpose=purpose)


def grant(card_id="1", action="reveal", requester=None, recipient=None, purpose=None,
          expires_at=None, revoked_at=None):
    return Grant("g-1", "c", card_id, requester, recipient, purpose, action, NOW - 10,
                 expires_at, revoked_at)


INV_DET = {"requester": "detective", "recipient": "other-agent", "purpose": "investigation"}
INV_CHIEF = {"requester": "chief", "recipient": "human-reviewer", "purpose": "investigation"}
INV_PRESS = {"requester": "press", "recipient": "external", "purpose": "investigation"}

# (invocation kwargs, card labels, grants, spent) -> (action, reasons, rule)
TABLE = [
    # own memory
    ({}, CODE, [], {}, "reveal", ("owner-policy-allows",), "own-memory"),
    ({}, ALIBI | {"owner": "informant"}, [], {}, "reveal", ("owner-policy-allows",), "own-memory"),
    ({}, PLAIN, [], {}, "reveal", ("owner-policy-allows",), "own-memory"),
    ({"recipient": "human-reviewer"}, CODE, [], {}, "reveal", ("owner-policy-allows",),
     "own-memory"),
    ({"recipient": "other-agent"}, CODE, [], {}, "withhold", ("no-rule-matched",), None),
    ({"recipient": "external"}, CODE, [], {}, "withhold", ("recipient-too-broad",),
     "nothing-raw-leaves-the-bureau"),
    # the board is public for everyone, even outsiders
    ({}, PUBLIC, [], {}, "reveal", ("owner-policy-allows",), "board-is-public"),
    (INV_PRESS, PUBLIC, [], {}, "reveal", ("owner-policy-allows",), "board-is-public"),
    (INV_DET, PUBLIC, [], {"detective": 5.0}, "reveal", ("owner-policy-allows",),
     "board-is-public"),
    # colleagues investigating: abstracts
    (INV_DET, CODE, [], {}, "abstract", ("sensitive-detail-not-needed",),
     "investigation-abstracts"),
    (INV_DET, ALIBI, [], {}, "abstract", ("sensitive-detail-not-needed",),
     "investigation-abstracts"),
    (INV_DET, ROUTINE, [], {}, "withhold", ("no-safe-abstraction",), "investigation-abstracts"),
    (INV_DET, PLAIN, [], {}, "withhold", ("no-rule-matched",), None),
    (INV_DET | {"purpose": "gossip"}, CODE, [], {}, "withhold", ("no-rule-matched",), None),
    (INV_DET | {"purpose": "gossip"}, ALIBI, [], {}, "withhold", ("no-rule-matched",), None),
    (INV_DET, EVIDENCE, [], {}, "reveal", ("owner-policy-allows",), "evidence-for-investigation"),
    (INV_DET | {"purpose": "gossip"}, EVIDENCE, [], {}, "withhold", ("no-rule-matched",), None),
    # outsiders get nothing private
    (INV_PRESS, CODE, [], {}, "withhold", ("recipient-too-broad",),
     "nothing-raw-leaves-the-bureau"),
    (INV_PRESS, EVIDENCE, [], {}, "withhold", ("recipient-too-broad",),
     "nothing-raw-leaves-the-bureau"),
    (INV_PRESS, CODE, [grant()], {}, "withhold", ("recipient-too-broad",),
     "nothing-raw-leaves-the-bureau"),  # a grant reaches outsiders only when it names them
    (INV_PRESS, CODE, [grant(recipient="external", action="abstract")], {}, "abstract",
     ("recipient-too-broad", "granted"), "nothing-raw-leaves-the-bureau"),
    # the access code needs an approval (a grant) to reach a reviewer
    (INV_CHIEF, CODE, [], {}, "withhold", ("human-approval-required",), "restricted-needs-approval"),
    (INV_CHIEF, CODE, [grant()], {}, "reveal", ("owner-policy-allows", "granted"),
     "restricted-needs-approval"),
    (INV_CHIEF, CODE, [grant(action="abstract")], {}, "abstract",
     ("owner-policy-allows", "granted"), "restricted-needs-approval"),
    (INV_CHIEF, CODE, [grant(expires_at=NOW - 1)], {}, "withhold", ("human-approval-required",),
     "restricted-needs-approval"),
    (INV_CHIEF, CODE, [grant(revoked_at=NOW - 1)], {}, "withhold", ("human-approval-required",),
     "restricted-needs-approval"),
    (INV_CHIEF, CODE, [grant(requester="someone-else")], {}, "withhold",
     ("human-approval-required",), "restricted-needs-approval"),
    (INV_CHIEF, CODE, [grant(card_id="2")], {}, "withhold", ("human-approval-required",),
     "restricted-needs-approval"),
    (INV_CHIEF, CODE, [grant(purpose="investigation", recipient="human-reviewer",
                             requester="chief", expires_at=NOW + 60)], {}, "reveal",
     ("owner-policy-allows", "granted"), "restricted-needs-approval"),
    (INV_CHIEF | {"purpose": "trial"}, CODE, [], {}, "withhold", ("no-rule-matched",), None),
    (INV_CHIEF, ALIBI, [], {}, "abstract", ("sensitive-detail-not-needed",),
     "investigation-abstracts"),
    # a grant lifts a stricter rule for its requester only
    (INV_DET, ALIBI, [grant(requester="detective")], {}, "reveal",
     ("sensitive-detail-not-needed", "granted"), "investigation-abstracts"),
    (INV_DET, ALIBI, [grant(requester="chief")], {}, "abstract",
     ("sensitive-detail-not-needed",), "investigation-abstracts"),
    (INV_DET | {"purpose": "gossip"}, ALIBI, [grant(purpose="gossip")], {}, "reveal",
     ("no-rule-matched", "granted"), None),
    # the disclosure budget (limit 1.0; abstract 0.25, reveal 1.0), per requester and owner
    (INV_DET, CODE, [], {"informant": 0.5}, "abstract", ("sensitive-detail-not-needed",),
     "investigation-abstracts"),
    (INV_DET, CODE, [], {"informant": 0.75}, "abstract", ("sensitive-detail-not-needed",),
     "investigation-abstracts"),
    (INV_DET, CODE, [], {"informant": 1.0}, "withhold", ("budget-exhausted",),
     "investigation-abstracts"),
    (INV_DET, ALIBI, [], {"informant": 1.0}, "abstract", ("sensitive-detail-not-needed",),
     "investigation-abstracts"),  # another owner's budget is untouched
    (INV_CHIEF, CODE, [grant()], {"informant": 0.25}, "withhold", ("budget-exhausted",),
     "restricted-needs-approval"),  # a reveal costs 1.0: three abstracts' worth is too much
    (INV_CHIEF, EVIDENCE, [], {"detective": 0.5}, "withhold", ("budget-exhausted",),
     "evidence-for-investigation"),
    (INV_DET | {"requester": "detective"}, EVIDENCE, [], {"detective": 0.5}, "reveal",
     ("owner-policy-allows",), "evidence-for-investigation"),  # its own card costs nothing
    ({}, CODE, [], {"informant": 9.0}, "reveal", ("owner-policy-allows",), "own-memory"),
]


@pytest.fixture(scope="module")
def mediator() -> PolicyMediator:
    return PolicyMediator(load_policy(default_policy_path()))


def test_the_decision_table_has_at_least_30_rows():
    assert len(TABLE) >= 30


@pytest.mark.parametrize("row", TABLE, ids=[f"row{i}" for i in range(len(TABLE))])
def test_decision_table(mediator, row):
    kwargs, labels, grants, spent, action, reasons, rule = row
    c = card(**labels)
    owner = kwargs.pop("owner", "informant") if "owner" in kwargs else "informant"
    (d,) = mediator.decide(inv(owner, **kwargs), [c], MediationContext(NOW, tuple(grants), spent))
    assert (d.action, d.reasons, d.rule) == (action, reasons, rule)
    assert all(r in REASONS for r in d.reasons)
    if action == "withhold":
        assert d.card is None and d.cost == 0
    elif action == "abstract":
        assert d.card is not None and d.card.id == c.id and d.card.content == c.abstraction
    else:
        assert d.card == c


def test_budget_is_spent_across_the_cards_of_one_invocation(mediator):
    cards = [card(str(i), **CODE) for i in range(6)]
    ds = mediator.decide(inv(**INV_DET), cards, MediationContext(NOW))
    assert [d.action for d in ds] == ["abstract"] * 4 + ["withhold"] * 2
    assert sum(d.cost for d in ds) == 1.0
    assert "detective has spent 1.00 of its 1.00" in ds[-1].message
    assert ds[-1].reasons == ("budget-exhausted",)


def test_llm_abstraction_is_checked_before_release():
    policy = parse_policy({"version": "1", "rules": [{"id": "a", "action": "abstract"}]})
    good = PolicyMediator(policy, abstractor=lambda c: "A code opens a safe somewhere.")
    bad = PolicyMediator(policy, abstractor=lambda c: "The code is 10427, in Dover.")
    c = card("1")
    (d,) = good.decide(inv(requester="x"), [c], MediationContext(NOW))
    assert d.action == "abstract" and d.card.content == "A code opens a safe somewhere."
    (d,) = bad.decide(inv(requester="x"), [c], MediationContext(NOW))
    assert (d.action, d.reasons, d.card) == ("withhold", ("abstraction-rejected",), None)


def test_rules_expire():
    policy = parse_policy({"version": "1", "default": "withhold", "rules": [
        {"id": "old", "action": "reveal", "expires": "2000-01-01"},
        {"id": "new", "action": "abstract", "expires": "2999-01-01T00:00:00"}]})
    (d,) = PolicyMediator(policy).decide(inv(), [card(**CODE)], MediationContext(NOW))
    assert (d.action, d.rule) == ("abstract", "new")


def test_every_decision_records_the_policy_version(mediator):
    (d,) = mediator.decide(inv(), [card()], MediationContext(NOW))
    entry = d.audit_entry(inv(), mediator.policy)
    assert entry["policy_version"] == "2026-12-05.1" and len(entry["policy_digest"]) == 12
    assert "0427" not in str(entry) and "q?" not in str(entry)  # no card text, no question


# -- distinctive terms ---------------------------------------------------------------------
@pytest.mark.parametrize("original,abstract,leaked", [
    ("The safe opens with the combination 0427.", "It takes a four-digit code.", []),
    ("The safe opens with the combination 0427.", "The code is 0427.", ["0427"]),
    ("The safe opens with the combination 0427.", "The code is 10427.", []),
    ("Recorded at 23:40 in the hallway.", "Recorded at 23.40.", ["23:40", "23", "40"]),
    ("The butler visits Dover every Thursday.", "He travels weekly.", []),
    ("The butler visits Dover every Thursday.", "He goes to dover.", ["dover"]),
    ("The butler visits Dover every Thursday.", "Each thursday he leaves.", ["thursday"]),
    ("Met Mr. Smith on 2024-03-05.", "Met a man in March.", []),
    ("Met Mr. Smith on 2024-03-05.", "Met smith.", ["smith"]),
    ("Met Mr. Smith on 2024-03-05.", "Early in 2024.", ["2024"]),
    ("Born in May.", "Born in spring, maybe.", []),
])
def test_leaked_terms(original, abstract, leaked):
    assert sorted(leaked_terms(original, abstract)) == sorted(leaked)


def test_distinctive_terms_skip_sentence_starts():
    assert distinctive_terms("The safe. My alibi is Rialto.") == ["rialto"]


# -- policy errors name file, rule and field -----------------------------------------------
def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "policy.yaml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("body,rule,field,words", [
    ("rules: []\n", None, "version", "Field required"),
    ("version: '1'\nrules:\n  - {id: a, action: reveal}\n  - {id: b, action: show}\n",
     1, "rules[1].action", "'show'"),
    ("version: '1'\nrules:\n  - {id: a, action: reveal, match: {recipient: [outside]}}\n",
     0, "rules[0].match.recipient[0]", "'outside'"),
    ("version: '1'\nrules:\n  - {id: a, action: reveal, match: {purpose: []}}\n",
     0, "rules[0].match.purpose", "empty list"),
    ("version: '1'\nrules:\n  - {id: a, action: reveal}\n  - {id: a, action: withhold}\n",
     1, "rules[1].id", "already the id of rules[0]"),
    ("version: '1'\nrules:\n  - {id: a, action: reveal, mach: {}}\n",
     0, "rules[0].mach", "unknown field"),
    ("version: '1'\nrules:\n  - {id: a, action: reveal, match: {owner: Informant}}\n",
     0, "rules[0].match.owner", "not a name"),
    ("version: '1'\nbudget: {limit: -1}\n", None, "budget.limit", ">= 0"),
    ("version: '1'\nrules:\n  - {id: a, action: reveal, expires: someday}\n",
     0, "rules[0].expires", "datetime"),
    ("version: 'two words'\n", None, "version", "without blanks"),
    ("version: '1'\ndefault: allow\n", None, "default", "'allow'"),
])
def test_policy_errors_are_precise(tmp_path, body, rule, field, words):
    path = write(tmp_path, body)
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    err = info.value
    assert (err.file, err.rule, err.field) == (str(path), rule, field)
    assert str(path) in err.message and field in err.message and words in err.message


def test_unreadable_policies(tmp_path):
    with pytest.raises(PolicyError, match="no such policy file"):
        load_policy(tmp_path / "missing.yaml")
    with pytest.raises(PolicyError, match=r"line \d+: not valid YAML"):
        load_policy(write(tmp_path, "version: '1'\nrules: [\n"))
    with pytest.raises(PolicyError, match="top level must be a mapping"):
        load_policy(write(tmp_path, "- 1\n"))


def test_policy_setting_is_validated(tmp_path, monkeypatch):
    with pytest.raises(ConfigurationError, match="no policy file"):
        Settings(data_dir=tmp_path, mediation_policy=tmp_path / "nope.yaml")
    with pytest.raises(ConfigurationError, match="not a .yaml"):
        Settings(data_dir=tmp_path, mediation_policy=tmp_path)
    monkeypatch.setenv("BUREAU_POLICY", str(default_policy_path()))
    assert Settings.from_env(data_dir=tmp_path).mediation_policy == default_policy_path()
    monkeypatch.setenv("BUREAU_POLICY", str(tmp_path / "x.yaml"))
    with pytest.raises(ConfigurationError, match="BUREAU_POLICY"):
        Settings.from_env(data_dir=tmp_path)


def test_build_mediator_refuses_a_broken_policy_before_the_store(tmp_path):
    from bureau.service.assembly import build_mediator

    bad = write(tmp_path, "version: '1'\nrules:\n  - {id: a, action: nope}\n")
    with pytest.raises(PolicyError) as info:
        build_mediator(Settings(data_dir=tmp_path, mediation_policy=bad))
    assert info.value.field == "rules[0].action"
    assert isinstance(build_mediator(Settings(data_dir=tmp_path,
                                              mediation_policy=default_policy_path())),
                      PolicyMediator)
