"""Direction words computed from figures: the one place a lab sentence or figure title gets
its verb (issue 48). No verb is typed into a title or a print any more: "barely tells" or
"tells … apart", "more than" or "less than", "costs" or "keeps" come from the numbers beside
them, with the tolerances below."""

from __future__ import annotations

import math

SAME = 0.1
"""Two rates count as "about the same" when they differ by less than this share of the larger
(or by less than a percentage point): 34.7 % beside 34.6 % is the same story; 98 % beside 60 %
is not. Where a rate is set beside chance, the lab answers with an interval instead
(:func:`bureau.labs.leakage.claims.against_chance`)."""
BARELY, PARTLY = 0.65, 0.8
"""AUROC bands: below 0.65 relevance barely tells the labels apart, below 0.8 it partly does,
above it tells them apart (0.5 is a coin flip, 1.0 a perfect classifier)."""


def separation(auroc: float, what: str = "shareable from private") -> str:
    """The verb for relevance as a classifier: "barely tells …", "partly tells …", "tells …
    apart"; "cannot tell" when there is nothing to rank."""
    if math.isnan(auroc):
        return f"cannot tell {what} (nothing to rank)"
    if auroc < BARELY:
        return f"barely tells {what}"
    if auroc < PARTLY:
        return f"partly tells {what}"
    first, _, second = what.partition(" from ")
    return f"tells {first} and {second} apart" if second else f"tells {what} apart"


def compare(a: float, b: float) -> str:
    """``a`` against ``b``: "more than", "about as much as" or "less than" (:data:`SAME`)."""
    if abs(a - b) < max(0.01, SAME * max(abs(a), abs(b))):
        return "about as much as"
    return "more than" if a > b else "less than"


def change(before: float, after: float) -> str:
    """What a step did to a rate: "costs", "keeps" or "adds" (same tolerance as
    :func:`compare`)."""
    word = compare(after, before)
    return {"about as much as": "keeps", "more than": "adds", "less than": "costs"}[word]


__all__ = ["BARELY", "PARTLY", "SAME", "change", "compare", "separation"]
