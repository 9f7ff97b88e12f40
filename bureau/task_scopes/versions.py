"""Keyed writes in a task scope: Lamport-style versions and one total order that picks a winner.

A write to a key carries a version: the first write is 1, an update is the version the writer
read plus one (``next_version``). Two writers that read the same version both write ``v + 1``;
equal versions are ordered by the writer's wall-clock timestamp, then by writer id, then by the
write's card id (unique), so :func:`order_key` is a total order and :func:`winner` -- the write
with the greatest key -- does not depend on the order in which anyone learns of the writes.
Every observer therefore converges on the same value (last-writer-wins over Lamport versions, a
state-based CRDT register).

A write whose key is not greater than the current winner's is *stale*: it is still recorded (its
text stays in the scope's log and in :meth:`Case.scope_history`) and reported to its writer
(``WriteResult.stale`` and an inbox notice), never silently dropped.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import InvalidArgumentError
from ..text import clean_name, short_repr

OUTCOMES = ("won", "stale")


def check_key(key: object) -> str:
    """A key in a scope: a name like a topic (it is a filter value and shows in inboxes)."""
    return clean_name(key, what="key")


MAX_VERSION = 2**62
"""Versions are stored as 64-bit integers; a read version at or above this was never read."""


def next_version(read_version: object) -> int:
    """The version a write carries: ``(read_version or 0) + 1``; ``None`` means a first write."""
    if read_version is None:
        return 1
    if isinstance(read_version, bool) or not isinstance(read_version, int) \
            or not 0 <= read_version < MAX_VERSION:
        raise InvalidArgumentError(
            f"read_version must be None (first write) or the whole number ≥ 0 you read, not "
            f"{short_repr(read_version)}.")
    return read_version + 1


def order_key(version: int, written_at: float, writer: str,
              card_id: str) -> tuple[int, float, str, int, str]:
    """Greater wins: version, then timestamp, then writer id, then card id (never equal)."""
    cid = int(card_id) if card_id.isascii() and card_id.isdigit() else -1
    return (int(version), float(written_at), str(writer), cid, card_id)


@dataclass(frozen=True)
class ScopeWrite:
    """One recorded write (history row); ``text`` is filled in for members only."""

    seq: int
    scope: str
    key: str
    version: int
    writer: str
    written_at: float
    read_version: int | None
    outcome: str
    """``won`` (it was the winner when recorded) or ``stale`` (it never was)."""
    card_id: str
    """The write's card in the scope's log (``task:<name>:log``)."""
    current: bool = False
    """True for the write that is the key's value now."""
    text: str | None = None

    @property
    def stale(self) -> bool:
        return self.outcome == "stale"

    @property
    def order(self) -> tuple[int, float, str, int, str]:
        return order_key(self.version, self.written_at, self.writer, self.card_id)


def winner(writes: Iterable[ScopeWrite]) -> ScopeWrite | None:
    """The write every observer agrees on, whatever order the writes are given in."""
    best: ScopeWrite | None = None
    for w in writes:
        if best is None or w.order > best.order:
            best = w
    return best


@dataclass(frozen=True)
class ScopeValue:
    """The current value of a key: the winning write's text, version, writer and timestamp."""

    key: str
    text: str
    version: int
    writer: str
    written_at: float
    """The writer's wall clock (seconds since the epoch) when it issued the write."""
    card_id: str = ""
    """The write's card in the scope's log: the id ``case.revoke`` / ``expire`` / ``grant``
    take for this value."""


@dataclass(frozen=True)
class WriteResult:
    """What a write learned when it was recorded."""

    scope: str
    key: str
    version: int
    writer: str
    written_at: float
    stale: bool
    """True: a write with a greater order key was already there; this one is recorded in the
    history and the writer's inbox, but it is not the value."""
    winning_version: int
    winning_writer: str
    seq: int
    """Its row in the scope's history."""
    card_id: str = ""
    """The write's card in the scope's log (what ``case.revoke`` takes to revoke it)."""
