"""Lesson 06, "A real voice": a real model phrases the bureau's decision, and is overruled when it
invents (issue 52). The lesson's cells are thin calls into this module.

* :func:`status`: which voice the lesson has, and how to get a real one when it has none;
* :func:`overruled`: one request whose cards do not answer, asked through the lesson's voice; a
  real model invents an answer from them (both Qwen sizes did, 4 of 4), the phrasing check
  rejects it and the bureau's decision is given instead. Without a real model the reply measured
  with Qwen2.5 1.5B is put through the same check, and said to be a recording;
* :func:`blind_spot`: what the check cannot catch, measured (:mod:`bureau.voice.blind_spot`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..responders import EvidenceResponder
from ..responders.llm import LLMResponder, evidence_packet
from ..responders.phrasing import QUESTION_NOT_IN_CARDS, UNSUPPORTED_FACT, check_phrasing
from ..standin.model import Voice
from ..voice.blind_spot import BlindSpot, measure
from ..voice.requests import REQUESTS, VoiceRequest, evidence, trace

MEASURED_REPLY = ("The combination of the safe in the study is a grey raincoat and a size 43 "
                  "muddy boot print.")
"""Qwen2.5-1.5B-Instruct's reply to the first request below (docs/voice.md), word for word."""
HOW_TO = """No real model in this lesson: the voice is the stand-in, a teaching tool.
To hear the roles speak, once:
  1. make venv                      (installs the runtime, bureau[voice])
  2. download qwen2.5-1.5b-instruct-q4_k_m.gguf, 1.1 GB (docs/voice.md: where, and its sha256)
  3. BUREAU_VOICE_GGUF=/path/to/qwen2.5-1.5b-instruct-q4_k_m.gguf make lab
Everything else in this lesson runs the same without it."""


def status(voice: Voice) -> str:
    """Which voice the lesson has; without a real one, how to get it."""
    if voice.is_standin:
        return HOW_TO
    return f"The roles' voice: {voice.label}."


@dataclass(frozen=True)
class Overruled:
    request: VoiceRequest
    cards: tuple[str, ...]
    reply: str
    """What the model said (its ``answer``, or its whole reply when that was not JSON)."""
    rule: str | None
    """The rule that rejected it (``None``: it was accepted)."""
    unsupported: tuple[str, ...]
    answer: str
    """What the role answered: the bureau's decision."""
    live: bool
    """True: asked of the lesson's model now; False: the measured Qwen reply, replayed."""
    model: str

    def text(self) -> str:
        cards = "\n".join(f"  e{i}: {c}" for i, c in enumerate(self.cards, start=1))
        source = ("asked just now of " + self.model if self.live else
                  "measured with Qwen2.5-1.5B-Instruct (docs/voice.md), put through the same "
                  "check now")
        verdict = f"rejected: {self.rule}" if self.rule else "accepted"
        if self.unsupported:
            verdict += f" (no cited card holds: {', '.join(self.unsupported)})"
        reply = self.reply if len(self.reply) <= 300 else self.reply[:300] + " …"
        return (f"asked: {self.request.question}  (one of the voice's test requests, from the "
                f"safe-combination case, whatever case you play)\n"
                f"cards handed over as the search's hits (they do not hold the answer):\n{cards}\n"
                f"the model replied ({source}):\n  {reply}\n"
                f"the bureau: {verdict}\n"
                f"the role answered with the evidence voice instead (it repeats what the cards say, "
                f"and nothing they do not):\n  {self.answer}")

    def __repr__(self) -> str:
        return self.text()


def _replayed(request: VoiceRequest) -> Overruled:
    cards = evidence(request)
    decision = EvidenceResponder().respond(request.role, request.question, cards, trace(request))
    sources = [p["source"] for p in evidence_packet(cards)]
    check = check_phrasing(MEASURED_REPLY, True, [c.content for c in cards],
                           decided_known=decision.known, question=request.question,
                           allowed=[request.role, *sources])
    return Overruled(request, tuple(c.content for c in cards), MEASURED_REPLY, check.reason,
                     check.unsupported, decision.text, False, "Qwen2.5-1.5B-Instruct")


def overruled(voice: Voice, tries: int = 4) -> Overruled:
    """One invented answer from cards that do not answer, and the bureau overruling it.

    With a real model (local or a provider) the four such requests (the first ``tries``) are
    asked in turn until the model invents one that the check rejects (on a busy 2-core laptop each takes up to the
    voice's timeout); the last one asked is shown if the model invented none. With the stand-in,
    the measured Qwen reply is replayed through the same check."""
    requests = [r for r in REQUESTS if r.kind == "does not answer"]
    responder = voice.responder
    if voice.is_standin or not isinstance(responder, LLMResponder):
        return _replayed(requests[0])
    shown: Overruled | None = None
    for request in requests[:max(1, tries)]:
        cards = evidence(request)
        a = responder.respond(request.role, request.question, cards, trace(request))
        ex = a.exchange
        parsed = ex.parsed if ex is not None and ex.parsed else {}
        shown = Overruled(request, tuple(c.content for c in cards),
                          str(parsed.get("answer", ex.raw_reply if ex else "(no call)")),
                          a.fallback_reason, ex.unsupported if ex else (), a.text, True,
                          voice.label)
        if a.fallback_reason in (QUESTION_NOT_IN_CARDS, UNSUPPORTED_FACT):
            return shown
    assert shown is not None
    return shown


def blind_spot() -> BlindSpot:
    """Every fact swap between two cards of a shipped scenario, read by the check."""
    return measure()


__all__ = ["HOW_TO", "MEASURED_REPLY", "Overruled", "blind_spot", "overruled", "status"]
