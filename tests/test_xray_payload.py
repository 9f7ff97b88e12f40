"""The X-ray's model payload (lesson 06): exactly what was sent to the model and what came back.

Driven through the real LLM responder against the stand-in model on 127.0.0.1; no kernel.
"""

from __future__ import annotations

import html

import pytest

from bureau.course.widgets import make_xray, xray_html
from bureau.course.widgets.xray import payload_html
from bureau.responders.llm import SYSTEM
from bureau.standin.model import StandinModel

SAFE_Q = "What is the combination of the safe in the study?"


@pytest.fixture
def voiced(bureau, case):
    original = bureau.responder
    with StandinModel("obedient") as model:
        bureau.responder = model.responder(timeout_s=2)
        try:
            yield case, model
        finally:
            bureau.responder = original


def test_payload_shows_prompt_question_packet_reply_and_verdict(voiced):
    case, model = voiced
    answer = case.interrogate("informant", SAFE_Q)
    page = xray_html(answer)
    ex = answer.exchange
    assert 'class="bureau-payload"' in page and 'data-accepted="true"' in page
    assert html.escape(SYSTEM.format(role="informant"), quote=True) in page
    assert html.escape(SAFE_Q) in page
    card = case.seed_card("safe-code")
    assert f'data-ref="e1" data-card-id="{card.id}"' in page and card.content in page
    assert html.escape(ex.raw_reply, quote=True) in page
    assert "stand-in model: a teaching and test tool" in page
    # The retrieval part is unchanged: the trace alone renders no payload.
    assert "bureau-payload" not in xray_html(answer.trace)


def test_payload_shows_the_fallback_reason_of_a_rejected_reply(voiced):
    case, model = voiced
    model.script('{"answer": "It is 0427.", "known": true, "cited": ["e7"]}')
    answer = case.interrogate("informant", SAFE_Q)
    page = xray_html(answer)
    assert 'data-accepted="false"' in page and "citation outside the packet" in page
    assert "the evidence responder answered" in page


def test_payload_escapes_card_text_and_says_when_nothing_was_sent(voiced):
    case, model = voiced
    case.whisper("suspect", "<img src=x onerror=alert(1)> The gardener is called Albert Finch.",
                 topic="staff")
    answer = case.interrogate("suspect", "What is the name of the gardener?")
    page = xray_html(answer)
    assert "<img src=x" not in page and "&lt;img src=x" in page
    silent = case.interrogate("detective", "Who is the victim's lawyer?")
    assert silent.exchange is None
    assert 'data-called="false"' in xray_html(silent) and "nothing was sent" in xray_html(silent)
    assert 'data-called="false"' in payload_html(None)


def test_xray_widget_shows_an_answer_with_its_payload(voiced):
    case, _ = voiced
    answer = case.interrogate("informant", SAFE_Q)
    box, state = make_xray(answer)
    assert state.exchange is answer.exchange and state.trace is answer.trace
    assert "bureau-payload" in state.html.value
    state.show(answer.trace)  # a bare trace: no payload, no stale exchange
    assert state.exchange is None and "bureau-payload" not in state.html.value
    assert len(state.history) == 2


def test_evidence_mode_answers_have_no_payload(bureau, case):
    answer = case.interrogate("informant", SAFE_Q)
    assert answer.exchange is None and "bureau-payload" not in xray_html(answer)
