"""Abstraction: releasing a safe summary instead of a card's content.

The deterministic path uses the summary the owner wrote (the card's ``abstraction`` label): no
model, the same text every time. A model-written abstraction is opt-in and must pass
:func:`leaked_terms` before it is released: it may not repeat the original's *distinctive terms*
(numbers, names, dates), because those are exactly what makes a fact identifying, and an
"abstract" that keeps the safe code 0427 is a reveal with extra steps. The checker is a pure
function so tests and the leakage lab can use it on any pair of texts.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..model import MemoryCard

Abstractor = Callable[[MemoryCard], str]
"""An opt-in writer of abstractions (e.g. an LLM call); its output is checked before release."""

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
          "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug",
          "sep", "sept", "oct", "nov", "dec")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
_WORD = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)
_SENTENCE_END = re.compile(r"[.!?:;]\s*$")
_COMMON_CAPS = frozenset({"i", "the", "a", "an", "my", "our", "his", "her", "their", "this",
                          "that", "it", "we", "he", "she", "they", "you", "on", "in", "at",
                          "mr", "mrs", "ms", "dr", "st"})
_TITLES = ("mr.", "mrs.", "ms.", "dr.", "st.")


def distinctive_terms(text: str) -> list[str]:
    """Numbers (with their digits), dates (month and weekday names) and names (capitalised words
    that do not start a sentence) of ``text``, lower-cased, in order of first appearance.

    Every number counts, including pieces of one (``23:40`` yields ``23:40``, ``23`` and ``40``),
    so a rewrite cannot slip a time past the check by changing its separator.
    """
    out: dict[str, None] = {}
    for m in _NUMBER.finditer(text):
        out[m.group(0)] = None
        for part in re.findall(r"\d+", m.group(0)):
            out[part] = None
    for m in _WORD.finditer(text):
        word = m.group(0)
        low = word.lower().strip("'’-")
        if low in MONTHS or low in WEEKDAYS:
            out[low] = None
            continue
        if not word[0].isupper() or low in _COMMON_CAPS:
            continue
        before = text[: m.start()]
        after_title = before.rstrip().lower().endswith(_TITLES)
        if not before.strip() or (_SENTENCE_END.search(before) and not after_title):
            continue  # a capital that only starts a sentence names nothing
        out[low] = None
    return list(out)


def leaked_terms(original: str, abstraction: str) -> list[str]:
    """The original's distinctive terms that the abstraction repeats (empty: safe to release).

    Numbers must not appear as numbers (``0427`` inside ``10427`` counts); words must not
    appear as whole words, case-insensitively.
    """
    low = abstraction.lower()
    found = []
    for term in distinctive_terms(original):
        if term[0].isdigit():
            if re.search(rf"(?<!\d){re.escape(term)}(?!\d)", low):
                found.append(term)
        elif re.search(rf"(?<![\w]){re.escape(term)}(?![\w])", low):
            found.append(term)
    return found


def abstracted(card: MemoryCard, text: str) -> MemoryCard:
    """The card as released under ``abstract``: same id (so ``released()`` accepts it), the
    abstraction as content, no abstraction label (nothing more to hide behind)."""
    return MemoryCard(**{**card.__dict__, "content": text, "abstraction": None})
