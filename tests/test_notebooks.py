"""The lessons keep to the course's shape, and follow every bundled scenario.

Every notebook's run at its defaults, twice in one data directory, is
``tests/test_lessons_twice.py``. Here papermill kernels (separate processes) inherit
``BUREAU_DATA_DIR`` from this process (set by conftest), so they share the test store; a second
process attaches to the running embedded seekdb. Outputs policy and shape checks read the
committed files without a kernel. Deep dives
(``NNb_<topic>.ipynb``, the second half of a lesson, outside the workshop path) run, keep the
outputs policy and are checked for their own shape, as lessons are; each main lesson fits one
sitting (issue 34 §6).
Every lesson and deep dive that takes a ``scenario`` runs once more per other bundled scenario
(``-p scenario the-mole``), solved (marked ``slow``: it runs in the full suite, not in ``make check``). Executed lessons must
show every figure as an image, every table cell whole, and every demo's effect (tools/nbtool.py's
``executed_problems``).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
from pathlib import Path

import nbformat
import pytest
from conftest import REPO

import bureau.course.beyond  # noqa: F401  (registers lesson 08's exercise)
import bureau.course.closing  # noqa: F401  (registers lesson 09's exercise)
import bureau.course.forgetting  # noqa: F401  (registers lesson 07's second exercise)
import bureau.course.purpose  # noqa: F401  (registers lesson 07's exercise)
import bureau.labs.injection  # noqa: F401  (registers lesson 06's exercise)
from bureau.course import progress

NB_DIR = REPO / "notebooks"
LESSONS = sorted(NB_DIR.glob("[0-9][0-9]_*.ipynb"))
DEEP_DIVES = sorted(NB_DIR.glob("[0-9][0-9][a-z]_*.ipynb"))
"""The deep dives (tools/nbtool.py's ``DEEP_DIVE_GLOB``): run and checked like the lessons."""
COURSE_NOTEBOOKS = sorted([*LESSONS, *DEEP_DIVES])
ALL = [*COURSE_NOTEBOOKS, NB_DIR / "stage.ipynb"]
SMALL = {"02_interrogate.ipynb": {"repeats": 1}, "stage.ipynb": {"poll_seconds": 0.5}}
SCENARIO_LESSONS = [NB_DIR / n for n in (
    "00_welcome.ipynb", "01_whisper.ipynb", "02_interrogate.ipynb", "03_publish.ipynb")]
"""Lessons whose code and exercises follow the ``scenario`` parameter (through ``Cast``). They
are the operator's lessons, so each shows the console; later lessons show it only where it does
what they teach (issue 21 §3: lesson 04 attacks through agent handles, which the console has not)."""
LATER_SCENARIO_LESSONS = [NB_DIR / n for n in (
    "04_attacks.ipynb", "05_measuring_leakage.ipynb", "06_llm_voice.ipynb",
    "07_purpose_bound.ipynb", "09_closing.ipynb")]
"""Later lessons that take a ``scenario`` too and read every role and card from the cast, the
attack target or lesson 07's cast of roles and policy labels (issue 34 §7). Lesson 04 plays a
second case, ``the-mole`` by default: every bundled case has a mole and a decoy (issue 49 §2)."""
CORE_LESSONS = [NB_DIR / n for n in (
    "00_welcome.ipynb", "01_whisper.ipynb", "02_interrogate.ipynb", "03_publish.ipynb",
    "04_attacks.ipynb", "05_measuring_leakage.ipynb", "06_llm_voice.ipynb")]
"""The core path (issue 49): each plays the case of its ``scenario`` parameter."""
OTHER_SCENARIOS = ["the-mole", "ward-seven"]
WORKED_EXAMPLE = ("suspect", "0427", "footprint", "cctv", "safe-code")
"""Safe-combination names no output may show when a lesson runs with another scenario."""
WITHOUT_CONSOLE = {"05_measuring_leakage.ipynb", "06_llm_voice.ipynb", "07_purpose_bound.ipynb",
                   "08_beyond_the_board.ipynb"}
"""Lessons that teach what the console does not do (05: measuring a pool and a benchmark; 06:
a model's payload and injections, through agent handles; 07: consult, grants, revocation; 08:
runs, promotion, task scopes), so it would be decoration there (issue 21 §3: it earns its place
or leaves). Lessons 00-04 play the case in it, and 09 wires an agent loop beside it."""
KNOWN_UNUSED_IMPORTS: dict[str, set[str]] = {}
"""Imports a lesson may leave unused (none: every lesson imports only what it uses)."""


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
    for name in names + [p.name for p in DEEP_DIVES]:
        assert f"]({name})" in table, f"{name} missing from the contents in lesson 00"
    for dive in DEEP_DIVES:  # a deep dive continues a lesson of its number, never renumbers one
        assert dive.name[:2] in [n[:2] for n in names], dive.name


def test_executed_outputs_check_finds_planted_defects(tmp_path: Path):
    """The planted defects, through a real kernel: a bare matplotlib Figure shows as text (the
    check names it), the course's figure type as an image (the check passes); a demo that says
    its effect did not occur is reported; a table at pandas' default width is cut short, and the
    course's setting shows it whole."""
    pm = pytest.importorskip("papermill")
    from bureau.course.effects import NOT_SHOWN

    assert _nbtool().NOT_SHOWN == NOT_SHOWN
    planted = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("from matplotlib.figure import Figure\n"
                                  "fig = Figure(figsize=(9.5, 4.6))\nfig.add_subplot()\nfig"),
        nbformat.v4.new_code_cell("from bureau.figures import new_figure\n"
                                  "fig = new_figure(3, 2)\nfig.add_subplot()\nfig"),
        nbformat.v4.new_code_cell("from bureau.course.effects import outcome\n"
                                  "print(outcome(False, 'raced', 'the writers never overlapped'))"),
        nbformat.v4.new_code_cell("import pandas as pd\n"
                                  "pd.DataFrame({'text': ['According to my notes: ' + 'x' * 60]})"),
        nbformat.v4.new_code_cell("from bureau.course.tables import show_whole_text\n"
                                  "show_whole_text()\n"
                                  "pd.DataFrame({'text': ['According to my notes: ' + 'x' * 60]})"),
    ])
    nbformat.write(planted, tmp_path / "planted.ipynb")
    nb = pm.execute_notebook(str(tmp_path / "planted.ipynb"), str(tmp_path / "out.ipynb"),
                             kernel_name="python3", cwd=str(REPO), progress_bar=False,
                             execution_timeout=120)
    found = _nbtool().executed_problems("planted", nb)
    assert len(found) == 3, found
    assert "cell 0: a figure without an image: <Figure size 950x460" in found[0]
    assert "cell 2: a demo without its effect" in found[1]
    assert "cell 3: a table cell cut short: " in found[2] and found[2].endswith("...'")
    assert "image/png" in nb.cells[1].outputs[0].data


def _with_solutions(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The lesson with every exercise solved: its solution inserted just before its check cell."""
    from bureau.course.widgets.exercises import EXERCISES

    cells = []
    for cell in nb.cells:
        found = cell.cell_type == "code" and re.search(r'check\("([0-9a-z-]+)"', cell.source)
        if found:
            cells.append(nbformat.v4.new_code_cell(EXERCISES[found.group(1)].solution))
        cells.append(cell)
    nb.cells = cells
    return nb


def _foreign_roles(scenario: str) -> set[str]:
    """Role names of the other bundled scenarios that ``scenario`` lacks."""
    from bureau.scenario import load_scenario

    others = {r for sid in ["safe-combination", *OTHER_SCENARIOS]
              for r in load_scenario(sid).role_names}
    return others - set(load_scenario(scenario).role_names)


def _default_scenario(path: Path) -> str | None:
    """The ``scenario`` parameter's default in a notebook's parameters cell (``None``: it takes
    no scenario)."""
    nb = nbformat.read(path, as_version=4)
    params = [c.source for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    found = re.search(r'^scenario: str = "([a-z0-9-]+)"', "\n".join(params), re.M)
    return found.group(1) if found else None


BUNDLED = ["safe-combination", *OTHER_SCENARIOS]
CORE_FILES = {le.file for le in _nbtool().COURSE if le.core}
"""The core path's lessons (00-06): the game, played with every bundled case."""
FURTHER_SCENARIO = "ward-seven"
"""The one other case a lesson outside the core path runs with: the one whose roles differ
most from the safe combination's (no detective, no informant)."""
SCENARIO_RUNS = [(p, sid) for p in COURSE_NOTEBOOKS if _default_scenario(p)
                 for sid in BUNDLED if sid != _default_scenario(p)
                 and (p.name in CORE_FILES or sid == FURTHER_SCENARIO
                      or (_default_scenario(p) == FURTHER_SCENARIO and sid == "safe-combination"))]
"""Every lesson of the core path with each bundled scenario but its default (which
``tests/test_lessons_twice.py`` runs); every other lesson and deep dive that takes a
``scenario`` with one other case, ward seven (issue 47: the suite within 30 minutes; a lesson
outside the core path names the safe combination's roles where ward seven has none)."""


def test_every_notebook_that_takes_a_scenario_runs_with_every_other():
    """Issue 34 §7: none is left out (the scenario lessons and the later ones are among them);
    the core path with every other case, the rest with one."""
    takes = {p for p in COURSE_NOTEBOOKS if _default_scenario(p)}
    assert set(SCENARIO_LESSONS + LATER_SCENARIO_LESSONS) <= takes
    assert {p for p, _ in SCENARIO_RUNS} == takes
    for p in takes:
        runs = [s for q, s in SCENARIO_RUNS if q == p]
        assert len(runs) == (len(BUNDLED) - 1 if p.name in CORE_FILES else 1), (p.name, runs)


def test_the_core_path_plays_the_case_of_its_scenario_parameter():
    """Issue 49: lessons 00-06 each take ``scenario`` and open that case; the course table's
    core rows are exactly these lessons."""
    core = {le.file for le in _nbtool().COURSE if le.core}
    assert core == {p.name for p in CORE_LESSONS}
    for path in CORE_LESSONS:
        assert _default_scenario(path), f"{path.name} takes no scenario parameter"
        code = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells
                         if c.cell_type == "code" and "parameters" not in c.metadata.get("tags", []))
        assert re.search(r"\(\[?scenario\b|== scenario\b", code), f"{path.name} ignores scenario"


@pytest.mark.slow
@pytest.mark.parametrize(("path", "scenario"), SCENARIO_RUNS,
                         ids=[f"{p.name}-{s}" for p, s in SCENARIO_RUNS])
def test_lesson_follows_its_scenario_parameter(path: Path, scenario: str, tmp_path: Path):
    """``papermill -p scenario <id>``: the lesson runs, casts that scenario's roles and cards,
    with the shown solutions every check cell says "well done", and nothing it prints names a
    role the scenario lacks (the safe combination's included)."""
    pm = pytest.importorskip("papermill")
    solved = tmp_path / f"solved-{path.name}"
    nbformat.write(_with_solutions(nbformat.read(path, as_version=4)), solved)
    nb = pm.execute_notebook(
        str(solved), str(tmp_path / path.name), kernel_name="python3",
        parameters={**SMALL.get(path.name, {}), "scenario": scenario},
        cwd=str(path.parent), progress_bar=False, execution_timeout=180,
    )
    assert nb.metadata.papermill.exception is None
    from bureau.course.cast import Cast
    from bureau.scenario import load_scenario

    # The cast's legend is the one line that names the safe combination's roles on purpose.
    text = _outputs(nb).replace(Cast.of(load_scenario(scenario)).legend(), "")
    assert '"ename"' not in text and "Traceback" not in text
    assert _nbtool().executed_problems(path.name, nb) == []
    title = load_scenario(scenario).title
    assert title in text, f"the lesson shows the case it runs ({title})"
    # What the cells print (the quiz's widget state is left out: its questions are about the
    # course's worked example, the safe combination, whatever the scenario).
    printed = "\n".join(json.dumps(c.get("outputs", [])) for c in nb.cells
                         if c.cell_type == "code").replace(
        Cast.of(load_scenario(scenario)).legend(), "").lower()
    foreign = sorted(w for w in _foreign_roles(scenario)
                     if re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", printed))
    assert not foreign, f"a {scenario} run names roles it lacks: {foreign}"
    verdicts = re.findall(r'data-ok=\\"(true|false)\\"', text)
    exercises = re.findall(r'check\("', "\n".join(c.source for c in nb.cells))
    assert set(verdicts) == ({"true"} if exercises else set()), verdicts
    if scenario != "safe-combination":
        # Whole words only: card ids and timings are long digit runs that may contain "0427".
        leaked = [w for w in WORKED_EXAMPLE
                  if re.search(rf"(?<![\w.]){re.escape(w)}(?!\w)", text.lower())]
        assert not leaked, f"safe-combination names in a {scenario} run: {leaked}"


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
    assert "## Summary" in md and "Predict" in md
    # Every lesson opens with "Prerequisites · Time · You will be able to…" (issue 21 §3).
    assert "**Prerequisites**" in nb.cells[1].source and "**Time**" in nb.cells[1].source
    assert "**You will be able to…**" in nb.cells[1].source
    if path.name in WITHOUT_CONSOLE:
        assert "make_console(" not in code, f"{path.name}: see WITHOUT_CONSOLE"
    else:
        assert "make_console(" in code, "running all cells shows the console"
    exercises = re.findall(r'check\("([0-9a-z-]+)"', code)
    assert exercises, "at least one exercise with a check cell"
    for ex in exercises:
        assert EXERCISES[ex].solution_html() in md, f"solution of {ex} missing or out of date"
        assert "<details>" in md


@pytest.mark.parametrize("path", COURSE_NOTEBOOKS, ids=lambda p: p.name)
def test_every_prediction_is_recorded_and_revealed(path: Path):
    """Issue 34 §3: each "Predict" prompt is followed by a ``predict(id, bureau, ...)`` box (the
    learner's guess goes to the progress record, which the instructor's page counts) and, after
    the cell that runs it, a ``reveal(id, bureau, ...)`` that shows the guess beside the run."""
    nb = nbformat.read(path, as_version=4)
    prompts = 0
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown" or not re.search(r"\bPredict\b", cell.source):
            continue
        prompts += 1
        box = next(c for c in nb.cells[i + 1:] if c.cell_type == "code")
        found = re.search(r'^predict\("([0-9]{2}[a-z]?-[a-z0-9-]+)", bureau', box.source, re.M)
        assert found, f"{path.name} cell {i}: the prompt's next code cell must be predict(...)"
        item = found.group(1)
        # the id names its own notebook, a deep dive's too: the progress table's row for it
        assert progress.lesson_of(item) == path.name.split("_")[0], item
        later = "\n".join(c.source for c in nb.cells[i + 1:] if c.cell_type == "code")
        assert f'reveal("{item}", bureau' in later, f"{path.name}: {item} is never revealed"
    assert prompts >= 1 or path in DEEP_DIVES


@pytest.mark.parametrize("path", SCENARIO_LESSONS, ids=lambda p: p.name)
def test_scenario_lessons_take_the_scenario_parameter(path: Path):
    nb = nbformat.read(path, as_version=4)
    (params,) = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert 'scenario: str = "safe-combination"' in params.source
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code" and c is not params)
    assert "load_scenario(scenario)" in code and "Cast.of(case)" in code
    assert "cast.story_roles()" in code, "roles by the story's names, not cast.holder & co."
    for part in ("holder", "outsider", "bystander", "witness"):
        assert f"cast.{part}" not in code, f"{path.name} reads cast.{part}: use the story's names"
    for name in WORKED_EXAMPLE + ("detective", "informant"):
        assert f'"{name}"' not in code, f"{path.name} names {name!r}: ask `cast` instead"


def _code_without_magics(nb: nbformat.NotebookNode) -> str:
    cells = [c.source for c in nb.cells if c.cell_type == "code"]
    return "\n".join(ln for c in cells for ln in c.splitlines() if not ln.lstrip().startswith("%"))


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_notebook_imports_are_used(path: Path):
    """Every imported name is used by a cell or by a solution the student is meant to run."""
    from bureau.course.widgets.exercises import EXERCISES

    code = _code_without_magics(nbformat.read(path, as_version=4))
    imported = {
        (alias.asname or alias.name).split(".")[0]
        for node in ast.walk(ast.parse(code)) if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    ids = re.findall(r'check\("([0-9a-z-]+)"', code)  # an unknown id is test_lesson_shape's to report
    solutions = "\n".join(EXERCISES[ex].solution for ex in ids if ex in EXERCISES)
    used = {n.id for n in ast.walk(ast.parse(code + "\n" + solutions)) if isinstance(n, ast.Name)}
    unused = imported - used - KNOWN_UNUSED_IMPORTS.get(path.name, set())
    assert not unused, f"{path.name} imports {sorted(unused)} but never uses them"


def test_lesson_05_takes_the_lab_from_one_module():
    """The lab's modules may be split or renamed: lesson 05 only knows bureau.labs.leakage.lesson."""
    code = _code_without_magics(nbformat.read(NB_DIR / "05_measuring_leakage.ipynb", as_version=4))
    lab = [
        (node.module, alias.name) for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bureau.labs.leakage")
        for alias in node.names
    ]
    assert lab and all(m == "bureau.labs.leakage.lesson" or (m, n) == ("bureau.labs.leakage", "lesson")
                       for m, n in lab), lab
    assert "import bureau.labs.leakage" not in code


def test_stage_notebook_uses_only_the_stage():
    nb = nbformat.read(NB_DIR / "stage.ipynb", as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "make_stage(" in code and "BUREAU_CASE" in code
    for forbidden in ("make_console", "interrogate", "spaces(", ".cards("):
        assert forbidden not in code


# -- words defined before they are used (issue 34 §4) -----------------------------------------------
JARGON = ["bureau", "case", "role", "tenant", "memory X-ray", "saga", "compensation", "cleanup task",
          "float32", "ulp", "AUROC", "random draw", "random baseline", "HMAC",
          "semantic memory", "episodic memory", "procedural memory", "hot-path write",
          "background write", "case file", "mole", "decoy"]
"""Terms a newcomer cannot guess: each has a glossary entry, and its first use in the course is
a definition (bold, as a "Jargon:" note is) or a link to the glossary."""


def _glossary_terms() -> set[str]:
    text = (NB_DIR / "GLOSSARY.md").read_text(encoding="utf-8")
    firsts = [row.split("|")[1] for row in text.splitlines() if row.startswith("| **")]
    return {t.lower() for first in firsts for t in re.findall(r"\*\*([^*]+)\*\*", first)}


def _jargon_problems(lessons: list[tuple[str, list[str]]]) -> list[str]:
    """``lessons``: (name, markdown cell sources) in course order. A term's first use must bold
    it or link it to GLOSSARY.md in the same cell."""
    found = []
    for term in JARGON:
        word = re.compile(rf"(?<![\w-]){re.escape(term)}s?(?![\w-])", re.I)
        first = next(((name, src) for name, cells in lessons for src in cells
                      if word.search(src)), None)
        if first is None:
            continue
        name, src = first
        bold = re.search(rf"\*\*[^*]*(?<![\w-]){re.escape(term)}s?(?![\w-])[^*]*\*\*", src, re.I)
        linked = re.search(rf"\[[^\]]*{re.escape(term)}[^\]]*\]\(GLOSSARY\.md", src, re.I)
        if not (bold or linked):
            found.append(f"{name}: {term!r} is used before it is defined or linked to the glossary")
    return found


def _markdown_of_lessons() -> list[tuple[str, list[str]]]:
    return [(p.name, [c.source for c in nbformat.read(p, as_version=4).cells
                      if c.cell_type == "markdown"
                      and not c.source.startswith(("<!--NAVIGATION-->", "<!--CONTENTS-->"))])
            for p in COURSE_NOTEBOOKS]


def test_jargon_is_in_the_glossary_and_defined_at_first_use():
    terms = _glossary_terms()
    assert not [t for t in JARGON if t.lower() not in terms], "add a glossary entry"
    assert _jargon_problems(_markdown_of_lessons()) == []


def test_the_jargon_check_fails_on_a_term_used_before_its_definition():
    """The planted defect: lesson 05's AUROC note removed (the bare word stays)."""
    lessons = _markdown_of_lessons()
    planted = [(name, [re.sub(r"\*\*AUROC\*\*", "AUROC", src) for src in cells])
               for name, cells in lessons]
    assert _jargon_problems(planted) == [
        "05_measuring_leakage.ipynb: 'AUROC' is used before it is defined or linked to the glossary"]


# -- application questions (issue 34 §3) ------------------------------------------------------------


def _answer_out_of_sight(answer: ast.expr, item: str) -> bool:
    """``answers.of(item, name, …)``: the id the question has, then plain names of the run's
    objects (an expression there would be the giveaway again), with an answer for that id."""
    from bureau.course import answers

    return (isinstance(answer, ast.Call) and isinstance(answer.func, ast.Attribute)
            and isinstance(answer.func.value, ast.Name) and answer.func.value.id == "answers"
            and answer.func.attr == "of" and not answer.keywords and answer.args
            and isinstance(answer.args[0], ast.Constant) and answer.args[0].value == item
            and all(isinstance(a, ast.Name) for a in answer.args[1:])
            and item in answers.items())


def _application_problems(name: str, nb: nbformat.NotebookNode) -> list[str]:
    """A notebook's application questions: at least one; each ``application("NN-…", bureau,
    question, answer=answers.of("NN-…", <the run's objects>))``: the answer is the run's value,
    never a literal (it is checked against what this run produced), and computed out of sight
    by :mod:`bureau.course.answers` under the same id, so the code the learner runs does not
    spell it out (issue 50 §2: ``answer=len(case.cards(detective))`` answered the question); in
    the cell right after the code cell whose output it asks about."""
    found, calls = [], 0
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or "application(" not in cell.source:
            continue
        tree = ast.parse("\n".join(ln for ln in cell.source.splitlines()
                                    if not ln.lstrip().startswith("%")))
        for call in ast.walk(tree):
            if not (isinstance(call, ast.Call) and getattr(call.func, "id", "") == "application"):
                continue
            calls += 1
            item = call.args[0].value if call.args and isinstance(call.args[0], ast.Constant) else ""
            if not str(item).startswith(f"{name[:2]}-"):
                found.append(f"{name} cell {i}: the item must start with {name[:2]}-, not {item!r}")
            answer = next((k.value for k in call.keywords if k.arg == "answer"),
                          call.args[3] if len(call.args) > 3 else None)
            if answer is None or isinstance(answer, ast.Constant):
                found.append(f"{name} cell {i}: the answer must be the run's value, not a literal")
            elif not _answer_out_of_sight(answer, item):
                found.append(f"{name} cell {i}: compute the answer out of sight, as "
                             f"answers.of({item!r}, <the run's objects>)")
            if i == 0 or nb.cells[i - 1].cell_type != "code":
                found.append(f"{name} cell {i}: put the question right after the output it asks "
                             "about")
    if not calls:
        found.append(f"{name}: no application question (application(...), issue 34 §3)")
    return found


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_every_lesson_asks_an_application_question(path: Path):
    """Issue 34 §3: each lesson asks at least one number or reading from its own output,
    checked against the value the learner's run produced. (Deep dives, outside the workshop
    path and without an exercise, are not asked to.)"""
    problems = _application_problems(path.name, nbformat.read(path, as_version=4))
    assert problems == []


def test_the_application_check_fails_on_a_lesson_without_one_or_with_a_literal():
    """The planted defects, on lesson 02: its question removed, or its answer written in."""
    nb = nbformat.read(NB_DIR / "02_interrogate.ipynb", as_version=4)
    assert _application_problems("02_interrogate.ipynb", nb) == []
    (cell,) = [c for c in nb.cells if c.cell_type == "code" and "application(" in c.source]
    source = cell.source
    where = f"02_interrogate.ipynb cell {nb.cells.index(cell)}"
    cell.source = re.sub(r"answer=answers\.of\([^)]*\)", "answer=8.5", source)
    assert _application_problems("02_interrogate.ipynb", nb) == [
        f"{where}: the answer must be the run's value, not a literal"]
    out_of_sight = (f"{where}: compute the answer out of sight, as "
                    "answers.of('02-scopes', <the run's objects>)")
    for giveaway in ("len(answer.trace.searched_scopes)", "scopes_read",
                     'answers.of("02-scopes", answer.trace)', 'answers.of("02-other", answer)'):
        cell.source = re.sub(r"answer=answers\.of\([^)]*\)", f"answer={giveaway}", source)
        assert _application_problems("02_interrogate.ipynb", nb) == [out_of_sight], giveaway
    cell.source = "# the question was here"
    assert _application_problems("02_interrogate.ipynb", nb) == [
        "02_interrogate.ipynb: no application question (application(...), issue 34 §3)"]


# -- lessons that fit one sitting, deep dives beside them (issue 34 §6) ------------------------------
def _sitting_problems(name: str, nb: nbformat.NotebookNode, minutes: int | None) -> list[str]:
    """What keeps a main lesson from fitting one sitting: more prose than the limit (words as
    ``nbtool.py time`` counts them), a time in ``COURSE`` over the limit, or two lists of goals
    (a "You will be able to…" and a "Goals" list that overlap)."""
    nbtool = _nbtool()
    found = []
    words = nbtool.learner_minutes(nb, 0.0)[1]["words"]
    if words > nbtool.MAIN_PROSE_WORDS:
        found.append(f"{name}: {words} words of prose, over {nbtool.MAIN_PROSE_WORDS}: move a "
                     "part to a deep dive")
    if minutes is None or minutes > nbtool.MAIN_MINUTES:
        found.append(f"{name}: {minutes} min in COURSE, over {nbtool.MAIN_MINUTES}")
    head = nb.cells[1].source
    if "**You will be able to…**" not in head or re.search(r"^\*\*Goals\*\*", head, re.M):
        found.append(f"{name}: one list of goals, under \"You will be able to…\"")
    return found


def _minutes_of(name: str) -> int | None:
    return next(le.minutes for le in _nbtool().COURSE if le.file == name)


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_a_main_lesson_fits_one_sitting(path: Path):
    nb = nbformat.read(path, as_version=4)
    assert _sitting_problems(path.name, nb, _minutes_of(path.name)) == []


def test_the_sitting_check_fails_on_a_long_lesson():
    """The planted defects, on lesson 05: 1,300 more words of prose, 35 minutes in the table and
    a second list of goals; each is reported."""
    path = NB_DIR / "05_measuring_leakage.ipynb"
    nb = nbformat.read(path, as_version=4)
    assert _sitting_problems(path.name, nb, _minutes_of(path.name)) == []
    nb.cells.insert(3, nbformat.v4.new_markdown_cell(" ".join(["word"] * 1300)))
    nb.cells[1].source += "\n\n**Goals**\n\n1. one more list"
    found = _sitting_problems(path.name, nb, 35)
    assert len(found) == 3, found
    assert "words of prose, over 1800" in found[0] and "35 min in COURSE, over 30" in found[1]
    assert "one list of goals" in found[2]


@pytest.mark.parametrize("path", DEEP_DIVES, ids=lambda p: p.name)
def test_deep_dive_shape(path: Path):
    """A deep dive is marked as one (file name, title, ``COURSE`` row), opens like a lesson,
    runs on its own (its own parameters, imports and ``Bureau.open()``), keeps every exercise's
    solution beside its check cell, and its lesson ends by pointing to it."""
    from bureau.course.widgets.exercises import EXERCISES

    nbtool = _nbtool()
    assert re.fullmatch(r"\d\d[a-z]_[a-z0-9_]+\.ipynb", path.name)
    row = next(le for le in nbtool.COURSE if le.file == path.name)
    assert row.deep_dive and row.minutes
    nb = nbformat.read(path, as_version=4)
    assert nb.cells[1].source.startswith(f"# {path.name.split('_')[0]} · Deep dive: ")
    assert nb.cells[1].source.splitlines()[0] == f"# {row.title}"
    assert nb.cells[0].source.startswith(nbtool.NAV_OPEN)
    assert nb.cells[-1].source.startswith(nbtool.NAV_OPEN)
    for part in ("**Prerequisites**", "**Time**", "**You will be able to…**", "deep dive"):
        assert part in nb.cells[1].source, part
    md = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "## Summary" in md
    assert "Bureau.open()" in code and "from bureau import Bureau" in code
    for ex in re.findall(r'check\("([0-9a-z-]+)"', code):
        assert EXERCISES[ex].solution_html() in md, f"solution of {ex} missing or out of date"
    parent = NB_DIR / f"{path.name[:2]}_{nbtool.parent_of(row, nbtool.COURSE).file[3:]}"
    assert parent.exists()
    assert f"]({parent.name})" in nb.cells[0].source, "its navigation leads back to its lesson"
    summary = next(c.source for c in nbformat.read(parent, as_version=4).cells
                   if c.source.startswith("## Summary"))
    assert f"]({path.name})" in summary and "**Deep dive**" in summary, \
        f"{parent.name}'s summary must point to its deep dive"
