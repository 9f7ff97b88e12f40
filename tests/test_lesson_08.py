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


# -- what the lesson reads off the poisoning lab, on a hand-made summary (no store) -------------
def _summary(**figures):
    """A summary table (``scope == "all"``) of both attacks in every configuration: every figure
    0 of 10, except ``figures``: ``{"<attack>/<config>/<figure>": count}``."""
    from types import SimpleNamespace

    import pandas as pd

    from bureau.labs.poisoning.metrics import RATIOS
    from bureau.labs.poisoning.report import REPORTED
    from bureau.labs.poisoning.runner import CONFIG_LABELS

    rows = []
    for attack in ("rare-trigger", "topical"):
        for config in REPORTED:
            row = {"scope": "all", "attack": attack, "config": config,
                   "label": CONFIG_LABELS[config]}
            for name in RATIOS:
                n = figures.get(f"{attack}/{config}/{name}", 0)
                row.update({name: n / 10, f"{name}_count": n, f"{name}_of": 10})
            rows.append(row)
    table = pd.DataFrame(rows)
    trials = pd.DataFrame({"memory_cards": [25, 36], "trigger_poisons": [1, 1],
                           "trigger_poison_rate": [1 / 26, 1 / 37]})
    table.attrs.update(k=5, result=SimpleNamespace(trials=trials))
    return table


def test_the_rare_trigger_figure_draws_no_bar_that_is_zero_everywhere():
    """Issue 50 §5: no legend entry for bars never drawn; the readings at 0 are named instead."""
    from bureau.labs.poisoning.lesson import plot_trigger_ablation

    table = _summary(**{f"rare-trigger/{c}/{f}": n for c in ("no_tiers", "in_run", "shared_rule")
                        for f, n in (("trigger_success", 10), ("twin_impact", 3))})
    ax = plot_trigger_ablation(table).axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["≥ 1 poison in the top-5, triggered", "≥ 1 poison in the top-5, twin"]
    assert "0 everywhere, not drawn" in ax.get_xlabel() and "rank 1" in ax.get_xlabel()
    assert len(ax.patches) == 2 * 4  # two bars per configuration, nothing else
    assert "twins 3/10" in ax.get_title() and "never at rank 1" in ax.get_title()
    everything = _summary(**{f"rare-trigger/in_run/{f}": 1 for f in (
        "trigger_all_poisoned", "trigger_top1", "trigger_success", "trigger_in_evidence")})
    ax = plot_trigger_ablation(everything).axes[0]
    assert len(ax.get_legend().get_texts()) == 8 and "not drawn" not in ax.get_xlabel()
    assert "at rank 1 in 1" in ax.get_title()


def test_the_hijack_figure_says_zero_when_the_defence_stops_every_answer():
    from bureau.labs.poisoning.lesson import plot_poisoning

    figures = {f"topical/{c}/hijack_{v}_undefended_count": 10 for c in ("no_tiers", "in_run")
               for v in ("evidence", "obedient", "gullible")}
    table = _summary(**{k.removesuffix("_count"): n for k, n in figures.items()})
    title = plot_poisoning(table).axes[0].get_title()
    assert "from up to 10 to 0 of 10" in title and "at most" not in title
    table = _summary(**{k.removesuffix("_count"): n for k, n in figures.items()},
                     **{"topical/in_run/hijack_gullible_defended": 2})
    assert "to at most 2 of 10" in plot_poisoning(table).axes[0].get_title()


def test_the_lesson_reads_each_figure_from_the_run():
    """Issue 50 §3: the memory's size, the page's share and the twins come from the run, so
    "under 1 %" cannot stand beside a 3 % page, nor "none of their twins" beside 3/10."""
    from bureau.labs.poisoning.lesson import said

    rare = _summary(**{"rare-trigger/in_run/trigger_success": 10,
                       "rare-trigger/in_run/twin_impact": 3})
    text = said(rare, "rare-trigger")
    assert "26–37 cards, one of them the rare page (2.7–3.8 % of the memory)" in text
    assert "10/10 triggered questions and 3/10 of their untriggered twins" in text
    assert "difference between the two bars" in text
    alone = _summary(**{"rare-trigger/in_run/trigger_success": 4})
    assert "No twin reached it" in said(alone, "rare-trigger")
    topical = _summary(**{"topical/in_run/trigger_success": 10,
                          "topical/in_run/hijack_gullible_undefended": 10,
                          "topical/shared_rule/trigger_success": 10,
                          "topical/in_run/answered_undefended": 9,
                          "topical/in_run/answered_defended": 9})
    text = said(topical)
    assert "10/10 trigger questions retrieved their topical page in the top-5" in text
    assert "the gullible stand-in 10 → 0" in text and "(the defence cost none)" in text
    assert "(the promoted copy stays untrusted)" in text and "a deletion check" in text
    leaky = _summary(**{"topical/tiers/trigger_success": 2})
    assert "Rule (b) let pages through: after the run 2/10" in said(leaky)
