"""Every lesson, twice in a row, in one data directory: a learner's *Restart Kernel and Run All*
(issue 47), on a machine the rest of the suite keeps busy.

One data directory serves the whole course, as ``~/.local/share/bureau`` does for a learner, and
no other process holds it: each kernel starts (or finds) seekdb itself, and the one before it has
ended. For each notebook, in course order:

1. **papermill** runs it at its default parameters. Its executed copy goes where ``make site``
   looks for one (``build/site/executed``), so the site stage renders it instead of running the
   lesson a third time; what a run must show is checked on it (no error, nothing on stderr, no
   warning, every figure an image, every table cell whole, the console and the exercise's
   verdict).
2. **nbval** runs it again at once, in the same data directory, and compares the cells tagged to
   be checked with their committed outputs.

The cell that opens the bureau must finish within :data:`OPEN_BOUND_S` in both runs; each run's
open time is printed at the end. All of these tests run in order on one xdist worker (group
``lessons``), while the other worker runs the rest of the suite.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import nbformat
import pytest
from conftest import REPO
from test_notebooks import ALL, DEEP_DIVES, _nbtool, _outputs

EXECUTED = REPO / "build" / "site" / "executed"
"""Where ``tools/sitebuild.py build --reuse`` takes executed lessons from."""
OPEN_BOUND_S = 60.0
SMALL = {"stage.ipynb": {"poll_seconds": 0.5}}
"""Only the stage runs with a parameter of its own (it polls; the site does not show it)."""
FULL_SETS = ("BUREAU_MAGPIE", "BUREAU_AGENTSOCIALBENCH")
"""Pointed nowhere for these runs, as on a fresh clone and the course site: the lessons run on the
slices in ``data/`` (tests/test_lesson_claims.py runs them on the full sets, where present)."""
OPENS: list[dict] = []
"""One row per notebook: the open cell's seconds in each run (printed by the last test)."""

pytestmark = pytest.mark.xdist_group("lessons")


@pytest.fixture(scope="module")
def learner_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("learner") / "bureau"


def _open_cell(nb: nbformat.NotebookNode) -> int | None:
    """The index, among code cells, of the first cell that opens the bureau."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    return next((i for i, c in enumerate(code) if "Bureau.open(" in c.source), None)


def _stderr(nb: nbformat.NotebookNode) -> list[str]:
    """Everything a run wrote to stderr (warnings land there too), cell by cell: a lesson
    prints nothing a learner would read as something gone wrong (issue 48 §4)."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    return [f"cell {i}: {o.get('text', '')[:300]}" for i, c in enumerate(code)
            for o in c.get("outputs", []) if o.get("output_type") == "stream"
            and o.get("name") == "stderr"]


def _first_run(path: Path, out: Path, data: Path, monkeypatch) -> nbformat.NotebookNode:
    import papermill as pm

    monkeypatch.setenv("BUREAU_DATA_DIR", str(data))  # the kernel inherits it
    for name in FULL_SETS:  # a fresh clone: the benchmarks are not there, the slices are
        monkeypatch.setenv(name, str(data / "no-such-benchmark"))
    return pm.execute_notebook(
        str(path), str(out), parameters=SMALL.get(path.name, {}), kernel_name="python3",
        cwd=str(path.parent), progress_bar=False, execution_timeout=180)


def _second_run(path: Path, data: Path, junit: Path) -> tuple[int, str, dict[int, float]]:
    """nbval over ``path`` in ``data``: (exit code, its output's tail, seconds per code cell)."""
    env = {**os.environ, "BUREAU_NBVAL_DATA_DIR": str(data),
           **{name: str(data / "no-such-benchmark") for name in FULL_SETS}}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval-lax", "--nbval-current-env",
         "--nbval-cell-timeout=180", "-p", "no:cacheprovider", "-p", "no:playwright",
         "-p", "no:xdist", "-q", str(path.relative_to(REPO)), f"--junitxml={junit}",
         "-o", "junit_family=xunit2"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    times: dict[int, float] = {}
    if junit.is_file():
        for case in ET.parse(junit).iter("testcase"):
            found = re.fullmatch(r"Cell (\d+)", case.get("name", ""))
            if found:
                times[int(found.group(1))] = float(case.get("time", 0))
    return proc.returncode, (proc.stdout + proc.stderr)[-4000:], times


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_lesson_runs_twice_in_one_data_directory(path: Path, learner_dir: Path, tmp_path: Path,
                                                 monkeypatch):
    lesson = path.name != "stage.ipynb"
    out = EXECUTED / path.name if lesson else tmp_path / path.name
    out.parent.mkdir(parents=True, exist_ok=True)
    nb = _first_run(path, out, learner_dir, monkeypatch)
    assert nb.metadata.papermill.exception is None
    text = _outputs(nb)
    assert '"ename"' not in text and "Traceback" not in text
    assert _nbtool().executed_problems(path.name, nb) == []
    stderr = _stderr(nb)
    assert not stderr, f"{path.name} wrote to stderr (a warning, a log line):\n" + "\n".join(stderr)
    opener = _open_cell(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    first = code[opener].metadata.papermill.duration if opener is not None else None

    status, tail, times = _second_run(path, learner_dir, tmp_path / "nbval.xml")
    second = times.get(opener) if opener is not None else None
    OPENS.append({"notebook": path.name, "first": first, "second": second})
    assert status == 0, f"the second run (nbval) of {path.name} failed:\n{tail}"
    for took in (first, second):
        assert took is None or took < OPEN_BOUND_S, f"{path.name} opened in {took:.0f} s"

    if not lesson:
        assert "application/vnd.jupyter.widget-view+json" in text
        return
    if path in DEEP_DIVES:  # a figure, a console or an exercise only where it has one
        source = "\n".join(c.source for c in code)
        if re.search(r'check\("', source):
            assert "bureau-verdict" in text, "the exercise check cell shows a verdict"
        if "plot" in source:
            assert "image/png" in text, "a deep dive's figures are images"
        return
    assert "image/png" in text, "every lesson shows at least one figure"
    assert "bureau-verdict" in text, "the exercise check cell shows a verdict"
    assert 'data-ok=\\"false\\"' in text, "unsolved exercises get a friendly 'not yet'"
    assert "application/vnd.jupyter.widget-view+json" in text, "the console is displayed"


def test_zz_every_open_was_timed_and_bounded(capsys):
    """Runs last in the group: the open times of both runs, printed (a hang fails above)."""
    if not OPENS:
        pytest.skip("no lesson ran in this process (selected alone)")
    with capsys.disabled():
        print(f"\nlessons twice in one data directory: {len(OPENS)} notebooks; open cell, "
              "first run / second run (s):")
        for row in OPENS:
            shown = [f"{v:.1f}" if isinstance(v, float) else "-" for v in (row["first"],
                                                                          row["second"])]
            print(f"    {row['notebook']:<34} {shown[0]:>6} / {shown[1]:>6}")
    timed = [v for r in OPENS for v in (r["first"], r["second"]) if isinstance(v, float)]
    assert timed and max(timed) < OPEN_BOUND_S
