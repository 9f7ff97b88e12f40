"""A demo says what its run showed: the effect it promises, or plainly that this run lacked it.

A lesson's demo (two writers racing, a crash mid-saga, ...) promises an effect, and a run can
come out without it (a race whose writers never overlapped). The lesson then says so, from
what ran, with :data:`NOT_SHOWN` in the sentence; the lesson tests execute every lesson and fail
when an output carries it (issue 34 §1: a demo whose stated effect did not occur in that run).
"""

from __future__ import annotations

NOT_SHOWN = "Not shown in this run"
"""The words that open a demo's sentence when its effect did not occur (the tests look for
them)."""


def outcome(occurred: bool, shown: str, not_shown: str) -> str:
    """``shown`` when the effect occurred; otherwise :data:`NOT_SHOWN` and why (``not_shown``)."""
    return shown if occurred else f"{NOT_SHOWN}: {not_shown}"
