"""Deletion requests: which turn asks the memory to delete what, read from turns alone.

A request is a sentence with a deletion verb (delete, remove, clear, erase, purge, wipe,
forget, in any form) and a memory phrase ("from (shared / active / accessible / assistant ...)
memory", "... notes", "... chart", "... record"), or one that opens "Deletion request" or with
the verb as an order ("Delete ...", "Please remove ...", "Yes. Delete ..."). Its executor's
note counts too ("Temporary safe callback entries 415-555-0186 and 415-555-0174 ... cleared
from shared assistant memory"): it says what went.

What is deleted -- the *values* -- is read from the request's sentences and from any later
sentence of the same turn that says "deleted", clause by clause (a sentence is cut at ";",
"because", "while", "but", ...), leaving out every clause that keeps something ("keep",
"current", "active", "only the": "... because Suite 1604 is the active location now"):

* a quoted string ('Northbridge Biologics'); of a quoted mapping ('Project Maple = Granite
  Mutual') the mapped value (Granite Mutual);
* a token holding a digit, at least three characters long (a PIN 5942, a token
  ``mp_stg_4R2N-K8QM-7T1C``, an amount 2,200, a phone number), but not a year or a clock time;
* the words after a naming noun (phrase, label, wording, location, note, name, alias, mapping,
  point, spot, route, address) up to "from", "in", "for", "and" or the clause's end (release phrase
  *blue cedar*, label *temporary safety relocation*, location *under the black planter behind
  the rain barrel*, alias *Mina*; leading "the", "under", ... dropped), cut to the longest
  leading part (two words or more, or one capitalised name) holding a content word that an
  earlier turn holds verbatim, and at most one earlier turn in ten (a phrase found more often
  is common wording, not a value).

The bureau executes a request at its turn (:mod:`bureau.labs.gatemem.plan`): every card holding
a value is forgotten (``case.forget``: revoked everywhere and, sealed, its key destroyed) and a
copy with the values replaced by ``[deleted]`` is written in its place; every later turn is
stored with the values so replaced, so a restatement cannot bring them back.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bureau.labs.gatemem.patterns import normalise

REDACTED = "[deleted]"
_VERB = re.compile(
    r"\b(?:delet\w*|remov\w*|clear\w*|eras\w*|purg\w*|wip(?:e|ed|es|ing)|forget\w*|forgot\w*)\b",
    re.IGNORECASE)
_MEMORY = re.compile(
    r"\b(?:from|out of)\s+(?:the\s+|her\s+|his\s+|my\s+|our\s+|this\s+)?(?:[\w-]+\s+){0,3}"
    r"(?:memory|memories|notes?|chart|records?)\b", re.IGNORECASE)
_OPENS = re.compile(
    r"^\s*(?:deletion request\b|(?:(?:yes|ok|okay|also|and|then|now)[,.]?\s+)?(?:please\s+)?"
    r"(?:also\s+)?(?:delete|remove|erase|purge|wipe|forget)\b)", re.IGNORECASE)
_KEEPS = re.compile(r"\b(?:keep\w*|current\w*|active|only the)\b", re.IGNORECASE)
_CLAUSE = re.compile(r";|\b(?:because|while|whereas|since|but)\b|,\s+(?=and\s+(?:the\s+)?"
                     r"(?:current|active|new)\b)", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z'\"‘“])")
_QUOTED = re.compile(
    r"(?:(?<=\s)|^|(?<=[:(]))['\"‘“]([^'\"‘’“”\n]{2,160}?)['\"’”](?=[\s.,;:)!?]|$)")
_TOKEN = re.compile(r"(?<![\w-])(?=[\w,./-]*\d)[A-Za-z0-9](?:[\w,./-]*[A-Za-z0-9])?(?![\w-])")
_YEAR = re.compile(r"^(?:19|20)\d\d$")
_HEAD = re.compile(
    r"\b(?:phrase|label|wording|location|note|name|alias|mapping|point|spot|route|address)\s+"
    r"(?P<v>[A-Za-z][\w'-]*(?:\s+[A-Za-z][\w'-]*){1,9})", re.IGNORECASE)
_STOP = re.compile(r"(?:^|\s+)(?:from|in|for|and|to|so|now|because|that|which|should)\b.*$",
                   re.IGNORECASE)
_LEADING = re.compile(r"^(?:(?:the|of|is|was|under|behind|in|at|on|inside|a|an|phrase|label|"
                      r"wording|location|note|name|alias|mapping|point|spot|route|address)\s+)+",
                      re.IGNORECASE)
_FUNCTION = frozenset(
    "has have had been be is was were are will would should can could may might not no the a an "
    "of to in on at by for with from and or but this that these those it its their there here "
    "exact earlier older old prior previous current".split())
MAX_SHARE = 0.1
"""A naming-noun value found in more than this share of the earlier turns is a common phrase,
not a deleted value, and is dropped."""


@dataclass(frozen=True)
class Deletion:
    """One request: its turn and the values it deletes (empty: a request the rule could not
    read a value from, counted in the report)."""

    turn_id: str
    values: tuple[str, ...]


def sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE.split(text.strip()) if s]


def is_request(sentence: str) -> bool:
    """Whether a sentence asks (or reports) a deletion from memory (module docstring)."""
    return bool(_OPENS.search(sentence) or (_VERB.search(sentence) and _MEMORY.search(sentence)))


def read_deletion(text: str, turn_id: str, earlier: Sequence[str]) -> Deletion | None:
    """The deletion a turn makes, or None if it makes none; ``earlier``: the episode's earlier
    turn texts (a naming-noun value must occur in one of them)."""
    parts = sentences(text)
    asks = [i for i, s in enumerate(parts) if is_request(s)]
    if not asks:
        return None
    chosen = [parts[i] for i in asks]
    chosen += [s for s in parts[asks[0] + 1:] if s not in chosen and re.search(
        r"\bdelet", s, re.IGNORECASE) and not _KEEPS.search(s)]
    values: list[str] = []
    for s in chosen:
        for clause in _CLAUSE.split(s):
            if clause and not _KEEPS.search(clause):
                values += _values(clause, earlier)
    return Deletion(turn_id, tuple(dict.fromkeys(v for v in values if v)))


def _values(sentence: str, earlier: Sequence[str]) -> list[str]:
    out: list[str] = []
    for q in _QUOTED.findall(sentence):
        q = q.split("=", 1)[1] if "=" in q else q
        out.append(q.strip(" ,.;:"))
    for tok in _TOKEN.findall(sentence):
        tok = tok.rstrip(".,/")
        if len(tok) >= 3 and not _YEAR.match(tok) and ":" not in tok:
            out.append(tok)
    seen = [normalise(t) for t in earlier]
    for m in _HEAD.finditer(sentence):
        words = _STOP.sub("", _LEADING.sub("", m.group("v"))).split()
        for n in range(len(words), 0, -1):
            phrase = " ".join(words[:n])
            if not any(w.lower() not in _FUNCTION and len(w) >= 4 for w in words[:n]) or (
                    n == 1 and not words[0][:1].isupper()):
                continue
            found = sum(1 for t in seen if _rx(phrase).search(t))
            if found and found <= max(1, MAX_SHARE * len(seen)):
                out.append(phrase)
                break
    return out


def _rx(value: str) -> re.Pattern[str]:
    body = r"\s+".join(re.escape(w) for w in normalise(value).split(" "))
    return re.compile(r"(?<![\w-])" + body + r"(?![\w-])")


def holds(text: str, values: Iterable[str]) -> bool:
    """Whether ``text`` holds any deleted value (word-bounded, case and blanks ignored)."""
    low = normalise(text)
    return any(_rx(v).search(low) for v in values)


def redact(text: str, values: Iterable[str]) -> str:
    """``text`` with every deleted value replaced by ``[deleted]`` (case and blanks ignored)."""
    out = text
    for v in sorted(set(values), key=len, reverse=True):
        body = r"\s+".join(re.escape(w) for w in v.split())
        out = re.sub(r"(?<![\w-])" + body + r"(?![\w-])", REDACTED, out, flags=re.IGNORECASE)
    return out


__all__ = ["REDACTED", "Deletion", "holds", "is_request", "read_deletion", "redact",
           "sentences"]
