"""A case's score in the learner's progress record, written when it changes (issue 49 §4).

Why: the instructor's page (:mod:`bureau.classroom.instructor`) shows each learner's cases
(solved, lost, open, moves, rules kept), and the classroom must not import the game to compute
them; so the course writes the score's observer numbers (:meth:`Score.numbers`: no text, no card
id, no answer) into the learner's own record (:func:`bureau.course.progress.record_case`, a
SQLite file or the learner's tenant), and the page only counts what it finds.

The console records after each of its actions and on the case's events; a lesson that plays a
case without the console calls :func:`record_case_progress` after its moves. A score equal to
the one this process last recorded for the case is not written again, so calling it often is
cheap (one scoring, no write).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..course import progress
from .score import Score, score

if TYPE_CHECKING:
    from ..service import Bureau, Case

_LAST: dict[tuple[str, str], dict[str, Any]] = {}
"""(data directory, case id) -> the numbers this process last recorded for that case."""
_LOCK = threading.Lock()


def record_score(data_dir: str | Path, s: Score) -> bool:
    """Record ``s``'s numbers in ``data_dir``'s progress record unless this process already
    recorded the same numbers for that case. True when a row was written."""
    numbers = s.numbers()
    key = (os.path.abspath(os.path.expanduser(os.fspath(data_dir))), s.case_id)
    with _LOCK:
        if _LAST.get(key) == numbers:
            return False
        _LAST[key] = numbers
    if progress.record_case(data_dir, s.case_id, numbers):
        return True
    with _LOCK:  # not written (a full disk, a server gone): try again at the next call
        if _LAST.get(key) == numbers:
            del _LAST[key]
    return False


def record_case_progress(bureau: Bureau, case: Case) -> Score | None:
    """Score ``case`` and record its numbers in the learner's progress record when they
    changed; the score (None: the case's scenario has no case file, nothing to record)."""
    if case.scenario.case_file is None:
        return None
    s = score(case)
    record_score(bureau.settings.data_dir, s)
    return s


__all__ = ["record_case_progress", "record_score"]
