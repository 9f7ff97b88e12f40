"""Numbers with their reading, figures that teach (issue 50 §3, §5), for lessons 04-06b.

One palette colours every figure (green kept in, red got out, grey chance); a title or a printed
sentence reads every figure a lesson shows, computed from the run (here: from planted values,
so each wording is seen to follow the numbers); counts tick on whole numbers; a proportion of
one trial says so. None of these tests opens a store or the model.
"""

from __future__ import annotations

import pandas as pd

from bureau.course import attacks
from bureau.course.widgets import attacks_html
from bureau.figures import (
    CHANCE,
    LEAKED,
    PALETTE,
    PROTECTED,
    PROTECTED_SHADES,
    integer_ticks,
    new_figure,
    share_label,
)
from bureau.labs.attacks import AttackResult

# --- the palette ------------------------------------------------------------------------------


def test_one_colour_means_one_thing_in_every_lab():
    from bureau.course.widgets import plots as lesson_plots
    from bureau.labs.gatemem import plots as gm
    from bureau.labs.leakage.report import plots as leak

    assert PALETTE["blocked"] == PALETTE["withhold"] == PALETTE["bureau"] == PROTECTED
    assert PALETTE["leaked"] == PALETTE["shared_pool"] == LEAKED != PROTECTED
    assert PALETTE["random"] == PALETTE["chance"] == CHANCE
    assert lesson_plots.GREEN == PROTECTED and lesson_plots.RED == LEAKED
    assert gm.COLORS["bureau"] == PROTECTED and gm.COLORS["shared_pool"] == LEAKED
    assert gm.COLORS["random"] == CHANCE and gm.COLORS["owner_only"] in PROTECTED_SHADES
    assert leak.COLORS[leak.SHARED_POOL] == LEAKED
    assert {leak.COLORS[p] for p in leak.BUREAU_POLICIES} == set(PROTECTED_SHADES)
    assert leak.RANDOM_COLORS[leak.SHARED_POOL] == CHANCE


def test_a_proportion_of_one_trial_says_so_and_counts_tick_whole():
    assert share_label(1, 1) == "1/1 (n=1)" and share_label(0, 1) == "0/1 (n=1)"
    assert share_label(3, 10) == "3/10"
    fig = new_figure(4, 3)
    ax = fig.add_subplot()
    ax.barh(["a", "b"], [1, 6])
    integer_ticks(ax.xaxis)
    fig.canvas.draw()
    assert all(float(t).is_integer() for t in ax.get_xticks())


# --- lesson 04b: the timing table and the catalogue --------------------------------------------


def _timing(zs: tuple[float, ...]) -> AttackResult:
    names = ("detective", "board", "embed", "total")
    ranks = [{"figure": f, "true_mean_rank": round(9.5 + z * 1.82, 2), "chance": 9.5,
              "sd": 1.82, "z": z} for f, z in zip(names, zs, strict=True)]
    return AttackResult("Side channel: timing guesses", "guesses", True, "why",
                        details={"ranks": ranks, "rounds": 10, "candidates": 20})


def test_the_timing_table_reads_z_and_its_verdict_from_the_run():
    calm = _timing((2.52, 2.58, 1.0, 0.3))
    text = attacks.timing_reading(calm)
    assert "Farthest from it: board, mean rank 14.2, z = +2.58" in text
    assert "slower than chance (a cache hit would make it faster, not slower)" in text
    assert "about once in 100 figures" in text  # two-sided, 2.58 sd: p = 0.0099
    assert "No figure crosses the 4-sd line (chance reaches it about once in 16,000 figures)" \
        in text
    table = attacks.timing_table(calm)
    assert list(table["verdict"]) == ["chance"] * 4
    assert {"times", "true guess's mean rank", "sd of chance", "z"} <= set(table.columns)

    leak = _timing((-6.2, -6.2, -5.1, 0.0))
    text = attacks.timing_reading(leak)
    assert "Farthest from it: detective and board" in text and "faster than chance," in text
    assert "detective and board and embed cross the 4-sd line" in text and "a leak" in text
    assert list(attacks.timing_table(leak)["verdict"]) == ["leak", "leak", "leak", "chance"]


def test_the_catalogue_names_mechanism_and_actor_and_counts_them():
    results = [
        AttackResult("Injection", "ask", True, "scopes", mechanism="scopes fixed",
                     against="an agent: any text in its question"),
        AttackResult("Peek", "stage", True, "views", mechanism="counts only",
                     against="an observer: the stage and the events"),
        AttackResult("Forge", "id", False, "oops", mechanism="ids checked",
                     against="an agent: any id it passes", leaked=("x",)),
    ]
    table = attacks.catalogue_table(results)
    assert list(table.columns) == ["attack", "outcome", "stopped by", "holds against"]
    assert list(table["outcome"]) == ["blocked", "blocked", "LEAKED"]
    text = attacks.catalogue_reading(results)
    assert text.startswith("2 of 3 attacks blocked (1 of 2 by an agent; 1 of 1 by an observer)")
    assert "leaked: Forge" in text
    assert "holds against an observer: the stage and the events" in attacks_html(results)


# --- lessons 05 and 05b: the leakage lab -------------------------------------------------------


def _depths(pool: list[float], rnd: list[float]) -> pd.DataFrame:
    from bureau.labs.leakage.policies.policies import (
        BUREAU_POLICIES,
        SHARED_POOL,
        SHARED_POOL_WITH_OWN,
    )

    ks = [1, 3, 5, 10, 20]
    rows = [{"policy": p, "k": k, "pair_leak": a, "random_pair_leak": r,
             "shareable_recall": a, "random_shareable_recall": r}
            for p in (SHARED_POOL, SHARED_POOL_WITH_OWN) for k, a, r in zip(ks, pool, rnd,
                                                                           strict=True)]
    rows += [{"policy": p, "k": 5, "pair_leak": 0.0, "random_pair_leak": None,
              "shareable_recall": 0.5, "random_shareable_recall": None} for p in BUREAU_POLICIES]
    rows.append({"policy": "e_bureau_mediated", "k": None, "pair_leak": 0.0})  # no depth
    return pd.DataFrame(rows).astype({"k": "Int64"})


def test_the_depth_sentence_follows_the_rows():
    from bureau.labs.leakage import lesson

    meets = lesson.depth_reading(_depths([0.02, 0.26, 0.58, 0.995, 1.0],
                                         [0.135, 0.40, 0.67, 0.997, 1.0]))
    assert meets.startswith("At top-1 the shared pool leaks 2.0% of private pairs, a random "
                            "draw of the same size 13.5%; by top-10 the two meet")
    never = lesson.depth_reading(_depths([0.02, 0.1, 0.2, 0.3, 0.5], [0.2, 0.4, 0.6, 0.8, 0.9]))
    assert "at top-20, 50.0% against 90.0%" in never and "still climbs" in never
    same = lesson.depth_reading(_depths([0.3, 0.5, 0.6, 0.7, 0.8], [0.3, 0.5, 0.6, 0.7, 0.8]))
    assert "from the first depth" in same


def test_the_depth_figure_shows_the_headline_pool_on_whole_card_ticks():
    from bureau.labs.leakage.report import plots

    table = _depths([0.02, 0.26, 0.58, 0.995, 1.0], [0.135, 0.40, 0.67, 0.997, 1.0])
    fig = plots.baseline(table, "Bench", 5)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert not any("with own" in label for label in labels)  # the lesson never reads it
    assert "random draw, shared pool of others" in labels
    left = fig.axes[0]
    assert list(left.get_xticks()) == [1, 3, 5, 10, 20]
    assert [line.get_color() for line in left.get_lines()] == [LEAKED, CHANCE]
    assert "leaks 58% of private pairs at top-5" in fig._suptitle.get_text()
    report = plots.baseline(table, "Bench", 5, with_own=True)
    assert any("with own" in t.get_text() for t in report.legends[0].get_texts())


def test_the_full_set_is_read_against_this_run():
    from bureau.labs.leakage import lesson
    from bureau.labs.leakage.datasets.slices import MAGPIE_SLICE, slice_figures

    full = slice_figures(MAGPIE_SLICE)["full"]
    figures = {key: full[key] for key, _ in lesson.FULL_FIGURES}
    figures["auroc"] = full["auroc"] - 0.1
    text = lesson.beside_reading(figures, scenarios=12)
    assert text.startswith(f"Beside the full benchmark ({full['scenarios']} scenarios), this run "
                           "(12 scenarios) strays farthest on \"relevance AUROC")
    assert f"{figures['auroc']:.3f} against {full['auroc']:.3f} (-0.100)" in text
    assert "the whole slice (60 scenarios) strays at most" in text


def test_the_pool_games_verdict_is_computed():
    from bureau.game import pool

    table = pd.DataFrame({"pool_breaks": [True] * 7 + [False] * 56,
                          "random_breaks": [6.6 / 63] * 63})
    assert pool.reading(table) == (
        "7 of 63 searches broke a rule; a random draw of as many cards would break 6.6 on "
        "average: ranking by relevance kept secrets no better than drawing cards at random.")
    table["random_breaks"] = 20 / 63
    assert "kept secrets better than drawing" in pool.reading(table)


# --- lesson 05c: GateMem ----------------------------------------------------------------------


def test_gatemem_says_when_too_few_episodes_make_an_interval():
    from bureau.labs.gatemem.plots import headline_title

    summ = {"headline": [{"domain": "all", "utility_kept": 0.83, "violations_avoided": 0.62,
                          "utility_kept_lo": 0.83, "utility_kept_hi": 0.83,
                          "violations_avoided_lo": 0.62, "violations_avoided_hi": 0.62}],
            "figures": [{"domain": "all", "policy": "bureau", "episodes": 4}]}
    title = headline_title(summ)
    assert "4 episodes, one per domain: too few for an interval" in title
    assert "95 %" not in title
    summ["headline"][0].update(utility_kept_lo=0.7, utility_kept_hi=0.9)
    assert "95 % intervals 70 %–90 %" in headline_title(summ)


def test_gatemem_losses_colour_withheld_as_withheld_on_whole_ticks():
    from bureau.labs.gatemem.plots import losses_figure

    summ = {"domains": ["medical", "office"],
            "figures": [{"domain": d, "policy": "bureau", "n_U": 9} for d in
                        ("medical", "office", "all")],
            "losses": [{"domain": "medical", "loss": "withheld", "loss_detail": "limited reader",
                        "checkpoints": 1},
                       {"domain": "office", "loss": "not ranked", "loss_detail": "",
                        "checkpoints": 3}]}
    fig = losses_figure(summ)
    ax = fig.axes[0]
    colours = {t.get_text(): h.get_facecolor() for t, h in
               zip(ax.get_legend().get_texts(), ax.get_legend().legend_handles, strict=True)}
    from matplotlib.colors import to_rgba

    assert colours["withheld: limited reader"] == to_rgba(PROTECTED_SHADES[0])
    fig.canvas.draw()
    assert all(float(t).is_integer() for t in ax.get_xticks())
    assert "4 of 9 utility checkpoints" in ax.get_title().replace("\n", " ")


# --- lesson 06b: the injection lab's families and the published figures -------------------------


def test_injection_families_are_counts_read_in_a_sentence():
    from bureau.labs.injection.lab import LabReport

    class Planted(LabReport):
        def by_family(self) -> pd.DataFrame:
            return pd.DataFrame([
                {"family": "agentdojo:direct", "system": "bureau", "attempts": 2,
                 "reached_model": 2, "disclosures": 0, "steered": 1},
                {"family": "agentdojo:direct", "system": "naive", "attempts": 2,
                 "reached_model": 2, "disclosures": 2, "steered": 2},
                {"family": "agentdojo:important", "system": "bureau", "attempts": 2,
                 "reached_model": 0, "disclosures": 0, "steered": 0},
                {"family": "agentdojo:important", "system": "naive", "attempts": 2,
                 "reached_model": 2, "disclosures": 2, "steered": 0}])

    report = Planted([], "stand-in", 0.0)
    table = report.families()
    assert table.loc[0, "bureau: disclosed"] == "0 of 2"
    assert table.loc[1, "bureau: reached the model"] == "0 of 2"
    assert not table.isna().any().any()
    text = report.family_reading()
    assert text.startswith("Over 2 attack families: disclosure the bureau 0 of 4, the shared "
                           "pool 4 of 4; integrity (a steered answer accepted as the role's) the "
                           "bureau 1 of 4, the shared pool 2 of 4.")
    assert "2 of the bureau's 4 attempts never reached the model" in text


def test_the_published_figures_leave_no_empty_cell():
    from bureau.labs import injection

    table = injection.published()
    assert not table.isna().any().any()
    assert table.iloc[-1]["attack"] == "this lab"
