"""Lesson 03's bookkeeping: how many board copies one card has, and how many cleanup tasks are
pending, after each step of a publish that crashes, is recovered and is retried.

It used to be a helper defined in a notebook cell; here it is unit-tested, and it reads only the
operator's public views (``case.spaces()`` and ``case.publishing.pending_cleanups()``), so the
figure shows exactly what the stage and the console show.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..model import BOARD, MemoryCard

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..service import Case


@dataclass
class SagaStory:
    """Board copies of ``card`` and pending cleanups of ``case``, one row per recorded step."""

    case: Case
    card: MemoryCard
    steps: list[tuple[str, int, int]] = field(default_factory=list)
    """``(step, board copies of the card, pending cleanup tasks)`` in the order recorded."""

    def copies(self) -> int:
        """Board cards that are copies of the card (a stray copy counts: it is readable)."""
        return sum(c.source_id == self.card.id for c in self.case.spaces()[BOARD])

    def record(self, step: str) -> tuple[int, int]:
        """Count now, remember the counts under ``step``, and return ``(copies, pending)``."""
        row = (step, self.copies(), self.case.publishing.pending_cleanups())
        self.steps.append(row)
        return row[1], row[2]

    def at(self, step: str) -> tuple[int, int]:
        """``(copies, pending)`` as recorded at ``step`` (the latest row of that name): what the
        figure shows there, for the lesson's question about it."""
        found = [(n, p) for s, n, p in self.steps if s == step]
        if not found:
            raise KeyError(f"no step {step!r} recorded; steps: {[s for s, *_ in self.steps]}")
        return found[-1]

    def plot(self) -> Figure:
        """The lesson's figure: copies and pending cleanups after each recorded step."""
        from .widgets import plots  # lazy: matplotlib is only needed for the figure

        return plots.board_copies([(s, n) for s, n, _ in self.steps], [p for *_, p in self.steps])
