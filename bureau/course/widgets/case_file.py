"""The case file on screen (issue 49): the console's panel and the stage's summary.

Two audiences, two renderings of the same score (:mod:`bureau.game`):

* :func:`case_file_html`, the operator's panel in the console: the goal, the question and who
  must answer it, each rule kept or broken with its *why*, the moves allowed and used, par and
  the verdict. The operator may read text, but never the answer tokens: the learner plays the
  case to find the answer, and a panel that printed it would end the game.
* :func:`stage_case_html`, the projector's line: the case file's goal and question (scenario
  text, public like the scenario's title) and the score's :meth:`~bureau.game.Score.numbers`
  (status, moves used, rules kept of all). No rule is named: a rule names a role's card, and
  the stage shows counts, ids and flags only.
"""

from __future__ import annotations

from typing import Any

from ...game import Score
from ...scenario.case_file import CaseFile
from ._common import esc

STATUS_BOX = {"solved": "ok", "open": "notyet", "lost": "lost"}
"""The verdict box's CSS class for each status."""
STATUS_ICON = {"solved": "✅", "open": "🔎", "lost": "❌"}


def _moves_line(s: Score) -> str:
    cf = s.case_file
    used = ", ".join(f"{k} {n}" for k, n in sorted(s.moves.items()) if n) or "none yet"
    par = f' · par <span class="par">{int(cf.par)}</span>' if cf.par else ""
    return (f'<div class="bureau-casefile-moves">Moves allowed: {esc(", ".join(cf.moves))} · '
            f'used <span class="used">{s.moves_used}</span> ({esc(used)}){par}</div>')


def case_file_html(s: Score) -> str:
    """The console's case-file panel for score ``s`` (operator text; never the answer)."""
    cf: CaseFile = s.case_file
    rows = []
    for i, rule in enumerate(s.rules):
        why = cf.never[i].why if i < len(cf.never) else "A move this case does not allow loses it."
        mark = "✓ kept" if rule.kept else "✗ broken"
        broke = (f' <span class="bureau-muted">({esc(rule.broken_by)})</span>'
                 if rule.broken_by else "")
        rows.append(
            f'<tr data-rule="{i}" data-kept="{str(rule.kept).lower()}">'
            f'<td class="bureau-check {"ok" if rule.kept else "fail"}">{mark}</td>'
            f"<td>{esc(rule.text)}{broke}"
            f'<div class="bureau-muted">{esc(why)}</div></td></tr>')
    return (
        f'<div class="bureau-root bureau-casefile" data-status="{s.status}">'
        f"<h4>📁 Case file</h4>"
        f'<div class="bureau-casefile-goal"><b>Goal</b>: {esc(cf.goal)}</div>'
        f'<div class="bureau-casefile-question"><b>Question</b> for '
        f"<b>{esc(cf.asker)}</b>: {esc(cf.question)}</div>"
        f'<table class="bureau-table bureau-casefile-rules">{"".join(rows)}</table>'
        f"{_moves_line(s)}"
        f'<div class="bureau-verdictbox {STATUS_BOX[s.status]}">'
        f"{STATUS_ICON[s.status]} {esc(s.verdict())}</div></div>"
    )


def stage_case_html(goal: str, question: str, numbers: dict[str, Any]) -> str:
    """The stage's case line: the goal and the question (public scenario text) and the score's
    observer numbers; nothing else of the case file."""
    status = str(numbers.get("status", "open"))
    status = status if status in STATUS_BOX else "open"
    return (
        f'<div class="bureau-stage-case" data-status="{status}">'
        f"<h4>📁 The case</h4>"
        f'<div class="bureau-stage-goal">{esc(goal)}</div>'
        f'<div class="bureau-stage-question"><b>Question</b>: {esc(question)}</div>'
        f'<div class="bureau-verdictbox {STATUS_BOX[status]}">'
        f'{STATUS_ICON[status]} <span class="bureau-stage-status">{status}</span> · moves used '
        f'<span class="bureau-stage-moves">{int(numbers.get("moves", 0))}</span> · rules kept '
        f'<span class="bureau-stage-rules">{int(numbers.get("rules_kept", 0))}/'
        f'{int(numbers.get("rules", 0))}</span></div></div>'
    )


__all__ = ["case_file_html", "stage_case_html"]
