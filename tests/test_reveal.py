"""A reveal waits for the prediction (issue 50 §1).

*Run All*, what most learners press, runs straight past the prediction box: the reveal then says
in one line how to predict first and keeps the run's value folded. With a prediction saved, the
guess and the value are shown together. On the site (no kernel, no box to save in), a reveal is
the value folded and says nothing about saving: the site build rebuilds it from the metadata the
reveal leaves on its output. Needs no store: the progress record is a file in a folder.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
from IPython.core.formatters import DisplayFormatter

from bureau.course.quiz import PREDICT_FIRST, REVEAL_METADATA, predict, reveal

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("sitebuild", REPO / "tools" / "sitebuild.py")
sitebuild = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("sitebuild", sitebuild)
_spec.loader.exec_module(sitebuild)

SAVING = re.compile(r"\bsav(?:e|ed|ing)\b|none saved", re.IGNORECASE)


def _learner(tmp_path: Path) -> SimpleNamespace:
    return SimpleNamespace(settings=SimpleNamespace(data_dir=tmp_path))


def _shown(obj: object) -> tuple[dict, dict]:
    """What a notebook's output holds for ``obj``: its data and its metadata."""
    return DisplayFormatter().format(obj)


def test_without_a_prediction_the_reveal_says_how_to_predict_and_keeps_the_value_folded(
        tmp_path):
    data, _ = _shown(reveal("05-pool-games", _learner(tmp_path), "the shared pool lost 3 of 4"))
    shown = data["text/html"]
    assert PREDICT_FIRST in shown and len(PREDICT_FIRST) < 100  # one short line
    assert "none saved" not in shown
    # the value is there, folded: a <details> that is not open
    fold = re.search(r"<details([^>]*)>(.*?)</details>", shown, re.S)
    assert fold and "open" not in fold.group(1) and "lost 3 of 4" in fold.group(2)
    assert "lost 3 of 4" not in shown.replace(fold.group(0), "")


def test_with_a_prediction_the_guess_and_the_value_are_side_by_side(tmp_path):
    learner = _learner(tmp_path)
    text, save, _ = predict("05-pool-games", learner).state
    text.value = "the pool loses most of them"
    save.click()
    data, _ = _shown(reveal("05-pool-games", learner, "the shared pool lost 3 of 4"))
    assert "<b>You predicted:</b> the pool loses most of them" in data["text/html"]
    assert "<details class=\"bureau-reveal-run\" open>" in data["text/html"]
    assert PREDICT_FIRST not in data["text/html"]


def _executed(*outputs: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell('reveal("05-pool-games", bureau, lost)')
    cell.outputs = list(outputs)
    nb.cells = [cell]
    return nb


def test_the_site_shows_a_reveal_folded_and_silent_about_saving(tmp_path):
    data, metadata = _shown(reveal("05-pool-games", _learner(tmp_path), "lost 3 of 4"))
    assert metadata[REVEAL_METADATA] == {"item": "05-pool-games", "this_run": "lost 3 of 4"}
    nb = _executed(nbformat.v4.new_output("display_data", data=data, metadata=metadata))
    assert sitebuild.fold_reveals(nb) == 1
    (out,) = nb.cells[0].outputs
    for shown in (out.data["text/html"], out.data["text/plain"]):
        assert not SAVING.search(shown), shown
        assert "Predict first" not in shown
    assert re.search(r"<details class=\"bureau-reveal-run\"><summary>.*lost 3 of 4",
                     out.data["text/html"])
    assert REVEAL_METADATA not in out.metadata
    assert sitebuild.reveal_problems(nb, "05_x.ipynb") == []


def test_a_reveal_the_site_build_cannot_fold_is_refused(tmp_path):
    """A reveal output without its metadata (an old run, or HTML pasted by hand) would reach the
    site unfolded, saying "press Save": the build reports it."""
    data, _ = _shown(reveal("05-pool-games", _learner(tmp_path), "lost 3 of 4"))
    nb = _executed(nbformat.v4.new_output("display_data", data=data))
    assert sitebuild.fold_reveals(nb) == 0
    found = sitebuild.reveal_problems(nb, "05_x.ipynb")
    assert found and "05_x.ipynb" in found[0]
