"""Responders turn the evidence a role was handed into an answer.

A responder never searches: it receives only the cards the service decided this role may see
(after any mediator), so isolation cannot depend on what a responder, or an LLM behind it, is
told to do. The default ``EvidenceResponder`` needs no model: it quotes the most relevant card,
or says "I don't know" when nothing cleared the relevance threshold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from ..model import BOARD, Answer, MemoryCard, RetrievalTrace
from ..task_scopes import scope_name_of
from ..tiers import is_untrusted, shown_source
from .grounding import UNVERIFIED, Grounds

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
    """Answers from relevant evidence only; cites exactly the cards it used.

    ``defend`` applies the in-run defence (:mod:`.grounding`): trusted evidence wins, and
    untrusted tool output alone never makes an answer known. ``defend=False`` is the answer
    a system without it gives (the poisoning lab's ablation), never a default.
    """

    name = "evidence"

    def __init__(self, max_cited: int = 2, *, defend: bool = True) -> None:
        self.max_cited = max_cited
        self.defend = defend

    def respond(
        self, role: str, question: str, evidence: Sequence[MemoryCard], trace: RetrievalTrace
    ) -> Answer:
        if not evidence:
            return Answer(UNKNOWN, False, (), self.name, trace)
        grounds = Grounds.of(evidence)
        if not self.defend:
            return self._quote(evidence, trace, known=True)
        if grounds.trusted:
            answer = self._quote(grounds.trusted, trace, known=True)
            if grounds.untrusted:
                n = len(grounds.untrusted)
                aside = (f" (Set aside: {n} untrusted tool output{'s' if n > 1 else ''} "
                         "that trusted evidence outranks.)")
                answer = replace(answer, text=answer.text + aside)
            return answer
        unverified = self._quote(grounds.untrusted, trace, known=False)
        return replace(unverified, text=f"{UNVERIFIED} {unverified.text}")

    def _quote(self, cards: Sequence[MemoryCard], trace: RetrievalTrace, *,
               known: bool) -> Answer:
        best = sorted(cards, key=lambda c: -(c.score or 0.0))[: self.max_cited]
        lines = [f"According to {_source(best[0])}: {_text(best[0])}"]
        for extra in best[1:]:
            lines.append(f"Also, from {_source(extra)}: {_text(extra)}")
        return Answer(" ".join(lines), known, tuple(c.id for c in best), self.name, trace)
