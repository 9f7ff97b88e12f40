"""The opt-in LLM voice, against a real OpenAI-compatible HTTP server on 127.0.0.1.

The server is scripted (no model), which is the point: whatever the "model" replies, a role can
never know more than the evidence it was handed.
"""

from __future__ import annotations

import json

import pytest
from fake_openai import FakeOpenAI

from bureau.errors import ConfigurationError
from bureau.responders.llm import LLMResponder
from bureau.settings import LLMSettings

SAFE_Q = "What is the combination of the safe in the study?"


@pytest.fixture
def chat(monkeypatch):
    monkeypatch.setenv("BUREAU_TEST_LLM_KEY", "test-key")
    fake = FakeOpenAI()
    yield fake
    fake.close()


@pytest.fixture
def llm_case(bureau, case, chat):
    original = bureau.responder
    bureau.responder = LLMResponder(
        LLMSettings(model="scripted", base_url=chat.url, api_key_env="BUREAU_TEST_LLM_KEY"))
    yield case
    bureau.responder = original


def test_llm_phrases_only_the_evidence_it_was_handed(llm_case, chat):
    chat.replies.append('{"answer": "It is 0427, I am sure.", "known": true, "cited": ["e1"]}')
    answer = llm_case.interrogate("informant", SAFE_Q)
    assert (answer.text, answer.known, answer.responder) == ("It is 0427, I am sure.", True, "llm")
    assert answer.cited == (llm_case.seed_card("safe-code").id,)
    sent = json.dumps(chat.requests[0])
    assert "0427" in sent and "size 43" not in sent and "Rialto" not in sent


def test_no_evidence_means_no_call_and_i_dont_know(llm_case, chat):
    answer = llm_case.interrogate("detective", SAFE_Q)
    assert answer.text == "I don't know." and not answer.known and chat.requests == []


@pytest.mark.parametrize("reply, reason", [
    ('{"answer": "It is 0427.", "known": true, "cited": ["e7"]}', "citation outside the packet"),
    ('{"answer": "It is 0427.", "known": true, "cited": []}', "known without a citation"),
    ("The combination is 0427.", "JSONDecodeError"),
    ('{"answer": 42, "known": "yes"}', "malformed reply"),
    (500, "InternalServerError"),
])
def test_bad_replies_fall_back_to_evidence_mode(llm_case, chat, reply, reason):
    chat.replies.append(reply)
    answer = llm_case.interrogate("informant", SAFE_Q)
    assert answer.responder == "evidence" and reason in (answer.fallback_reason or "")
    assert answer.known and answer.cited == (llm_case.seed_card("safe-code").id,)
    event = [e for e in llm_case.events() if e.type == "answer.completed"][-1]
    assert reason in event.payload["fallback_reason"]


def test_missing_key_is_a_clear_configuration_error(monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    with pytest.raises(ConfigurationError, match="NO_SUCH_KEY_VAR"):
        LLMResponder(LLMSettings(model="m", api_key_env="NO_SUCH_KEY_VAR"))
