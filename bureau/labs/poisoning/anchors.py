"""The published figures the poisoning lab is read beside: re-exported from :mod:`bureau.anchors`.

The figures, their definitions and where each was checked live in :mod:`bureau.anchors`, the one
module every lab quotes them from (issue 20 §4); this module keeps the poisoning lab's names.
"""

from __future__ import annotations

from bureau.anchors import AGENTPOISON, GATING, UNDEFENDED, Anchor
from bureau.anchors import POISONING_ANCHORS as ANCHORS

__all__ = ["AGENTPOISON", "ANCHORS", "GATING", "UNDEFENDED", "Anchor"]
