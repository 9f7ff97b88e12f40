"""The audit ledger's rules: one entry per decision, chained by keyed hashes.

Each entry is a small JSON object (ids, labels, action, reason codes, policy version; never a
card body or the question) and its hash is an HMAC-SHA256, under the ledger's audit key (a file
outside the ledger: :mod:`bureau.ledger.keys`), over its sequence number, the previous entry's
hash, every column the bureau reads back (case, incarnation token, kind, action, the state seal)
and the entry itself. Changing, removing or reordering any past entry therefore breaks every
hash after it, and recomputing them takes the key: :func:`verify_chain` names the first entry
that fails. An anchor kept beside the key (the last ``(seq, hash)`` the bureau wrote) catches a
chain cut short or wiped, which a chain alone cannot show.

Entries written before the key existed (a ledger from an older version) are "legacy": plain
sha256 links. They are checked with the old rule up to the legacy head recorded in the anchor,
which the key signs, so editing them is still detected.

State seals: the last entry of every transaction that changes a case's card limits, grants or
budget carries ``seal``, a digest of that case's state rows after the change (see
:func:`state_digest`); reads compare the rows they use with the latest seal.

Storage (append in one transaction, read back) is the ledger's job; what an entry holds and how
it is checked is here, so both ledger backends share one definition.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable
from typing import Any

GENESIS = "0" * 64
"""The "previous hash" of the first entry."""

COLUMNS = ("seq", "at", "kind", "invocation_id", "card_id", "card_owner", "action", "reasons",
           "rule", "policy_version", "policy_digest", "requester", "recipient", "task",
           "purpose", "cost", "card_state")
"""Columns of the audit table a case shows (:meth:`bureau.service.case.Case.audit`)."""

STATE_TABLES: dict[str, tuple[str, ...]] = {
    "card_limits": ("case_id", "card_id", "owner", "expires_at", "revoked_at", "reason"),
    "grants": ("grant_id", "case_id", "card_id", "requester", "recipient", "purpose", "action",
               "created_at", "expires_at", "revoked_at"),
    "budget": ("case_id", "requester", "owner", "spent"),
}
"""The state rows a MAC covers, column by column (every column but ``mac``)."""

STATE_KEYS: dict[str, tuple[str, ...]] = {
    "card_limits": ("case_id", "card_id"), "grants": ("grant_id",),
    "budget": ("case_id", "requester", "owner"),
}
"""Each state table's primary key: how an error names the row."""


def canonical(entry: dict[str, Any]) -> str:
    return json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def mac(key: bytes, message: str) -> str:
    return hmac.digest(key, message.encode(), "sha256").hex()


def legacy_hash(seq: int, prev_hash: str, body: str) -> str:
    """The unkeyed sha256 link of entries written before the audit key existed."""
    return hashlib.sha256(f"{seq}\n{prev_hash}\n{body}".encode()).hexdigest()


def entry_hash(key: bytes, row: dict[str, Any]) -> str:
    """HMAC-SHA256 over every column of an audit row but ``hash`` (a JSON list: unambiguous)."""
    return mac(key, json.dumps([int(row["seq"]), row["prev_hash"], row["case_id"], row["token"],
                                row["kind"], row["action"], row.get("seal"), row["entry"]]))


def row_mac(key: bytes, table: str, row: dict[str, Any]) -> str:
    """The MAC of one state row: its table and every column (``mac`` aside)."""
    return mac(key, json.dumps([table, *(row[c] for c in STATE_TABLES[table])]))


def state_digest(macs: Iterable[str]) -> str:
    """A digest of one table's rows of a case: order-free, changed by any row added, removed,
    edited or restored from an older copy (each row's MAC differs)."""
    return hashlib.sha256("\n".join(sorted(macs)).encode()).hexdigest()


EMPTY_DIGEST = state_digest(())


def verify_chain(rows: Iterable[dict[str, Any]], head: tuple[int, str] | None, key: bytes,
                 anchor: tuple[int, str, int] | None = None) -> int | str:
    """Check audit rows in seq order against the head record and the anchor.

    ``anchor`` is ``(seq, hash, legacy)``: the chain must still hold entry ``seq`` with that
    hash, and entries up to ``legacy`` use the unkeyed rule. Returns the number of entries when
    the chain holds, else a message naming the first entry that fails (a gap, a changed entry, a
    changed link, a chain cut short, or a head that does not match the end).
    """
    a_seq, a_hash, legacy = anchor if anchor is not None else (0, GENESIS, 0)
    prev, expected_seq = GENESIS, 1
    n = 0
    for row in rows:
        seq = int(row["seq"])
        if seq != expected_seq:
            return f"entry {expected_seq} is missing (next is {seq})"
        if row["prev_hash"] != prev:
            return f"entry {seq}: its link to entry {seq - 1} was changed"
        want = (legacy_hash(seq, prev, row["entry"]) if seq <= legacy
                else entry_hash(key, row))
        if not hmac.compare_digest(want, str(row["hash"])):
            return f"entry {seq} was changed after it was written"
        if seq == a_seq and row["hash"] != a_hash:
            return f"entry {seq} is not the entry the audit anchor recorded"
        prev, expected_seq, n = row["hash"], seq + 1, n + 1
    if n < a_seq:
        return (f"the chain ends at entry {n}, but the audit anchor recorded entry {a_seq}: "
                "entries were cut off or wiped")
    last = (n, prev if n else GENESIS)
    if head is not None and (head[0], head[1]) != last:
        return f"the chain ends at entry {n}, but the ledger recorded entry {head[0]} as the last"
    return n
