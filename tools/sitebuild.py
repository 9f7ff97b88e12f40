"""Build the rendered course site from the executed lessons, offline (``make site``).

    python tools/sitebuild.py build [--out build/site] [--reuse]   # execute, assemble, render, check
    python tools/sitebuild.py check build/site/html                # machine paths, keys, remote assets
    python tools/sitebuild.py widgets [--from test-results/screenshots]   # refresh site/widgets/*.png

Why it is built this way:

* **Real outputs.** Every lesson ``notebooks/[0-9][0-9]_*.ipynb`` and deep dive
  ``notebooks/[0-9][0-9][a-z]_*.ipynb`` (``nbtool.course_notebooks``) runs under papermill with its own
  default parameters, in a temporary ``BUREAU_DATA_DIR`` (deleted afterwards), into
  ``<out>/executed/``. Sphinx + MyST-NB then render them with execution off, so a page shows
  what a real run printed and drew. A lesson that raises stops the build.
* **Widgets as pictures.** A widget cannot run in a static page, and MyST-NB's widget embedding
  would fetch require.js and the widget manager from a CDN. Each widget output is replaced by the
  picture ``site/widgets/pictures.toml`` names for it (a screenshot from the browser tests,
  matched by lesson and by the widget's own DOM class, e.g. ``bureau-console``, read from the
  widget state papermill saved). A manifest entry that matches no widget fails the build: a
  renamed widget cannot silently lose its picture. Each picture is taken right after *Run All*
  and keeps the text it shows beside it (``site/widgets/<picture>.txt``); the build compares
  that text with what the lesson's own run shows in that widget, and fails on a picture of
  another lesson or of an older state of this one (:func:`picture_run_problems`).
* **Widgets as text.** A "Check yourself" quiz is shown as its questions, choices and folded
  answers with their explanations (``bureau.course.quiz.quiz_html``); a prediction box as its
  prompt; an application question as its question with the value this page's run produced in a
  fold (``bureau.course.quiz.application_html``); a widget that only displays HTML (lesson 00's
  environment report, an X-ray) as that HTML, from its saved state. Only a widget with controls and no picture is left a one-line note.
* **Reveals folded.** A reveal (``bureau.course.quiz.reveal``) is this run's value folded in a
  ``<details>``, with nothing about predicting or saving (the run behind the site saved no
  prediction, so in the notebook its reveal says how to predict first): rebuilt from the metadata
  the reveal leaves on its output; a reveal left unfolded or talking about saving stops the build.
* **Lessons listed once.** The index's lesson list is generated from ``tools/nbtool.py``'s
  ``COURSE`` (the time every lesson header and the instructor kit show) and each lesson header's
  "You will be able to…"; deep dives are listed apart, marked, outside the total; with a launch link per lesson for Binder (which builds
  ``environment.yml``) when the repository is known (``GITHUB_REPOSITORY`` or ``--repository``).
* **One source.** The glossary and the instructor kit are copied from ``notebooks/`` as pages,
  and the reference pages from ``docs/`` (installation, threat model, benchmarks and labs, the
  classroom, architecture, tests): the README is only the front door and links to them.
* **Nothing of this machine.** Outputs are scrubbed (the data directory, the venv, the
  repository, the home and temporary folders, anything that looks like a key or token), then
  the whole built site is checked again (:func:`problems`) and the build fails on any hit, or on
  any page that would load a script, style sheet or font from the network.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = REPO / "notebooks"
SITE = REPO / "site"
WIDGETS = SITE / "widgets"
MANIFEST = WIDGETS / "pictures.toml"
BUILD = REPO / "build" / "site"
SCREENSHOTS = REPO / "test-results" / "screenshots"
LESSON_GLOB = "[0-9][0-9]_*.ipynb"
PAGES = ("GLOSSARY.md", "INSTRUCTOR.md")
"""Markdown pages of notebooks/ the site shows beside the lessons (each only if it exists)."""
DOCS = REPO / "docs"
"""The reference pages (MyST Markdown); every ``docs/*.md`` becomes a page under ``docs/``."""
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
LESSON_ANCHOR = re.compile(r"(\.ipynb#)([^)\s]+)\)")
NBVAL_MARKER = re.compile(r"^# NBVAL_[A-Z_]+[ \t]*\n?", re.MULTILINE)
MAX_PICTURE_BYTES = 300_000
MAX_PICTURES_BYTES = 2_000_000
PICTURE_WIDTH = 1000
"""Widest a committed picture may be (pixels): the book theme's text column is narrower."""

# -- what must never reach the site ---------------------------------------------------------------
MACHINE_PATH = re.compile(
    r"(?<![\w.~-])/(?:work|root|home|tmp|private/var|Users)(?:/[^\s'\"<>()\[\]{},;|`\\]*)?"
    r"|(?:site|dist)-packages/"
    r"|/usr/(?:local/)?lib/python3"
)
SECRET = re.compile(
    r"\bsk-[A-Za-z0-9_-]{16,}"  # OpenAI-style keys
    r"|\bhf_[A-Za-z0-9]{20,}"  # Hugging Face
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}"  # GitHub
    r"|\bAKIA[0-9A-Z]{16}\b"  # AWS access key id
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"|\b(?:api[_-]?key|access[_-]?token|auth[_-]?token|token|secret[_-]?key|password)"
    r"\s*[=:]\s*['\"]?[A-Za-z0-9_\-./+]{12,}",
    re.IGNORECASE,
)
# A page must not load anything from the network: scripts, style sheets, fonts, CSS imports.
REMOTE_ASSET = re.compile(
    r"<script[^>]+src=[\"'](?:https?:)?//"
    r"|<link[^>]+href=[\"'](?:https?:)?//[^\"']*[\"'][^>]*>"
    r"|@import\s+(?:url\()?[\"']?(?:https?:)?//"
    r"|url\([\"']?(?:https?:)?//",
    re.IGNORECASE,
)
# An <a href="https://..."> in a <link rel=...> tag is only a problem when it is fetched.
FETCHED_LINK = re.compile(r"rel=[\"'](?:stylesheet|preload|prefetch|modulepreload|icon|"
                          r"preconnect|dns-prefetch)", re.IGNORECASE)
SCANNED = {".html", ".js", ".css", ".txt", ".json", ".ipynb", ".md", ".svg", ".xml"}


class Scrubber:
    """Replace this machine's paths and anything key-like in text with neutral placeholders.

    The exact folders (data directory, venv, repository, home, temporary folder) go first and
    keep a readable placeholder (``<data dir>/...``); the patterns catch whatever is left.
    """

    def __init__(self, *data_dirs: Path) -> None:
        exact: list[tuple[str, str]] = [(str(d), "<data dir>") for d in data_dirs]
        for prefix in {sys.prefix, str(Path(sys.prefix).resolve())}:
            exact.append((prefix, "<venv>"))
        exact += [(str(REPO), "<repo>"), (str(Path.home()), "~"),
                  (tempfile.gettempdir(), "<tmp>")]
        # Longest first, so the repository's venv is "<venv>", not "<repo>/.venv".
        self.exact = sorted({(k, v) for k, v in exact if len(k) > 1}, key=lambda kv: -len(kv[0]))

    def text(self, s: str) -> str:
        for path, placeholder in self.exact:
            s = s.replace(path, placeholder)
        s = SECRET.sub("<redacted>", s)
        return MACHINE_PATH.sub("<path>", s)

    def value(self, v):  # noqa: ANN001, ANN201 - JSON-like: str, list, dict, other
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if isinstance(v, dict):
            return {k: self.value(x) for k, x in v.items()}
        return v

    def notebook(self, nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
        """Scrub sources and outputs; drop papermill and execution metadata (they hold paths)."""
        nb.metadata.pop("papermill", None)
        for cell in nb.cells:
            cell.source = self.text(cell.source)
            for key in ("papermill", "execution"):
                cell.metadata.pop(key, None)
            for out in cell.get("outputs", []):
                for key in ("text", "evalue", "traceback"):
                    if key in out:
                        out[key] = self.value(out[key])
                if "data" in out:
                    out["data"] = nbformat.from_dict(
                        {mime: (v if mime.startswith("image/") and mime != "image/svg+xml"
                                else self.value(v)) for mime, v in out["data"].items()}
                    )
        return nb


HREF = re.compile(r'<a\b[^>]*?\bhref="([^"]*)"', re.IGNORECASE)
ELEMENT_ID = re.compile(r'\bid="([^"]+)"')
NOT_A_PAGE_LINK = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//)", re.IGNORECASE)
"""``https:``, ``mailto:``, ``javascript:``, protocol-relative: not a page of this site."""


def broken_links(site: Path) -> list[str]:
    """Every link from one page of the built site to another that does not resolve: a missing
    file, or a ``#fragment`` no element of the target carries."""
    ids: dict[Path, set[str]] = {}

    def ids_of(page: Path) -> set[str]:
        if page not in ids:
            ids[page] = set(ELEMENT_ID.findall(page.read_text(encoding="utf-8", errors="replace")))
        return ids[page]

    found = []
    for page in sorted(site.rglob("*.html")):
        for href in HREF.findall(page.read_text(encoding="utf-8", errors="replace")):
            if not href or NOT_A_PAGE_LINK.match(href):
                continue
            target, _, fragment = html_unescape(href).partition("#")
            path = (page.parent / target).resolve() if target else page
            rel = page.relative_to(site)
            if not path.is_relative_to(site.resolve()) or not path.is_file():
                found.append(f"{rel}: broken link: {href!r}")
            elif fragment and path.suffix == ".html" and fragment not in ids_of(path):
                found.append(f"{rel}: broken link (no such anchor): {href!r}")
    return found


def html_escape(text: str) -> str:
    from html import escape

    return escape(text)


def html_unescape(href: str) -> str:
    from html import unescape
    from urllib.parse import unquote

    return unquote(unescape(href))


def problems(site: Path) -> list[str]:
    """Every machine path, key-like string, remote asset or broken internal link in the built
    site (empty: clean)."""
    found: list[str] = broken_links(site)
    for path in sorted(site.rglob("*")):
        if not path.is_file() or path.suffix not in SCANNED:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        rel = path.relative_to(site)
        for pattern, what in ((MACHINE_PATH, "machine path"), (SECRET, "key or token")):
            for m in pattern.finditer(text):
                found.append(f"{rel}: {what}: {m.group(0)[:80]!r}")
        if path.suffix in {".html", ".css"}:
            for m in REMOTE_ASSET.finditer(text):
                tag = m.group(0)
                if tag.lower().startswith("<link") and not FETCHED_LINK.search(tag):
                    continue  # <link rel="canonical" href="https://...">: never fetched
                found.append(f"{rel}: remote asset: {tag[:100]!r}")
    return found


# -- widget pictures ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Picture:
    """One committed widget picture and the widget it stands for."""

    lesson: str
    """The lesson file, e.g. ``02_interrogate.ipynb``."""
    widget: str
    """A DOM class of the displayed widget (``make_console`` gives ``bureau-console``)."""
    file: str
    """The picture in ``site/widgets/``."""
    screenshot: str
    """Its source in the browser tests' screenshots (``tools/sitebuild.py widgets`` refreshes it)."""
    caption: str


def load_pictures(manifest: Path = MANIFEST) -> list[Picture]:
    data = tomllib.loads(manifest.read_text(encoding="utf-8"))
    return [Picture(**entry) for entry in data.get("picture", [])]


def _dom_classes(state: dict, model_id: str) -> set[str]:
    """The DOM classes of the displayed widget itself (from the saved widget state).

    Only the root's: a console holds an X-ray, and the X-ray's picture belongs next to the cell
    that displays the X-ray alone.
    """
    return set(state.get(model_id, {}).get("state", {}).get("_dom_classes", []))


def _picture_cell(picture: Picture) -> nbformat.NotebookNode:
    return nbformat.v4.new_markdown_cell(
        f":::{{figure}} ../widgets/{picture.file}\n:alt: {picture.caption}\n"
        f":class: bureau-widget-picture\n:width: 100%\n\n"
        f"**Widget, pictured.** {picture.caption} Run the lesson to use it live.\n:::"
    )


NO_PICTURE_NOTE = ("*An interactive widget is displayed here when the lesson runs (no picture of "
                   "it on this site; `make lab` to use it).*")

# -- widgets as text --------------------------------------------------------------------------------
QUIZ_CLASS = "bureau-quiz"
QUIZ_LESSON_CLASS = "bureau-quiz-lesson-"
"""``bureau.course.quiz.quiz`` gives its box both classes; the second names the lesson."""
PREDICT_CLASS = "bureau-predict"
APPLICATION_CLASS = "bureau-application"
APPLICATION_RUN_CLASS = "bureau-application-run"
"""``bureau.course.quiz.application`` gives its box the first class, and the hidden child that
holds "On this page's run: …" the second."""
DISPLAY_MODELS = {"HTMLModel", "HTMLMathModel", "LabelModel", "VBoxModel", "HBoxModel",
                  "BoxModel"}
"""Widgets that only show what their saved state holds: a tree of these reads the same static."""
PREDICT_NOTE = ("<p class=\"bureau-muted\"><i>In the lesson, you write your prediction in a box "
                "here and press Save before running the next cell.</i></p>")


def _model(state: dict, ref: str) -> dict:
    return state.get(ref.removeprefix("IPY_MODEL_"), {})


def static_html(state: dict, model_id: str) -> str | None:
    """The widget as static HTML when it only displays text (HTML, labels and boxes of them,
    e.g. lesson 00's environment report, an X-ray, an attack report); ``None`` when any part of
    it is a control (a button, a text box), which needs a kernel."""
    model = _model(state, model_id)
    name, st = model.get("model_name"), model.get("state", {})
    if name not in DISPLAY_MODELS:
        return None
    if name in {"HTMLModel", "HTMLMathModel"}:
        return str(st.get("value", ""))
    if name == "LabelModel":
        return html_escape(str(st.get("value", "")))
    parts = [static_html(state, child) for child in st.get("children", [])]
    if any(part is None for part in parts):
        return None
    direction = "row" if name == "HBoxModel" else "column"
    classes = " ".join(["bureau-static-widget", *st.get("_dom_classes", [])])
    return (f'<div class="{classes}" style="display: flex; flex-direction: {direction}; '
            f'gap: 4px">{"".join(parts)}</div>')  # type: ignore[arg-type]


def text_output(state: dict, model_id: str) -> nbformat.NotebookNode | None:
    """A static output standing for a widget, or ``None`` (then a picture or a note does).

    A quiz becomes its questions with folded answers (``bureau.course.quiz.quiz_html``, read
    from the same ``quizzes.yaml`` the live quiz uses); a prediction box becomes its prompt; an
    application question its question and, folded, the value the page's own run produced; a
    widget that only displays text becomes that text, from the state papermill saved."""
    classes = _dom_classes(state, model_id)
    lesson = next((c.removeprefix(QUIZ_LESSON_CLASS) for c in classes
                   if c.startswith(QUIZ_LESSON_CLASS)), None)
    if QUIZ_CLASS in classes and lesson is not None:
        from bureau.course.quiz import quiz_html, quiz_text

        shown, plain = quiz_html(lesson), quiz_text(lesson)
    elif PREDICT_CLASS in classes:
        children = _model(state, model_id).get("state", {}).get("children", [])
        prompt = _model(state, children[0]).get("state", {}).get("value", "") if children else ""
        shown = f'<div class="bureau-predict-text">{prompt}{PREDICT_NOTE}</div>'
        plain = re.sub(r"<[^>]+>", "", prompt)
    elif APPLICATION_CLASS in classes:
        from html import unescape

        from bureau.course.quiz import application_html

        children = [_model(state, c).get("state", {}) for c in
                    _model(state, model_id).get("state", {}).get("children", [])]
        question = str(children[0].get("value", "")) if children else ""
        run = next((str(c.get("value", "")) for c in children
                    if APPLICATION_RUN_CLASS in c.get("_dom_classes", [])), "")
        if not run:
            return None  # no value saved: the note, rather than a question with no answer
        shown = application_html(question, run)
        plain = unescape(f'{re.sub(r"<[^>]+>", "", question)}\n{run}')
    else:
        found = static_html(state, model_id)
        if found is None:
            return None
        shown, plain = found, re.sub(r"<[^>]+>", " ", re.sub(r"<style>.*?</style>", "", found,
                                                              flags=re.S))
    return nbformat.v4.new_output("display_data",
                                  data={"text/html": shown, "text/plain": plain.strip()})


def place_pictures(nb: nbformat.NotebookNode, lesson: str,
                   pictures: Iterable[Picture]) -> tuple[int, list[Picture]]:
    """Replace each widget output of ``nb`` by its picture, its text or a note; return what was
    placed.

    A picture goes after the first cell of its lesson that displays a widget carrying its DOM
    class; each picture is placed once. Any other widget that can be read as text (a quiz, a
    prediction prompt, a report: :func:`text_output`) is shown as that text in its cell; only a
    control-bearing widget without a picture gets the note. Returns ``(widget outputs replaced, pictures placed)``.
    """
    state = nb.metadata.get("widgets", {}).get(
        "application/vnd.jupyter.widget-state+json", {}).get("state", {})
    waiting = [p for p in pictures if p.lesson == lesson]
    placed: list[Picture] = []
    replaced = 0
    cells: list[nbformat.NotebookNode] = []
    for cell in nb.cells:
        cells.append(cell)
        if cell.cell_type != "code":
            continue
        kept, extra = [], []
        for out in cell.get("outputs", []):
            view = out.get("data", {}).get(WIDGET_MIME) if "data" in out else None
            if view is None:
                kept.append(out)
                continue
            replaced += 1
            classes = _dom_classes(state, view.get("model_id", ""))
            match = next((p for p in waiting if p.widget in classes), None)
            if match is not None:
                waiting.remove(match)
                placed.append(match)
                extra.append(_picture_cell(match))
            elif (text := text_output(state, view.get("model_id", ""))) is not None:
                kept.append(text)
            elif not extra:
                extra.append(nbformat.v4.new_markdown_cell(NO_PICTURE_NOTE))
        cell.outputs = kept
        cells.extend(extra)
    nb.cells = cells
    nb.metadata.pop("widgets", None)  # state is for a live page; a static one has no use for it
    return replaced, placed


# -- reveals ----------------------------------------------------------------------------------------
REVEAL_HTML = re.compile(r'<div class="bureau-reveal"')
REVEAL_SAVING = re.compile(r"\bsav(?:e|ed|ing)\b|none saved|predict first", re.IGNORECASE)
"""What a reveal on the site must not say: a reader of the site has no box to save a guess in."""


def fold_reveals(nb: nbformat.NotebookNode) -> int:
    """Show every reveal (``bureau.course.quiz.reveal``) the site's way: the run's value folded,
    nothing about predicting or saving (the run the site shows had no prediction saved, so its
    reveal said "Predict first"). Read from the metadata the reveal left on its output; returns
    how many were folded."""
    from bureau.course.quiz import REVEAL_METADATA, reveal_site_html

    folded = 0
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            meta = out.get("metadata", {}).get(REVEAL_METADATA)
            if not meta or "data" not in out:
                continue
            run = meta.get("this_run")
            out["data"] = nbformat.from_dict({
                "text/html": reveal_site_html(str(meta.get("item", "")), run),
                "text/plain": f"This run: {run if run is not None else 'the output above'}"})
            out["metadata"].pop(REVEAL_METADATA)
            folded += 1
    return folded


def reveal_problems(nb: nbformat.NotebookNode, lesson: str) -> list[str]:
    """Every reveal of ``nb`` that would reach the site unfolded or talking about saving."""
    found = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            shown = out.get("data", {}).get("text/html", "") if "data" in out else ""
            shown = "".join(shown) if isinstance(shown, list) else str(shown)
            if not REVEAL_HTML.search(shown):
                continue
            if re.search(r"<details(?![^>]*\bopen\b)[^>]*>", shown) is None:
                found.append(f"{lesson}: a reveal is not folded: {shown[:120]!r}")
            elif REVEAL_SAVING.search(re.sub(r"<[^>]+>", " ", shown)):
                found.append(f"{lesson}: a reveal talks about saving a prediction: "
                             f"{shown[:120]!r}")
    return found


# -- what a picture shows, against its lesson's run ----------------------------------------------
PICTURE_SHARE = 0.9
"""Least share of a picture's text lines its lesson's run must show too. The browser tests take
each site picture right after *Run All*, the state the site's own run leaves, so all of them
agree but for ids, times and timings (masked); a picture of an older state of the lesson
(another system prompt, other cards, other moves) misses more. A picture of another lesson may
share most lines (the consoles of lessons 00-03 show one case), so it is also compared with every
other lesson's run (:func:`picture_run_problems`)."""
MIN_LINE = 12
"""Shorter lines (a button, a role's name) say nothing about which run a picture is of."""
_SHOWN_KEYS = ("value", "description", "_options_labels", "placeholder")
_VARYING = re.compile(
    r"\b(?=[0-9a-f]*\d)[0-9a-f]{6,}\b"  # a case id's random tail, a card's id
    r"|\d{7,}"  # a card id inside a longer word
    r"|\b\d{1,2}:\d{2}(?::\d{2})?\b"  # a time of day (the event log)
    r"|\d+(?:\.\d+)?\s*ms\b"  # a timing
    r"|:\d{4,5}\b")  # a port (the stand-in model's address)
"""What differs between two runs of the same lesson: ids, times, timings, ports. Masked on both
sides before comparing; every other figure (a count of cards, of moves, a score) must agree."""


def shown_text(state: dict, model_id: str) -> str:
    """Every text a widget and its children show, from the saved widget state (HTML without its
    tags and style sheets, labels, buttons' and options' labels)."""
    from html import unescape

    model = _model(state, model_id)
    st = model.get("state", {})
    parts: list[str] = []
    for key in _SHOWN_KEYS:
        value = st.get(key)
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str) and v:
                v = re.sub(r"<style\b.*?</style>", " ", v, flags=re.S)
                parts.append(unescape(re.sub(r"<[^>]+>", " ", v)))
    parts += [shown_text(state, child) for child in st.get("children", [])
              if isinstance(child, str)]
    return "\n".join(p for p in parts if p.strip())


def _canon(text: str) -> str:
    """Text as compared: NFKC, lower case, no white space at all (a browser's ``innerText``
    breaks and joins lines where the HTML's tags put none), varying figures masked."""
    import unicodedata

    text = unicodedata.normalize("NFKC", text).lower()
    return re.sub(r"\s+", "", _VARYING.sub("#", text))


def picture_lines(shows: str) -> list[str]:
    """The lines of a picture's text worth comparing (canonical, :data:`MIN_LINE` or longer,
    each once)."""
    return list(dict.fromkeys(c for line in shows.splitlines()
                              if len(c := _canon(line)) >= MIN_LINE))


def run_text(nb: nbformat.NotebookNode, widget: str) -> str:
    """What the lesson's run shows in every widget carrying the DOM class ``widget`` (the
    widget state papermill saved), canonical."""
    state = nb.metadata.get("widgets", {}).get(
        "application/vnd.jupyter.widget-state+json", {}).get("state", {})
    return _canon("\n".join(shown_text(state, mid) for mid in state
                             if widget in _dom_classes(state, mid)))


def picture_share(shows: str, run: str) -> tuple[float, list[str]]:
    """The share of a picture's lines (:func:`picture_lines` of ``shows``) found in ``run``
    (:func:`run_text`), and the lines not found."""
    lines = picture_lines(shows)
    missing = [line for line in lines if line not in run]
    return (1.0 - len(missing) / len(lines) if lines else 0.0), missing


def picture_text(picture: Picture, widgets: Path = WIDGETS) -> str | None:
    """What a committed picture shows, as text (``site/widgets/<picture>.txt``, written with
    the screenshot by the browser tests; ``None`` when missing)."""
    path = widgets / Path(picture.file).with_suffix(".txt").name
    return path.read_text(encoding="utf-8") if path.is_file() else None


def picture_run_problems(picture: Picture, runs: dict[str, nbformat.NotebookNode],
                         widgets: Path = WIDGETS) -> list[str]:
    """Whether ``picture`` is of its lesson's run. ``runs``: every executed lesson by file name.

    Its text (written with the screenshot) must be there; at least :data:`PICTURE_SHARE` of its
    lines must be in what the lesson's run shows in the widgets of the picture's class; and no
    other lesson's run may show more of them (the consoles of lessons 00-03 share most of their
    lines: the few that differ, a move, a whispered card, decide)."""
    shows = picture_text(picture, widgets)
    if shows is None:
        return [f"{picture.file}: no {Path(picture.file).with_suffix('.txt').name} beside it "
                "(what it shows, written with the screenshot): retake it with the browser "
                "tests, then `tools/sitebuild.py widgets`"]
    if picture.lesson not in runs:
        return []  # reported as a manifest entry that matched no widget
    share, missing = picture_share(shows, run_text(runs[picture.lesson], picture.widget))
    found = []
    if share < PICTURE_SHARE:
        found.append(f"{picture.file}: not {picture.lesson}'s run: {share:.0%} of its lines "
                     f"are in what the run's {picture.widget} shows (want {PICTURE_SHARE:.0%}); "
                     "not found: " + "; ".join(repr(m[:60]) for m in missing[:4]))
    for other, nb in sorted(runs.items()):
        if other == picture.lesson:
            continue
        theirs, _ = picture_share(shows, run_text(nb, picture.widget))
        if theirs > share:
            found.append(f"{picture.file}: closer to {other}'s run ({theirs:.0%} of its lines) "
                         f"than to {picture.lesson}'s ({share:.0%}): a picture of another lesson")
    return found


def refresh_pictures(screenshots: Path = SCREENSHOTS, manifest: Path = MANIFEST) -> list[str]:
    """Copy each manifest screenshot into site/widgets, narrowed and palette-quantised.

    Returns the problems (a screenshot missing, a picture still too large); pictures whose
    screenshot is missing are left as they are.
    """
    from PIL import Image

    found = []
    for pic in load_pictures(manifest):
        src = screenshots / pic.screenshot
        if not src.is_file():
            found.append(f"{pic.file}: screenshot {src.name} not found in {screenshots} "
                         "(run the browser tests: pytest -m ui tests/ui)")
            continue
        dest = manifest.parent / pic.file
        shows = src.with_suffix(".txt")
        if shows.is_file():  # what the picture shows, for the build's comparison with the run
            shutil.copy(shows, dest.with_suffix(".txt"))
        else:
            found.append(f"{pic.file}: {shows.name} not found beside its screenshot (the browser "
                         "tests write it with tests.ui.conftest.picture)")
        with Image.open(src) as im:
            im = im.convert("RGB")
            width = min(PICTURE_WIDTH, im.width)
            while True:
                small = im.resize((width, round(im.height * width / im.width)),
                                  Image.Resampling.LANCZOS) if width != im.width else im
                small.quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(
                    dest, optimize=True)
                if dest.stat().st_size <= MAX_PICTURE_BYTES or width < 300:
                    break
                width = int(width * 0.8)
        print(f"{dest.relative_to(REPO)}: {dest.stat().st_size // 1000} kB, {width} px wide")
    found += picture_problems(manifest)
    return found


def picture_problems(manifest: Path = MANIFEST) -> list[str]:
    """Size limits of the committed pictures, and manifest entries without their file."""
    found, total = [], 0
    for file in dict.fromkeys(p.file for p in load_pictures(manifest)):  # a file may serve twice
        path = manifest.parent / file
        if not path.is_file():
            found.append(f"{file}: listed in {manifest.name} but missing")
            continue
        size = path.stat().st_size
        total += size
        if size > MAX_PICTURE_BYTES:
            found.append(f"{file}: {size} bytes, over {MAX_PICTURE_BYTES}")
    if total > MAX_PICTURES_BYTES:
        found.append(f"widget pictures total {total} bytes, over {MAX_PICTURES_BYTES}")
    return found


# -- the build ------------------------------------------------------------------------------------
LESSONS_MARKER = "<!--LESSONS-->"
"""Where ``site/index.md`` gets the generated list of lessons."""
ABLE = re.compile(r"\*\*You will be able to…\*\*[ \t]*(.*?)(?:\n[ \t]*\n(?![ \t]*\d+\.)|\Z)",
                  re.S)
BINDER = "https://mybinder.org/v2/gh/{repository}/{ref}?urlpath=lab/tree/notebooks/{file}"
"""A lesson opened live on Binder, which builds the repository's ``environment.yml``."""
GITHUB_REMOTE = re.compile(r"github\.com[:/]([\w.-]+/[\w.-]+?)(?:\.git)?$")


def _nbtool():  # noqa: ANN202 - the module, loaded by path like the tests do
    import importlib.util

    spec = importlib.util.spec_from_file_location("nbtool", REPO / "tools" / "nbtool.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def able_to(nb: nbformat.NotebookNode) -> str:
    """What a learner will be able to do, from the lesson's own header ("You will be able
    to…": a numbered list or one paragraph), as one line; ``""`` when the header has none."""
    for cell in nb.cells[:4]:
        m = ABLE.search(cell.source) if cell.cell_type == "markdown" else None
        if m:
            items = [re.sub(r"^\d+\.\s*", "", part.strip()).rstrip(";.")
                     for part in re.split(r"\n(?=[ \t]*\d+\.)", m.group(1).strip())]
            return " ".join("; ".join(i for i in items if i).split()) + "."
    return ""


def repository() -> str | None:
    """The GitHub ``owner/name`` the launch links point at: ``GITHUB_REPOSITORY`` (set in
    GitHub Actions), else this clone's ``origin`` remote when it is on GitHub."""
    if os.environ.get("GITHUB_REPOSITORY"):
        return os.environ["GITHUB_REPOSITORY"]
    try:
        proc = subprocess.run(["git", "-C", str(REPO), "remote", "get-url", "origin"],
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):  # no git: a tarball of the course
        return None
    m = GITHUB_REMOTE.search(proc.stdout.strip()) if proc.returncode == 0 else None
    return m.group(1) if m else None


def lessons_index(nb_dir: Path = NOTEBOOKS, repo: str | None = None, ref: str = "main") -> str:
    """The index's list of lessons: each once, with its time (``COURSE``, the number every
    lesson header and the instructor kit show), what the learner will be able to do (the
    lesson's own header) and, when the repository is known, a link that runs it on Binder."""
    nbtool = _nbtool()
    rows: dict[bool, list[str]] = {False: [], True: []}
    course = nbtool.present(nb_dir)
    for le in course:
        nb = nbformat.read(nb_dir / le.file, as_version=4)
        stem = Path(le.file).stem
        time_ = f"about {le.minutes} min" if le.minutes else "not yet timed"
        mark = "deep dive · " if le.deep_dive else ""
        launch = (f" · [run it on Binder]({BINDER.format(repository=repo, ref=ref, file=le.file)})"
                  if repo else "")
        rows[le.core].append(f"- **{{doc}}`{le.title} <lessons/{stem}>`** · {mark}{time_}"
                             f"{launch}  \n"
                             f"  *You will be able to* {able_to(nb) or le.summary + '.'}")
    note = ("" if repo else "\n\nLaunch links to a hosted notebook service appear when the "
            "site is built from a GitHub clone (`GITHUB_REPOSITORY`, or an `origin` on GitHub).")
    further = ("\n\n**Going further**, outside the workshop path: lessons and deep dives for "
               "whoever wants more (no core lesson needs them; "
               f"{nbtool._total([le for le in course if not le.core])} in all).\n\n"
               + "\n".join(rows[False])) if rows[False] else ""
    return (f"**The core path**, the game and the workshop's path "
            f"({nbtool._total(nbtool.core_path(course))} in all):\n\n" + "\n".join(rows[True])
            + f"\n\n{nbtool.time_rule()}" + further + note)


def lessons(nb_dir: Path = NOTEBOOKS) -> list[Path]:
    """Every notebook the site publishes: the lessons and their deep dives."""
    return _nbtool().course_notebooks(nb_dir)


def execute(paths: list[Path], out_dir: Path, data_root: Path, jobs: int = 2,
            timeout: int = 900) -> dict[str, float]:
    """Run each lesson with papermill (its default parameters) into ``out_dir``.

    Each lesson runs in its own papermill process with its own temporary data directory under
    ``data_root``, so ``jobs`` of them can run side by side without sharing a store. Returns the
    seconds each took; raises ``RuntimeError`` naming every lesson that failed.
    """
    from concurrent.futures import ThreadPoolExecutor

    out_dir.mkdir(parents=True, exist_ok=True)

    def run(path: Path) -> tuple[str, float, str]:
        data = data_root / path.stem
        data.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "BUREAU_DATA_DIR": str(data)}
        t0 = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "papermill", str(path), str(out_dir / path.name),
             "-k", "python3", "--cwd", str(path.parent), "--no-progress-bar",
             "--execution-timeout", str(timeout)],
            env=env, capture_output=True, text=True)
        took = time.monotonic() - t0
        if proc.returncode:  # never left behind for --reuse to take as done
            (out_dir / path.name).unlink(missing_ok=True)
        print(f"executed {path.name} in {took:.0f} s" + (" FAILED" if proc.returncode else ""),
              flush=True)
        return path.name, took, (proc.stderr[-3000:] if proc.returncode else "")

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        # the longest lessons first, so the pool does not end on one long tail
        order = sorted(paths, key=lambda p: -p.stat().st_size)
        results = list(pool.map(run, order))
    failed = [f"{name}:\n{err}" for name, _, err in results if err]
    if failed:
        raise RuntimeError("lessons failed under papermill:\n" + "\n".join(failed))
    return {name: took for name, took, _ in results}


def for_reader(cell: nbformat.NotebookNode) -> str:
    """A cell's source as the site shows it.

    Code loses its nbval markers (they mean nothing to a reader); markdown links to a lesson's
    heading get the site's anchor (JupyterLab's keep the heading's case, Sphinx's are slugs).
    """
    if cell.cell_type == "code":
        return NBVAL_MARKER.sub("", cell.source)
    return site_anchors(cell.source)


def site_anchors(markdown: str) -> str:
    """Links to a lesson's heading with the site's anchor (a slug) instead of JupyterLab's."""
    return LESSON_ANCHOR.sub(
        lambda m: m.group(1) + m.group(2).lower().replace(" ", "-") + ")", markdown)


def assemble(executed: Path, src: Path, scrub: Scrubber,
             pictures: list[Picture]) -> list[str]:
    """Lay out the Sphinx source folder; returns what stops the build: a manifest entry that
    matched no widget, a picture that is not of its lesson's run, a reveal that would reach the
    site unfolded."""
    if src.exists():
        shutil.rmtree(src)
    (src / "lessons").mkdir(parents=True)
    (src / "docs").mkdir()
    shutil.copy(SITE / "conf.py", src / "conf.py")
    shutil.copytree(SITE / "_static", src / "_static")
    index = (SITE / "index.md").read_text(encoding="utf-8")
    (src / "index.md").write_text(index.replace(LESSONS_MARKER, lessons_index(
        repo=repository(), ref=os.environ.get("GITHUB_REF_NAME") or "main")),
                                  encoding="utf-8")
    shutil.copytree(WIDGETS, src / "widgets", ignore=shutil.ignore_patterns("*.toml", "*.txt"))
    for page in sorted(DOCS.glob("*.md")):
        (src / "docs" / page.name).write_text(scrub.text(page.read_text(encoding="utf-8")),
                                              encoding="utf-8")
    for page in PAGES:
        if (NOTEBOOKS / page).is_file():
            text = site_anchors((NOTEBOOKS / page).read_text(encoding="utf-8"))
            (src / "lessons" / page).write_text(scrub.text(text), encoding="utf-8")
    unmatched: list[Picture] = [p for p in pictures
                                if not (executed / p.lesson).is_file()]
    runs = {path.name: nbformat.read(path, as_version=4) for path in lessons(executed)}
    found: list[str] = [problem for picture in pictures
                        for problem in picture_run_problems(picture, runs)]
    for name, nb in runs.items():
        path = executed / name
        for cell in nb.cells:
            cell.source = for_reader(cell)
        _, placed = place_pictures(nb, path.name, pictures)
        unmatched += [p for p in pictures if p.lesson == path.name and p not in placed]
        fold_reveals(nb)
        found += reveal_problems(nb, path.name)
        nbformat.write(scrub.notebook(nb), src / "lessons" / path.name)
    return found + [f"{p.file}: no widget with class {p.widget!r} in {p.lesson} "
                    f"(fix site/widgets/{MANIFEST.name})" for p in unmatched]


def render(src: Path, html: Path) -> None:
    if html.exists():
        shutil.rmtree(html)
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-E", "-d", str(src.parent / "doctrees"),
           str(src), str(html)]
    subprocess.run(cmd, check=True, cwd=src)


def build(out: Path = BUILD, reuse: bool = False, jobs: int = 2) -> int:
    t0 = time.monotonic()
    executed = out / "executed"
    todo = lessons()
    if reuse:  # while editing the site: run only lessons newer than their executed copy
        todo = [p for p in todo if not (executed / p.name).is_file()
                or (executed / p.name).stat().st_mtime < p.stat().st_mtime]
    for stale in lessons(executed) if executed.is_dir() else []:
        if not (NOTEBOOKS / stale.name).is_file():
            stale.unlink()  # a lesson that was removed or renamed
    data_dir = Path(tempfile.mkdtemp(prefix="bureau-site-data-"))
    try:
        try:
            execute(todo, executed, data_dir, jobs)
        except RuntimeError as exc:
            print(exc, file=sys.stderr)
            return 1
        t_exec = time.monotonic() - t0
        found = picture_problems()
        scrub = Scrubber(data_dir, *(data_dir / p.stem for p in lessons()))
        found += assemble(executed, out / "src", scrub, load_pictures())
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    if not found:
        render(out / "src", out / "html")
        found = problems(out / "html")
    for p in found:
        print(p, file=sys.stderr)
    took = time.monotonic() - t0
    index = out / "html" / "index.html"
    shown = index.relative_to(REPO) if index.is_relative_to(REPO) else index
    print(f"site: {len(lessons())} lessons ({len(todo)} executed in {t_exec:.0f} s), "
          f"built in {took:.0f} s -> {shown}" + (" FAILED" if found else ""))
    return 1 if found else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="execute the lessons, render the site, check it")
    b.add_argument("--out", type=Path, default=BUILD)
    b.add_argument("--reuse", action="store_true",
                   help="re-execute only lessons changed since their executed copy")
    b.add_argument("--jobs", type=int, default=2, help="lessons executed side by side")
    c = sub.add_parser("check", help="report machine paths, keys and remote assets in a site")
    c.add_argument("site", type=Path, nargs="?", default=BUILD / "html")
    w = sub.add_parser("widgets", help="refresh site/widgets/*.png from the browser screenshots")
    w.add_argument("--from", dest="screenshots", type=Path, default=SCREENSHOTS)
    args = ap.parse_args(argv)
    if args.command == "build":
        return build(args.out.resolve(), args.reuse, args.jobs)
    found = problems(args.site) if args.command == "check" else refresh_pictures(args.screenshots)
    for p in found:
        print(p, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
