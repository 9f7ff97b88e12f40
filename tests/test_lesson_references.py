"""Every path and lesson link a lesson's prose names exists (issue 21 §1).

A learner who follows "see `bureau/attacks.py`" to a file that moved, or a "Back to 04 · …" link
to a lesson renamed since, loses trust in the rest of the page. This reads every markdown cell of
every lesson and fails on a repository path that does not exist, on a link to a notebook that
does not exist, and on a link whose text names a lesson ("04 · Attacks") other than the lesson
it points to.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
PATH = re.compile(r"`((?:bureau|tests|data|scenarios|notebooks|tools|\.ci)/[A-Za-z0-9_./-]+)`")
LINK = re.compile(r"\[([^\]]+)\]\(([^)\s:]+?\.(?:ipynb|md))(#[^)]*)?\)")
NUMBERED = re.compile(r"^(\d\d) · (.+)$")


def _markdown(nb: Path) -> list[tuple[int, str]]:
    cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
    return [(i, "".join(c["source"])) for i, c in enumerate(cells) if c["cell_type"] == "markdown"]


def _title(nb: Path) -> str:
    for _, text in _markdown(nb):
        for line in text.splitlines():
            if line.startswith("# "):
                return line[2:].strip()
    return ""


def test_there_are_lessons_to_read():
    assert len([n for n in NOTEBOOKS if re.match(r"\d\d_", n.name)]) >= 9


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_every_path_a_lesson_names_exists(nb):
    missing = [(i, m) for i, text in _markdown(nb) for m in PATH.findall(text)
               if not (REPO / m.rstrip("/.")).exists()]
    assert not missing, f"{nb.name}: cells name paths that do not exist: {missing}"


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_every_lesson_link_points_to_the_lesson_it_names(nb):
    wrong = []
    for i, text in _markdown(nb):
        for label, target, _ in LINK.findall(text):
            path = nb.parent / target
            if not path.exists():
                wrong.append((i, target, "no such file"))
                continue
            if path.suffix != ".ipynb":
                continue
            named = NUMBERED.match(label.strip("◀▶ ").strip())
            if named and not _title(path).startswith(f"{named[1]} · {named[2]}"):
                wrong.append((i, label, f"points to {_title(path)!r}"))
    assert not wrong, f"{nb.name}: {wrong}"
