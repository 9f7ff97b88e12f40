"""A model may only phrase what the bureau decided (issue 52).

Whether a role knows, and from which cards, is the bureau's decision: the boundary chose the
cards, the evidence responder decided from them. A model's reply is used only to *say* that
decision, so it is accepted only when

1. its ``known`` is the decision's ``known`` (a model may neither claim knowledge the evidence
   responder does not grant nor say "I don't know" over cards that answer);
2. every fact it states stands in the cards it cites: numbers and times (``0427``, ``23:40``,
   ``nine``, ``midnight``), names (a capitalised word: ``Dover``, ``Rialto``); and
3. it does not tie the question to cards that never mention it: a word of the question that the
   reply repeats must stand in a cited card too.

Rule 3 is the one that stops the invention measured with real models (Qwen2.5 1.5B and 0.5B):
asked for the safe's combination with only a boot print and a camera sighting in hand, they
answered "The combination of the safe in the study is a grey raincoat and a size 43 muddy boot
print", known, citing real cards. Every number and name in it stands in those cards; the
question's "combination" and "safe" do not.

What no check of this kind can catch: a wrong sentence built from the cited cards' own words
(the raincoat's time given to the boot print, when the reply cites both cards). It reads words,
not meaning; :mod:`bureau.voice.blind_spot` measures how often, and lesson 06 says so.

The reasons are fixed, content-free phrases (they travel in the outward events); the words found
unsupported stay in the exchange, an operator view.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

KNOWN_DISAGREES = "known disagrees with the bureau's decision"
UNSUPPORTED_FACT = "states a fact no cited card holds"
QUESTION_NOT_IN_CARDS = "ties the question to cards that do not mention it"

_TOKEN = re.compile(r"\d+(?:[.:,]\d+)*|[^\W\d_][\w'’-]*")
_NUMBER = re.compile(r"\d+(?:[.:,]\d+)*")
_OPENERS = frozenset(".!?:;")
NUMBER_WORDS = {
    "zero": "0", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
    "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "thirteen": "13",
    "fourteen": "14", "fifteen": "15", "sixteen": "16", "seventeen": "17", "eighteen": "18",
    "nineteen": "19", "twenty": "20", "thirty": "30", "forty": "40", "fifty": "50",
    "sixty": "60", "seventy": "70", "eighty": "80", "ninety": "90", "hundred": "100",
    "thousand": "1000", "million": "1000000", "dozen": "12",
}
"""Number words and the digits they stand for ("one" is left out: it is mostly a pronoun)."""
TIME_WORDS = frozenset(
    "midnight noon morning afternoon evening night tonight yesterday tomorrow dawn dusk "
    "monday tuesday wednesday thursday friday saturday sunday".split())
_COMMON = frozenset("""
    i i'm i've i'd i'll a an the my mine me we our us you your yours he him his she her hers it
    its they them their theirs this that these those there here what who whom whose which when
    where why how yes no not nothing nobody none someone somebody something everyone everything
    all any each both some one only also so but and or if then as at in on of to from by for
    with without about after before since until while during per according based sorry well
    unfortunately however indeed perhaps maybe probably certainly sure honestly frankly
    actually ok okay please note notes card cards evidence answer known unknown
    is are was were be been am do does did have has had can could will would should may might
    must shall let just still even again already never always sometimes often
""".split())
"""Words that open a sentence without naming anything: a capitalised word at a sentence's start
is a name only when it is not one of these."""
_STOP = _COMMON | frozenset("""
    tell know say said says said think thing things way like get got make made see saw seen
    go went gone come came take took give gave whether into onto out over under than very
""".split())
"""Words of a question that carry no subject (rule 3 looks at the others)."""


@dataclass(frozen=True)
class PhrasingCheck:
    """The verdict on a reply's phrasing: ``reason`` is ``None`` when it may stand."""

    reason: str | None
    unsupported: tuple[str, ...] = ()
    """The reply's words that no cited card holds (operator view: they quote the reply)."""


def _normal(token: str) -> str:
    t = token.lower().replace("’", "'")
    return t[:-2] if t.endswith("'s") else t


def _stem(word: str) -> str:
    """A crude English stem, enough to match "recorded" with "record" and "opens" with "open"."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _vocabulary(texts: Iterable[str]) -> tuple[set[str], set[str], set[str]]:
    """Every word (normalised), every number (digits, number words turned to digits) and every
    word stem of ``texts``."""
    words: set[str] = set()
    numbers: set[str] = set()
    for text in texts:
        for token in _TOKEN.findall(text):
            w = _normal(token)
            words.add(w)
            if _NUMBER.fullmatch(w):
                numbers.add(w)
            elif w in NUMBER_WORDS:
                numbers.add(NUMBER_WORDS[w])
    return words, numbers, {_stem(w) for w in words}


def _sentence_start(text: str, start: int) -> bool:
    before = text[:start].rstrip().rstrip("\"'“”‘’()[]*-–—").rstrip()
    return not before or before[-1] in _OPENERS


def fact_spans(text: str) -> list[tuple[str, str, int, int]]:
    """The facts a text states, as ``(kind, value, start, end)``: ``number`` (digits, or a
    number word given as digits), ``time`` (a time word) or ``name`` (a capitalised word that
    is not merely opening a sentence)."""
    facts: list[tuple[str, str, int, int]] = []
    for m in _TOKEN.finditer(text):
        token = m.group(0)
        w = _normal(token)
        if _NUMBER.fullmatch(w):
            facts.append(("number", w, m.start(), m.end()))
        elif w in NUMBER_WORDS:
            facts.append(("number", NUMBER_WORDS[w], m.start(), m.end()))
        elif w in TIME_WORDS:
            facts.append(("time", w, m.start(), m.end()))
        elif token[0].isupper() and w not in ("i", "i'm", "i've", "i'd", "i'll"):
            if not _sentence_start(text, m.start()) or w not in _COMMON:
                facts.append(("name", w, m.start(), m.end()))
    return facts


def stated_facts(answer: str) -> list[tuple[str, str]]:
    """The facts a reply states, as ``(kind, value)`` (see :func:`fact_spans`)."""
    return [(kind, value) for kind, value, _, _ in fact_spans(answer)]


def _subject_words(question: str) -> set[str]:
    return {_stem(_normal(t)) for t in _TOKEN.findall(question)
            if len(t) > 2 and not _NUMBER.fullmatch(t) and _normal(t) not in _STOP}


def check_phrasing(answer: str, known: bool, cited_texts: Sequence[str], *, decided_known: bool,
                   question: str, allowed: Sequence[str] = ()) -> PhrasingCheck:
    """Whether a reply may stand as the role's answer: rules 1-3 of the module docstring.

    ``cited_texts`` are the texts of the cards the reply cites; ``allowed`` is other text the
    reply may name without a card (the cited cards' source labels, the role's own name).
    """
    if known != decided_known:
        return PhrasingCheck(KNOWN_DISAGREES)
    words, numbers, stems = _vocabulary([*cited_texts, *allowed])
    missing = [w for kind, w in stated_facts(answer)
               if (w not in numbers if kind == "number" else w not in words)]
    if missing:
        return PhrasingCheck(UNSUPPORTED_FACT, tuple(dict.fromkeys(missing)))
    said = {_stem(_normal(t)) for t in _TOKEN.findall(answer)}
    grafted = sorted((_subject_words(question) & said) - stems)
    if grafted:
        return PhrasingCheck(QUESTION_NOT_IN_CARDS, tuple(grafted))
    return PhrasingCheck(None)


__all__ = ["KNOWN_DISAGREES", "NUMBER_WORDS", "QUESTION_NOT_IN_CARDS", "TIME_WORDS",
           "UNSUPPORTED_FACT", "PhrasingCheck", "check_phrasing", "fact_spans", "stated_facts"]
