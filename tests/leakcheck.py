"""One way to ask "did the secret come back?" that random ids cannot trip.

Ids (invocation, request, card) are random hex, so a bare substring test for a digit string like
"0427" fails about once in a few thousand runs when an id happens to hold it. A secret counts as
present only where it is not part of a longer run of hex digits.
"""

from __future__ import annotations

import re


def holds(text: str, secret: str) -> bool:
    """True when ``secret`` occurs in ``text`` other than inside a hex id."""
    return re.search(rf"(?<![0-9a-fA-F]){re.escape(secret)}(?![0-9a-fA-F])", text) is not None
