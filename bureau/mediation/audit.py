"""The audit ledger's rules: one entry per decision, chained by hashes.

Each entry is a small JSON object (ids, labels, action, reason codes, policy version; never a
card body or the question) and its hash covers its sequence number, the previous entry's hash
and the entry itself. Changing, removing or reordering any past entry therefore breaks every
hash after it, and :func:`verify_chain` names the first entry that fails. Storage (append in
one transaction, read back) is the ledger's job; what an entry holds and how it is checked is
here, so both ledger backends share one definition.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

GENESIS = "0" * 64
"""The "previous hash" of the first entry."""

COLUMNS = ("seq", "at", "kind", "invocation_id", "card_id", "card_owner", "action", "reasons",
           "rule", "policy_version", "policy_digest", "requester", "recipient", "task",
           "purpose", "cost", "card_state")
"""Columns of the audit table a case shows (:meth:`bureau.service.case.Case.audit`)."""


def canonical(entry: dict[str, Any]) -> str:
    return json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def entry_hash(seq: int, prev_hash: str, body: str) -> str:
    """sha256 over the sequence number, the previous hash and the canonical entry."""
    return hashlib.sha256(f"{seq}\n{prev_hash}\n{body}".encode()).hexdigest()


def verify_chain(rows: Iterable[dict[str, Any]], head: tuple[int, str] | None) -> int | str:
    """Check rows ``{seq, entry, prev_hash, hash}`` in seq order against the head record.

    Returns the number of entries when the chain holds, else a message naming the first entry
    that fails (a gap, a changed entry, a changed link, or a head that does not match the end).
    """
    prev, expected_seq = GENESIS, 1
    n = 0
    for row in rows:
        seq = int(row["seq"])
        if seq != expected_seq:
            return f"entry {expected_seq} is missing (next is {seq})"
        if row["prev_hash"] != prev:
            return f"entry {seq}: its link to entry {seq - 1} was changed"
        if entry_hash(seq, prev, row["entry"]) != row["hash"]:
            return f"entry {seq} was changed after it was written"
        prev, expected_seq, n = row["hash"], seq + 1, n + 1
    last = (n, prev if n else GENESIS)
    if head is not None and (head[0], head[1]) != last:
        return f"the chain ends at entry {n}, but the ledger recorded entry {head[0]} as the last"
    return n
