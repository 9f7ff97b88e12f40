"""The course's one figure type: a matplotlib Figure that shows itself as a PNG wherever it is
displayed (JupyterLab, papermill's saved outputs, the rendered site), without pyplot's global
state. A bare ``Figure`` has no image representation and prints as ``<Figure size ...>``; every
room that draws (the lessons' widgets, the labs) builds this one instead.
"""

from __future__ import annotations

import io

from matplotlib.figure import Figure


class LessonFigure(Figure):
    """A Figure that displays itself as PNG in Jupyter without pyplot's global state."""

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        self.savefig(buf, format="png", dpi=100)
        return buf.getvalue()


__all__ = ["LessonFigure"]
