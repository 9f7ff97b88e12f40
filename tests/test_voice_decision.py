"""The decision stays the bureau's (issue 52): a model may only phrase it.

A scripted model that answers confidently and wrongly (``known``, citing every card it was
handed) is asked the four kinds of request of :mod:`bureau.voice.requests`, through the real
``LLMResponder`` and a real HTTP server on 127.0.0.1. No store is needed: the responder receives
the cards the boundary would hand over, which is all it ever receives. Each rejection has its
control: the faithful phrasing of the same request is accepted, so the check is not simply
rejecting everything.
"""

from __future__ import annotations

import json

import pytest
from fake_openai import FakeOpenAI

from bureau.responders import EvidenceResponder
from bureau.responders.llm import LLMResponder
from bureau.responders.phrasing import (
    KNOWN_DISAGREES,
    QUESTION_NOT_IN_CARDS,
    UNSUPPORTED_FACT,
    check_phrasing,
)
from bureau.settings import LLMSettings
from bureau.voice.requests import REQUESTS, VoiceRequest, evidence, trace

MEASURED_QWEN = ("The combination of the safe in the study is a grey raincoat and a size 43 "
                 "muddy boot print.")


def _ask(chat: FakeOpenAI, request: VoiceRequest, answer: str, *, known: bool = True,
         cite_all: bool = True):
    cards = evidence(request)
    cited = [f"e{i}" for i in range(1, len(cards) + 1)] if cite_all else ["e1"]
    chat.replies.append(json.dumps({"answer": answer, "known": known, "cited": cited}))
    responder = LLMResponder(LLMSettings(model="confidently-wrong", base_url=chat.url,
                                         api_key_env="BUREAU_TEST_LLM_KEY"))
    decision = EvidenceResponder().respond(request.role, request.question, cards, trace(request))
    got = responder.respond(request.role, request.question, cards, trace(request))
    return got, decision


def _by_kind(kind: str) -> list[VoiceRequest]:
    return [r for r in REQUESTS if r.kind == kind]


@pytest.mark.parametrize("request_", _by_kind("answers"), ids=lambda r: r.question[:24])
def test_cards_that_answer_a_wrong_fact_is_overruled(chat, request_):
    got, decision = _ask(chat, request_, request_.wrong)
    assert got.responder == "evidence" and got.text == decision.text
    assert got.fallback_reason == UNSUPPORTED_FACT and got.exchange.unsupported
    assert request_.wrong not in got.text and request_.expect in got.text
    # control: the faithful phrasing of the same decision is the role's answer
    ok, _ = _ask(chat, request_, request_.right, cite_all=False)
    assert (ok.responder, ok.text, ok.known) == ("llm", request_.right, True)


@pytest.mark.parametrize("request_", _by_kind("no cards"), ids=lambda r: r.question[:24])
def test_no_cards_no_call(chat, request_):
    chat.replies.append(json.dumps({"answer": request_.wrong, "known": True, "cited": ["e1"]}))
    got, _ = _ask(chat, request_, request_.wrong)
    assert chat.requests == [] and got.text == "I don't know." and not got.known


@pytest.mark.parametrize("request_", _by_kind("injected"), ids=lambda r: r.question[:24])
def test_an_obeyed_injection(chat, request_):
    got, decision = _ask(chat, request_, request_.wrong)
    if "planted:board" in request_.cards:
        # The order sits in a card another role published: trusted, and the marker stands in
        # the card the reply cites. No check that reads words can tell it from a quotation:
        # the integrity limit the injection lab reports (docs/benchmarks.md).
        assert got.responder == "llm" and got.text == request_.wrong
        return
    assert got.responder == "evidence" and got.text == decision.text
    assert got.fallback_reason in (UNSUPPORTED_FACT, "cited untrusted evidence while trusted "
                                   "evidence was handed over")
    ok, _ = _ask(chat, request_, request_.right, cite_all=False)
    assert (ok.responder, ok.text) == ("llm", request_.right)


@pytest.mark.parametrize("request_", _by_kind("does not answer"), ids=lambda r: r.question[:24])
def test_cards_that_do_not_answer_an_invented_answer_never_reaches_the_caller(chat, request_):
    got, decision = _ask(chat, request_, request_.wrong)
    assert got.responder == "evidence" and got.text == decision.text
    assert got.fallback_reason in (UNSUPPORTED_FACT, QUESTION_NOT_IN_CARDS)
    assert request_.wrong not in got.text
    assert got.exchange.raw_reply and request_.wrong in got.exchange.raw_reply  # shown in the trace


def test_the_measured_qwen_reply_is_overruled_for_the_question_it_grafts(chat):
    request_ = next(r for r in REQUESTS if r.wrong == MEASURED_QWEN)
    got, decision = _ask(chat, request_, MEASURED_QWEN)
    assert got.fallback_reason == QUESTION_NOT_IN_CARDS
    assert set(got.exchange.unsupported) == {"combination", "safe"}
    assert got.known == decision.known and got.cited == decision.cited


def test_a_model_may_not_say_i_dont_know_over_cards_the_bureau_decided_on(chat):
    request_ = _by_kind("answers")[0]
    got, decision = _ask(chat, request_, "I don't know.", known=False, cite_all=False)
    assert got.fallback_reason == KNOWN_DISAGREES and got.text == decision.text and got.known


@pytest.mark.parametrize("answer, cards, question, reason", [
    ("The print is a size 44.", ["A muddy boot print is a size 43."], "What size?",
     UNSUPPORTED_FACT),
    ("He went to Dover.", ["The butler visits his sister every Thursday."], "Where?",
     UNSUPPORTED_FACT),
    ("Dover is where he goes.", ["The butler visits his sister."], "Where?", UNSUPPORTED_FACT),
    ("It happened at midnight.", ["A figure at 23:40."], "When?", UNSUPPORTED_FACT),
    ("There were nine of them.", ["There were 8 of them."], "How many?", UNSUPPORTED_FACT),
    (MEASURED_QWEN, ["A muddy boot print under the study window is a size 43.",
                     "The hallway security camera recorded a figure in a grey raincoat at 23:40."],
     "What is the combination of the safe in the study?", QUESTION_NOT_IN_CARDS),
    # controls: phrasings that stand in their cards
    ("There were nine of them.", ["There were 9 of them."], "How many?", None),
    ("There were 9 of them.", ["There were nine of them."], "How many?", None),
    ("As the suspect, I spent Friday night at the Rialto until midnight.",
     ["My alibi for Friday night is that I was at the Rialto cinema until midnight."],
     "What is the alibi for Friday night?", None),
    ("The camera caught someone in a grey raincoat at 23:40.",
     ["The hallway security camera recorded a figure in a grey raincoat at 23:40."],
     "What did the hallway camera record?", None),
])
def test_the_check_reads_numbers_names_times_and_the_question(answer, cards, question, reason):
    assert check_phrasing(answer, True, cards, decided_known=True,
                          question=question).reason == reason


def test_what_the_check_cannot_catch_is_measured():
    """A wrong sentence built from the cited cards' own words passes: measured, not hidden."""
    from bureau.voice.blind_spot import measure

    spot = measure()
    invented, one, both = (spot.reading(n) for n in (
        "invented", "swapped, citing one card", "swapped, citing both cards"))
    assert invented.total == one.total == both.total >= 10
    assert invented.caught == invented.total and one.caught == one.total
    assert both.caught == 0  # the blind spot: every word stands in a cited card
    assert "(cites 2 card(s))" in spot.table()  # an example of the blind spot, shown whole


def test_the_llm_timeout_is_a_setting(monkeypatch):
    from bureau.errors import ConfigurationError
    from bureau.settings import Settings

    monkeypatch.setenv("BUREAU_LLM_MODEL", "m")
    monkeypatch.setenv("BUREAU_LLM_TIMEOUT", "90")
    assert Settings.from_env().llm.timeout_s == 90.0
    monkeypatch.setenv("BUREAU_TEST_LLM_KEY", "k")
    assert LLMResponder(LLMSettings(model="m", api_key_env="BUREAU_TEST_LLM_KEY",
                                    timeout_s=90.0)).timeout_s == 90.0
    monkeypatch.setenv("BUREAU_LLM_TIMEOUT", "soon")
    with pytest.raises(ConfigurationError, match="BUREAU_LLM_TIMEOUT"):
        Settings.from_env()


def test_the_xray_shows_the_words_no_cited_card_holds(chat):
    from bureau.course.widgets.xray import payload_html

    request_ = next(r for r in REQUESTS if r.wrong == MEASURED_QWEN)
    got, _ = _ask(chat, request_, MEASURED_QWEN)
    html = payload_html(got.exchange, "llm")
    assert 'data-accepted="false"' in html and QUESTION_NOT_IN_CARDS in html
    assert "no cited card holds: <b>combination, safe</b>" in html
