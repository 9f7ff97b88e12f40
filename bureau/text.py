"""Validation of everything a person types: whispers, questions, scenario texts and names.

Checked before any write so that bad input changes nothing. Control characters are refused
rather than stripped: silently editing what someone whispered would make the X-ray lie. The one
edit made is trimming blanks (spaces, NBSP, ideographic space, line breaks) at either end of a
text: they carry no meaning for a card or a question, the card stores the trimmed text and every
X-ray, export and event shows exactly what was stored, so nothing shown differs from what is kept.
"""

from __future__ import annotations

import re
import unicodedata

from .errors import InvalidTextError

MAX_CARD_CHARS = 2000
"""A card is a fact, not a document: long texts also embed poorly (MiniLM reads 256 tokens)."""
MAX_QUESTION_CHARS = 2000
"""Long enough for a requester that asks with its task, role and role description (the leakage
lab) without cutting below the 256 tokens MiniLM reads; longer texts are refused, not cut."""
NAME_RE = re.compile(r"[a-z][a-z0-9_-]{0,31}")
"""Role, topic and kind names; always applied with ``fullmatch`` (``$`` would accept a final
newline, and ``board\n`` must not pass as the board)."""
CASE_ID_RE = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
"""Case ids: lowercase ASCII only, so no two valid ids can be equal under the store's
case-, accent- and trailing-space-insensitive comparison, and no id can name a path."""
MAX_CASE_ID_CHARS = 64

_ALLOWED_CONTROLS = {"\n", "\t"}


def clean_text(text: object, *, what: str = "text", max_chars: int = MAX_CARD_CHARS) -> str:
    """Return ``text`` stripped of surrounding blanks, or raise ``InvalidTextError``."""
    if not isinstance(text, str):
        raise InvalidTextError(f"The {what} must be a string, not {type(text).__name__}.")
    stripped = text.strip()
    if not stripped:
        raise InvalidTextError(f"The {what} is empty.", "Type a sentence with at least one word.")
    if len(stripped) > max_chars:
        raise InvalidTextError(
            f"The {what} has {len(stripped):,} characters; the limit is {max_chars:,}.",
            "Split it into shorter facts, one card each.",
        )
    # Printable text holds no Cc/Cf/Cs character: only other text needs the per-character scan.
    bad = [] if stripped.isprintable() else sorted(
        {
            f"U+{ord(ch):04X}"
            for ch in stripped
            if ch not in _ALLOWED_CONTROLS and unicodedata.category(ch) in ("Cc", "Cf", "Cs")
        }
    )
    if bad:
        raise InvalidTextError(
            f"The {what} contains control or invisible format characters ({', '.join(bad[:5])}).",
            "Remove them; only ordinary text, tabs and line breaks are accepted.",
        )
    return stripped


def clean_name(name: object, *, what: str = "name") -> str:
    """A role, topic or kind name: lowercase slug, so it is safe as a storage filter value."""
    if type(name) is not str or not NAME_RE.fullmatch(name):
        raise InvalidTextError(
            f"{what.capitalize()} {short_repr(name)} is not a valid name.",
            "Use 1-32 lowercase letters, digits, '-' or '_', starting with a letter.",
        )
    return name


def clean_case_id(case_id: object) -> str:
    """A case id, validated whole: it names a ledger row, a store namespace and a file."""
    if type(case_id) is not str or not CASE_ID_RE.fullmatch(case_id) or ".." in case_id:
        raise InvalidTextError(
            f"Case id {short_repr(case_id)} is not valid.",
            f"Use 1-{MAX_CASE_ID_CHARS} lowercase letters, digits, '.', '-' or '_', starting with a "
            "letter or digit (no '..').",
        )
    return case_id


MAX_WHOLE = 2**63 - 1
"""The largest whole number any argument may be (a SQLite integer): cursors, versions, ids."""
_CARD_ID = re.compile(r"[0-9]{1,40}")


def card_id_text(value: object) -> str | None:
    """A card id as the store spells it (digits), or ``None`` for anything no card can have:
    callers then give the same refusal as for a card that does not exist. Checked before any
    ``str()``, which a 5,000-digit int would turn into a raw ``ValueError``."""
    if type(value) is int and 0 <= value <= MAX_WHOLE:
        return str(value)
    if type(value) is str and _CARD_ID.fullmatch(value):
        return value
    return None


def short_repr(value: object, limit: int = 60) -> str:
    """``repr`` cut to ``limit`` characters: error messages must stay small whatever came in."""
    try:
        text = repr(value) if isinstance(value, str | int | float | bool | type(None)) else (
            f"<{type(value).__name__}>"
        )
    except Exception:  # noqa: BLE001 - a hostile __repr__ must not break an error message
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 1] + "…"
