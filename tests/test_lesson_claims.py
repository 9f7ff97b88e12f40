"""What lessons 05, 05b and 07 say holds on the data they run on (issue 48).

* On the slices that ship in ``data/`` (a fresh clone, the course site): the lessons' own runs in
  ``tests/test_lessons_twice.py`` execute every claim check; here the same checks run on the lab
  directly, at the lessons' default parameters.
* On the full benchmarks, where ``../shared/datasets`` has them (skipped otherwise).
* On a planted contradiction, the old hand-written mini sets on which relevance was a
  near-perfect classifier: lesson 05 and its deep dive stop at their first claim check, naming
  it; lesson 07's mediator check refuses planted figures.
* Figure titles take their verbs from the values they show.
"""

from __future__ import annotations

import math

import nbformat
import pytest
from conftest import REPO

from bureau.labs.leakage.claims import CLAIMS, ClaimError, headline, require
from bureau.labs.leakage.datasets.convert import load_lab
from bureau.labs.leakage.datasets.magpie import subset
from bureau.labs.leakage.lesson import (
    MAGPIE_SLICE,
    MINI,
    SOCIAL_MINI,
    SOCIAL_SLICE,
    load_dataset,
    run_lab,
)
from bureau.labs.leakage.report.directions import change, compare, separation

NB = REPO / "notebooks"


def _default(lesson: str, name: str) -> int:
    """A lesson's default for an int parameter, read from its parameters cell."""
    import re

    cells = nbformat.read(NB / lesson, as_version=4).cells
    params = next(c.source for c in cells if "parameters" in c.get("metadata", {}).get("tags", []))
    return int(re.search(rf"^{name}: int = (\d+)", params, re.M).group(1))


LIMIT_05 = _default("05_measuring_leakage.ipynb", "limit")
LIMIT_05B = _default("05b_agentsocialbench.ipynb", "limit")
LIMIT_07 = _default("07_purpose_bound.ipynb", "lab_limit")
LESSON_05 = ("pool-leaks", "relevance-weak", "threshold-leaks", "threshold-costs-recall",
             "bureau-zero")
"""The claims lesson 05 checks on its run."""
DEEP_DIVE_05B = ("relevance-hint", "pool-below-random", "pool-leaks", "abstractions-cost-recall")
"""The claims its deep dive (05b) checks."""


# -- the words ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("auroc", "verb"), [(0.5, "barely tells"), (0.596, "barely tells"),
                                             (0.7, "partly tells"), (0.9, "apart"),
                                             (0.992, "apart")])
def test_the_separation_verb_follows_the_auroc(auroc, verb):
    assert verb in separation(auroc)
    assert "cannot tell" in separation(math.nan)


def test_comparisons_have_a_tolerance_and_a_direction():
    assert compare(0.255, 0.80) == "less than" and compare(0.80, 0.255) == "more than"
    assert compare(0.789, 0.726) == "about as much as"
    assert compare(0.0, 0.004) == "about as much as"  # under a point: the same
    assert change(1.0, 0.561) == "costs" and change(1.0, 1.0) == "keeps"
    assert change(0.4, 0.6) == "adds"


def test_require_names_the_claim_and_the_figures_when_the_run_contradicts_it():
    figures = {"pool_leak": 0.0, "auroc": 0.992, "bureau_leak": 0.0, "threshold_leak": 0.0,
               "threshold_recall": 1.0, "pool_recall": 1.0, "random_leak": 0.7,
               "c_recall": 1.0, "d_recall": 1.0}
    with pytest.raises(ClaimError) as refused:
        require(figures, "pool-leaks", "relevance-weak", "bureau-zero", data="a planted run")
    text = str(refused.value)
    assert CLAIMS["pool-leaks"].sentence in text and CLAIMS["relevance-weak"].sentence in text
    assert CLAIMS["bureau-zero"].sentence not in text, "a claim that holds is not named"
    assert "auroc 0.992" in text and "a planted run" in text
    assert require(figures, "bureau-zero").startswith("Checked on this run")


# -- the data the lessons run on ---------------------------------------------------------------
@pytest.fixture(scope="module")
def slice_run(bureau):
    data, _ = load_dataset(str(MAGPIE_SLICE))
    return run_lab(bureau, subset(data, LIMIT_05), k=5, cleanup=True)


@pytest.fixture(scope="module")
def slice_05(slice_run):
    return headline(slice_run)


@pytest.fixture(scope="module")
def slice_05b(bureau):
    return headline(run_lab(bureau, load_lab(SOCIAL_SLICE, LIMIT_05B), k=5, cleanup=True))


def test_lesson_05s_claims_hold_on_the_shipped_slice(slice_05):
    require(slice_05, *LESSON_05, data="the MAGPIE slice")


def test_the_deep_dives_claims_hold_on_the_shipped_slice(slice_05b):
    require(slice_05b, *DEEP_DIVE_05B, data="the AgentSocialBench slice")


def _full(which: str):
    from conftest import magpie_path

    if which == "magpie":
        path = magpie_path()
    else:
        from bureau.errors import ScenarioError
        from bureau.labs.leakage.datasets.agentsocialbench import default_agentsocialbench_path

        try:
            path = default_agentsocialbench_path()
        except ScenarioError:
            path = None
    if path is None:
        pytest.skip(f"the full {which} is not on this machine (../shared/datasets)")
    return path


def test_lesson_05s_claims_hold_on_the_full_benchmark(bureau):
    data, _ = load_dataset(str(_full("magpie")))
    require(headline(run_lab(bureau, subset(data, LIMIT_05), k=5, cleanup=True)), *LESSON_05,
            data=f"the full MAGPIE's first {LIMIT_05} scenarios")


def test_the_deep_dives_claims_hold_on_the_full_benchmark(bureau):
    lab = load_lab(_full("agentsocialbench"), LIMIT_05B)
    require(headline(run_lab(bureau, lab, k=5, cleanup=True)), *DEEP_DIVE_05B,
            data=f"the full AgentSocialBench, {LIMIT_05B} scenarios")


def test_lesson_07s_mediator_claims_hold_on_the_slice_and_the_full_set(bureau):
    from bureau.course.purpose import mediation_lab

    for path in (str(MAGPIE_SLICE), str(_full("magpie"))):
        assert mediation_lab(bureau, limit=LIMIT_07, path=path).require().startswith("Checked")


def test_lesson_07s_mediator_check_stops_on_figures_that_contradict_it():
    """Planted figures (a content mediator that leaks as much as a random one, or nothing at
    all): the check lesson 07 prints above its sentence refuses, naming the figures."""
    from types import SimpleNamespace

    from bureau.course.purpose import MediationLab

    def lab(leak: float, random_leak: float, recall: float) -> MediationLab:
        measured = {"content_mediator": {"content": {"leak": leak, "recall": recall},
                                         "random": {"leak": random_leak}}}
        return MediationLab(SimpleNamespace(lab=[None] * 8), measured, "planted")

    assert lab(0.10, 0.40, 0.7).require().startswith("Checked")
    for leak, random_leak, recall in ((0.40, 0.41, 0.7), (0.0, 0.40, 0.7), (0.1, 0.4, 1.0)):
        with pytest.raises(ClaimError, match="does not hold"):
            lab(leak, random_leak, recall).require()


# -- a planted contradiction stops the lessons --------------------------------------------------
@pytest.mark.parametrize(("lesson", "variable", "planted"), [
    ("05_measuring_leakage.ipynb", "BUREAU_MAGPIE", MINI),
    ("05b_agentsocialbench.ipynb", "BUREAU_AGENTSOCIALBENCH", SOCIAL_MINI),
])
def test_a_lesson_on_the_old_mini_set_stops_at_its_claim_check(lesson, variable, planted,
                                                              tmp_path, monkeypatch):
    """The mini sets are what the lessons used to fall back on: relevance there tells the labels
    apart, the pool leaks nothing at the threshold... The lesson must not print its prose's
    opposite; it stops, naming the claim."""
    import papermill as pm

    monkeypatch.setenv(variable, str(planted))
    with pytest.raises(pm.PapermillExecutionError) as stopped:
        pm.execute_notebook(str(NB / lesson), str(tmp_path / lesson), kernel_name="python3",
                            cwd=str(NB), progress_bar=False, execution_timeout=180)
    assert stopped.value.ename == "ClaimError", stopped.value
    assert "does not hold" in stopped.value.evalue


def test_every_direction_sentence_of_the_lessons_markdown_is_checked():
    """A markdown sentence that names a direction the run could contradict sits in a lesson that
    checks it: each claim a lesson's code requires is one of :data:`CLAIMS`, and the three
    lessons require every claim their prose makes."""
    required: dict[str, set[str]] = {}
    for name in ("05_measuring_leakage.ipynb", "05b_agentsocialbench.ipynb"):
        code = "\n".join(c.source for c in nbformat.read(NB / name, as_version=4).cells
                         if c.cell_type == "code")
        required[name] = {key for key in CLAIMS if f'"{key}"' in code}
    assert required["05_measuring_leakage.ipynb"] == set(LESSON_05)
    assert required["05b_agentsocialbench.ipynb"] == set(DEEP_DIVE_05B)
    seven = "\n".join(c.source for c in nbformat.read(NB / "07_purpose_bound.ipynb",
                                                      as_version=4).cells)
    assert "lab.require()" in seven


def test_figure_titles_take_their_verbs_from_their_values(slice_run, slice_05):
    """The ROC title's verb is the AUROC's; the baseline title compares the two figures it
    prints (on the slice's run); no direction is typed into a title."""
    from bureau.labs.leakage.metrics.analysis import summary_table
    from bureau.labs.leakage.report import plots

    roc = plots.roc(slice_run).axes[0].get_title()
    assert separation(slice_05["auroc"]) in roc, roc
    base = plots.baseline(summary_table(slice_run), "MAGPIE", 5)._suptitle.get_text()
    assert compare(slice_05["pool_leak"], slice_05["random_leak"]) in base, base
    source = (REPO / "bureau" / "labs" / "leakage" / "report" / "plots.py").read_text()
    for typed in ("barely tells", "leaks less than", "costs recall", "restores recall"):
        assert typed not in source, f"a direction typed into a title: {typed!r}"
    assert plots.separation is separation and plots.compare is compare
