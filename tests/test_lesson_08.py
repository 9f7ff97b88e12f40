"""Lesson 08's helpers on real storage: the exercise check (solution, no answer, rules that
read the text), the poisoned page staying out of long-term memory, and the two-process race
converging."""

from __future__ import annotations

import pytest

from bureau.course.beyond import (
    POISON_SOURCE,
    POISONED_PAGE,
    QUESTION,
    SOLUTION,
    check_promotion_rule,
    race,
    tier_table,
)
from bureau.course.widgets.exercises import EXERCISES
from bureau.tiers import PromotionRule


@pytest.fixture
def mole(bureau):
    c = bureau.load_scenario("the-mole")
    yield c
    bureau.delete_case(c.id)


def test_the_exercise_solution_passes_and_other_answers_do_not(mole):
    ns: dict = {"PromotionRule": PromotionRule}
    exec(SOLUTION, ns)
    assert check_promotion_rule(mole, ns["my_rule"]).ok
    assert not check_promotion_rule(mole, None).ok
    assert not check_promotion_rule(mole, "intranet.example").ok
    over_eager = check_promotion_rule(mole, PromotionRule.mentions(["diamonds", "roster"]))
    assert not over_eager.ok and "poisoned page" in over_eager.message
    assert not check_promotion_rule(mole, PromotionRule.everything()).ok
    nothing = check_promotion_rule(mole, PromotionRule.from_sources(["elsewhere.example"]))
    assert not nothing.ok and "roster was not kept" in nothing.message
    assert EXERCISES["08-promotion-rule"].solution == SOLUTION
    # the checks ran on scratch cases: the lesson's case holds no promoted card
    assert not [c for c in mole.cards(mole.role_names[0]) if c.provenance == "promotion"]


def test_the_poisoned_page_ranks_first_inside_its_run_only(mole):
    lead = mole.role_names[0]
    with mole.agent(lead).start_run() as run:
        page = run.tool_output(POISONED_PAGE, source=POISON_SOURCE)
        inside = tier_table(run.retrieve(QUESTION))
    assert inside.iloc[0]["text"].startswith(POISONED_PAGE[:40])
    assert tuple(inside.iloc[0][["tier", "provenance", "trust"]]) == (
        "ephemeral", "tool-output", "untrusted")
    after = mole.retrieve(lead, QUESTION)
    assert page.id not in {c.id for s in after.scopes for c in [*s.hits, *s.below_threshold]}
    assert not [o for o in mole.spaces() if o.startswith("run:")]


def test_two_processes_converge_for_every_reader(mole):
    lead, second = mole.role_names[:2]
    mole.task_scopes.create(lead, "stakeout")
    mole.task_scopes.invite("stakeout", lead, second)
    mole.task_scopes.accept("stakeout", second)
    result = race(mole, "stakeout", (lead, second), rounds=6)
    assert result.converged and len(result.views) == 3
    assert len(result.writes) == 12
    final = result.views.iloc[-1]
    history = mole.agent(lead).scopes.history("stakeout", "plan")
    assert len(history) == 12  # nothing lost, stale writes included
    best = max((w for w in history if not w.stale), key=lambda w: w.order)
    assert (final["text"], final["version"], final["writer"]) == (best.text, best.version,
                                                                 best.writer)
