"""Tables that show their text: a lesson's tables print every cell whole.

pandas cuts a cell at 50 characters by default (``display.max_colwidth``), and the cut text is
often the very thing a lesson is about: lesson 07's abstraction read "According to my private
notes: The informant k..." (issue 34 §5). The lessons' tables are small, so every cell is shown
whole and the notebook (and the site) wraps it. The lesson tests fail on a cell that ends in
"..." or "…" in any executed lesson's table (``tools/nbtool.py``'s ``executed_problems``).
"""

from __future__ import annotations


def show_whole_text() -> None:
    """Let pandas print every cell of every table whole (this process only)."""
    import pandas as pd

    pd.set_option("display.max_colwidth", None)
