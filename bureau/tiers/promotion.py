"""Promotion: the only way content moves up a tier, and the only way tool output outlives its run.

Two doors, both audited (one entry per promoted card, in the mediation audit ledger):

* an **approval step**: ``case.promote(role, card_id, approved_by="chief")`` -- the chief (or
  an approver the policy names, never the card's own role) looked at the card and vouches that
  it may be kept;
* a **narrow, auditable rule**: a :class:`PromotionRule` applied when a run ends
  (``run.end(promote=rule)``); its name is written into every entry it causes.

Untrusted content (tool output) is never promoted through any other door: ``case.promote``
without ``approved_by`` refuses it with :class:`~bureau.errors.PromotionNotApprovedError`.
A promoted copy keeps its source's trust, so approved tool output is still handed to a
responder as untrusted data: promotion decides what is *remembered*, not what is *obeyed*.

A rule is only as safe as it is narrow. :meth:`PromotionRule.from_sources` ("what our own
intranet returned") is the article's kind of rule: a fact about where the text came from,
which a web page cannot forge. :meth:`PromotionRule.mentions` ("anything that mentions the
task") looks at the text itself, which is exactly what a poisoned page is written to satisfy:
:data:`OVER_EAGER_EXAMPLE` is there so the poisoning lab can measure what such a rule costs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..errors import InvalidArgumentError, InvalidTextError
from ..text import clean_name, clean_text, short_repr
from .provenance import labels

if TYPE_CHECKING:
    from ..model import MemoryCard

Predicate = Callable[["MemoryCard"], bool]


@dataclass(frozen=True)
class PromotionRule:
    """A named predicate over tool-output cards; every card it matches is promoted.

    ``name`` is a short slug written into the audit entry of each promotion it makes;
    ``description`` says in words what it accepts (shown to whoever reviews the audit).
    """

    name: str
    description: str
    predicate: Predicate = field(compare=False, repr=False)

    def __post_init__(self) -> None:
        clean_name(self.name, what="rule name")
        clean_text(self.description, what="rule description", max_chars=300)
        if not callable(self.predicate):
            raise InvalidArgumentError(f"A promotion rule needs a callable predicate, not "
                                       f"{short_repr(self.predicate)}.")

    def matches(self, card: MemoryCard) -> bool:
        """True when the rule accepts this card (a predicate that fails accepts nothing)."""
        try:
            return bool(self.predicate(card))
        except Exception:  # noqa: BLE001 - a broken rule must fail closed, not promote
            return False

    # -- factories ------------------------------------------------------------------------------
    @classmethod
    def from_sources(cls, sources: Iterable[str], name: str = "trusted-sources") -> PromotionRule:
        """Promote tool output fetched from one of ``sources`` only.

        A source is a host name (``intranet.example`` also accepts ``wiki.intranet.example``,
        never ``intranet.example.evil.com``) or a tool name compared whole. The card's recorded
        source is what the run's tool reported, not anything the page says about itself.
        """
        if isinstance(sources, str):
            sources = [sources]
        allowed = tuple(sorted({clean_source(s).lower() for s in sources}))
        if not allowed:
            raise InvalidArgumentError("from_sources needs at least one source.",
                                       "Name the hosts or tools whose output may be kept.")

        def from_allowed(card: MemoryCard) -> bool:
            return source_matches(card.tool_source, allowed)

        return cls(name, f"tool output from {', '.join(allowed)} only", from_allowed)

    @classmethod
    def mentions(cls, terms: Iterable[str], name: str = "mentions-task") -> PromotionRule:
        """Promote tool output whose text mentions any of ``terms`` (whole words, any case).

        Over-eager on purpose: it judges a text by what the text says, and a poisoned page says
        whatever makes it look relevant. Use it to measure that cost, not to run a system.
        """
        if isinstance(terms, str):
            terms = [terms]
        words = tuple(sorted({clean_text(t, what="term", max_chars=100).lower() for t in terms}))
        if not words:
            raise InvalidArgumentError("mentions needs at least one term.")
        pattern = re.compile(r"\b(" + "|".join(re.escape(w) for w in words) + r")\b", re.I)

        def mentions_any(card: MemoryCard) -> bool:
            return bool(pattern.search(card.content))

        listed = ", ".join(words)
        if len(listed) > 200:  # the description is a label, not the rule: name a few terms
            shown = ", ".join(words[:8])
            listed = f"{shown} or any of {len(words) - 8} more terms"
        return cls(name, f"any tool output that mentions {listed} (over-eager)", mentions_any)

    @classmethod
    def everything(cls, name: str = "promote-everything") -> PromotionRule:
        """Promote every tool output of the run: the degenerate rule (no boundary at all)."""
        return cls(name, "every tool output of the run (no boundary)", lambda card: True)


def source_matches(source: str | None, allowed: Iterable[str]) -> bool:
    """True when a recorded tool source is one of ``allowed`` (host or subdomain, or tool name)."""
    if not source:
        return False
    host = _host(source)
    for given in allowed:
        entry = _host(given) or given.lower()  # a URL given as a source names its host
        if source.lower() == entry:
            return True
        if host is not None and (host == entry or host.endswith("." + entry)):
            return True
    return False


def _host(source: str) -> str | None:
    """The lower-cased host of a URL (``None`` for a tool name or an unparsable URL).

    Fails closed on a URL that parsers read differently: a backslash (``https://evil\\@intranet``
    is ``intranet`` to :func:`urllib.parse.urlsplit` but ``evil`` to a requests/urllib3
    fetcher, so the page came from the attacker) or user-info before the host. Such a source
    names no host, so no host rule matches it (the poisoning lab plants exactly these).
    """
    if "://" not in source:
        return None
    authority = re.split(r"[/?#]", source.split("://", 1)[1], maxsplit=1)[0]
    if "\\" in source or "@" in authority:
        return None
    try:
        host = urlsplit(source).hostname
    except ValueError:
        return None
    return host.rstrip(".").lower() if host else None


def clean_source(source: object) -> str:
    """A tool source as recorded on a card: a URL or a tool name, no white space, ≤ 300 chars."""
    text = clean_text(source, what="source", max_chars=300)
    if any(ch.isspace() for ch in text):
        raise InvalidTextError(f"Source {short_repr(source)} contains white space.",
                                   "Name a host (intranet.example) or a tool (web-search).")
    return text


def promotable(card: MemoryCard) -> bool:
    """Only tool output is subject to promotion rules (whispers are promoted by hand)."""
    return labels(card).provenance == "tool-output"


OVER_EAGER_EXAMPLE = PromotionRule.mentions(
    ("safe", "code", "combination", "vault", "password", "key", "alibi", "suspect", "witness",
     "meeting", "account", "address", "schedule", "project", "deadline"),
    name="over-eager",
)
"""An over-eager rule for the poisoning lab: promote any tool output that mentions a typical
task word. Build one for a specific task with ``PromotionRule.mentions(task_terms)``."""
