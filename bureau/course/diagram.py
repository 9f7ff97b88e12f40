"""One picture of who can read what, drawn from a case's state (issue 49 §6).

The reference game's article drew three such pictures; the course drew none outside widget
screenshots. Here each role is a box holding its private cards (the operator's view: this is
the chief's picture), the board sits in the middle with its copies and who published each, and
a line from a role to a space means the service lets that role's searches read it. A role has a
line to its own box and to the board, and to nothing else: that is the rule the lessons teach,
drawn from the same scopes the service searches (``case.scopes_for(role)``), not from a drawing
of the rule. When the rule changes (a card published, a copy revoked), so does the picture.
"""

from __future__ import annotations

import math
import textwrap
from typing import TYPE_CHECKING

from ..figures import CourseFigure, new_figure
from ..model import BOARD

if TYPE_CHECKING:
    from ..service import Case

PRIVATE, BOARD_COLOUR, READS, LOCKED, NO = "#e5e7eb", "#dbeafe", "#2563eb", "#9ca3af", "#dc2626"
MAX_LISTED = 3
"""Cards listed by key in a role's box; the rest are counted."""


def _label(card) -> str:  # noqa: ANN001 - a MemoryCard
    return card.seed_key or card.topic or card.id[-6:]


def who_reads_what(case: Case, focus: str | None = None) -> CourseFigure:
    """Draw ``case``: every private space, the board, and the reads each role's searches make.

    ``focus``: a role whose lines are drawn bold (default: the case file's asker); the title
    says what that role can and cannot read now."""
    spaces = case.spaces()
    roles = list(case.role_names)
    cf = case.scenario.case_file
    focus = focus or (cf.asker if cf is not None else roles[0])
    fig = new_figure(8.4, 5.4, layout=None)
    ax = fig.add_axes((0, 0, 1, 0.86))
    ax.set_xlim(-1.55, 1.55)
    ax.set_ylim(-1.3, 1.3)
    ax.set_aspect("equal")
    ax.axis("off")
    board = spaces.get(BOARD, [])
    places: dict[str, tuple[float, float]] = {}
    by_id = {c.id: c for cards in spaces.values() for c in cards}
    _box(ax, 0, 0, 0.9, 0.52, BOARD_COLOUR, "bulletin board",
         [f"copy of {c.source_role}'s {_label(by_id.get(c.source_id, c))}" for c in board]
         or ["(empty)"])
    for i, role in enumerate(roles):
        angle = math.pi / 2 + 2 * math.pi * i / len(roles)
        x, y = 1.08 * math.cos(angle), 0.98 * math.sin(angle)
        places[role] = (x, y)
        cards = spaces.get(role, [])
        shown = [_label(c) for c in cards[:MAX_LISTED]]
        if len(cards) > MAX_LISTED:
            shown.append(f"+{len(cards) - MAX_LISTED} more")
        _box(ax, x, y, 0.78, 0.42, PRIVATE, f"{role} ({len(cards)} private)", shown or ["(none)"])
        readable = case.scopes_for(role)
        bold = role == focus
        if BOARD in readable:  # from the role's box towards the board's edge
            ax.annotate("", xy=(0.4 * x, 0.27 * y), xytext=(0.72 * x, 0.72 * y),
                        arrowprops={"arrowstyle": "->", "color": READS,
                                    "lw": 2.4 if bold else 1.0})
    holder = _answer_holder(case, spaces)
    solved = cf is not None and any(all(t.casefold() in c.content.casefold() for t in cf.answer)
                                    for c in board)
    if holder is not None and not solved and holder != focus and focus in places:
        (x0, y0), (x1, y1) = places[focus], places[holder]
        ax.plot([x0 * 0.8, x1 * 0.8], [y0 * 0.8, y1 * 0.8], ls=":", color=NO, lw=1.6)
        ax.text((x0 + x1) * 0.4, (y0 + y1) * 0.4 + 0.06, "✗ cannot read", color=NO,
                ha="center", va="bottom", fontsize=8, fontweight="bold")
    others = [r for r in roles if r != focus]
    locked = sum(len(spaces.get(r, [])) for r in others)
    ax.text(0, -1.22, f"→ a role's searches read its own space and the board; the {focus} "
            f"cannot read the other {len(others)} spaces ({locked} cards).",
            ha="center", va="center", fontsize=8, color=LOCKED)
    fig.suptitle(textwrap.fill(_title(case, focus, board), 90), fontsize=10, y=0.98)
    return fig


def _answer_holder(case: Case, spaces: dict) -> str | None:
    """The role whose private space holds the case file's answer (None without a case file)."""
    cf = case.scenario.case_file
    if cf is None:
        return None
    for role in case.role_names:
        for card in spaces.get(role, []):
            if all(t.casefold() in card.content.casefold() for t in cf.answer):
                return role
    return None


def _title(case: Case, focus: str, board: list) -> str:
    """What the picture shows, in one sentence computed from the case."""
    cf = case.scenario.case_file
    if cf is None:
        return (f"Each role reads its own space and the board ({len(board)} copies on it)")
    holders = [c for c in board if all(t.casefold() in c.content.casefold() for t in cf.answer)]
    if holders:
        return (f"A sourced copy of the {holders[0].source_role}'s card is on the board: the "
                f"{focus} can read it now, and the original stays private")
    return (f"The {focus} reads only its own space and the board: the answer to "
            f"\"{textwrap.shorten(cf.question, 60)}\" is not there yet")


def _box(ax, x: float, y: float, w: float, h: float, colour: str, title: str,  # noqa: ANN001
         lines: list[str]) -> None:
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.02",
                                facecolor=colour, edgecolor="#6b7280", lw=1.0))
    ax.text(x, y + h / 2 - 0.07, title, ha="center", va="top", fontsize=9, fontweight="bold")
    body = "\n".join(textwrap.shorten(line, 34) for line in lines[:MAX_LISTED + 1])
    ax.text(x, y - 0.03, body, ha="center", va="center", fontsize=7.5, color="#374151")


__all__ = ["who_reads_what"]
