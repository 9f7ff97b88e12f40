"""The lessons: every notebook runs top to bottom (papermill), and keeps to the course's shape.

papermill kernels are separate processes: they inherit ``BUREAU_DATA_DIR`` from this process
(set by conftest), so they share the test store; a second process attaches to the running
embedded seekdb. Outputs policy and shape checks read the committed files without a kernel.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import nbformat
import pytest
from conftest import REPO

NB_DIR = REPO / "notebooks"
LESSONS = sorted(NB_DIR.glob("[0-9][0-9]_*.ipynb"))
ALL = [*LESSONS, NB_DIR / "stage.ipynb"]
SMALL = {"02_interrogate.ipynb": {"repeats": 1}, "stage.ipynb": {"poll_seconds": 0.5}}


def _nbtool():
    spec = importlib.util.spec_from_file_location("nbtool", REPO / "tools" / "nbtool.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _outputs(nb) -> str:
    """Every output of every cell, plus widget state (Output widgets), as one string."""
    parts = [json.dumps(c.get("outputs", [])) for c in nb.cells if c.cell_type == "code"]
    parts.append(json.dumps(nb.metadata.get("widgets", {})))
    return "\n".join(parts)


def test_lessons_are_numbered_without_gaps_and_there_is_a_stage():
    names = [p.name for p in LESSONS]
    assert names[:5] == [
        "00_welcome.ipynb", "01_whisper.ipynb", "02_interrogate.ipynb", "03_publish.ipynb",
        "04_attacks.ipynb",
    ]
    assert [int(n[:2]) for n in names] == list(range(len(names)))
    assert (NB_DIR / "stage.ipynb").exists()
    contents = nbformat.read(NB_DIR / "00_welcome.ipynb", as_version=4)
    table = "\n".join(c.source for c in contents.cells if "## Contents" in c.source)
    for name in names:
        assert f"]({name})" in table, f"{name} missing from the contents in lesson 00"


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_notebook_runs_top_to_bottom(path: Path, tmp_path: Path):
    pm = pytest.importorskip("papermill")
    out = tmp_path / path.name
    nb = pm.execute_notebook(
        str(path), str(out), parameters=SMALL.get(path.name, {}), kernel_name="python3",
        cwd=str(path.parent), progress_bar=False, execution_timeout=180,
    )
    assert nb.metadata.papermill.exception is None
    text = _outputs(nb)
    assert '"ename"' not in text and "Traceback" not in text
    if path.name == "stage.ipynb":
        assert "application/vnd.jupyter.widget-view+json" in text
        return
    assert "image/png" in text, "every lesson shows at least one figure"
    assert "bureau-verdict" in text, "the exercise check cell shows a verdict"
    assert 'data-ok=\\"false\\"' in text, "unsolved exercises get a friendly 'not yet'"
    assert "application/vnd.jupyter.widget-view+json" in text, "the console is displayed"


# -- shape and hygiene (no kernel) ----------------------------------------------------------------
@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_outputs_policy_and_no_absolute_paths(path: Path):
    nbtool = _nbtool()
    nb = nbformat.read(path, as_version=4)
    assert nbtool.problems(path, nb) == []
    params = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(params) == 1 and params[0].cell_type == "code"
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert "BUREAU_DATA_DIR =" not in cell.source  # the environment picks the store
            assert len(cell.source.splitlines()) <= 25, "keep notebook code thin"
            assert not re.search(r"api[_-]?key\s*=", cell.source, re.I)


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_lesson_shape(path: Path):
    from bureau.course.widgets.exercises import EXERCISES

    nb = nbformat.read(path, as_version=4)
    md = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert nb.cells[0].source.startswith("<!--NAVIGATION-->")
    assert nb.cells[-1].source.startswith("<!--NAVIGATION-->")
    for link in re.findall(r"\]\(([0-9a-z_]+\.ipynb)", md):
        assert (NB_DIR / link).exists(), link
    i = LESSONS.index(path)
    if i > 0:
        assert f"]({LESSONS[i - 1].name})" in nb.cells[0].source
    if i + 1 < len(LESSONS):
        assert f"]({LESSONS[i + 1].name})" in nb.cells[0].source
    assert "Goals" in md and "## Summary" in md and "Predict" in md
    assert "make_console(" in code, "running all cells shows the console"
    exercises = re.findall(r'check\("([0-9a-z-]+)"', code)
    assert exercises, "at least one exercise with a check cell"
    for ex in exercises:
        assert EXERCISES[ex].solution_html() in md, f"solution of {ex} missing or out of date"
        assert "<details>" in md


def test_stage_notebook_uses_only_the_stage():
    nb = nbformat.read(NB_DIR / "stage.ipynb", as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "make_stage(" in code and "BUREAU_CASE" in code
    for forbidden in ("make_console", "interrogate", "spaces(", ".cards("):
        assert forbidden not in code
