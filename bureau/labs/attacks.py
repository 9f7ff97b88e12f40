"""What an attack aims at and what came of it: the vocabulary lesson 04's attack catalogue
(:mod:`bureau.course.attacks`) and the injection lab share.

"Blocked" is decided from evidence (the target card's text in the attacker's outputs, cards stored
outside the attacker's scopes in its retrieval traces), never assumed; a result carries that
evidence, the mechanism that stopped the attack, and the bureau's refusal when there was one.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

from ..model import MemoryCard


@dataclass(frozen=True)
class AttackResult:
    name: str
    attempt: str
    """What the attacker tried, in one line of code or words."""
    blocked: bool
    reason: str
    """Why it failed: the mechanism that stopped it."""
    refusal: str | None = None
    """The BureauError the bureau raised (``"Type: message"``), if it refused outright."""
    leaked: tuple[str, ...] = ()
    """Evidence of a leak (target text found, out-of-scope cards); empty when blocked."""
    details: dict[str, Any] = field(default_factory=dict)
    mechanism: str = ""
    """What stopped it, in a few words (the table's column; ``reason`` says it in full)."""
    against: str = ""
    """The actor it holds against and by what means, ``"an agent: ..."`` or ``"an observer: ..."``."""

    def __repr__(self) -> str:
        verdict = "BLOCKED" if self.blocked else "LEAKED"
        return f"[{verdict}] {self.name}: {self.reason}"

    def _repr_html_(self) -> str:
        css, word = ("ok", "🛡️ Blocked") if self.blocked else ("fail", "🚨 LEAKED")
        refusal = (
            f"<div>Refusal: <code>{html.escape(self.refusal)}</code></div>" if self.refusal else ""
        )
        leaked = (
            f"<div>Leaked: {html.escape('; '.join(self.leaked))}</div>" if self.leaked else ""
        )
        return (
            f'<div class="bureau-attack bureau-verdictbox {"ok" if self.blocked else "notyet"}" '
            f'data-blocked="{str(self.blocked).lower()}">'
            f'<b class="bureau-check {css}">{word}</b> — <b>{html.escape(self.name)}</b>'
            f"<div>Tried: <code>{html.escape(self.attempt)}</code></div>{refusal}"
            f"<div>Why it failed: {html.escape(self.reason)}</div>{leaked}</div>"
        )


@dataclass(frozen=True)
class Target:
    attacker: str
    card: MemoryCard
    question: str

    @property
    def owner(self) -> str:
        return self.card.owner


__all__ = ["AttackResult", "Target"]
