"""What a card row is to the gateway: which metadata keys a card carries, how a case names
its namespace, the check every returned row passes, and the one way a scope name becomes SQL."""

from __future__ import annotations

import re
from datetime import datetime
from functools import lru_cache
from typing import Any

import numpy as np

from ..errors import BoundaryViolation
from ..model import CaseSpace

META_KEYS = (
    "visibility", "topic", "kind", "source_role", "source_id", "content_hash", "seed_key", "created",
    "sensitivity", "info_type", "abstraction",
    "tier", "provenance", "trust", "promoted_from", "tool_source",  # trust tiers (issue 14)
    "copied_from",  # what a scope value inherits its labels from (issue 19 §4)
)


def ids_of(case: CaseSpace) -> tuple[str, str]:
    """(case id for labels, store namespace for filters). Only a CaseSpace names a namespace:
    a bare case id would address whichever incarnation once used it."""
    if not isinstance(case, CaseSpace):
        raise TypeError(f"the gateway takes a CaseSpace (case.space), not {type(case).__name__}")
    return case.case_id, case.store_id


def check_row(row: dict[str, Any], uid: str, owner: str | None, what: str) -> dict[str, Any]:
    """A row the store returned must lie in the scope that was asked for: a filter bug surfaces
    as ``BoundaryViolation``, never as a quiet leak. (The one copy of this check.)"""
    if row.get("user_id") != uid or (owner is not None and row.get("agent_id") != owner):
        raise BoundaryViolation(
            f"A {what} scoped to {uid}/{owner or '*'} returned a row of "
            f"{row.get('user_id')}/{row.get('agent_id')}."
        )
    return row


SQL_NAME = re.compile(r"[A-Za-z0-9_.:#-]{1,200}")


def sql_name(value: str) -> str:
    """A namespace or owner id as an SQL string literal. Ids are validated names (case ids,
    tokens, role and scope names: letters, digits and ``_.:#-``); anything else is refused
    rather than escaped, so no quoting rule has to be right."""
    if type(value) is not str or not SQL_NAME.fullmatch(value):
        raise BoundaryViolation(f"Refusing to search an unvalidated scope name {value!r}.")
    return f"'{value}'"


def ts_text(value: Any) -> str:
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    return str(value or "")


def vector_literal(vector: np.ndarray) -> str:
    """The vector literal of the float32 values PowerMem stores and searches with, so distances
    are identical to PowerMem's own search.

    Nine significant digits name every float32 exactly (parsed as float or as double and then
    rounded, the nearest float32 is the original). One ``%`` over a format made once per length
    writes them ~1.5x faster than a ``format`` call per number and ~4x faster than ``str`` of
    each numpy float32 (its shortest-digits search): ~0.055 ms for 384 numbers, once per scope
    per search and once per written card (~130,000 times in the leak lab; issue 31 §4). The
    text is the same as ``"{:.9g}".format`` of each number's. ``tests/test_scope_topk.py``
    checks the parse round trip."""
    values = tuple(np.asarray(vector, dtype=np.float32).tolist())
    return _literal_format(len(values)) % values


@lru_cache(maxsize=8)
def _literal_format(dims: int) -> str:
    return "[" + ",".join(["%.9g"] * dims) + "]"


__all__ = ["META_KEYS", "SQL_NAME", "check_row", "ids_of", "sql_name", "ts_text", "vector_literal"]
