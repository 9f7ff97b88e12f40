"""The game the core lessons play: a case with a goal, rules that lose it, and a score the bureau
reads off its own state (issue 49). The case file itself is scenario data
(:mod:`bureau.scenario.case_file`); :mod:`.score` scores a case against it; :mod:`.progress`
keeps the score's numbers in the learner's progress record, where the instructor's page reads
them."""

from .progress import record_case_progress, record_score
from .score import MOVE_EVENTS, Rule, Score, score

__all__ = ["MOVE_EVENTS", "Rule", "Score", "record_case_progress", "record_score", "score"]
