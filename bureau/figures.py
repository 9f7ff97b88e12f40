"""The course's one figure type: a matplotlib Figure that renders itself as PNG.

A bare :class:`matplotlib.figure.Figure` has no PNG representation of its own: a notebook shows
it as an image only when pyplot's inline backend has registered a formatter, which happens once a
cell imports pyplot or runs ``%matplotlib inline``. Without that, the lab, papermill and the site
all show ``<Figure size 950x460 with 1 Axes>`` instead of the figure (issue 34 §1). Every room
that draws for a lesson (the lessons' own plots, the leakage lab, the poisoning lab, the
injection lab, the closing lesson) builds its figures here, so a figure renders the same way
everywhere, without pyplot's global state, and headless.
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

__all__ = ["PNG_DPI", "CourseFigure", "LessonFigure", "new_figure"]
