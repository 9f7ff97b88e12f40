"""Lessons 00–03 in JupyterLab, driven through the operator console with real clicks and typing.

Each test opens a lesson in a fresh page, runs every cell (any error output fails the test), then
operates the console the way a learner would and checks what the page shows: the spaces views,
the memory X-ray and, for lesson 03, the projector stage served by Voilà in
another browser window (another process: it sees the publish through the shared data dir).
"""

from __future__ import annotations

import re

import pytest

pytest.importorskip("playwright", reason="Playwright is not installed (pip install -e '.[ui]')")
from playwright.sync_api import expect  # noqa: E402

from bureau.course.quiz import PREDICT_FIRST  # noqa: E402
from tests.ui.conftest import picture  # noqa: E402

pytestmark = pytest.mark.ui

KERNEL_WORK_MS = 60_000  # one whisper / ask / publish round trip, generous for a loaded 2-core box
TALL = {"width": 1400, "height": 2400}  # the whole console fits: element screenshots show it all


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict) -> dict:
    return {**browser_context_args, "viewport": TALL}


def act_as(page, lab, console, title: str) -> None:
    console.locator(".bureau-roles button", has_text=title).click()
    expect(console.locator(".bureau-roles button.mod-active")).to_have_text(title)
    lab.settle(page)


def type_into(page, locator, text: str) -> None:
    """Click into a text box, clear it and type ``text`` key by key, as a learner would."""
    locator.click()
    locator.press("Control+a")
    locator.press("Delete")
    page.keyboard.type(text)


def test_lesson_00_runs_and_shows_its_console(page, lab, screenshot_dir):
    """Lesson 00 run top to bottom: its console shows the case as the lesson leaves it (one
    move, the detective's interrogation; nothing on the board yet). The screenshot is lesson
    00's own picture on the site (site/widgets/pictures.toml)."""
    lab.open(page, "00_welcome.ipynb")
    lab.run_all(page)

    console = page.locator(".bureau-console")
    expect(console).to_have_count(1)
    chief = console.locator('.bureau-spaces-body[data-viewer="chief"]')
    expect(chief.locator('[data-space="board"]')).to_contain_text("(empty)",
                                                                 timeout=KERNEL_WORK_MS)
    expect(console.locator(".bureau-case-file")).to_contain_text("detective cannot answer yet")
    lab.settle(page)
    picture(console, screenshot_dir / "lab-00-console.png")
    # Run All went past the prediction box: the reveal says how to predict first, in one line,
    # and the run's answer waits in a closed fold.
    reveal = page.locator(".bureau-reveal")
    expect(reveal).to_have_count(1)
    expect(reveal.locator(".bureau-reveal-first")).to_have_text(PREDICT_FIRST)
    expect(reveal.locator("details")).to_have_count(1)
    assert reveal.locator("details").evaluate("d => !d.open")
    expect(reveal.locator("details p")).not_to_be_visible()
    lab.shutdown_kernel(page)


def test_lesson_01_whisper_from_the_console(page, lab, screenshot_dir):
    lab.open(page, "01_whisper.ipynb")
    lab.run_all(page)

    console = page.locator(".bureau-console")
    chief = console.locator('.bureau-spaces-body[data-viewer="chief"]')
    detective = page.locator('.bureau-spaces-body[data-viewer="detective"]')
    expect(console).to_have_count(1)
    expect(detective).to_have_count(1)
    lab.settle(page)
    picture(console, screenshot_dir / "lab-01-console.png")  # as the lesson's run leaves it
    suspect_count = detective.locator('[data-space="suspect"] h4 .bureau-badge')
    before = int(suspect_count.inner_text())

    # The lesson's exercise, solved through the console: tell only the suspect.
    act_as(page, lab, console, "Suspect")
    type_into(page, console.locator(".bureau-whisper-text input"),
              "The gardener is called Albert Finch.")
    type_into(page, console.locator(".bureau-whisper-topic input"), "staff")
    lab.settle(page)
    console.locator(".bureau-whisper").click()

    expect(console.locator(".bureau-log")).to_contain_text(
        re.compile(r"whispered card \S+ to suspect"), timeout=KERNEL_WORK_MS)
    expect(chief.locator('[data-space="suspect"]')).to_contain_text("Albert Finch")
    expect(chief.locator('[data-space="detective"]')).not_to_contain_text("Albert Finch")
    # The detective's live view: one more locked tile in the suspect's column, never its text.
    expect(suspect_count).to_have_text(str(before + 1), timeout=KERNEL_WORK_MS)
    expect(detective.locator('[data-space="suspect"] .bureau-card.locked')).to_have_count(before + 1)
    expect(detective).not_to_contain_text("Albert Finch")
    expect(console.locator(".bureau-whisper-text input")).to_have_value("")

    # The check cell now agrees.
    index = lab.run_cell(page, 'check("01-gardener"')
    verdict = lab.cell(page, index).locator(".bureau-verdictbox")
    expect(verdict).to_have_attribute("data-ok", "true", timeout=KERNEL_WORK_MS)
    expect(verdict).to_contain_text("Only the suspect knows")

    console.screenshot(path=str(screenshot_dir / "lab-01-console-after-whisper.png"))
    lab.shutdown_kernel(page)


def test_lesson_02_ask_and_read_the_xray(page, lab, screenshot_dir):
    lab.open(page, "02_interrogate.ipynb")
    lab.run_all(page)

    console = page.locator(".bureau-console")
    xray = console.locator(".bureau-xray")
    answer = console.locator(".bureau-answer")
    expect(xray).to_contain_text("ask a question to see which spaces were searched")
    # The lesson's own X-ray (the question its code asked) and its console, as its run leaves
    # them: lesson 02's pictures on the site.
    lab.settle(page)
    alone = page.locator(".bureau-xray:not(.bureau-console .bureau-xray)")
    expect(alone).to_have_count(1)
    expect(alone).to_contain_text("Memory X-ray")
    picture(alone, screenshot_dir / "lab-02-xray.png")
    picture(console, screenshot_dir / "lab-02-console.png")

    question = "Where were you on Friday night?"
    act_as(page, lab, console, "Suspect")
    type_into(page, console.locator(".bureau-question input"), question)
    lab.settle(page)
    console.locator(".bureau-ask").click()

    expect(xray).to_contain_text("Memory X-ray — suspect", timeout=KERNEL_WORK_MS)
    expect(xray).to_contain_text(f"Question: “{question}”")
    expect(xray.locator('.bureau-xray-scope[data-scope="suspect"]')).to_contain_text("1 hit(s)")
    expect(xray.locator('.bureau-xray-scope[data-scope="suspect"] tr.hit')).to_contain_text(
        "Rialto")
    expect(xray.locator(".bureau-xray-scope")).to_have_count(2)  # own space + board, no other
    expect(answer.locator(".bureau-answerbox")).to_have_attribute("data-known", "true")
    expect(answer).to_contain_text("Rialto")
    xray.screenshot(path=str(screenshot_dir / "lab-02-xray-after-question.png"))

    # Same question, another role: the X-ray changes to a miss in the detective's own space.
    act_as(page, lab, console, "Detective")
    console.locator(".bureau-ask").click()
    expect(xray).to_contain_text("Memory X-ray — detective", timeout=KERNEL_WORK_MS)
    expect(xray.locator('.bureau-xray-scope[data-scope="detective"]')).to_contain_text("miss")
    expect(xray.locator('.bureau-xray-scope[data-scope="suspect"]')).to_have_count(0)
    expect(xray).not_to_contain_text("Rialto")
    expect(answer.locator(".bureau-answerbox")).to_have_attribute("data-known", "false")
    console.screenshot(path=str(screenshot_dir / "lab-02-console-after-questions.png"))
    lab.shutdown_kernel(page)


def test_lesson_03_publish_reaches_the_projector(page, lab, browser, voila_server, screenshot_dir):
    """Lesson 03 run top to bottom, then one more publish with a click in its console: the
    projector (stage.ipynb in Voilà, another process) shows the board copy and never a private
    text. The console, as the lesson's run leaves it, is lesson 03's picture on the site."""
    lab.open(page, "03_publish.ipynb")
    lab.run_all(page)

    console = page.locator(".bureau-console")
    picked = console.locator(".bureau-case-picker select option:checked").inner_text()
    found = re.search(r"(safe-combination-\w+)", picked)
    assert found, f"the console's case picker shows no case: {picked!r}"
    case_id = found.group(1)
    chief = console.locator('.bureau-spaces-body[data-viewer="chief"]')
    board = chief.locator('[data-space="board"]')
    # After the lesson ran: the safe code and (after the crash, recover and retry) the CCTV card.
    expect(board.locator(".bureau-card")).to_have_count(2)
    expect(board).not_to_contain_text("size 43")
    lab.settle(page)
    picture(console, screenshot_dir / "lab-03-console.png")  # as the lesson's run leaves it

    # The projector: stage.ipynb through Voilà, another window, another kernel and process.
    projector_ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        projector = projector_ctx.new_page()
        projector.goto(f"{voila_server.url}/voila/render/notebooks/stage.ipynb")
        remote = projector.locator(f'.bureau-stage-body[data-case-id="{case_id}"]')
        expect(remote).to_contain_text("bulletin board (2)", timeout=90_000)

        # Publish the detective's boot print (the lesson's exercise card) with a click.
        act_as(page, lab, console, "Detective")
        row = console.locator(".bureau-publish-row", has_text="size 43")
        button = row.locator(".bureau-publish")
        expect(button).to_have_text("Publish")
        button.click()
        expect(button).to_have_text("On board ✓", timeout=KERNEL_WORK_MS)
        expect(button).to_be_disabled()
        expect(console.locator(".bureau-log")).to_contain_text(
            re.compile(r"published card \S+ of detective as board copy"))
        expect(board.locator(".bureau-card", has_text="size 43")).to_contain_text(
            "from detective", timeout=KERNEL_WORK_MS)

        # The projector picks the publish up by polling the shared ledger.
        expect(remote).to_contain_text("bulletin board (3)", timeout=KERNEL_WORK_MS)
        expect(remote.locator(".bureau-stage-board")).to_contain_text("size 43")
        # ... and still shows no private text: the butler's evenings, the suspect's alibi.
        for private in ("Dover", "Rialto"):
            expect(projector.locator("body")).not_to_contain_text(private)

        lab.settle(page)
        console.screenshot(path=str(screenshot_dir / "lab-03-console-after-publish.png"))
        projector.screenshot(path=str(screenshot_dir / "voila-03-projector-after-publish.png"),
                             full_page=True)
    finally:
        projector_ctx.close()
    lab.shutdown_kernel(page)
