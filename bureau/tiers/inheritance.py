"""What a value written by hand inherits from untrusted text it copies (issue 19 §4).

A board copy or a promoted copy is made by the bureau from one card, so it simply carries that
card's labels (``publish._copy_meta``, ``Runs._promote_card``). A task-scope value is different:
a member writes *text*. An agent driven by a model that obeys what it reads will paste a fetched
page into a shared scope, and before this rule the scope labelled that paste ``trusted``, so the
other members' models received tool output as if the operator had vouched for it.

The rule: a written text that repeats a passage of an untrusted card its writer could see
(its live runs' tool output, its promoted tool output, untrusted board copies and scope values)
is itself untrusted, with that card's tool source. A *passage* is any run of
:data:`PASSAGE_CHARS` characters after case and white space are folded, or the whole card when
it is shorter (but at least :data:`MIN_CARD_CHARS`). That catches a copy, in full or in part,
which is what an obedient model produces; a paraphrase, like text retyped by hand, is outside
what any label can follow (the threat model, docs/threat-model.md, says so).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from .provenance import UNTRUSTED, is_untrusted

if TYPE_CHECKING:
    from ..model import MemoryCard

PASSAGE_CHARS = 32
"""A shared run this long (folded) makes a copy."""
MIN_CARD_CHARS = 12
"""Shorter untrusted cards ("yes", "ok") are too common to call any text that holds them a copy."""

_SPACE = re.compile(r"\s+")


def fold(text: str) -> str:
    """Case and white space folded, so re-spacing or re-casing a paste does not clean it."""
    return _SPACE.sub(" ", text.casefold()).strip()


def _passages(folded: str) -> set[str]:
    return {folded[i:i + PASSAGE_CHARS] for i in range(len(folded) - PASSAGE_CHARS + 1)}


def copied_from(text: str, seen: Iterable[MemoryCard]) -> MemoryCard | None:
    """The first untrusted card of ``seen`` whose passage ``text`` repeats, else ``None``."""
    folded = fold(text)
    mine: set[str] | None = None
    for card in seen:
        if not is_untrusted(card):
            continue
        theirs = fold(card.content)
        if len(theirs) < MIN_CARD_CHARS:
            continue
        if len(theirs) <= PASSAGE_CHARS or len(folded) < PASSAGE_CHARS:
            if theirs in folded or (len(folded) >= MIN_CARD_CHARS and folded in theirs):
                return card
            continue
        if mine is None:
            mine = _passages(folded)
        if not mine.isdisjoint(_passages(theirs)):
            return card
    return None


def inherited_meta(text: str, seen: Iterable[MemoryCard]) -> dict[str, str]:
    """The labels a written value takes from what it copies: none when it copies nothing
    untrusted; else ``trust: untrusted``, provenance ``tool-output``, the tool source and the
    copied card's id (``copied_from``)."""
    card = copied_from(text, seen)
    if card is None:
        return {}
    meta = {"provenance": "tool-output", "trust": UNTRUSTED, "copied_from": card.id}
    if card.tool_source:
        meta["tool_source"] = card.tool_source
    return meta


__all__ = ["MIN_CARD_CHARS", "PASSAGE_CHARS", "copied_from", "fold", "inherited_meta"]
