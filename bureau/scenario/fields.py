"""What a scenario's models and its case file check their fields with: a strict, frozen model
base, and names and texts cleaned by :mod:`bureau.text`, a refusal raised as the ``ValueError``
pydantic reports beside the field."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from ..errors import InvalidTextError
from ..text import MAX_CARD_CHARS, clean_name, clean_text


class Strict(BaseModel):
    """No unknown keys, no changes after validation."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def checked_name(value: str, what: str) -> str:
    """``value`` as :func:`~bureau.text.clean_name` accepts it, else a ``ValueError``."""
    try:
        return clean_name(value, what=what)
    except InvalidTextError as exc:
        raise ValueError(str(exc)) from None


def checked_text(value: str, what: str, max_chars: int = MAX_CARD_CHARS) -> str:
    """``value`` as :func:`~bureau.text.clean_text` accepts it, else a ``ValueError``."""
    try:
        return clean_text(value, what=what, max_chars=max_chars)
    except InvalidTextError as exc:
        raise ValueError(str(exc)) from None


__all__ = ["Strict", "checked_name", "checked_text"]
