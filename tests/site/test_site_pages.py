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
