"""Responders turn the evidence a role was handed into an answer.

A responder never searches: it receives only the cards the service decided this role may see
(after any mediator), so isolation cannot depend on what a responder, or an LLM behind it, is
told to do. The default ``EvidenceResponder`` needs no model: it quotes the most relevant card,
or says "I don't know" when nothing cleared the relevance threshold.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..model import BOARD, Answer, MemoryCard, RetrievalTrace
from ..task_scopes import scope_name_of
from ..tiers import is_untrusted, shown_source

UNKNOWN = "I don't know."


class Responder(Protocol):
    name: str

    def respond(
        self, role: str, question: str, evidence: Sequence[MemoryCard], trace: RetrievalTrace
    ) -> Answer: ...


def _source(card: MemoryCard) -> str:
    where = _where(card)
    if is_untrusted(card):  # tool output (issue 14): named as such, its text quoted as data;
        # the source is the tool's own claim, so it is quoted and cut short too (issue 19 §4)
        tool = f"untrusted tool output from {shown_source(card.tool_source)} (quoted, unverified)"
        return tool if where == "my private notes" else f"{where}: {tool}"
    return where


def _where(card: MemoryCard) -> str:
    if card.owner == BOARD:
        return f"the bulletin board (published by {card.source_role})"
    if scope_name_of(card.owner):  # a shared task scope's value (issue 14)
        return f"the task scope {scope_name_of(card.owner)} (written by {card.source_role})"
    return "my private notes"


def _text(card: MemoryCard) -> str:
    """A card's text as the answer shows it: untrusted text only inside quotation marks."""
    return f"“{card.content}”" if is_untrusted(card) else card.content


class EvidenceResponder:
    """Answers from relevant evidence only; cites exactly the cards it used."""

    name = "evidence"

    def __init__(self, max_cited: int = 2) -> None:
        self.max_cited = max_cited

    def respond(
        self, role: str, question: str, evidence: Sequence[MemoryCard], trace: RetrievalTrace
    ) -> Answer:
        if not evidence:
            return Answer(UNKNOWN, False, (), self.name, trace)
        best = sorted(evidence, key=lambda c: -(c.score or 0.0))[: self.max_cited]
        lines = [f"According to {_source(best[0])}: {_text(best[0])}"]
        for extra in best[1:]:
            lines.append(f"Also, from {_source(extra)}: {_text(extra)}")
        return Answer(" ".join(lines), True, tuple(c.id for c in best), self.name, trace)
