"""The in-run defence (issue 20 §1): untrusted evidence never makes an answer known on its own.

Trust tiers keep a fetched page out of long-term memory, but *inside* the run that fetched it the
page is evidence like any other: before this rule the victim's own question, asked in that run,
was answered with the attacker's page stated as fact. Storage lifetime cannot help there; the
answer must. Three rules, applied by both responders:

1. **Trusted evidence wins.** When any trusted card was handed over, the answer rests on trusted
   cards only; the untrusted ones are named as set aside, never quoted as the answer.
2. **Untrusted evidence alone is not knowledge.** With only untrusted cards, the answer is
   ``known=False``: it says what the tool output claims, quoted, with its (quoted, shortened)
   source, and that nothing trusted confirms it.
3. **A model's reply is checked against what it cites.** A reply that says "known" while citing
   only untrusted cards, or that cites untrusted cards when trusted evidence was handed over,
   is not accepted as the role's answer (the evidence responder answers instead, by rules 1-2).

What stays possible, on purpose: a role may still *see* the page (the X-ray lists it) and its
answer may mention it as unverified. What the rule cannot see: an untrusted claim a trusted
card repeats (a member who pasted it into their own note by hand; see
:mod:`bureau.tiers.inheritance` for the copies that stay labelled).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..model import MemoryCard
from ..tiers import is_untrusted

UNVERIFIED = "I don't know for sure: nothing trusted confirms it."
"""The opening of an answer that rests on untrusted tool output alone (``known=False``)."""


@dataclass(frozen=True)
class Grounds:
    """The evidence split by trust, each part in the order it was handed over."""

    trusted: tuple[MemoryCard, ...]
    untrusted: tuple[MemoryCard, ...]

    @classmethod
    def of(cls, evidence: Sequence[MemoryCard]) -> Grounds:
        return cls(tuple(c for c in evidence if not is_untrusted(c)),
                   tuple(c for c in evidence if is_untrusted(c)))


def reply_verdict(cited: Sequence[MemoryCard], known: bool, grounds: Grounds) -> str | None:
    """Why a model's reply may not stand as the role's answer (rule 3), or ``None`` when it may.

    The reasons are fixed, content-free phrases: they travel in the outward events.
    """
    untrusted_cited = [c for c in cited if is_untrusted(c)]
    if not untrusted_cited:
        return None
    if grounds.trusted:
        return "cited untrusted evidence while trusted evidence was handed over"
    if known:
        return "known on untrusted evidence alone"
    return None


__all__ = ["UNVERIFIED", "Grounds", "reply_verdict"]
