"""Keep the committed notebooks to the outputs policy.

Policy (notebooks/README.md): a committed notebook keeps outputs **only** in cells marked
``# NBVAL_CHECK_OUTPUT`` (deterministic text, with their execution counts, so that
``pytest --nbval-lax`` compares them); every other cell is stored without outputs or count.
Widget state, papermill metadata and per-cell execution metadata are dropped; the kernelspec is
``python3``.

    python tools/nbtool.py execute notebooks/0*.ipynb   # run in a temporary data dir, then clean
    python tools/nbtool.py clean notebooks/*.ipynb      # clean only
    python tools/nbtool.py check notebooks/*.ipynb      # exit 1 if a notebook breaks the policy
    python tools/nbtool.py nav [--check] [--only F]     # navigation and contents from COURSE
    python tools/nbtool.py time notebooks/0*.ipynb      # a learner's minutes per lesson

Navigation (the "previous / next" cells that open and close every lesson), the contents table in
lesson 00 and the lesson table in notebooks/README.md are generated from one table, ``COURSE``:
adding a lesson is a notebook plus one row there, then ``nbtool.py nav``. ``tests/test_nbtool.py``
fails while any of them is out of date with the table.
"""

from __future__ import annotations

import argparse
import html
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import nbformat

CHECK = "# NBVAL_CHECK_OUTPUT"
CHECK_TAG = "nbval-check-output"
"""nbval's cell tag for the same mark (issue 50 §6: a tag, not a comment in the learner's code)."""
KERNELSPEC = {"display_name": "Python 3 (bureau)", "language": "python", "name": "python3"}
NB_DIR = Path(__file__).resolve().parent.parent / "notebooks"


class Lesson(NamedTuple):
    """One row of the course table. A NamedTuple, not a dataclass: the tests load this script
    by path, without registering it in ``sys.modules``, which dataclasses need."""

    file: str
    title: str
    """Shown in the navigation cells and in the contents; starts with the lesson's number."""
    summary: str
    """One line: what the lesson teaches (the contents and notebooks/README.md show it)."""
    minutes: int | None = None
    """A learner's time for the lesson, from :func:`learner_minutes` (reading, what it shows,
    the exercise and the quiz, and ``run_s``); every header and table shows this number.
    ``None`` until someone has measured the lesson."""
    run_s: int = 0
    """The lesson's cells' run time, seconds, measured on a 2-core machine (``nbtool.py time``):
    with the notebook itself it gives ``minutes`` exactly (``stale_times`` checks it)."""
    core: bool = False
    """A lesson of the **core path** (the workshop's, 00-06: the game). The rest goes further:
    other lessons and every deep dive, outside the workshop path (issue 49 §2)."""
    deep_dive: bool = False
    """A **deep dive** (``NNb_<topic>.ipynb``, titled "NNb · Deep dive: …"): the second half of
    lesson NN, outside the workshop path. Navigation links it from and back to its lesson, the
    tables mark it, and no lesson count or course total includes it (issue 34 §6: a lesson's
    main path fits one sitting)."""


COURSE: list[Lesson] = [
    Lesson("00_welcome.ipynb", "00 · Welcome to the Bureau: your first case",
           "check the environment; read a case file (goal, rules, moves); who can read what",
           22, run_s=12, core=True),
    Lesson("01_whisper.ipynb", "01 · Whisper: a private note, and a first move",
           "write a private card; what each role can read; why nobody writes the board", 20,
           run_s=12, core=True),
    Lesson("02_interrogate.ipynb", "02 · Interrogate: why the detective does not know",
           "embeddings and cosine scores; the memory X-ray; known is not true", 22, run_s=10, core=True),
    Lesson("03_publish.ipynb", "03 · Publish: solve the case, and survive a crash",
           "a sourced copy solves the case; the publish saga, a crash and `case.recover()`",
           21, run_s=9, core=True),
    Lesson("04_attacks.ipynb", "04 · The mole strikes",
           "a mole's attacks fail at the boundary, with the reason; a decoy published loses the "
           "case: publish by source", 22, run_s=13, core=True),
    Lesson("04b_attack_families.ipynb",
           "04b · Deep dive: every attack family, side channels included",
           "tampering with every name and id; timing a guess against chance; every attack, its "
           "mechanism and its actor", 22, run_s=21, deep_dive=True),
    Lesson("05_measuring_leakage.ipynb",
           "05 · Measuring leakage: how often would a shared pool have lost?",
           "the game under a shared pool, beside chance; MAGPIE: the leak rate by hand, the ROC "
           "of relevance, what a threshold costs", 20, run_s=32, core=True),
    Lesson("05b_agentsocialbench.ipynb",
           "05b · Deep dive: AgentSocialBench, where relevance is a hint",
           "a second benchmark: what a stronger hint changes, and what it does not; what "
           "publishing abstractions costs in recall", 13, run_s=48, deep_dive=True),
    Lesson("05c_gatemem.ipynb",
           "05c · Deep dive: GateMem, many principals sharing one memory",
           "episodes of a multi-party benchmark as cases with records, a policy file and "
           "forget; utility, access violations and forgetting failures at the boundary, beside "
           "its leaderboard; which rule costs which utility", 24,
           run_s=21, deep_dive=True),
    Lesson("06_llm_voice.ipynb", "06 · The roles get a voice",
           "a model phrases only what the bureau decided; injections aimed at it fail, measured "
           "against a shared pool; the core path in four lines", 23, run_s=8,
           core=True),
    Lesson("06b_injection_in_the_wild.ipynb",
           "06b · Deep dive: a tool-calling agent and attacks nobody here wrote",
           "the attacker's own agent driving its handle's tools; AgentDojo's attack templates; "
           "published attack success rates, read in the right column", 8, run_s=25, deep_dive=True),
    Lesson("07_purpose_bound.ipynb",
           "07 · Going further: purpose-bound memory: withhold, abstract or reveal",
           "who asks, for whom and why: a policy decides per card, with an audit trail, grants "
           "and a disclosure budget; policy e on MAGPIE", 28, run_s=17),
    Lesson("07b_forgetting.ipynb", "07b · Deep dive: revoked, forgotten, and gone from the disk",
           "revocation on every read path; forgetting that reaches the disk when sealed", 16,
           run_s=26, deep_dive=True),
    Lesson("08_beyond_the_board.ipynb",
           "08 · Going further: trust tiers and memory poisoning",
           "untrusted tool output that never reaches long-term memory, promotion rules, the "
           "poisoning lab", 28, run_s=33),
    Lesson("08b_task_scopes.ipynb", "08b · Deep dive: task scopes, one shared notebook",
           "a three-role task scope: invitations, one writer's loop, two processes editing one "
           "key and converging, a removed member", 10, run_s=25, deep_dive=True),
    Lesson("09_closing.ipynb", "09 · Going further: what to take home",
           "a design checklist, how peer memory libraries scope memory and where their "
           "isolation bugs came from, an agent loop on a handle, a namespace store ported onto "
           "a handle", 28, run_s=17),
]
"""The course, in order: the one table navigation, contents, the kit's times and the site's
index are generated from. A deep dive sits right after its lesson."""
LESSON_GLOB = "[0-9][0-9]_*.ipynb"
"""The workshop's lessons (``05_measuring_leakage.ipynb``)."""
DEEP_DIVE_GLOB = "[0-9][0-9][a-z]_*.ipynb"
"""The deep dives (``05b_agentsocialbench.ipynb``): run, tested and published as lessons are."""
MAIN_PROSE_WORDS, MAIN_MINUTES = 1800, 30
"""Issue 34 §6: a lesson fits one sitting: at most this many words of prose and this many
learner-minutes; what does not fit goes to a deep dive."""
CORE_MINUTES, CORE_LESSON_MINUTES = 150, 25
"""Issue 49 §3: the core path (the workshop's) takes at most 150 minutes, each of its lessons at
most 25, by :func:`learner_minutes`."""


def course_notebooks(nb_dir: Path = NB_DIR) -> list[Path]:
    """Every lesson and deep dive notebook in ``nb_dir``, in course order (``05_`` sorts before
    ``05b_``), for whatever runs, tests or publishes them all."""
    return sorted([*nb_dir.glob(LESSON_GLOB), *nb_dir.glob(DEEP_DIVE_GLOB)])


def main_path(course: list[Lesson]) -> list[Lesson]:
    """The numbered lessons, without the deep dives: the chain navigation follows."""
    return [le for le in course if not le.deep_dive]


def core_path(course: list[Lesson]) -> list[Lesson]:
    """The workshop's path: the core lessons (the game)."""
    return [le for le in course if le.core]


def parent_of(dive: Lesson, course: list[Lesson]) -> Lesson:
    """The lesson a deep dive continues: the lesson row of its number."""
    return next(le for le in course if not le.deep_dive and le.file[:2] == dive.file[:2])
STAGE = ("stage.ipynb", "the projector view alone, for Voilà (`make stage`); set `BUREAU_CASE` "
         "to pin a case")
NAV_OPEN, NAV_CLOSE = "<!--NAVIGATION-->", "<!--/NAVIGATION-->"
TOC_OPEN, TOC_CLOSE = "<!--CONTENTS-->", "<!--/CONTENTS-->"
TIMES_OPEN, TIMES_CLOSE = "<!--TIMES-->", "<!--/TIMES-->"
COURSE_OPEN, COURSE_CLOSE = "<!--COURSE-->", "<!--/COURSE-->"
"""The project README's course table, generated from ``COURSE`` like the rest."""
"""The instructor kit's table of lesson times, generated from ``COURSE`` like the contents."""
TIME_LINE = re.compile(r"(\*\*Time\*\* · about )(\d+)( min)")
"""A lesson header's time; its number comes from ``COURSE`` (issue 34 §2: one source)."""
CONTENTS_LINK = "[Contents](00_welcome.ipynb#Contents) · [Glossary](GLOSSARY.md)"


def is_checked(cell: nbformat.NotebookNode) -> bool:
    tags = cell.get("metadata", {}).get("tags", [])
    return cell.cell_type == "code" and (CHECK_TAG in tags or CHECK in cell.source)


def clean(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}}
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags")
        cell.metadata = {"tags": tags} if tags else {}
        cell.pop("id", None)
        if cell.cell_type != "code":
            cell.pop("outputs", None)
            cell.pop("execution_count", None)
            continue
        if not is_checked(cell):
            cell.outputs = []
            cell.execution_count = None
    nb.nbformat, nb.nbformat_minor = 4, 4
    return nb


def problems(path: Path, nb: nbformat.NotebookNode) -> list[str]:
    found = []
    if nb.metadata.get("kernelspec", {}).get("name") != "python3":
        found.append(f"{path.name}: kernelspec must be python3")
    if "widgets" in nb.metadata or "papermill" in nb.metadata:
        found.append(f"{path.name}: notebook metadata must not hold widget state or papermill data")
    for i, cell in enumerate(nb.cells):
        if "id" in cell and (nb.nbformat, nb.nbformat_minor) < (4, 5):
            found.append(f"{path.name} cell {i}: a cell id is invalid in nbformat 4.4 (Jupyter "
                         "warns on every open): run `python tools/nbtool.py clean` on it")
        if cell.cell_type != "code":
            continue
        if is_checked(cell):
            if cell.execution_count is None or not cell.outputs:
                found.append(f"{path.name} cell {i}: checked cell needs its output and count")
            if any(o.get("output_type") == "error" for o in cell.outputs):
                found.append(f"{path.name} cell {i}: checked cell stores an error")
        elif cell.outputs or cell.execution_count is not None:
            found.append(f"{path.name} cell {i}: unchecked cell must be stored without output")
    text = path.read_text(encoding="utf-8")
    for marker in (str(Path.home()), "/tmp/", "/work/", "/root/", "/home/"):
        if marker in text:
            found.append(f"{path.name}: contains an absolute path ({marker})")
    return found


NOT_SHOWN = "Not shown in this run"
"""What a demo's sentence opens with when its effect did not occur (``bureau.course.effects``;
repeated here because this script runs without the package on its path)."""
TABLE_CELL = re.compile(r"<t[dh][^>]*>(.*?)</t[dh]>", re.S)
BARE_FIGURE = re.compile(r"<(?:Figure size [0-9.]+x[0-9.]+|matplotlib\.\w+[.\w]* object)")


def executed_problems(name: str, nb: nbformat.NotebookNode) -> list[str]:
    """What an executed lesson's outputs must not hold: a figure shown as text (no image: a
    bare matplotlib Figure, ``<Figure size 950x460 with 1 Axes>``) or a demo saying its effect
    did not occur in this run (issue 34 §1), or a table cell cut short ("..." from pandas'
    column width, "…" from a snippet; issue 34 §5)."""
    found = []
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            data = out.get("data", {})
            texts = [out.get("text", ""), data.get("text/plain", ""), data.get("text/html", "")]
            text = "\n".join(t if isinstance(t, str) else "".join(t) for t in texts)
            if BARE_FIGURE.search(text) and "image/png" not in data:
                found.append(f"{name} cell {i}: a figure without an image: "
                             f"{BARE_FIGURE.search(text).group(0)}...")
            table = data.get("text/html", "")
            table = table if isinstance(table, str) else "".join(table)
            for cell_html in TABLE_CELL.findall(table) if "<table" in table else []:
                seen = html.unescape(re.sub(r"<[^>]+>", "", cell_html)).strip()
                if seen.endswith(("...", "…")):
                    found.append(f"{name} cell {i}: a table cell cut short: {seen[-60:]!r}")
            if NOT_SHOWN in text:
                line = next(ln for ln in text.splitlines() if NOT_SHOWN in ln)
                found.append(f"{name} cell {i}: a demo without its effect: {line[:160]}")
    return found


def run_lessons(paths: list[Path], timeout: int) -> Iterator[tuple[Path, nbformat.NotebookNode, float]]:
    """Run each notebook top to bottom in one temporary data directory (the learner's own is
    never touched, and nothing is left behind); yield it executed, with its run seconds."""
    import time

    from nbclient import NotebookClient

    data = Path(tempfile.mkdtemp(prefix="bureau-nbtool-"))
    old = os.environ.get("BUREAU_DATA_DIR")
    os.environ["BUREAU_DATA_DIR"] = str(data)
    try:
        for path in paths:
            nb = nbformat.read(path, as_version=4)
            start = time.perf_counter()
            NotebookClient(nb, timeout=timeout, kernel_name="python3",
                           resources={"metadata": {"path": str(path.parent)}}).execute()
            yield path, nb, time.perf_counter() - start
    finally:
        if old is None:
            os.environ.pop("BUREAU_DATA_DIR", None)
        else:
            os.environ["BUREAU_DATA_DIR"] = old
        shutil.rmtree(data, ignore_errors=True)


def execute(paths: list[Path], timeout: int = 300) -> None:
    for path, nb, _ in run_lessons(paths, timeout):
        nbformat.write(clean(nb), path)
        print(f"executed and cleaned {path}")


# -- a learner's time per lesson: tools/lesson_time.py ------------------------------------------
sys.path.insert(0, str(Path(__file__).resolve().parent))
from lesson_time import (  # noqa: E402, F401  (a sibling script; re-exported for the tests)
    EXERCISE_MIN,
    PROSE_WPM,
    QUIZ_MIN,
    SHOWN_MIN,
    learner_minutes,
    shown,
    time_rule,
)


def stale_times(nb_dir: Path = NB_DIR) -> list[str]:
    """Lessons whose ``COURSE`` minutes the notebook as it stands no longer gives (issue 34 §2,
    49 §3: one source for a lesson's time): recomputed here from the notebook and the row's
    measured ``run_s``, without a kernel."""
    stale = []
    for le in present(nb_dir):
        if le.minutes is None:
            continue
        nb = nbformat.read(nb_dir / le.file, as_version=4)
        got = learner_minutes(nb, le.run_s)[0]
        if got != le.minutes:
            stale.append(f"{le.file}: COURSE says {le.minutes} min, the notebook gives {got} "
                         "(run `python tools/nbtool.py time` on it and update its row)")
    return stale


def time_lessons(paths: list[Path], timeout: int = 600) -> list[tuple[str, int, dict]]:
    """Run each lesson in a temporary data directory (nothing is written back) and estimate a
    learner's minutes; the numbers go into ``COURSE`` by hand."""
    rows = []
    for path, nb, seconds in run_lessons(paths, timeout):
        minutes, parts = learner_minutes(nb, seconds)
        rows.append((path.name, minutes, {**parts, "run seconds": seconds}))
        print(f"{path.name}: {minutes} min  " + ", ".join(
            f"{k} {v:.1f}" for k, v in rows[-1][2].items()), flush=True)
    return rows


# -- navigation and contents, generated from COURSE ----------------------------------------------
def present(nb_dir: Path = NB_DIR) -> list[Lesson]:
    """The rows of ``COURSE`` whose notebook exists: a row may land before its lesson (another
    branch writes it); until then no navigation or contents links to it."""
    return [le for le in COURSE if (nb_dir / le.file).exists()]


def nav_cell(i: int, course: list[Lesson] | None = None) -> str:
    """The navigation cell of lesson ``i`` of ``course`` (default: every row of ``COURSE``):
    previous lesson, contents, next lesson."""
    course = COURSE if course is None else course
    here, lessons = course[i], main_path(course)
    if here.deep_dive:  # back to its lesson; onward to the lesson after it
        parent = parent_of(here, course)
        j = lessons.index(parent)
        before, after = parent, lessons[j + 1] if j + 1 < len(lessons) else None
    else:
        j = lessons.index(here)
        before = lessons[j - 1] if j > 0 else None
        after = lessons[j + 1] if j + 1 < len(lessons) else None
    prev = f"[◀ {before.title}]({before.file})" if before else "◀ (start)"
    nxt = f"[{after.title} ▶]({after.file})" if after else "(end) ▶"
    return f"{NAV_OPEN}\n{prev} | {CONTENTS_LINK} | {nxt}\n{NAV_CLOSE}"


def _minutes(le: Lesson) -> str:
    return f"{le.minutes} min" if le.minutes else "not yet timed"


DEEP_DIVE_MARK = "**Deep dive**: "
"""How the contents, README and kit tables mark a deep dive's row."""


def _summary(le: Lesson) -> str:
    return DEEP_DIVE_MARK + le.summary if le.deep_dive else le.summary


def _total(lessons: list[Lesson]) -> str:
    total = sum(le.minutes or 0 for le in lessons)
    return f"{total // 60} h {total % 60:02d} min"


def _track(le: Lesson) -> str:
    """Which track a row belongs to: the core path (the workshop's), or going further."""
    return "core path" if le.core else "going further"


def contents_cell(course: list[Lesson] | None = None) -> str:
    """Lesson 00's contents, the course map with each lesson's time (its ``## Contents`` heading
    is the target of every nav link): the core path first, then what goes further."""
    course = COURSE if course is None else course
    core, further = core_path(course), [le for le in course if not le.core]

    def rows(lessons: list[Lesson]) -> str:
        return "\n".join(f"| [{le.title}]({le.file}) | {_summary(le)} | {_minutes(le)} |"
                          for le in lessons)

    head = "| lesson | you will learn | time |\n|---|---|---|\n"
    return (
        f"{TOC_OPEN}\n## Contents\n\n**The core path**: the game, and the workshop's path, "
        f"{_total(core)} in all.\n\n{head}{rows(core)}\n\n**Going further**: lessons and deep "
        f"dives for whoever wants more, outside the workshop path ({_total(further)} in "
        f"all; none of the core lessons needs them).\n\n{head}{rows(further)}\n\n"
        f"{time_rule()} The projector view for a classroom is `notebooks/{STAGE[0]}` "
        f"(`make stage` serves it).\n{TOC_CLOSE}"
    )


def readme_table(course: list[Lesson] | None = None) -> str:
    """The lesson table of notebooks/README.md, between the contents markers."""
    course = COURSE if course is None else course
    rows = [f"| [`{le.file}`]({le.file}) | {_track(le)} | {_summary(le)} | {_minutes(le)} |"
            for le in course]
    rows.append(f"| [`{STAGE[0]}`]({STAGE[0]}) | classroom | {STAGE[1]} | |")
    return (f"{TOC_OPEN}\n| notebook | track | what it teaches | time |\n|---|---|---|---|\n"
            + "\n".join(rows) + f"\n\nThe core path takes {_total(core_path(course))}. "
            f"{time_rule()}\n{TOC_CLOSE}")


def kit_table(course: list[Lesson] | None = None) -> str:
    """The instructor kit's table: each lesson's minutes, the same number its header and the
    lessons table show; the workshop's path is the core path."""
    course = present() if course is None else course
    rows = "\n".join(f"| [{le.title}]({le.file}) | {_track(le)} | {_minutes(le)} |"
                      for le in course)
    core = core_path(course)
    return (f"{TIMES_OPEN}\n| lesson | track | a learner's time |\n|---|---|---|\n{rows}\n"
            f"| **the workshop: the {len(core)} lessons of the core path** | | "
            f"**{_total(core)}** |\n\n{time_rule()}\n{TIMES_CLOSE}")


def front_table(course: list[Lesson] | None = None) -> str:
    """The project README's course table: the core path, each lesson's time, then what goes
    further (issue 49 §3, §5: the front door states the times the lessons do)."""
    course = present() if course is None else course
    core = core_path(course)
    rows = [f"| [`{Path(le.file).stem}`](notebooks/{le.file}) | {le.summary} | {_minutes(le)} |"
            for le in core]
    further = ", ".join(f"[`{Path(le.file).stem}`](notebooks/{le.file})"
                        for le in course if not le.core)
    return (f"{COURSE_OPEN}\n**The core path**, the game and the workshop ({_total(core)}):\n\n"
            "| lesson | what you do | time |\n|---|---|---|\n" + "\n".join(rows) +
            f"\n\n**Going further**, for whoever wants more: {further}.\n{COURSE_CLOSE}")


def _sync_block(path: Path, opened: str, closed: str, block: str, write: bool,
                stale: list[str], broken: list[str], what: str) -> None:
    """Replace the text between ``opened`` and ``closed`` in ``path`` with ``block`` (``what``:
    what the block holds, for the reports)."""
    if not path.exists():
        return
    text = path.read_text(encoding="utf-8")
    found = re.search(re.escape(opened) + r".*?" + re.escape(closed), text, re.S)
    if found is None:
        broken.append(f"{path.name}: no {opened} … {closed} block for {what}")
    elif found.group(0) != block:
        stale.append(f"{path.name}: {what} out of date with COURSE")
        if write:
            path.write_text(text[: found.start()] + block + text[found.end():], encoding="utf-8")


def _set_time(nb: nbformat.NotebookNode, lesson: Lesson) -> None:
    """Write ``COURSE``'s minutes into the header's "**Time** · about N min"."""
    if lesson.minutes and len(nb.cells) > 1:
        nb.cells[1].source = TIME_LINE.sub(rf"\g<1>{lesson.minutes}\g<3>", nb.cells[1].source, 1)


def _set_nav(nb: nbformat.NotebookNode, i: int, course: list[Lesson]) -> None:
    for at in (0, -1):
        if not (nb.cells and nb.cells[at].source.startswith(NAV_OPEN)):
            nb.cells.insert(0 if at == 0 else len(nb.cells), nbformat.v4.new_markdown_cell(""))
        nb.cells[at].source = nav_cell(i, course)


def _toc_block(text: str) -> re.Match[str] | None:
    return re.search(re.escape(TOC_OPEN) + r".*?" + re.escape(TOC_CLOSE), text, re.S)


def nav(nb_dir: Path = NB_DIR, write: bool = True,
        only: set[str] | None = None) -> tuple[list[str], list[str]]:
    """Bring nav cells, lesson 00's contents and the README table in line with ``COURSE``.

    Rows whose notebook does not exist yet are left out of every link and table (see
    :func:`present`). ``only``: rewrite just these notebook files (and not the README), e.g. the
    lessons one engineer owns; the rest is still checked and reported.

    Returns ``(stale, broken)``: what was (with ``write=False``: would be) rewritten, and what no
    rewrite can fix (a numbered notebook missing from the table, a README without the markers),
    so a new lesson cannot be forgotten in the table.
    """
    stale: list[str] = []
    broken: list[str] = []
    listed = [le.file for le in COURSE]
    for path in course_notebooks(nb_dir):
        if path.name not in listed:
            broken.append(f"{path.name}: not in COURSE (tools/nbtool.py): add a row for it")
    course = present(nb_dir)
    for i, lesson in enumerate(course):
        path = nb_dir / lesson.file
        nb = nbformat.read(path, as_version=4)
        before = [c.source for c in nb.cells]
        _set_nav(nb, i, course)
        _set_time(nb, lesson)
        if i == 0 and not lesson.deep_dive:
            toc = [c for c in nb.cells if c.cell_type == "markdown" and c.source.startswith(TOC_OPEN)]
            if not toc:
                nb.cells.insert(len(nb.cells) - 1, nbformat.v4.new_markdown_cell(""))
                toc = [nb.cells[-2]]
            toc[0].source = contents_cell(course)
        if [c.source for c in nb.cells] != before:
            stale.append(f"{lesson.file}: navigation, contents or time out of date with COURSE")
            if write and (only is None or lesson.file in only):
                nbformat.write(clean(nb), path)
    readme = nb_dir / "README.md"
    text = readme.read_text(encoding="utf-8")
    block = _toc_block(text)
    if block is None:
        broken.append(f"{readme.name}: no {TOC_OPEN} … {TOC_CLOSE} block for the lesson table")
    elif block.group(0) != readme_table(course):
        stale.append(f"{readme.name}: lesson table out of date with COURSE")
        if write and only is None:
            new = text[: block.start()] + readme_table(course) + text[block.end():]
            readme.write_text(new, encoding="utf-8")
    write_docs = write and only is None
    _sync_block(nb_dir / "INSTRUCTOR.md", TIMES_OPEN, TIMES_CLOSE, kit_table(course), write_docs,
                stale, broken, "lesson times")
    if nb_dir == NB_DIR:  # the project README (a copied course folder has none beside it)
        _sync_block(NB_DIR.parent / "README.md", COURSE_OPEN, COURSE_CLOSE, front_table(course),
                    write_docs, stale, broken, "the course table")
    return stale, broken


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("command", choices=["execute", "clean", "check", "nav", "time"])
    ap.add_argument("paths", nargs="*", type=Path,
                    help="notebooks (execute, clean, check); the notebooks folder (nav)")
    ap.add_argument("--check", action="store_true",
                    help="nav: only report what is out of date (exit 1 if anything is)")
    ap.add_argument("--only", action="append", metavar="FILE",
                    help="nav: rewrite only this lesson (repeatable; the README is left alone)")
    args = ap.parse_intermixed_args(argv)  # `nav --check DIR` as well as `nav DIR --check`
    if args.command == "nav":
        stale, broken = nav(args.paths[0] if args.paths else NB_DIR, write=not args.check,
                            only=set(args.only) if args.only else None)
        for p in stale:
            print(p if args.check else f"rewrote: {p}", file=sys.stderr if args.check else sys.stdout)
        for p in broken:
            print(p, file=sys.stderr)
        return 1 if broken or (args.check and stale) else 0
    if not args.paths:
        ap.error(f"{args.command} needs at least one notebook path")
    if args.command == "time":
        time_lessons(args.paths)
        return 0
    if args.command == "execute":
        execute(args.paths)
    elif args.command == "clean":
        for path in args.paths:
            nbformat.write(clean(nbformat.read(path, as_version=4)), path)
    found = [p for path in args.paths for p in problems(path, nbformat.read(path, as_version=4))]
    for p in found:
        print(p, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
