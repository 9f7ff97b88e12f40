"""The course site's build steps that need no kernel, no Sphinx run and no browser.

``tools/sitebuild.py`` scrubs this machine out of the executed lessons, puts each widget's
picture next to the cell that displays it, and refuses a built site that still holds a machine
path, a key or a remote asset. The full build and the browser check run in the ``site`` stage of
``tests/run_all.sh`` (``tests/site/``).
"""

from __future__ import annotations

import html
import importlib.util
import sys
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("sitebuild", REPO / "tools" / "sitebuild.py")
sitebuild = importlib.util.module_from_spec(_spec)
sys.modules["sitebuild"] = sitebuild  # dataclasses look their module up by name
_spec.loader.exec_module(sitebuild)

WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def _widget_output(model_id: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_output(
        "display_data",
        data={"text/plain": "VBox(children=(...))",
              sitebuild.WIDGET_MIME: {"model_id": model_id, "version_major": 2,
                                      "version_minor": 0}},
    )


def _lesson() -> nbformat.NotebookNode:
    """A lesson shaped like 02: a console (holding an X-ray), a figure, an X-ray, a quiz."""
    nb = nbformat.v4.new_notebook()
    console = nbformat.v4.new_code_cell("console, ui = make_console(bureau, case)\nconsole")
    console.outputs = [_widget_output("c1")]
    figure = nbformat.v4.new_code_cell("plots.scores(answer)")
    figure.outputs = [nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0K",
                                                                   "text/plain": "<Figure>"})]
    xray = nbformat.v4.new_code_cell("make_xray(answer.trace)[0]")
    xray.outputs = [_widget_output("x1")]
    quiz = nbformat.v4.new_code_cell('quiz("02", bureau)')
    quiz.outputs = [_widget_output("q1")]
    nb.cells = [nbformat.v4.new_markdown_cell("# 02"), console, figure, xray, quiz]
    nb.metadata["widgets"] = {WIDGET_STATE: {"state": {
        "c1": {"state": {"_dom_classes": ["bureau-console"], "children": ["IPY_MODEL_x0"]}},
        "x0": {"state": {"_dom_classes": ["bureau-xray"]}},  # the console's own X-ray
        "x1": {"state": {"_dom_classes": ["bureau-xray"]}},
        "q1": {"model_name": "VBoxModel",
               "state": {"_dom_classes": ["bureau-quiz", "bureau-quiz-lesson-02"]}},
    }}}
    return nb


def _pic(widget: str, file: str, lesson: str = "02_interrogate.ipynb"):
    return sitebuild.Picture(lesson=lesson, widget=widget, file=file, screenshot=file,
                             caption=f"the {widget}")


def test_each_picture_goes_after_the_cell_that_displays_its_widget():
    nb = _lesson()
    pictures = [_pic("bureau-xray", "xray.png"), _pic("bureau-console", "console.png"),
                _pic("bureau-console", "other.png", lesson="01_whisper.ipynb")]
    replaced, placed = sitebuild.place_pictures(nb, "02_interrogate.ipynb", pictures)
    assert replaced == 3
    assert [p.file for p in placed] == ["console.png", "xray.png"]
    sources = [c.source for c in nb.cells]
    # console cell, its picture, the figure (kept), the X-ray cell, its picture, quiz, a note
    assert sources[1].startswith("console, ui") and "../widgets/console.png" in sources[2]
    assert sources[3] == "plots.scores(answer)" and nb.cells[3].outputs  # figures stay
    assert sources[4].startswith("make_xray") and "../widgets/xray.png" in sources[5]
    # the quiz reads as text in its own cell: no note, no picture
    assert sources[6].startswith("quiz(") and len(sources) == 7
    assert "Check yourself: lesson 02" in nb.cells[6].outputs[0]["data"]["text/html"]
    assert "{figure}" in sources[2] and "the bureau-console" in sources[2]
    # no widget output survives, and no widget state (MyST-NB would load its CDN scripts)
    assert not any(sitebuild.WIDGET_MIME in o.get("data", {})
                   for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "widgets" not in nb.metadata


def test_a_picture_whose_widget_is_gone_is_not_placed():
    nb = _lesson()
    _, placed = sitebuild.place_pictures(nb, "02_interrogate.ipynb",
                                         [_pic("bureau-stage", "stage.png")])
    assert placed == []


def test_the_scrubber_removes_this_machine_and_keys(tmp_path):
    data = tmp_path / "bureau-site-data-x"
    scrub = sitebuild.Scrubber(data)
    venv_python = f"{sys.prefix}/lib/python3.11/site-packages/powermem/x.py"
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print(bureau.data_dir)")
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stdout",
                               text=f"data in {data}/seekdb\nrepo {sitebuild.REPO}/notebooks\n"),
        nbformat.v4.new_output("display_data", data={
            "text/html": f"<p>{Path.home()}/.cache and /work/other and /tmp/x</p>",
            "text/plain": "OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx token=abcdef0123456789",
            "image/png": "iVBORw0K/tmp/"}),  # base64 is data, not text: left alone
        nbformat.v4.new_output("error", ename="E", evalue=venv_python,
                               traceback=[f"File {venv_python}"]),
    ]
    cell.metadata["papermill"] = {"duration": 1.0}
    nb.cells = [cell]
    nb.metadata["papermill"] = {"input_path": str(sitebuild.REPO / "notebooks" / "x.ipynb")}
    out = scrub.notebook(nb)
    text = nbformat.writes(out)
    for leaked in (str(data), str(sitebuild.REPO), str(Path.home()), "/work/", sys.prefix,
                   "sk-abcdef", "abcdef0123456789", "site-packages"):
        assert leaked not in text.replace("iVBORw0K/tmp/", ""), leaked
    assert "<data dir>/seekdb" in text and "<repo>/notebooks" in text
    assert out.cells[0].outputs[1]["data"]["image/png"] == "iVBORw0K/tmp/"
    assert "papermill" not in out.metadata and "papermill" not in out.cells[0].metadata


def test_course_prose_survives_the_scrubber():
    scrub = sitebuild.Scrubber()
    prose = ("Every token is embedded; the secret stays private. `.venv/bin/python`, "
             "bureau/service/rooms/reading.py, ~/.local/share/bureau, 256 tokens, "
             "an API key is never needed.")
    assert scrub.text(prose) == prose


def test_a_built_site_with_a_path_a_key_or_a_remote_asset_is_refused(tmp_path):
    site = tmp_path / "html"
    (site / "lessons").mkdir(parents=True)
    clean = ('<html><head><link rel="stylesheet" href="_static/a.css">'
             '<link rel="canonical" href="https://example.org/x.html"></head>'
             '<body><a href="https://arxiv.org/abs/2506.20737">paper</a></body></html>')
    (site / "index.html").write_text(clean)
    assert sitebuild.problems(site) == []
    (site / "lessons" / "02.html").write_text(
        '<script src="https://unpkg.com/x.js"></script><p>/root/.cache/x</p>')
    (site / "searchindex.js").write_text('Search.setIndex({"t": "api_key = abcdefghijklmnop"})')
    (site / "_static").mkdir()
    (site / "_static" / "t.css").write_text("@import url(https://fonts.googleapis.com/css);")
    found = "\n".join(sitebuild.problems(site))
    assert "lessons/02.html: remote asset" in found
    assert "lessons/02.html: machine path: '/root/.cache/x'" in found
    assert "searchindex.js: key or token" in found
    assert "_static/t.css: remote asset" in found


def test_committed_pictures_are_small_and_all_listed():
    assert sitebuild.picture_problems() == []
    pictures = sitebuild.load_pictures()
    assert pictures, "site/widgets/pictures.toml lists no picture"
    listed = {p.file for p in pictures}
    on_disk = {p.name for p in sitebuild.WIDGETS.glob("*.png")}
    assert on_disk == listed, "every committed picture is in the manifest, and only those"
    for p in pictures:
        assert (sitebuild.NOTEBOOKS / p.lesson).is_file(), f"{p.lesson}: no such lesson"
        assert p.widget.startswith("bureau-") and p.caption


def test_picture_limits_are_enforced(tmp_path):
    manifest = tmp_path / "pictures.toml"
    manifest.write_text('[[picture]]\nlesson = "01_whisper.ipynb"\nwidget = "bureau-console"\n'
                        'file = "big.png"\nscreenshot = "s.png"\ncaption = "c"\n')
    assert "big.png: listed in pictures.toml but missing" in sitebuild.picture_problems(manifest)
    (tmp_path / "big.png").write_bytes(b"\0" * (sitebuild.MAX_PICTURE_BYTES + 1))
    assert any("over 300000" in p for p in sitebuild.picture_problems(manifest))


def test_every_reference_page_is_on_the_site_and_the_readme_links_it(tmp_path):
    """The README is the front door: every page of docs/ is in the site's index and linked from
    the README, and the labs' tables live on the benchmarks page (issue 32)."""
    pages = sorted(p.stem for p in (REPO / "docs").glob("*.md"))
    assert {"installation", "threat-model", "benchmarks", "classroom", "architecture",
            "tests"} <= set(pages)
    index = (sitebuild.SITE / "index.md").read_text(encoding="utf-8")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for page in pages:
        assert f"docs/{page}\n" in index, f"docs/{page}.md is not in the site's toctree"
        assert f"(docs/{page}.md)" in readme, f"README does not link docs/{page}.md"
    assert len(readme.splitlines()) <= 250, "the README is the front door: at most 250 lines"
    benchmarks = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert "| MAGPIE (200 scenarios)" in benchmarks


def test_a_broken_internal_link_fails_the_check(tmp_path):
    site = tmp_path / "html"
    (site / "docs").mkdir(parents=True)
    (site / "index.html").write_text(
        '<a href="docs/a.html#here">ok</a> <a href="https://example.org/x">remote</a>'
        '<a href="#top">self</a><span id="top"></span>')
    (site / "docs" / "a.html").write_text(
        '<h1 id="here">A</h1><a href="../index.html">up</a><a href="b.html">gone</a>'
        '<a href="../index.html#nowhere">no anchor</a><a href="../../outside.html">out</a>')
    (tmp_path / "outside.html").write_text("x")
    found = sitebuild.broken_links(site)
    assert found == ["docs/a.html: broken link: 'b.html'",
                     "docs/a.html: broken link (no such anchor): '../index.html#nowhere'",
                     "docs/a.html: broken link: '../../outside.html'"]


def test_readers_see_neither_test_markers_nor_lab_style_anchors():
    code = nbformat.v4.new_code_cell("# NBVAL_IGNORE_OUTPUT\nconsole, ui = make_console()\nconsole")
    assert sitebuild.for_reader(code) == "console, ui = make_console()\nconsole"
    nav = nbformat.v4.new_markdown_cell(
        "[Contents](00_welcome.ipynb#Contents) · [Glossary](GLOSSARY.md) · "
        "[# NBVAL_SKIP](x.ipynb)")
    assert sitebuild.for_reader(nav) == (
        "[Contents](00_welcome.ipynb#contents) · [Glossary](GLOSSARY.md) · "
        "[# NBVAL_SKIP](x.ipynb)")


def _state_lesson(state: dict, code: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(code)
    cell.outputs = [_widget_output("w1")]
    nb.cells = [cell]
    nb.metadata["widgets"] = {WIDGET_STATE: {"state": state}}
    return nb


def test_a_quiz_reads_as_text_with_folded_answers():
    """Issue 34 §8: the site showed "An interactive widget is displayed here" for every quiz."""
    from bureau.course.quiz import choice_order, predict, questions, quiz

    # the live widgets carry the classes the build reads
    assert {sitebuild.QUIZ_CLASS, f"{sitebuild.QUIZ_LESSON_CLASS}03"} <= set(quiz("03")._dom_classes)
    assert sitebuild.PREDICT_CLASS in predict("03-x")._dom_classes
    nb = _state_lesson({"w1": {"model_name": "VBoxModel", "state": {
        "_dom_classes": ["bureau-quiz", "bureau-quiz-lesson-03"],
        "children": ["IPY_MODEL_b1"]}},
        "b1": {"model_name": "ButtonModel", "state": {}}}, 'quiz("03", bureau)')
    sitebuild.place_pictures(nb, "03_publish.ipynb", [])
    assert len(nb.cells) == 1, "no note cell after the quiz"
    (out,) = nb.cells[0].outputs
    shown = out["data"]["text/html"]
    qs = questions()["03"]
    assert shown.count("<details>") == len(qs) == shown.count('class="bureau-quiz-question"')
    for q in qs:
        assert html.escape(q.question) in shown
        for c in q.choices:  # every choice and every explanation is on the page
            assert html.escape(c.text) in shown and html.escape(c.why) in shown
        # the answer is inside the fold, after the choices, lettered as the site shows them
        letter = "ABCD"[choice_order(q, "site").index(q.answer)]
        block = shown[shown.index(html.escape(q.question)):]
        assert block.index("<details>") < block.index(f"<b>Answer: {letter}.</b>")
    assert "Answer:" in out["data"]["text/plain"]
    assert sitebuild.NO_PICTURE_NOTE not in nbformat.writes(nb)


def test_a_display_only_widget_reads_as_its_html_and_a_control_gets_the_note():
    state = {
        "w1": {"model_name": "VBoxModel", "state": {"_dom_classes": ["bureau-environment"],
               "children": ["IPY_MODEL_s", "IPY_MODEL_h"]}},
        "s": {"model_name": "HTMLModel", "state": {"value": "<style>.x{}</style>"}},
        "h": {"model_name": "HTMLModel", "state": {
            "value": "<h3>Environment check: 11/11 passed</h3>"}},
    }
    nb = _state_lesson(state, "report")
    sitebuild.place_pictures(nb, "00_welcome.ipynb", [])
    (out,) = nb.cells[0].outputs
    assert "Environment check: 11/11 passed" in out["data"]["text/html"]
    assert "bureau-environment" in out["data"]["text/html"]
    assert out["data"]["text/plain"] == "Environment check: 11/11 passed"
    # one control inside (a button) and it is a live widget: the note, not half a widget
    state["h2"] = {"model_name": "ButtonModel", "state": {"description": "Go"}}
    state["w1"]["state"]["children"].append("IPY_MODEL_h2")
    nb = _state_lesson(state, "report")
    sitebuild.place_pictures(nb, "00_welcome.ipynb", [])
    assert nb.cells[0].outputs == [] and nb.cells[1].source == sitebuild.NO_PICTURE_NOTE


def test_a_prediction_box_reads_as_its_prompt():
    nb = _state_lesson({
        "w1": {"model_name": "VBoxModel", "state": {"_dom_classes": ["bureau-predict"],
               "children": ["IPY_MODEL_p", "IPY_MODEL_t"]}},
        "p": {"model_name": "HTMLModel", "state": {"value": "<b>Who can read it?</b>"}},
        "t": {"model_name": "TextareaModel", "state": {}}}, 'predict("01-x", bureau, "…")')
    sitebuild.place_pictures(nb, "01_whisper.ipynb", [])
    (out,) = nb.cells[0].outputs
    assert "<b>Who can read it?</b>" in out["data"]["text/html"]
    assert out["data"]["text/plain"] == "Who can read it?"


def test_the_index_lists_each_lesson_once_with_its_time_and_goals():
    nbtool = sitebuild._nbtool()
    listed = sitebuild.lessons_index(repo="someone/bureau")
    for le in nbtool.present():
        stem = Path(le.file).stem
        assert listed.count(f"<lessons/{stem}>") == 1, le.file
        line = next(x for x in listed.splitlines() if f"<lessons/{stem}>" in x)
        assert f"about {le.minutes} min" in line  # the time lesson headers and the kit show
        assert ("https://mybinder.org/v2/gh/someone/bureau/main?urlpath=lab/tree/notebooks/"
                f"{le.file}") in line
    goals = [x for x in listed.splitlines() if x.startswith("  *You will be able to* ")]
    assert len(goals) == len(nbtool.present()) and all(len(g) > 60 for g in goals)
    assert "mybinder" not in sitebuild.lessons_index(repo=None)
    index = (sitebuild.SITE / "index.md").read_text(encoding="utf-8")
    assert sitebuild.LESSONS_MARKER in index and ":hidden:" in index


def test_deep_dives_are_published_marked_and_outside_the_total():
    """Issue 34 §6, issue 49 §2: the site executes and renders every lesson and deep dive; the
    index lists the core path (with its total) apart from what goes further, where each deep
    dive is marked; only the core path's minutes make the total."""
    nbtool = sitebuild._nbtool()
    course = nbtool.present()
    dives = [le for le in course if le.deep_dive]
    assert dives
    published = [p.name for p in sitebuild.lessons()]
    assert all(le.file in published for le in course)
    listed = sitebuild.lessons_index(repo=None)
    core_part, further_part = listed.split("**Going further**")
    for le in course:
        stem = Path(le.file).stem
        part, other = (core_part, further_part) if le.core else (further_part, core_part)
        line = next(x for x in part.splitlines() if f"<lessons/{stem}>" in x)
        assert f"<lessons/{stem}>" not in other
        assert ("· deep dive ·" in line) == le.deep_dive, line
    total = sum(le.minutes for le in course if le.core)
    assert f"({total // 60} h {total % 60:02d} min in all)" in core_part
    index = (sitebuild.SITE / "index.md").read_text(encoding="utf-8")
    assert "lessons/[0-9][0-9][a-z]_*" in index and "lessons/[0-9][0-9]_*" in index


def test_you_will_be_able_to_is_read_as_a_list_or_a_paragraph():
    listed = nbformat.v4.new_markdown_cell(
        "# 01\n\n**You will be able to…**\n\n1. write a card;\n2. read it\n   back.\n\n> Jargon")
    inline = nbformat.v4.new_markdown_cell(
        "# 05\n**You will be able to…** compute a leak rate; read a ROC curve.\n\nLessons 00–04")
    for cell, want in ((listed, "write a card; read it back."),
                       (inline, "compute a leak rate; read a ROC curve.")):
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_markdown_cell("nav"), cell]
        assert sitebuild.able_to(nb) == want


def test_an_application_question_reads_as_text_with_the_runs_value_folded():
    """Issue 34 §3: the site shows the question and, in a fold, the value the page's own run
    produced; the state comes from the live widget, as papermill saves it."""
    import ipywidgets as W

    from bureau.course.quiz import application

    box = application("02-x", None, "How many ms does a retrieval take?", 8.537, tolerance=1,
                      unit="ms")
    assert sitebuild.APPLICATION_CLASS in box._dom_classes
    state = W.Widget.get_manager_state()["state"]
    nb = _state_lesson(state, "application(...)")
    nb.cells[0].outputs[0]["data"][sitebuild.WIDGET_MIME]["model_id"] = box.model_id
    sitebuild.place_pictures(nb, "02_interrogate.ipynb", [])
    assert len(nb.cells) == 1, "no note cell after the question"
    (out,) = nb.cells[0].outputs
    shown = out["data"]["text/html"]
    assert 'class="bureau-application-text"' in shown
    assert "How many ms does a retrieval take?" in shown
    fold = shown[shown.index("<details>"):shown.index("</details>")]
    assert "On this page&#x27;s run: 9 ms" in fold or "On this page's run: 9 ms" in fold
    assert "9 ms" not in shown.replace(fold, "")
    assert out["data"]["text/plain"].endswith("On this page's run: 9 ms")


# -- a picture is of its own lesson's run (issue 50 §1) -------------------------------------------
def _console_run(moves: str, cards: list[str]) -> nbformat.NotebookNode:
    """A lesson whose run leaves a console: its case file's moves and a space's cards."""
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("console, ui = make_console(bureau, case)\nconsole")
    cell.outputs = [_widget_output("c1")]
    nb.cells = [cell]
    cards_html = "".join(f'<div class="bureau-card">{c}</div>' for c in cards)
    nb.metadata["widgets"] = {WIDGET_STATE: {"state": {
        "c1": {"model_name": "VBoxModel", "state": {"_dom_classes": ["bureau-console"],
                                                    "children": ["IPY_MODEL_f", "IPY_MODEL_s",
                                                                 "IPY_MODEL_b"]}},
        "f": {"model_name": "HTMLModel", "state": {"value": (
            "<style>.x { color: red }</style><b>Case</b> safe-combination-0d7707<br>"
            f"Moves allowed: whisper, interrogate, publish · used {moves} · par 3<br>"
            "Question for <b>detective</b>: What is the combination of the safe?")}},
        "s": {"model_name": "HTMLModel", "state": {"value": cards_html}},
        "b": {"model_name": "ButtonModel", "state": {"description": "Whisper"}},
    }}}
    return nb


def _shows(moves: str, cards: list[str], case: str = "8c0d45") -> str:
    """What a browser's innerText of such a console reads (another run: another case id)."""
    return "\n".join(["Case safe-combination-" + case,
                      f"Moves allowed: whisper, interrogate, publish · used {moves} · par 3",
                      "Question for detective: What is the combination of the safe?",
                      "Whisper", *cards])


CARDS = ["The hallway camera recorded a figure at 23:40.", "A muddy boot print is a size 43."]
WHISPERED = [*CARDS, "The informant knows about the safe."]


def test_a_picture_of_its_own_lessons_run_passes(tmp_path):
    runs = {"00_welcome.ipynb": _console_run("1 (interrogate 1)", CARDS),
            "01_whisper.ipynb": _console_run("1 (whisper 1)", WHISPERED)}
    (tmp_path / "console-01.txt").write_text(_shows("1 (whisper 1)", WHISPERED))
    pic = _pic("bureau-console", "console-01.png", lesson="01_whisper.ipynb")
    assert sitebuild.picture_run_problems(pic, runs, tmp_path) == []
    share, missing = sitebuild.picture_share(_shows("1 (whisper 1)", WHISPERED),
                                             sitebuild.run_text(runs["01_whisper.ipynb"],
                                                                "bureau-console"))
    assert share == 1.0 and missing == []  # the case id and the time differ, masked


def test_a_picture_from_another_lesson_fails(tmp_path):
    """Lesson 01's console pictured in place of lesson 00's: every line but the moves and the
    whispered card is the same, so the share alone passes; lesson 01's run matches it better."""
    runs = {"00_welcome.ipynb": _console_run("1 (interrogate 1)", CARDS),
            "01_whisper.ipynb": _console_run("1 (whisper 1)", WHISPERED)}
    (tmp_path / "console-00.txt").write_text(_shows("1 (whisper 1)", WHISPERED))
    pic = _pic("bureau-console", "console-00.png", lesson="00_welcome.ipynb")
    found = sitebuild.picture_run_problems(pic, runs, tmp_path)
    assert len(found) == 2, found
    assert "not 00_welcome.ipynb's run" in found[0] and "used#(whisper#)" not in found[0]
    assert "closer to 01_whisper.ipynb's run" in found[1]


def test_a_picture_of_an_older_state_or_without_its_text_fails(tmp_path):
    runs = {"00_welcome.ipynb": _console_run("1 (interrogate 1)", CARDS)}
    pic = _pic("bureau-console", "console-00.png", lesson="00_welcome.ipynb")
    assert "no console-00.txt beside it" in sitebuild.picture_run_problems(pic, runs, tmp_path)[0]
    old = _shows("2 (interrogate 1, publish 1)", ["The safe opens with 0427 (from informant)."])
    (tmp_path / "console-00.txt").write_text(old)
    (found,) = sitebuild.picture_run_problems(pic, runs, tmp_path)
    assert "not 00_welcome.ipynb's run: 50% of its lines" in found, found


def test_the_committed_pictures_keep_what_they_show():
    """Every picture of the manifest has its text beside it (the build compares it with the
    lesson's run; tests/site/test_widget_pictures.py does it on the built site's runs)."""
    for pic in sitebuild.load_pictures():
        shows = sitebuild.picture_text(pic)
        assert shows and len(sitebuild.picture_lines(shows)) >= 5, pic.file
