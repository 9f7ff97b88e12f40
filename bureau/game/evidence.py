"""Who "knows" the case's answer, and whether what they know is the answer (issue 48 §5, 49).

A role *knows* when one of the cards it may read reaches the relevance threshold for the
question; relevance finds relevant cards, not true ones. In ``the-mole`` two roles know where
the handover is and they disagree; a lesson that printed "answer: known" for the decoy's holder
without a word hid the one lesson it could teach. The chief's view here names, for each role
that knows, the card its best evidence is and whether that card holds the case file's answer.
A search only (``case.retrieve``): no interrogation, no move on the score.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from ..service import Case


def who_knows(case: Case, question: str | None = None) -> pd.DataFrame:
    """One row per role: whether it knows (evidence at or above the threshold), the owner and
    key of its best evidence, and whether that evidence holds the case file's answer."""
    cf = case.scenario.case_file
    question = question or (cf.question if cf is not None else None)
    if question is None:
        raise ValueError("Name a question (this case has no case file to take one from).")
    rows = []
    for role in case.role_names:
        hits = case.retrieve(role, question).hits
        best = max(hits, key=lambda c: c.score or 0.0, default=None)
        holds = None
        if best is not None and cf is not None:
            holds = all(t.casefold() in best.content.casefold() for t in cf.answer)
        rows.append({
            "role": role,
            "knows": best is not None,
            "best evidence": "" if best is None else
            f"{best.source_role or best.owner}'s {best.seed_key or best.topic}",
            "holds the answer": holds,
        })
    return pd.DataFrame(rows)


def known_is_not_true(table: pd.DataFrame) -> str:
    """One sentence on ``who_knows``'s table: who knows, and who knows the wrong thing."""
    knowing = table[table["knows"]]
    wrong = knowing[knowing["holds the answer"] == False]  # noqa: E712 - None means unknown
    if knowing.empty:
        return "Nobody knows yet: no role may read a card that reaches the threshold."
    names = ", ".join(knowing["role"])
    if wrong.empty:
        return f"{names} know{'s' if len(knowing) == 1 else ''}, and the evidence holds the answer."
    return (f"{names} know{'s' if len(knowing) == 1 else ''}; but the {', '.join(wrong['role'])}"
            f" know{'s' if len(wrong) == 1 else ''} something else: relevant is not true.")


__all__ = ["known_is_not_true", "who_knows"]
