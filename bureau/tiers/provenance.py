"""Tiers, provenance and trust: the vocabulary of the memory boundary (issue 14), as data.

A role's memory has three tiers (after the memory-boundary article):

* **ephemeral** -- one run's task context, discarded when the run ends. Untrusted tool output
  (a fetched web page, a scraped document) lands here. It lives under its own store owner,
  ``run:<run_id>:<role>`` (``:`` cannot occur in a role name, so it never collides with a role
  or the board), so ending a run is one verified purge of that owner.
* **session** -- the role's private space (store owner = the role); whispers land here by
  default and :meth:`~bureau.service.case.Case.end_session` deletes them.
* **long-term** -- also the role's private space, but only what was explicitly put there:
  the scenario's opening memories, a whisper made with ``tier="long-term"``, or a promotion
  (an approval step or a narrow, auditable :class:`~bureau.tiers.promotion.PromotionRule`).

Every card carries ``tier``, ``provenance`` and ``trust`` in its metadata. Cards written before
tiers existed carry none; :func:`read_labels` is the one rule that reads them:

====================  ===========  ============  ==========
stored under           tier         provenance    trust
====================  ===========  ============  ==========
``run:<id>:<role>``    ephemeral    tool-output   untrusted
the board              long-term    publication   trusted
a role, ``seed_key``   long-term    seed          trusted
a role, otherwise      session      whisper       trusted
====================  ===========  ============  ==========

Stored labels win over these defaults, with two exceptions that fail closed: a card stored
under a run owner is always ephemeral (the store location decides, not a label), and a trust
value that is neither ``trusted`` nor ``untrusted`` reads as ``untrusted``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import UnknownTierError
from ..model import BOARD
from ..text import short_repr

if TYPE_CHECKING:
    from ..model import MemoryCard

EPHEMERAL, SESSION, LONG_TERM = "ephemeral", "session", "long-term"
TIERS: tuple[str, ...] = (EPHEMERAL, SESSION, LONG_TERM)
"""Lowest to highest: content only ever moves up, and only by promotion."""
ROLE_TIERS: tuple[str, ...] = (SESSION, LONG_TERM)
"""The tiers kept in a role's own space (a whisper or a promotion may target them)."""
SEARCHED_OUTSIDE_RUN: tuple[str, ...] = ROLE_TIERS
"""What a retrieval outside a run searches: never an ephemeral scope."""
SEARCHED_IN_RUN: tuple[str, ...] = TIERS
"""What a retrieval inside a run searches: that run's ephemeral scope as well."""

PROVENANCES: tuple[str, ...] = ("seed", "whisper", "agent-note", "tool-output", "promotion",
                                 "publication")
"""Where a card's content came from."""

TRUSTED, UNTRUSTED = "trusted", "untrusted"
TRUST_VALUES: tuple[str, ...] = (TRUSTED, UNTRUSTED)
TRUST = TRUST_VALUES
TRUST_BY_PROVENANCE: Mapping[str, str] = {
    "seed": TRUSTED, "whisper": TRUSTED, "agent-note": TRUSTED, "tool-output": UNTRUSTED,
    "promotion": TRUSTED, "publication": TRUSTED,
}
"""The trust a card gets when it is written; a promotion or a publication keeps its source's."""

META_KEYS: tuple[str, ...] = ("tier", "provenance", "trust", "promoted_from", "tool_source",
                              "copied_from")
"""The card metadata this module owns (the gateway keeps them; see ``gateway.META_KEYS``)."""

RUN_PREFIX = "run:"


@dataclass(frozen=True)
class Labels:
    """A card's place at the memory boundary: which tier, where from, how far to trust it."""

    tier: str
    provenance: str
    trust: str

    @property
    def untrusted(self) -> bool:
        return self.trust != TRUSTED

    def meta(self) -> dict[str, str]:
        """The metadata a new card is written with."""
        return {"tier": self.tier, "provenance": self.provenance, "trust": self.trust}


def check_tier(value: object, allowed: tuple[str, ...] = TIERS, what: str = "tier") -> str:
    """A tier name from ``allowed``, or ``UnknownTierError`` naming the choices."""
    if type(value) is str and value in allowed:
        return value
    raise UnknownTierError(
        f"{what.capitalize()} {short_repr(value)} is not one of {', '.join(allowed)}.",
        f"Tiers, lowest to highest: {', '.join(TIERS)}. Allowed here: {', '.join(allowed)}.",
    )


def run_owner(run_id: str, role: str) -> str:
    """The store owner of one run's ephemeral scope."""
    return f"{RUN_PREFIX}{run_id}:{role}"


def parse_run_owner(owner: str) -> tuple[str, str] | None:
    """``(run_id, role)`` of an ephemeral owner id, else ``None``."""
    if not owner.startswith(RUN_PREFIX):
        return None
    run_id, sep, role = owner[len(RUN_PREFIX):].partition(":")
    return (run_id, role) if sep and run_id and role else None


def is_ephemeral_owner(owner: str) -> bool:
    return owner.startswith(RUN_PREFIX)


def read_labels(meta: Mapping[str, Any], owner: str) -> Labels:
    """The labels of a stored card (the one reading rule, see the module docstring)."""
    if is_ephemeral_owner(owner):
        tier, provenance = EPHEMERAL, "tool-output"
    elif owner == BOARD:
        tier, provenance = LONG_TERM, "publication"
    elif meta.get("seed_key"):
        tier, provenance = LONG_TERM, "seed"
    else:
        tier, provenance = SESSION, "whisper"
    stored_tier = meta.get("tier")
    if not is_ephemeral_owner(owner) and owner != BOARD and stored_tier in ROLE_TIERS:
        tier = str(stored_tier)
    if meta.get("provenance") in PROVENANCES:
        provenance = str(meta["provenance"])
    trust = meta.get("trust", TRUST_BY_PROVENANCE[provenance])
    return Labels(tier, provenance, trust if trust in TRUST_VALUES else UNTRUSTED)


def labels(card: MemoryCard) -> Labels:
    """A card's labels: as read from the store, or by the reading rule for a hand-made card."""
    if card.tier is not None and card.provenance is not None and card.trust is not None:
        return Labels(card.tier, card.provenance, card.trust)
    meta = {"seed_key": card.seed_key, "tier": card.tier, "provenance": card.provenance,
            "trust": card.trust}
    return read_labels({k: v for k, v in meta.items() if v is not None}, card.owner)


SHOWN_SOURCE_CHARS = 60
"""How much of a tool's self-reported source an answer or a packet shows."""


def shown_source(source: str | None) -> str:
    """A tool source as any answer, packet or view shows it: quoted and cut to a few dozen
    characters. The source is what the tool (so, possibly, the attacker) reported; unquoted and
    unbounded it would read as the bureau's own words, and could carry an instruction."""
    if not source:
        return "an unnamed tool"
    text = "".join(ch if ch.isprintable() else "?" for ch in source)
    if len(text) > SHOWN_SOURCE_CHARS:
        text = text[: SHOWN_SOURCE_CHARS - 1] + "…"
    return f"“{text}”"


def is_untrusted(card: MemoryCard) -> bool:
    """True for content no operator vouched for (tool output, also once promoted)."""
    return labels(card).untrusted
