"""Lesson 07 with every bundled scenario: its cast is read from the scenario's roles and policy
labels, and its requests, its check and the solution it shows hold on the real store under the
example policy (``papermill -p scenario ward-seven`` runs the whole lesson in test_notebooks)."""

from __future__ import annotations

import re

import pytest
import yaml
from conftest import REPO

from bureau.course.purpose import SOLUTION, PurposeCast, requests_table, same_question
from bureau.course.widgets.exercises import check
from bureau.errors import ScenarioError
from bureau.mediation.abstraction import leaked_terms
from bureau.scenario import list_scenarios, load_scenario, parse_scenario

SHIPPED = [s.id for s in list_scenarios()]
PRINCIPALS = {"chief", "press", "judge"}



def test_safe_combination_keeps_the_worked_example():
    """The lesson's prose tells the safe-combination story: its cast must match it."""
    cast = PurposeCast.of(load_scenario("safe-combination"))
    assert (cast.holder, cast.secret.key, cast.colleague) == ("informant", "safe-code", "detective")
    assert (cast.witness, cast.testimony.key, cast.testimony.info_type) == (
        "suspect", "alibi", "alibi")
    assert cast.testimony.question == "What is the alibi for Friday night?"
    assert (cast.asker, cast.publisher, cast.evidence.key, cast.reader) == (
        "detective", "detective", "footprint", "suspect")


@pytest.mark.parametrize("scenario_id", SHIPPED)
def test_every_scenario_casts_lesson_07_from_its_labels(scenario_id):
    """What each part of the lesson relies on, stated on the scenario's own data; every name the
    lesson prints is a role of the scenario or a principal the policy declares."""
    s = load_scenario(scenario_id)
    cast = PurposeCast.of(s)
    roles = set(s.role_names)
    assert cast.secret.sensitivity == "restricted" and cast.secret.abstraction
    assert cast.testimony.owner != cast.holder and cast.testimony.abstraction
    assert cast.testimony.info_type not in (None, cast.secret.info_type)
    assert cast.asker != cast.witness and cast.colleague != cast.holder
    assert cast.reader in cast.evidence.knowers_after
    assert cast.reader not in cast.evidence.knowers_before and cast.reader != cast.publisher
    for card in (cast.secret, cast.testimony):  # an abstraction the mediator will release
        assert leaked_terms(s.seed(card.key)[1].content, card.abstraction) == []
    said = " ".join([cast.trial_brief(), *cast.requests()])
    named = set(re.findall(r"\bthe ([a-z][a-z-]*)(?:'s|,)", said))
    assert named and named <= roles | PRINCIPALS, named - roles - PRINCIPALS
    assert {name for name, _ in cast.requests().values()} <= roles | PRINCIPALS


def test_each_request_asks_for_the_purpose_its_label_names():
    """Issue 50 §4: the press's story is not an investigation. Every request's purpose is the
    one its label says (the five labels are what the learner predicts from)."""
    requests = PurposeCast.of(load_scenario("safe-combination")).requests()
    purposes = {who: kwargs.get("purpose") for who, (_, kwargs) in requests.items()}
    assert purposes == {"the informant, for itself": None,
                        "the detective, investigating": "investigation",
                        "the chief, reviewing the investigation": "investigation",
                        "the press, for a story": "publication",
                        "the detective, gossiping": "gossip"}


def test_a_scenario_without_policy_labels_is_refused_with_what_it_needs():
    """The README's minimal example carries no labels: lesson 07 says which it needs."""
    text = (REPO / "scenarios" / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(.*?)```", text, re.S).group(1)
    with pytest.raises(ScenarioError, match="sensitivity: restricted.*abstraction"):
        PurposeCast.of(parse_scenario(yaml.safe_load(block)))


@pytest.mark.parametrize("scenario_id", SHIPPED)
def test_lesson_07_runs_every_scenario_on_the_real_store(mediated, scenario_id):
    """Five requests, one question: the holder reads its card, the colleague gets the
    abstraction, the chief waits for a grant, the press and gossip get nothing; the trial
    exercise's shown solution passes and the usual wrong rules do not."""
    bureau = mediated
    case = bureau.load_scenario(scenario_id)
    try:
        cast = PurposeCast.of(case)
        table = requests_table(case)
        assert list(table["request"]) == list(cast.requests())
        rows = same_question(case)
        assert list(rows["action"]) == ["reveal", "abstract", "withhold", "withhold", "withhold"]
        assert "human-approval-required" in rows["reasons"].iloc[2]
        assert rows["answer"].iloc[1].endswith(cast.secret.abstraction)
        assert not check("07-purpose-rule", case, None)
        match = {"info_type": cast.testimony.info_type, "purpose": "trial"}  # anyone, anywhere
        too_broad = check("07-purpose-rule", case, {"id": "x", "match": match,
                                                    "action": "reveal"})
        assert not too_broad and "press" in too_broad.message
        wrong_kind = check("07-purpose-rule", case, {
            "id": "x", "match": {"requester": "judge", "recipient": "human-reviewer",
                                 "purpose": "trial"}, "action": "reveal"})
        assert not wrong_kind and cast.secret.key in wrong_kind.message
        ns = {"cast": cast}
        exec(SOLUTION, ns)
        verdict = check("07-purpose-rule", case, ns["my_rule"])
        assert verdict.ok, verdict.message
        assert cast.testimony.key in verdict.message
    finally:
        bureau.delete_case(case.id)
