"""Validation of everything a person types: whispers, questions, scenario texts and names.

Checked before any write so that bad input changes nothing. Control characters are refused
rather than stripped: silently editing what someone whispered would make the X-ray lie.
"""

from __future__ import annotations

import re
import unicodedata

from .errors import InvalidTextError

MAX_CARD_CHARS = 2000
"""A card is a fact, not a document: long texts also embed poorly (MiniLM reads 256 tokens)."""
MAX_QUESTION_CHARS = 500
NAME_RE = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")

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
    bad = sorted(
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
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise InvalidTextError(
            f"{what.capitalize()} {name!r} is not a valid name.",
            "Use 1-32 lowercase letters, digits, '-' or '_', starting with a letter.",
        )
    return name
