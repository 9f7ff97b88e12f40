"""The instructor's page (notebooks/instructor.ipynb) served by Voilà, for a room of three
learners on a real classroom server: one row each, numbers only.

Ann works for real in her own process (her bureau in her tenant: the mole, a whispered secret,
a publish, an interrogation, the case's question asked and the case solved, a passed check and
a quiz answer); Ben and Cal write only progress, each with their own account (Ben also saves a
prediction, whose text must not show, and a lost case's score).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, _start, free_port, stop_server, wait_http

from bureau.classroom import progress as tenant_progress
from bureau.classroom import tenants
from bureau.scenario import load_scenario
from bureau.settings import ServerSettings
from bureau.tenancy.connection import read_connection

pytest.importorskip("playwright", reason="Playwright is not installed (pip install -e '.[ui]')")
from playwright.sync_api import expect  # noqa: E402

pytestmark = pytest.mark.ui

SECRET = "The harbourmaster keeps the ledger of bribes under the lighthouse stairs."
QUESTION = "Where are the harbourmaster's bribe records kept?"
PREDICTION = "I predict the detective will not know about the lighthouse."

ANN = f"""
import json
from bureau import Bureau
from bureau.course import progress
from bureau.game import record_case_progress

bureau = Bureau.open()
case = bureau.load_scenario("the-mole")
case.whisper("harbourmaster", {SECRET!r}, topic="bribe", kind="secret")
case.publish("informant", case.seed_card("true-tip").id)
case.interrogate("detective", {QUESTION!r})
case.interrogate("detective", case.scenario.case_file.question)  # solved: the true tip cited
assert record_case_progress(bureau, case).status == "solved"
progress.record(bureau.settings.data_dir, "check", "01-whisper", True)
progress.record(bureau.settings.data_dir, "check", "02-threshold", True)
progress.record(bureau.settings.data_dir, "quiz", "q01-1", True, "1")
progress.record(bureau.settings.data_dir, "quiz", "q01-2", False, "0")
print(json.dumps({{"case_id": case.id, "counts": case.stage()["private_counts"]}}))
"""


def _as_learner(directory: Path, learner: str) -> ServerSettings:
    c = read_connection(tenants.Roster.load(directory).connection_file(learner))
    return ServerSettings(host=c.host, port=c.port, user=c.user, password=c.password,
                          db_name=c.database)


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    directory = tmp_path_factory.mktemp("classroom-ui") / "room"
    tenants.start(directory)
    try:
        for learner in ("ann", "ben", "cal"):
            tenants.add(directory, learner)
        roster = tenants.Roster.load(directory)
        env = {**os.environ, "PYTHONPATH": str(REPO),
               "BUREAU_DATA_DIR": str(directory.parent / "ann-data"),
               "BUREAU_CLASSROOM": str(roster.connection_file("ann"))}
        env.pop("BUREAU_SEEKDB_HOST", None)
        ann = subprocess.run([sys.executable, "-c", ANN], env=env, capture_output=True,
                             text=True, timeout=240)
        assert ann.returncode == 0, ann.stderr[-3000:]
        ben = _as_learner(directory, "ben")
        tenant_progress.record(ben, ("01", "check", "01-whisper", 1, None))
        tenant_progress.record(ben, ("01", "prediction", "01-guess", None, PREDICTION))
        tenant_progress.record(ben, ("01", "quiz", "q01-1", 0, "2"))
        tenant_progress.record_case(ben, ("ward-seven-1", "ward-seven", "lost", 2, 1, 2))
        yield {"directory": directory, "ann": json.loads(ann.stdout.strip().splitlines()[-1])}
    finally:
        tenants.teardown(directory)


@pytest.fixture(scope="module")
def instructor_voila(room, served_root, server_env, ui_tmp):
    """Voilà as `make instructor` starts it: BUREAU_CLASSROOM_DIR names the classroom."""
    port = free_port()
    server = _start(
        "Voila (instructor)",
        [sys.executable, "-m", "voila", "--no-browser", f"--port={port}", "--Voila.ip=127.0.0.1",
         "--show_tracebacks=True", f"--Voila.root_dir={served_root}"],
        {**server_env, "BUREAU_CLASSROOM_DIR": str(room["directory"])},
        ui_tmp / "voila-instructor.log", served_root, f"http://127.0.0.1:{port}")
    try:
        wait_http(server, "/")
        yield server
    finally:
        stop_server(server)


def test_instructor_page_shows_one_row_per_learner_and_numbers_only(
    page, instructor_voila, room, screenshot_dir
):
    page.goto(f"{instructor_voila.url}/voila/render/notebooks/instructor.ipynb")
    table = page.locator(".bureau-instructor-table")
    expect(table).to_be_visible(timeout=120_000)
    expect(page.locator(".bureau-instructor")).to_contain_text("3 learners")

    ann = table.locator('tr[data-learner="ann"]')
    expect(ann.locator(".lessons")).to_have_text("01, 02")
    expect(ann.locator(".checks")).to_have_text("2")
    expect(ann.locator(".quiz")).to_have_text("1/2")
    expect(ann.locator(".case")).to_have_text(room["ann"]["case_id"])
    for role, n in room["ann"]["counts"].items():
        expect(ann.locator(f'[data-role="{role}"]')).to_have_text(f"{role} {n}")
    expect(ann.locator(".board")).to_have_text("1")
    expect(ann.locator(".cases-solved")).to_have_text("1")
    expect(ann.locator(".cases-lost")).to_have_text("0")
    expect(ann.locator(".moves")).to_have_text("4")  # whisper, publish, 2 interrogations
    expect(ann.locator(".rules")).to_have_text("3/3")

    ben = table.locator('tr[data-learner="ben"]')
    expect(ben.locator(".checks")).to_have_text("1")
    expect(ben.locator(".quiz")).to_have_text("0/1")
    expect(ben.locator(".case")).to_have_text("—")
    expect(ben.locator(".cases-lost")).to_have_text("1")
    expect(ben.locator(".rules")).to_have_text("1/2")
    cal = table.locator('tr[data-learner="cal"]')
    expect(cal.locator(".checks")).to_have_text("0")
    expect(cal.locator(".quiz")).to_have_text("0/0")
    expect(cal.locator(".cases-solved")).to_have_text("0")
    expect(cal.locator(".rules")).to_have_text("0/0")

    html = page.content()
    cf = load_scenario("the-mole").case_file
    for text in (SECRET, "lighthouse", QUESTION, PREDICTION, "room_page(", cf.question,
                 *cf.answer):
        assert text not in html, f"the instructor's page shows {text!r}"
    assert "Traceback" not in page.locator("body").inner_text()
    page.screenshot(path=str(screenshot_dir / "voila-instructor.png"), full_page=True)
