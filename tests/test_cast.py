"""The lessons' cast: which role or card plays each part, read from the scenario (no store).

Lessons 00-03 and their exercise checks name roles and cards only through :class:`Cast`, so these
rules are what lets ``papermill -p scenario the-mole`` run a lesson; ``test_notebooks.py`` runs
them, and ``test_widgets.py`` solves the exercises, with every shipped scenario.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
import yaml
from conftest import REPO

from bureau.course.cast import Cast
from bureau.errors import ScenarioError
from bureau.scenario import list_scenarios, load_scenario, parse_scenario

SHIPPED = [s.id for s in list_scenarios()]


def test_safe_combination_keeps_the_worked_example():
    """The lessons' prose tells the safe-combination story: the cast must match it."""
    cast = Cast.of(load_scenario("safe-combination"))
    assert (cast.holder, cast.secret.key) == ("informant", "safe-code")
    assert cast.secret.question == "What is the combination of the safe in the study?"
    assert (cast.outsider, cast.bystander, cast.witness) == ("detective", "suspect", "suspect")
    assert cast.testimony.key == "alibi"
    assert cast.testimony.question == "What is the alibi for Friday night?"
    assert (cast.evidence.key, cast.evidence.owner) == ("footprint", "detective")
    assert cast.evidence.question == "What size is the muddy boot print?"
    assert cast.evidence.knowers_after == ("detective", "informant", "suspect")
    assert (cast.spare.key, cast.spare.owner) == ("cctv", "detective")
    assert (cast.decoy.key, cast.mole) == ("wrong-code", "suspect")  # lesson 04's trial
    # The lessons' Python names are the roles themselves here (lessons 00-03 read concretely).
    assert cast.story_roles() == ("informant", "detective", "suspect")


def test_the_mole_casts_its_own_roles():
    cast = Cast.of(load_scenario("the-mole"))
    assert (cast.holder, cast.secret.key, cast.outsider) == ("informant", "true-tip", "detective")
    assert (cast.witness, cast.testimony.key) == ("harbourmaster", "customs-hours")
    # leak-warning is published by a question, but the case file forbids it the harbour: the
    # lesson 03 exercise publishes the van, and the crash card is one no rule forbids.
    assert (cast.evidence.key, cast.spare.key) == ("blue-van", "customs-hours")
    assert (cast.decoy.key, cast.mole) == ("decoy", "harbourmaster")
    assert cast.story_roles() == ("informant", "detective", "harbourmaster")


@pytest.mark.parametrize("scenario_id", SHIPPED)
def test_every_part_keeps_its_promise(scenario_id):
    """What each lesson relies on, stated on the answer key of every shipped scenario."""
    s = load_scenario(scenario_id)
    cast = Cast.of(s)
    assert cast.roles == tuple(s.role_names)
    published = {q.publish for q in s.questions if q.publish}
    assert cast.secret.key in published and cast.evidence.key in published
    assert cast.holder in cast.secret.knowers_before  # lesson 00/02: the holder answers
    assert cast.outsider not in cast.secret.knowers_before  # lesson 02: not until published
    for role in (cast.outsider, cast.bystander):  # they do not know the truth until published
        assert role in cast.secret.knowers_after
        assert role not in cast.secret.knowers_before or role == cast.mole  # the mole's decoy
    assert cast.testimony.knowers_before == (cast.witness,)  # lesson 02: only the witness knows
    assert cast.witness != cast.outsider
    assert cast.evidence.topic != cast.secret.topic  # publishing the secret leaves lesson 03's
    assert set(cast.evidence.knowers_after) > set(cast.evidence.knowers_before)  # exercise open
    assert cast.spare.key not in published  # lesson 03's crash card
    free = {m.key for _, m in s.seeds()} - published - {r.secret or r.publish for r in s.case_file.never}
    assert cast.spare != cast.testimony or free == {cast.testimony.key}  # only when nothing else
    assert s.seed(cast.spare.key)[0] == cast.spare.owner
    forbidden = {r.secret or r.publish for r in s.case_file.never}  # playing them loses
    assert not forbidden & {cast.secret.key, cast.evidence.key, cast.spare.key}
    assert cast.decoy is not None and cast.decoy.key in forbidden  # lesson 04 plays it
    assert cast.mole in cast.secret.knowers_before and cast.mole != cast.holder


def test_a_case_and_its_scenario_cast_alike():
    s = load_scenario("ward-seven")
    assert Cast.of(SimpleNamespace(scenario=s)) == Cast.of(s)


def test_a_two_role_case_still_gets_a_full_cast():
    """The README's minimal example: one publish question, so parts fall back to the secret."""
    text = (REPO / "scenarios" / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(.*?)```", text, re.S).group(1)
    cast = Cast.of(parse_scenario(yaml.safe_load(block)))
    assert (cast.holder, cast.outsider, cast.witness) == ("gardener", "cook", "gardener")
    assert cast.testimony == cast.secret == cast.evidence == cast.spare


def test_a_scenario_with_nothing_to_publish_is_refused_with_a_reason():
    data = load_scenario("safe-combination").to_dict()
    data["questions"] = [q for q in data["questions"] if not q.get("publish")]
    with pytest.raises(ScenarioError, match="nothing to publish"):
        Cast.of(parse_scenario(data))


def test_cast_shows_who_plays_which_part():
    cast = Cast.of(load_scenario("safe-combination"))
    html = cast._repr_html_()
    assert "bureau-cast" in html and "<code>cast.witness</code>" in html and "suspect" in html
    assert "witness=suspect" in repr(cast)


def test_the_legend_maps_the_texts_names_onto_the_case_s_roles():
    """Issue 48 §5: the prose names the safe combination's roles; the legend a lesson prints
    first says which role plays each in another case, and nothing to map in the default one."""
    assert Cast.of(load_scenario("safe-combination")).legend() == (
        "Your case: The safe combination. Its roles are the ones the text names.")
    ward = Cast.of(load_scenario("ward-seven")).legend()
    assert ward.startswith("Your case: Ward seven.")
    for story, role in (("informant", "patient"), ("detective", "pharmacist"),
                        ("suspect", "nurse")):
        assert f"the {story} is the {role}" in ward
    mole = Cast.of(load_scenario("the-mole")).legend()
    assert "the suspect is the harbourmaster" in mole and "the detective is the" not in mole
