"""Each widget picture on the site is of its own lesson's run (issue 50 §1).

The pictures come from the browser tests (``tests/ui``), taken right after *Run All*, with the
text each shows written beside it (``site/widgets/<picture>.txt``); the site build executes
every lesson again (``build/site/executed``). Here every picture is compared with the run of the
lesson it stands in (``tools/sitebuild.py``'s ``picture_run_problems``, which also fails the
build) and, planted in every other lesson that shows the same widget, must fail: the check tells
lesson 00's console from lesson 01's and 02's, though they show one case and share most lines.
No browser: the widget state papermill saved is read directly.
"""

from __future__ import annotations

import dataclasses

import nbformat
import pytest

from tests.site.conftest import SITE_HTML
from tests.site.test_site_pages import sitebuild

pytestmark = pytest.mark.ui  # the site stage of tests/run_all.sh, after the build

EXECUTED = SITE_HTML.parent / "executed"


@pytest.fixture(scope="module")
def runs() -> dict[str, nbformat.NotebookNode]:
    if not EXECUTED.is_dir():
        pytest.fail(f"no executed lessons at {EXECUTED}: run `make site` first")
    return {p.name: nbformat.read(p, as_version=4) for p in sitebuild.lessons(EXECUTED)}


@pytest.mark.parametrize("picture", sitebuild.load_pictures(), ids=lambda p: p.file)
def test_a_picture_is_of_its_own_lessons_run_and_of_no_other(picture, runs):
    assert sitebuild.picture_run_problems(picture, runs) == []
    others = [name for name, nb in runs.items()
              if name != picture.lesson and sitebuild.run_text(nb, picture.widget)]
    for other in others:  # the same picture, claimed by another lesson
        planted = dataclasses.replace(picture, lesson=other)
        found = sitebuild.picture_run_problems(planted, runs)
        assert any(f"closer to {picture.lesson}'s run" in p for p in found), (other, found)
