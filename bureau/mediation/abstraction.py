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
import unicodedata
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


# -- normalising what a rewrite might disguise -------------------------------------------------
_HOMOGLYPHS = str.maketrans({
    # Cyrillic and Greek letters that look like Latin ones
    "а": "a", "в": "b", "е": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c",
    "т": "t", "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s", "ԁ": "d", "ɡ": "g", "α": "a",
    "β": "b", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u",
    "χ": "x", "ω": "w",
})
_LEET = str.maketrans({"0": "o", "1": "l", "3": "e", "4": "a", "5": "s", "7": "t", "8": "b",
                       "@": "a", "$": "s", "|": "l", "!": "i"})
_UNITS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen".split())}
_UNITS["oh"] = 0
_TENS = {w: 10 * i for i, w in enumerate(
    "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if w != "_"}
_SCALES = {"hundred": 100, "thousand": 1000}
_NUMBER_WORD = "|".join(sorted([*_UNITS, *_TENS, *_SCALES], key=len, reverse=True))
_NUMBER_RUN = re.compile(rf"\b(?:{_NUMBER_WORD})(?:[\s-]+(?:and[\s-]+)?(?:{_NUMBER_WORD}))*\b")
_DIGIT_GAP = re.compile(r"(?<=\d)[\s.,:/_\-–—·]+(?=\d)")


def fold(text: str) -> str:
    """Lower case with compatibility forms, accents, other scripts' digits and look-alike
    letters folded to plain ASCII: ``０４２７`` and ``٠٤٢٧`` read ``0427``, ``Ноllоwау``
    (Cyrillic) reads ``holloway``."""
    text = unicodedata.normalize("NFKC", text)
    chars = []
    for ch in unicodedata.normalize("NFKD", text):
        if unicodedata.combining(ch):
            continue
        digit = unicodedata.decimal(ch, None)
        chars.append(str(digit) if digit is not None else ch)
    return "".join(chars).lower().translate(_HOMOGLYPHS)


def _spelled(run: str) -> str:
    """Digits of a run of number words: ``zero four two seven`` -> ``0427`` (digit by digit),
    ``four hundred and twenty-seven`` -> ``427``, ``twenty-three forty`` -> ``2340`` (a new
    number starts where a word could not continue the one before)."""
    words = [w for w in re.split(r"[\s-]+", run) if w and w != "and"]
    if all(w in _UNITS and _UNITS[w] < 10 for w in words):
        return "".join(str(_UNITS[w]) for w in words)
    groups: list[int] = []
    big, small, started = 0, 0, False
    for w in words:
        if w == "hundred":
            small, started = max(small, 1) * 100, True
            continue
        if w == "thousand":
            big, small, started = big + max(small, 1) * 1000, 0, True
            continue
        value = _UNITS.get(w, _TENS.get(w, 0))
        low = small % 100
        fits = not started or (w in _TENS and low == 0) or (
            w in _UNITS and (low == 0 or (low >= 20 and low % 10 == 0 and value < 10)))
        if not fits:
            groups.append(big + small)
            big, small = 0, 0
        small, started = small + value, True
    if started:
        groups.append(big + small)
    return "".join(str(g) for g in groups)


def digit_view(text: str) -> str:
    """``text`` folded, with spelled-out numbers as digits and the separators inside digit runs
    dropped: ``04-27``, ``0 4 2 7`` and ``zero four two seven`` all read ``0427``."""
    folded = _NUMBER_RUN.sub(lambda m: _spelled(m.group(0)), fold(text))
    return _DIGIT_GAP.sub("", folded)


def _letter_view(text: str) -> str:
    """Folded, with look-alike digits and signs inside words read as the letters they mimic
    (``H0lloway`` reads ``holloway``); digit-only runs are left alone."""
    return re.sub(r"[\w@$|!]*[^\W\d_][\w@$|!]*|[\w@$|!]*\d[\w@$|!]*[^\W\d_][\w@$|!]*",
                  lambda m: m.group(0).translate(_LEET), fold(text))


def leaked_terms(original: str, abstraction: str) -> list[str]:
    """The original's distinctive terms that the abstraction repeats (empty: safe to release).

    Both texts are normalised first (:func:`fold`, :func:`digit_view`), so a rewrite cannot slip
    a term past the check by spelling a number out, by putting separators or spaces into it, by
    writing it in full-width or another script's digits, or by swapping look-alike letters into
    a name. Numbers must not appear as numbers (``0427`` inside ``10427`` does not count; ``04
    27`` does); words must not appear as whole words.
    """
    digits, kept = digit_view(abstraction), fold(abstraction)
    letters = _letter_view(abstraction)
    found = []
    for term in distinctive_terms(original):
        if term[0].isdigit():
            forms = {fold(term), _DIGIT_GAP.sub("", fold(term))}
            forms |= {f.lstrip("0") for f in forms if len(f.lstrip("0")) >= 2}
            if any(re.search(rf"(?<!\d){re.escape(f)}(?!\d)", view)
                   for f in forms for view in (digits, kept)):
                found.append(term)
        else:
            word = fold(term)
            if any(re.search(rf"(?<![\w]){re.escape(word)}(?![\w])", view)
                   for view in (kept, letters)):
                found.append(term)
    return found


def abstracted(card: MemoryCard, text: str) -> MemoryCard:
    """The card as released under ``abstract``: the same id (so ``released()`` accepts it) and
    owner, the abstraction as content, and nothing else of the original: no topic, kind, seed
    key, labels or content hash (they describe what is withheld), and no relevance score (it
    measures the question against the withheld text, so a guesser could read it as a meter)."""
    return MemoryCard(
        id=card.id, case_id=card.case_id, owner=card.owner, visibility=card.visibility,
        topic="abstract", kind="abstraction", content=text, created_at=card.created_at,
        source_role=card.source_role, tier=card.tier, provenance=card.provenance,
        trust=card.trust)
