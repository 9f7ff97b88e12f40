"""Trust tiers (issue 14): ephemeral task context, session memory, long-term memory.

Untrusted tool output lands in a run's ephemeral scope and is gone when the run ends (also after
a crash: the next open sweeps it); only an approval step or a narrow, auditable rule promotes
content to long-term memory. This package holds the vocabulary and the rules as data
(:mod:`.provenance`, :mod:`.promotion`); the service applies them (``Case.start_run``,
``Case.promote``, ``Case.end_session``; the run handle is :class:`bureau.service.runs.Run`).
"""

from __future__ import annotations

from .promotion import OVER_EAGER_EXAMPLE, PromotionRule, clean_source, promotable, source_matches
from .provenance import (
    EPHEMERAL,
    LONG_TERM,
    PROVENANCES,
    ROLE_TIERS,
    SEARCHED_IN_RUN,
    SEARCHED_OUTSIDE_RUN,
    SESSION,
    TIERS,
    TRUST,
    TRUST_BY_PROVENANCE,
    TRUST_VALUES,
    TRUSTED,
    UNTRUSTED,
    Labels,
    check_tier,
    is_ephemeral_owner,
    is_untrusted,
    labels,
    parse_run_owner,
    read_labels,
    run_owner,
    shown_source,
)

__all__ = [
    "EPHEMERAL",
    "LONG_TERM",
    "OVER_EAGER_EXAMPLE",
    "PROVENANCES",
    "ROLE_TIERS",
    "SEARCHED_IN_RUN",
    "SEARCHED_OUTSIDE_RUN",
    "SESSION",
    "TIERS",
    "TRUST",
    "TRUSTED",
    "TRUST_BY_PROVENANCE",
    "TRUST_VALUES",
    "UNTRUSTED",
    "Labels",
    "PromotionRule",
    "check_tier",
    "clean_source",
    "is_ephemeral_owner",
    "is_untrusted",
    "labels",
    "parse_run_owner",
    "promotable",
    "read_labels",
    "run_owner",
    "shown_source",
    "source_matches",
]
