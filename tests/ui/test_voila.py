"""The projector stage (notebooks/stage.ipynb) served by Voilà: board and counts, never private text.

A separate process seeds a case into the servers' data dir first: "The mole" with one extra
whisper (a secret), one publish and one interrogation. The stage notebook follows the most recent
case, so it must show that case: the counts per role, the published card, the last retrieval's
roles and scopes, and nothing a role holds privately, nor the question that was asked.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("playwright", reason="Playwright is not installed (pip install -e '.[ui]')")
from playwright.sync_api import expect  # noqa: E402

pytestmark = pytest.mark.ui

SECRET = "The harbourmaster hides the bribe money in a biscuit tin behind the radio."
QUESTION = "Who is paying the harbourmaster for false tips?"

SEED = f"""
import json
from bureau import Bureau
from bureau.game import score
from bureau.scenario import load_scenario

bureau = Bureau.open()
case = bureau.load_scenario("the-mole")
case.whisper("harbourmaster", {SECRET!r}, topic="bribe", kind="secret")
published = case.publish("informant", case.seed_card("true-tip").id)
case.interrogate("detective", {QUESTION!r})
scenario = load_scenario("the-mole")
private = [m.content for ms in scenario.memories.values() for m in ms
           if m.content != published.content]
print(json.dumps({{
    "case_id": case.id,
    "title": scenario.title,
    "counts": case.stage()["private_counts"],
    "published": published.content,
    "private": private + [{SECRET!r}],
    "numbers": score(case).numbers(),
    "case_file": scenario.case_file.model_dump(),
    "rules": [r.text for r in score(case).rules],
}}))
"""


@pytest.fixture(scope="module")
def seeded(server_env: dict[str, str], ui_tmp: Path) -> dict:
    """Seed the shared data dir from another process, as an operator's console would."""
    proc = subprocess.run(
        [sys.executable, "-c", SEED], env=server_env, cwd=ui_tmp, text=True,
        capture_output=True, timeout=180,
    )
    assert proc.returncode == 0, f"seeding failed:\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_stage_in_voila_shows_board_and_counts_never_private_text(
    page, voila_server, seeded, screenshot_dir
):
    page.goto(f"{voila_server.url}/voila/render/notebooks/stage.ipynb")
    body = page.locator(f'.bureau-stage-body[data-case-id="{seeded["case_id"]}"]')
    expect(body).to_be_visible(timeout=90_000)
    expect(body).to_contain_text(seeded["title"])

    # Counts per role, as numbers only.
    counts = seeded["counts"]
    assert counts == {"detective": 1, "informant": 2, "harbourmaster": 3}
    for role, n in counts.items():
        expect(body.locator(f'[data-role="{role}"] .bureau-count')).to_have_text(f"🔒 {n}")

    # The board: exactly the published copy, with its source.
    board = body.locator(".bureau-stage-board .bureau-card")
    expect(board).to_have_count(1)
    expect(board).to_contain_text(seeded["published"])
    expect(board).to_contain_text("from informant")
    expect(body).to_contain_text("bulletin board (1)")

    # The last retrieval: who searched which spaces, no question text.
    retrieval = body.locator(".bureau-stage-retrieval")
    expect(retrieval).to_contain_text("detective searched detective + bulletin board")
    expect(body.locator(".bureau-stage-ticker")).to_contain_text("answered by detective")

    # Never private text, nor the question, nor code (Voilà hides the cells' sources).
    text = page.locator("body").inner_text()
    html = page.content()
    for private in seeded["private"]:
        assert private not in text, f"private card shown on the stage: {private!r}"
    assert "biscuit tin" not in html
    assert QUESTION not in text and "paying the harbourmaster" not in html
    assert "make_stage(" not in text and "Traceback" not in text

    # The case file (issue 49): its goal and question, the score's numbers; nothing else of it.
    cf, numbers = seeded["case_file"], seeded["numbers"]
    block = body.locator(".bureau-stage-case")
    expect(block.locator(".bureau-stage-status")).to_have_text(numbers["status"])
    expect(block.locator(".bureau-stage-moves")).to_have_text(str(numbers["moves"]))
    expect(block.locator(".bureau-stage-rules")).to_have_text(
        f'{numbers["rules_kept"]}/{numbers["rules"]}')
    expect(block).to_contain_text(cf["question"])
    shown = block.inner_text()
    hidden = [*cf["answer"], *(rule["why"] for rule in cf["never"]), *seeded["rules"]]
    assert not [t for t in hidden if t in shown or t in text.replace(seeded["published"], "")]

    page.screenshot(path=str(screenshot_dir / "voila-stage.png"), full_page=True)

