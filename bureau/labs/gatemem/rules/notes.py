"""Consent and access notes: grants, revocations and their expiries, read from turns alone.

An administrator reading an episode sees notes such as "Consent note entered: Linda Park may
receive appointment time/location logistics through Friday, March 6 only", "Approved for Leo:
logs-only Maple staging debugging access through Friday 18:00" or "Family scheduling access
revoked at patient request. Linda Park removed from ... permissions". The rule reads three
shapes and nothing else (a note it cannot read is counted, never guessed):

**grant**: a principal the text names (display name or unique first name; see
:func:`~bureau.labs.gatemem.rules.matters.mentions` for names) followed by "may / can (now,
still, only) receive / get / have / hear / see / access", or "approved for <name>". The named
principal reads the logistics of the turn's matter from this turn on (``limited``; a ``full``
reader keeps its level); with "through / until <date>" the access it has on that matter below
``full`` ends then (:func:`until`).

**revocation**: "revoke / revoked / revoking", "removed from ... access / permissions /
contact", or "no longer release / share / give / send ... to <name>", naming a principal (or,
said by a principal of itself, "my ... access"): the named principal loses every level on the
turn's matter from this turn on, except the matter's own subject.

**expiry**: the end of a grant falls due at the first turn whose timestamp is at or after it
(a turn without a timestamp carries the last one seen); an end the rule cannot date (no
timestamp before it in the episode) is counted and not applied.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

GRANT, REVOKE, EXPIRE = "grant", "revoke", "expire"

_GRANT_AFTER = re.compile(
    r"^\s*(?:(?:may|can)\s+(?:now\s+|still\s+|only\s+)?(?:receive|get|have|hear|see|access))\b",
    re.IGNORECASE)
_APPROVED_FOR = re.compile(r"\bapproved for\s*$", re.IGNORECASE)
_REVOKE = re.compile(
    r"\brevok(?:e|ed|es|ing)\b|\bremoved? from\b[^.]*\b(?:access|permissions?|contact)\b|"
    r"\bno longer (?:release|share|give|send)\b", re.IGNORECASE)
_MY_ACCESS = re.compile(r"\bmy\b[^.]{0,40}\baccess\b[^.]{0,20}\brevoked\b", re.IGNORECASE)
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_UNTIL = re.compile(
    r"\b(?:through|until)\s+(?:(?P<wd>" + "|".join(_WEEKDAYS) + r"),?\s*)?"
    r"(?:(?P<month>" + "|".join(_MONTHS) + r")\s+(?P<day>\d{1,2})(?:,\s*(?P<year>\d{4}))?)?"
    r"(?:,?\s*(?:at\s+)?(?P<time>\d{1,2}:\d{2}(?:\s*[ap]m)?|\d{1,2}\s*[ap]m))?",
    re.IGNORECASE)
_CLOCK = re.compile(r"(\d{1,2})(?::(\d{2}))?\s*([ap]m)?", re.IGNORECASE)


@dataclass(frozen=True)
class Note:
    """One access change the rule read: who, what, from which turn, and until when."""

    kind: str
    who: str
    turn_id: str
    end: datetime | None = None
    undated: bool = False
    """A grant said "through ..." but no timestamp dates it: its end is not applied."""


def until(text: str, anchor: datetime | None) -> tuple[datetime | None, bool]:
    """The end a note names ("through Friday, March 6", "until May 27, 2026 at 18:00",
    "through Friday 18:00"), from the note's own time ``anchor``; (None, False): no end named;
    (None, True): an end named that cannot be dated (no anchor, or nothing parsable)."""
    m = _UNTIL.search(text)
    if m is None or not (m.group("wd") or m.group("month")):
        return None, False
    if anchor is None:
        return None, True
    hour, minute = 23, 59  # no time named: the end of that day
    if m.group("time"):
        clock = _CLOCK.fullmatch(m.group("time").strip())
        if clock is None:
            return None, True
        hour, minute = int(clock.group(1)), int(clock.group(2) or 0)
        if clock.group(3):
            hour = hour % 12 + (12 if clock.group(3).lower() == "pm" else 0)
    if m.group("month"):
        year = int(m.group("year") or anchor.year)
        try:
            day = datetime(year, _MONTHS.index(m.group("month").lower()) + 1, int(m.group("day")))
        except ValueError:
            return None, True
    else:
        wanted = _WEEKDAYS.index(m.group("wd").lower())
        day = datetime(anchor.year, anchor.month, anchor.day) + timedelta(
            days=(wanted - anchor.weekday()) % 7)
    if not 0 <= hour <= 23 or not 0 <= minute <= 59:
        return None, True
    return day.replace(hour=hour, minute=minute), False


def read_notes(text: str, speaker: str, names: dict[str, tuple[str, ...]], turn_id: str,
               anchor: datetime | None) -> list[Note]:
    """The grants and revocations one turn makes (module docstring); ``names``: each
    principal's names, lower case (:func:`~bureau.labs.gatemem.rules.matters.principal_names`)."""
    low = text.lower()
    found = _named(low, names)
    out: list[Note] = []
    for start, end, pid in found:
        after, before = text[end:], text[:start]
        if _GRANT_AFTER.match(after) or _APPROVED_FOR.search(before.rstrip(": ")):
            stop, undated = until(text, anchor)
            out.append(Note(GRANT, pid, turn_id, stop, undated))
    if _REVOKE.search(text):
        who = {pid for _, _, pid in found}
        if _MY_ACCESS.search(text):
            who.add(speaker)
        out += [Note(REVOKE, pid, turn_id) for pid in sorted(who)]
    return out


def _named(low: str, names: dict[str, tuple[str, ...]]) -> list[tuple[int, int, str]]:
    spans = []
    for pid, aliases in names.items():
        for alias in aliases:
            for hit in re.finditer(r"(?<![\w-])" + re.escape(alias) + r"(?:'s)?(?![\w-])", low):
                spans.append((hit.start(), hit.end(), pid))
    spans.sort(key=lambda s: (s[0], -(s[1] - s[0])))
    kept: list[tuple[int, int, str]] = []
    for s in spans:
        if not any(s[0] < k[1] and k[0] < s[1] for k in kept):
            kept.append(s)
    return kept


__all__ = ["EXPIRE", "GRANT", "REVOKE", "Note", "read_notes", "until"]
