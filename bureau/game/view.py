"""The case file as a lesson shows it: the goal, the question and who must answer it, the
rules with whether each still holds, the moves, and where the case stands. The chief's view
(the rules' reasons name cards); never the answer itself, which the learner has to find."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .score import Score, score

if TYPE_CHECKING:
    from ..service import Case

STATUS = {"open": ("#2563eb", "OPEN"), "solved": ("#059669", "SOLVED"), "lost": ("#dc2626", "LOST")}


@dataclass(frozen=True)
class CaseFileView:
    """``display(CaseFileView.of(case))``: the case file and its score now."""

    title: str
    score: Score

    @classmethod
    def of(cls, case: Case) -> CaseFileView:
        return cls(case.scenario.title, score(case))

    def __repr__(self) -> str:  # a terminal, or a test
        cf = self.score.case_file
        rules = "; ".join(f"{'kept' if r.kept else 'BROKEN'}: {r.text}" for r in self.score.rules)
        return (f"Case file: {self.title}\nGoal: {cf.goal}\nQuestion for the {cf.asker}: "
                f"{cf.question}\nRules: {rules}\n{self.score.verdict()}")

    def _repr_html_(self) -> str:
        s, cf = self.score, self.score.case_file
        colour, word = STATUS[s.status]
        rules = "".join(
            f"<li>{'✅' if r.kept else '❌'} {html.escape(r.text)}"
            f"{' — ' + html.escape(r.broken_by) if r.broken_by else ''}</li>" for r in s.rules)
        used = ", ".join(f"{k} {n}" for k, n in sorted(s.moves.items())) or "none yet"
        par = f" · par {cf.par}" if cf.par else ""
        return (
            f'<div class="bureau-case-file" style="border:2px solid {colour};border-radius:8px;'
            f'padding:10px 14px;max-width:760px">'
            f'<div style="font-weight:bold">📁 Case file: {html.escape(self.title)} '
            f'<span style="color:{colour}">· {word}</span></div>'
            f"<p style='margin:6px 0'><b>Goal.</b> {html.escape(cf.goal)}</p>"
            f"<p style='margin:6px 0'><b>The question</b> (for the {html.escape(cf.asker)}): "
            f"<i>{html.escape(cf.question)}</i></p>"
            f"<p style='margin:6px 0 2px'><b>Rules</b> (break one and the case is lost):</p>"
            f"<ul style='margin:0 0 6px'>{rules}</ul>"
            f"<p style='margin:4px 0'><b>Moves</b> allowed: {html.escape(', '.join(cf.moves))}"
            f" · used: {html.escape(used)}{par}</p>"
            f"<p style='margin:4px 0;color:{colour}'><b>{html.escape(s.verdict())}</b></p></div>")


__all__ = ["CaseFileView"]
