"""Card kinds: what a turn holds decides who of its record's readers may use it.

Written from turn text alone, by one rule for every domain (first match wins):

``private``
    The turn asks to stay with its speaker ("private note", "keep ... private", "private-family
    note", "my private ..."): it is stored in the speaker's own space, read by no one else.
``credential``
    A credential word (PIN, passcode, password, token, credential, code, release phrase, key
    location, badge, keypad, combination) and a value: a token of at least three characters holding a digit
    (a time such as 9:30 is not one), a quoted string, the words after "phrase" / "location", or
    where a spare, hidden or backup key is.
    Need to know: read by the speaker, the principals the text names, and the record's
    ``credentials`` readers (campus IT) -- each through a grant on that card.
``logistics``
    A scheduling or place word (a weekday or month, a clock time, appointment, arrival, window,
    pickup, room, door, location, calendar, ...) and no sensitive word (an amount of money, a
    phone number, a dose or lab unit, a result, diagnosis, medication, customer, contract, sponsor, budget,
    stipend, grade, a credential word, private, confidential, restricted, ...): read by ``limited`` readers
    (a family member with logistics access, a scheduling-only delegate) and ``full`` ones.
``record``
    Everything else: read by ``full`` readers only.
"""

from __future__ import annotations

import re

PRIVATE, CREDENTIAL, LOGISTICS, RECORD = "private", "credential", "logistics", "record"
KINDS = (PRIVATE, CREDENTIAL, LOGISTICS, RECORD)

_PRIVATE = re.compile(
    r"\bprivate[- ](?:family[- ])?note\b|\bkeep (?:it|this|that|the exact [\w-]+(?: [\w-]+)?) "
    r"private\b|\bmy (?:current )?private\b", re.IGNORECASE)
_CRED_WORD = re.compile(
    r"\b(?:pin|passcode|password|token|credential|code|release phrase|key location|"
    r"(?:spare|hidden|backup|outdoor) key|badge|keypad|combination)s?\b", re.IGNORECASE)
_TIME = re.compile(r"^\d{1,2}(?::\d{2})?(?:am|pm)?$", re.IGNORECASE)
_VALUE = re.compile(r"(?<![\w-])(?=[\w-]*\d)[A-Za-z0-9][\w-]{2,}(?![\w-])")
_QUOTED = re.compile(r"['\"‘“]([^'\"‘’“”]{3,80})['\"’”]")
_PHRASE_VALUE = re.compile(
    r"\b(?:phrase|location)\s+(?:is\s+|on file is\s+)?[a-z]+ [a-z]+|"
    r"\bkey\s+(?:is\s+)?(?:currently\s+|now\s+)?(?:in|under|behind|inside)\b", re.IGNORECASE)
_WEEKDAYS = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_MONTHS = (r"January|February|March|April|May|June|July|August|September|October|November|"
           r"December")
_SCHEDULE = re.compile(
    rf"(?i:\b(?:{_WEEKDAYS})\b)|\b(?:{_MONTHS})\s+\d{{1,2}}\b|"
    r"(?i:\b\d{1,2}(?::\d{2})?\s?(?:am|pm)\b|\b\d{1,2}:\d{2}\b|"
    r"\b(?:appointment|schedul\w*|reschedul\w*|calendar|arriv\w*|window|pick-?up|drop-?off|"
    r"slot|room|suite|door|entrance|lobby|parking|location|route|check-in|meeting|visit|"
    r"hold time|time and location|logistics)\b)")
_SENSITIVE = re.compile(
    r"\$\s?\d|\b\d{3}-\d{3}-\d{4}\b|\b\d[\d,.]*\s?(?:usd|dollars|mg|mcg|ml|miu|g/dl|mmol|units?|micrograms|"
    r"milligrams)\b|"
    r"\b(?:results?|lab|labs|diagnos\w*|medication\w*|dose|dosing|symptom\w*|biops\w*|"
    r"pregnan\w*|viability|beta-hcg|hcg|prescri\w*|therap\w*|psychiatr\w*|bleed\w*|pain|"
    r"nause\w*|cramp\w*|vitamin|allerg\w*|blood|infection|tumou?r|cancer|oncolog\w*|"
    r"kidney|cardi\w*|rhythm|insulin|glucose|miscarr\w*|depress\w*|anxiety|suicid\w*|"
    r"surgery|customer|contract|sponsor|vendor|redline|clause|budget|stipend|salary|discount|"
    r"invoice|grant amount|award|grade|gpa|transcript|misconduct|disciplin\w*|incident|"
    r"private|confidential|restricted|interpretation|pin|passcode|password|token|credential|"
    r"code|phrase|badge|keypad)\b", re.IGNORECASE)


def credential_value(text: str) -> bool:
    """Whether ``text`` carries a credential's value (module docstring)."""
    if not _CRED_WORD.search(text):
        return False
    if any(not _TIME.match(v) for v in _VALUE.findall(text)):
        return True
    return bool(_QUOTED.search(text) or _PHRASE_VALUE.search(text))


def kind_of(text: str) -> str:
    """The card kind of a turn's text (module docstring)."""
    if _PRIVATE.search(text):
        return PRIVATE
    if credential_value(text):
        return CREDENTIAL
    if _SCHEDULE.search(text) and not _SENSITIVE.search(text):
        return LOGISTICS
    return RECORD


__all__ = ["CREDENTIAL", "KINDS", "LOGISTICS", "PRIVATE", "RECORD", "credential_value", "kind_of"]
