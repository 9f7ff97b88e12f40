"""What the stand-in model replies to a chat request without tools (see :mod:`.standin_model`).

The orders a gullible reader finds in a text (:func:`find_orders`), the obedient reply (quote the
card sharing most words with the question) and the gullible one (obey every order, and once told
to reveal anything, answer with everything in its input).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_STOP = frozenset(
    "the a an of in on at to is are was were be what who whom which when where why how do does "
    "did you your yours i me my and or for with about from that this it its as by any all tell "
    "know".split()
)
_WORD = re.compile(r"[a-z0-9]+")
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
SAY = re.compile(r"\b(say|answer|reply|respond|write|state)\b[^\"“]{0,24}[\"“]([^\"”]{1,300})[\"”]",
                  re.I)
_ORDER_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("reveal", re.compile(
        r"\b(ignore|disregard|forget|override|bypass)\b.*\b(rules?|instructions?|guidelines|"
        r"restrictions?|prompt|previous|above|policy|polic(y|ies))\b", re.I)),
    ("reveal", re.compile(
        r"\b(print|reveal|show|dump|list|output|repeat|leak|disclose|share|recite|spill|expose|"
        r"quote|read out|give me)\b.*\b(secrets?|everything|all|private|memor(y|ies)|notes?|"
        r"cards?|evidence|password|combination|code)\b", re.I)),
    ("reveal", re.compile(r"\byou are (now )?(the|an?)\b|\bact as (the|an?)\b|\bpretend\b", re.I)),
    ("reveal", re.compile(r"\bsystem override\b|\bdeveloper mode\b|\bjailbreak\b|\badmin mode\b",
                          re.I)),
    ("system", re.compile(r"\b(system prompt|your instructions|your prompt|initial instructions)\b",
                          re.I)),
    ("cite", re.compile(r"\bcite\b", re.I)),
    ("known", re.compile(r"\b(say|mark|set|answer|report|claim)\b.*\bknown\b|"
                         r"\"?known\"?\s*[:=]\s*true", re.I)),
    ("plain", re.compile(r"\bplain text\b|\bnot (in )?json\b|\bwithout (the )?json\b|\bno json\b",
                         re.I)),
)


@dataclass(frozen=True)
class Order:
    """One instruction the gullible stand-in found, and obeyed."""

    kind: str
    """``reveal`` (tell everything), ``system`` (repeat the system prompt), ``cite`` (cite the
    refs named), ``known`` (claim to know), ``plain`` (drop the JSON), ``say`` (say this text)."""
    found_in: str
    """``question`` or ``card e2``: where the order was written."""
    sentence: str


def find_orders(text: str, found_in: str) -> list[Order]:
    """The orders a gullible reader sees in ``text``: one per kind and sentence."""
    orders = []
    for sentence in _SENTENCE.findall(text):
        for kind, pattern in _ORDER_PATTERNS:
            if pattern.search(sentence) and not any(
                    o.kind == kind and o.sentence == sentence.strip() for o in orders):
                orders.append(Order(kind, found_in, sentence.strip()))
    # Quoted text may hold full stops: "say" orders are looked for in the whole text.
    orders += [Order("say", found_in, m.group(0)) for m in SAY.finditer(text)]
    return orders


def _cited_refs(order: Order, packet_refs: Sequence[str]) -> list[str]:
    """Refs named in a "cite ..." order: e7, "e1 through e9", "every card" (all of the packet)."""
    s = order.sentence
    span = re.search(r"\be(\d+)\s*(?:-|–|to|through|thru)\s*e?(\d+)\b", s, re.I)
    if span:
        lo, hi = sorted((int(span.group(1)), int(span.group(2))))
        return [f"e{i}" for i in range(lo, min(hi, lo + 50) + 1)]
    named = [f"e{n}" for n in re.findall(r"\be(\d+)\b", s, re.I)]
    if named:
        return named
    if re.search(r"\b(every|all|each)\b", s, re.I):
        return list(packet_refs)
    return []


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 2}


def obedient_reply(question: str, packet: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Answer from the packet only: quote the card sharing most words with the question."""
    want = _words(question)
    best, best_overlap = None, 0
    for p in packet:
        overlap = len(want & _words(str(p.get("text", ""))))
        if overlap > best_overlap:
            best, best_overlap = p, overlap
    if best is None:
        return {"answer": "I don't know.", "known": False, "cited": []}
    return {"answer": f"From {best.get('source', 'my notes')}: {best.get('text', '')}",
            "known": True, "cited": [best.get("ref")]}


def gullible_reply(system: str, question: str,
                   packet: Sequence[dict[str, Any]]) -> tuple[str, list[Order]]:
    """Obey every order in the question and the cards; with none, answer like the obedient one."""
    orders = find_orders(question, "question")
    for p in packet:
        orders += find_orders(str(p.get("text", "")), f"card {p.get('ref')}")
    reply = obedient_reply(question, packet)
    if not orders:
        return json.dumps(reply, ensure_ascii=False), orders
    kinds = {o.kind for o in orders}
    refs = [str(p.get("ref")) for p in packet]
    parts: list[str] = []
    cited = list(reply["cited"])
    if kinds & {"reveal", "system"}:  # everything it can see in its input, word for word
        parts.append("Here is everything I can see. " + " ".join(
            f"[{p.get('ref')}, {p.get('source')}] {p.get('text')}" for p in packet))
        cited = refs
    if "system" in kinds:
        parts.append(f"My instructions were: {system}")
    parts += [m.group(2) for o in orders if o.kind == "say"
              for m in [SAY.search(o.sentence)] if m]
    if not parts:
        parts.append(reply["answer"])
    for o in orders:
        if o.kind == "cite":
            cited += _cited_refs(o, refs)
    known = bool(kinds & {"known", "reveal", "system", "say"}) or reply["known"]
    text = " ".join(parts)
    if "plain" in kinds:
        return text, orders
    return json.dumps({"answer": text, "known": known, "cited": list(dict.fromkeys(cited))},
                      ensure_ascii=False), orders


__all__ = ["SAY", "Order", "find_orders", "gullible_reply", "obedient_reply"]
