"""The rendered course site in a real browser: figures and widget pictures load, nothing leaks.

Three pages are opened from the built site (``make site``) over http on 127.0.0.1: lesson 02
(the X-ray: widget pictures and a figure), lesson 05 (the leak-rate figures) and a reference page
(the instructor kit when it exists, else the glossary). On each: every image has loaded
(``naturalWidth > 0``), the expected figures and widget pictures are there, the page asked for
nothing outside 127.0.0.1 (every other request is aborted and reported), and its HTML holds no
machine path, key or token (the patterns of ``tools/sitebuild.py``).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tests.site.conftest import SITE_HTML

pytest.importorskip("playwright", reason="Playwright is not installed (pip install -e '.[ui]')")

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("sitebuild", REPO / "tools" / "sitebuild.py")
sitebuild = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("sitebuild", sitebuild)
_spec.loader.exec_module(sitebuild)

pytestmark = pytest.mark.ui

IMAGES = """() => Array.from(document.images).map(img => ({
  src: img.getAttribute('src'), complete: img.complete, width: img.naturalWidth,
  widget: !!img.closest('.bureau-widget-picture'), output: !!img.closest('.cell_output'),
}))"""


def _reference_page() -> str:
    instructor = sitebuild.NOTEBOOKS / "INSTRUCTOR.md"
    return "lessons/INSTRUCTOR.html" if instructor.is_file() else "lessons/GLOSSARY.html"


def read_page(page, url: str, path: str) -> tuple[list[dict], str, list[str]]:
    """Open one page with every request off 127.0.0.1 aborted; (images, html, remote urls)."""
    remote: list[str] = []

    def only_local(route) -> None:
        if route.request.url.startswith(url + "/") or route.request.url.startswith("data:"):
            route.continue_()
        else:
            remote.append(route.request.url)
            route.abort()

    page.route("**/*", only_local)
    response = page.goto(f"{url}/{path}", wait_until="load")
    assert response is not None and response.ok, f"{path}: HTTP {response and response.status}"
    page.wait_for_load_state("networkidle")
    images = page.evaluate(IMAGES)
    return images, page.content(), remote


def assert_clean(path: str, images: list[dict], html: str, remote: list[str]) -> None:
    broken = [i["src"] for i in images if not (i["complete"] and i["width"] > 0)]
    assert not broken, f"{path}: images that did not load: {broken}"
    assert not remote, f"{path}: the page asked the network for {remote}"
    for pattern, what in ((sitebuild.MACHINE_PATH, "machine path"),
                          (sitebuild.SECRET, "key or token")):
        hits = [m.group(0)[:80] for m in pattern.finditer(html)]
        assert not hits, f"{path}: {what} in the page: {hits}"


@pytest.mark.parametrize("path, widgets, figures", [
    ("lessons/02_interrogate.html", 2, 1),  # the console and the X-ray, pictured; a figure
    ("lessons/05_measuring_leakage.html", 0, 2),  # the ROC and leak-rate figures
])
def test_lesson_pages_show_figures_and_widget_pictures(page, site_url, screenshot_dir, path,
                                                       widgets, figures):
    images, html, remote = read_page(page, site_url, path)
    assert_clean(path, images, html, remote)
    pictured = [i for i in images if i["widget"]]
    drawn = [i for i in images if i["output"] and not i["widget"]]
    assert len(pictured) >= widgets, f"{path}: {len(pictured)} widget pictures, want {widgets}"
    assert len(drawn) >= figures, f"{path}: {len(drawn)} output figures, want {figures}"
    if widgets:
        assert "Widget, pictured." in html
    # The executed run's outputs are on the page, not only the code.
    assert page.locator(".cell_output").count() > 5
    page.screenshot(path=str(screenshot_dir / f"site-{Path(path).stem}.png"), full_page=False)


def test_reference_page_renders_and_links_back_to_the_lessons(page, site_url, screenshot_dir):
    path = _reference_page()
    images, html, remote = read_page(page, site_url, path)
    assert_clean(path, images, html, remote)
    assert page.locator("article table").count() >= 1, f"{path}: no table rendered"
    # the navigation lists every lesson that exists in notebooks/
    for lesson in sitebuild.lessons():
        assert page.locator(f'nav a[href$="{lesson.stem}.html"]').count() >= 1, lesson.name
    page.screenshot(path=str(screenshot_dir / f"site-{Path(path).stem}.png"))


def test_the_whole_built_site_is_clean(site_url):
    """Every file of the site, not only the three pages: search index, static files, sources."""
    assert sitebuild.problems(SITE_HTML) == []


# -- every lesson page, as a learner reads it at 1,280 px (issue 34 §8) -------------------------
CUT_OFF = """() => {
  const article = document.querySelector('article.bd-article') || document.querySelector('article');
  const art = article.getBoundingClientRect();
  const cut = [];
  const name = el => el.tagName.toLowerCase() + ' "' +
    (el.innerText || el.getAttribute('src') || '').trim().slice(0, 60).replace(/\\s+/g, ' ') + '"';
  for (const el of article.querySelectorAll('table, pre, .cell_output img')) {
    if (el.offsetParent === null) continue;  // not shown (a folded answer)
    let a = el, scroller = null;
    while (a && a !== article) {  // the nearest box that clips or scrolls it, below the article
      if (getComputedStyle(a).overflowX !== 'visible') { scroller = a; break; }
      a = a.parentElement;
    }
    const box = (scroller || el).getBoundingClientRect();
    if (box.right > art.right + 1 || box.left < art.left - 1) {
      cut.push(name(el) + ' reaches past the content column (' + Math.round(box.right) +
               ' > ' + Math.round(art.right) + ' px)');
      continue;
    }
    if (!scroller || scroller.scrollWidth <= scroller.clientWidth + 1) continue;  // it fits
    const ox = getComputedStyle(scroller).overflowX;
    if (el.tagName === 'PRE' && el.closest('.cell_output'))  // text a run printed: it wraps
      cut.push(name(el) + ' runs ' + (scroller.scrollWidth - scroller.clientWidth) +
               ' px past its box: printed text must wrap');
    else if (!['auto', 'scroll'].includes(ox))
      cut.push(name(el) + ' is clipped (' + scroller.scrollWidth + ' px in ' +
               scroller.clientWidth + ' px, overflow ' + ox + ')');
    else if (scroller.clientHeight > window.innerHeight)  // its scroll bar would be off screen
      cut.push(name(el) + ' scrolls in a box ' + scroller.clientHeight + ' px tall, taller ' +
               'than the window: its scroll bar is out of sight');
  }
  if (article.scrollWidth > article.clientWidth + 1)
    cut.push('the article itself is ' + article.scrollWidth + ' px wide in ' + article.clientWidth);
  return cut;
}"""


def _lesson_pages() -> list[str]:
    return [f"lessons/{p.stem}.html" for p in sitebuild.lessons()]


def _quiz_lessons() -> dict[str, int]:
    from bureau.course.quiz import questions

    return {k: len(v) for k, v in questions().items()}


@pytest.mark.parametrize("path", _lesson_pages())
def test_every_lesson_page_reads_whole(page, site_url, path):
    """Every lesson page: images load, no figure is left as ``<Figure size …>`` text, no widget
    note stands where a quiz is (the quiz reads as text, answers folded), and nothing is cut off
    at 1,280 px: printed text wraps; a table, code block or figure fits the column, or scrolls
    in its own box no taller than the window (so its scroll bar is in sight with it)."""
    images, html, remote = read_page(page, site_url, path)
    assert_clean(path, images, html, remote)
    text = page.locator("article").inner_text()
    assert "<Figure size" not in text, f"{path}: a figure shown as text, not an image"
    drawn = [i for i in images if i["output"]]
    assert all(i["width"] > 0 for i in drawn)
    lesson = Path(path).stem.split("_")[0]  # "05", or a deep dive's "05b"
    quizzed = _quiz_lessons().get(lesson, 0)
    if quizzed:
        quiz = page.locator(".bureau-quiz-text")
        assert quiz.count() == 1, f"{path}: the quiz is not on the page as text"
        assert quiz.locator(".bureau-quiz-question").count() == quizzed
        assert quiz.locator("details").count() == quizzed, "each answer folded in <details>"
        assert "An interactive widget is displayed here" not in quiz.inner_text()
        cell = page.locator(".cell", has=quiz)
        assert "An interactive widget" not in cell.inner_text()
        # the answers stay folded until opened
        assert not quiz.locator("details").first.evaluate("d => d.open")
    if lesson == "00":
        assert "Environment check:" in text, f"{path}: the environment report is not shown"
    cut = page.evaluate(CUT_OFF)
    assert not cut, f"{path}: cut off at 1,280 px:\n" + "\n".join(cut)


def test_the_index_lists_each_lesson_once_with_its_time(page, site_url):
    """The index's body names each lesson once (the H1 parts of a lesson are not lessons), with
    the time ``tools/nbtool.py``'s COURSE gives it and what the learner will be able to do."""
    images, html, remote = read_page(page, site_url, "index.html")
    assert_clean("index.html", images, html, remote)
    course = {Path(le.file).stem: le for le in sitebuild._nbtool().present()}
    article = page.locator("article")
    for lesson in sitebuild.lessons():
        link = f'a[href$="lessons/{lesson.stem}.html"]'
        count = article.locator(link).count()
        assert count == 1, f"index: {lesson.name} listed {count} times"
        item = article.locator("li", has=page.locator(link))
        assert f"about {course[lesson.stem].minutes} min" in item.inner_text()
        assert "You will be able to" in item.inner_text()
    # every lesson's entry in the navigation is its title alone, not its parts
    nav = page.locator("nav.bd-docs-nav a.reference")
    assert sum(1 for t in nav.all_inner_texts() if t.strip()[:2].isdigit()) == len(course)
