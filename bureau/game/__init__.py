"""The game the core lessons play: a case with a goal, rules that lose it, and a score the bureau
reads off its own state (issue 49). The case file itself is scenario data
(:mod:`bureau.scenario.case_file`); :mod:`.score` scores a case against it."""

from .score import MOVE_EVENTS, Rule, Score, score
from .view import CaseFileView

__all__ = ["MOVE_EVENTS", "CaseFileView", "Rule", "Score", "score"]
