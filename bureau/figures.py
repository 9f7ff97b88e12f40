"""The course's one figure type: a matplotlib Figure that renders itself as PNG.

A bare :class:`matplotlib.figure.Figure` has no PNG representation of its own: a notebook shows
it as an image only when pyplot's inline backend has registered a formatter, which happens once a
cell imports pyplot or runs ``%matplotlib inline``. Without that, the lab, papermill and the site
all show ``<Figure size 950x460 with 1 Axes>`` instead of the figure (issue 34 §1). Every room
that draws for a lesson (the lessons' own plots, the leakage lab, the poisoning lab, the
injection lab, the closing lesson) builds its figures here, so a figure renders the same way
everywhere, without pyplot's global state, and headless.

They colour from one palette (:data:`PALETTE`): green is what the boundary kept in (blocked,
withheld, the bureau), red what got out (a leak, the shared pool), blue what was meant to cross
(the board, a reveal), amber an abstraction, grey chance; a learner who read one figure's colours
has read them all.
"""

from __future__ import annotations

import io

from matplotlib.figure import Figure

PNG_DPI = 100
"""Resolution of the PNG a notebook stores: sharp at the site's column width, small on disk."""


class CourseFigure(Figure):
    """A Figure that a notebook displays as PNG whatever the backend (no pyplot needed)."""

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        # "tight" as pyplot's inline backend does: a legend placed below the axes stays in.
        self.savefig(buf, format="png", dpi=PNG_DPI, bbox_inches="tight")
        return buf.getvalue()


def new_figure(width: float, height: float, layout: str | None = "constrained") -> CourseFigure:
    """A fresh :class:`CourseFigure` of ``width`` x ``height`` inches (no axes yet)."""
    return CourseFigure(figsize=(width, height), layout=layout)


LessonFigure = CourseFigure
"""The name the figure type had before issue 34 (one release)."""


# -- the course's palette: one colour, one meaning, in every figure (issue 50 §5) ---------------
PROTECTED = "#059669"
"""Green: what the boundary kept in: an attack blocked, a card withheld, the bureau's own policy."""
LEAKED = "#dc2626"
"""Red: what got out: a leak, a disclosure, a rule broken, and the shared pool that does it."""
SHARED = "#2563eb"
"""Blue: what was meant to cross: the board, a published copy, a card revealed, shareable recall."""
ABSTRACTED = "#d97706"
"""Amber: a safe abstraction, what crosses in place of the secret."""
CHANCE = "#6b7280"
"""Grey: chance, a random draw of the same size, "no information"; drawn dashed."""
PRIVATE = "#9ca3af"
"""Light grey: a private space, or a bureau policy that releases nothing."""
PUBLISHED = "#f4a582"
"""Salmon: figures others published (a leaderboard's range), never ranked with this run's."""
PROTECTED_SHADES = ("#065f46", PROTECTED, "#6ee7b7")
"""Several of the bureau's own variants side by side, darkest first (markers tell them apart)."""

PALETTE = {
    "protected": PROTECTED, "blocked": PROTECTED, "withhold": PROTECTED, "bureau": PROTECTED,
    "leaked": LEAKED, "disclosed": LEAKED, "shared_pool": LEAKED,
    "shared": SHARED, "board": SHARED, "reveal": SHARED, "published_copy": SHARED,
    "abstract": ABSTRACTED,
    "chance": CHANCE, "random": CHANCE,
    "private": PRIVATE,
    "published": PUBLISHED,
}
"""Every meaning a figure colours, by name: a plot asks ``PALETTE["withhold"]``, never a hex."""


def integer_ticks(axis: object) -> None:
    """Only whole numbers on ``axis`` (``ax.xaxis`` or ``ax.yaxis``): for counts of cards,
    checkpoints, trials, where a tick at 2.5 would read as half a card."""
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))  # type: ignore[attr-defined]


def share_label(successes: int, trials: int) -> str:
    """A proportion as a figure should print it: ``"3/10"``, and ``"1/1 (n=1)"`` when a single
    trial makes it 0 % or 100 % whatever the truth (issue 50 §5: never a bare proportion of one)."""
    return f"{successes}/{trials}" + (" (n=1)" if trials == 1 else "")


__all__ = ["ABSTRACTED", "CHANCE", "LEAKED", "PALETTE", "PNG_DPI", "PRIVATE", "PROTECTED",
           "PROTECTED_SHADES", "PUBLISHED", "SHARED", "CourseFigure", "LessonFigure",
           "integer_ticks", "new_figure", "share_label"]
