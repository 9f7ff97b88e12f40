"""A learner's time for a lesson (issue 49 §3): the one model every stated time comes from.

Prose at :data:`PROSE_WPM` words a minute, at least :data:`SHOWN_MIN` minute for each table,
figure or widget a cell shows, :data:`EXERCISE_MIN` per exercise, :data:`QUIZ_MIN` for the quiz,
and the cells' measured run time. ``tools/nbtool.py`` re-exports it (the tests load that script
by path); it counts, it does not run anything.
"""

from __future__ import annotations

import ast
import re

import nbformat

NAV_OPEN, TOC_OPEN = "<!--NAVIGATION-->", "<!--CONTENTS-->"
"""Generated cells (navigation, lesson 00's contents): not read by a learner as prose."""

PROSE_WPM = 200
"""Reading speed for the lessons' prose (issue 49 §3)."""
SHOWN_MIN, EXERCISE_MIN, QUIZ_MIN = 1, 8, 3
"""At least a minute for each table, figure or widget a cell shows (a prediction box and its
reveal are two), eight for each exercise, three for the quiz (issue 49 §3)."""
NOT_SHOWN_CALLS = {"print", "check", "quiz"}
"""Calls whose value is not a thing to look at: a print is read as prose is not (its output
is short), an exercise's check and the quiz have their own allowance."""


def shown(cell: nbformat.NotebookNode) -> int:
    """How many tables, figures or widgets a code cell shows: each ``display(...)`` call, and the
    cell's value when its last statement is an expression (not a print, a check or the quiz)."""
    try:
        tree = ast.parse(cell.source)
    except SyntaxError:
        return 0
    count = sum(1 for node in ast.walk(tree) if isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name) and node.func.id == "display")
    last = tree.body[-1] if tree.body else None
    if isinstance(last, ast.Expr):
        value = last.value
        name = getattr(value.func, "id", getattr(value.func, "attr", "")) \
            if isinstance(value, ast.Call) else ""
        if name not in NOT_SHOWN_CALLS and name != "display":
            count += 1
    return count


def learner_minutes(nb: nbformat.NotebookNode, run_seconds: float) -> tuple[int, dict[str, float]]:
    """A learner's minutes for one lesson, rounded up to the minute, and how they add up: prose
    at :data:`PROSE_WPM` words a minute (skipping the generated navigation and contents), a
    minute for each thing a cell shows (:func:`shown`), eight per exercise, three for the quiz,
    and the measured run time. An estimate, said as one: a learner's reading speed is the
    largest unknown."""
    prose = things = exercises = 0
    quiz = False
    for cell in nb.cells:
        if cell.source.startswith((NAV_OPEN, TOC_OPEN)):
            continue
        if cell.cell_type == "markdown":
            prose += len(re.findall(r"[A-Za-z0-9']+", cell.source))
        elif cell.cell_type == "code":
            things += shown(cell)
            exercises += len(re.findall(r"^check\(", cell.source, re.M))
            quiz = quiz or bool(re.search(r"^quiz\(", cell.source, re.M))
    parts = {
        "reading prose": prose / PROSE_WPM,
        "looking at what cells show": things * SHOWN_MIN,
        "exercises": exercises * EXERCISE_MIN,
        "quiz": QUIZ_MIN if quiz else 0,
        "running": run_seconds / 60,
    }
    total = sum(parts.values())
    return int(-(-total // 1)), {**parts, "words": prose, "things shown": things}


def time_rule() -> str:
    """How a lesson's time is counted, said once wherever a time is shown."""
    return (f"A time is a learner's: prose at {PROSE_WPM} words a minute, {SHOWN_MIN} min for "
            f"each table, figure or widget shown, {EXERCISE_MIN} per exercise, {QUIZ_MIN} for "
            "the quiz, and the cells' run time on a 2-core machine (`tools/nbtool.py time` "
            "recounts it).")
