"""Per-principal quotas: how much one agent may make the bureau do, and store, per minute.

An agent may call its tools any number of times (see the threat model), and every consult,
scope write and run tool output adds rows to the ledger and cards to the store. Without a cap
one role's probing loop grows the data directory by about 1.4 kB per call at some 57 calls a
second. These limits bound that growth; their defaults suit a classroom (a person, or a model
driving a handle, stays far below them) and each is a setting (``Settings(quotas=...)`` or
``BUREAU_QUOTAS``).

What is counted, and where:

* ``consults_per_minute``: every consult a principal makes (an ``ask`` is a consult of its own
  memory, a run's consult too), whether or not anything was released. A sliding window of 60
  seconds, **per process**: two processes acting for the same role each get the full rate.
* ``audit_entries_per_minute``: the audit entries a principal's consults add (one for the
  invocation, one per decision); the same kind of window. Checked before a consult (a consult
  that would start over the cap is refused), so one consult may end at most its own decisions
  past it.
* ``scope_writes_per_minute``: task-scope writes by a role; the same kind of window.
* ``run_tool_outputs``: cards one run may hold (each at most 2,000 characters), counted in the
  store, so it holds across processes.
* ``inbox_length``: notices kept per role and case; older ones are dropped when new ones
  arrive (a cursor past them just reads on), so another role's writes cannot grow an inbox
  without bound.

A refusal is a :class:`~bureau.errors.QuotaExceededError`, raised before anything is written,
searched or charged: a refused call changes nothing. ``None`` switches one limit off;
:meth:`Quotas.off` switches all off (the labs and benchmarks lift them for their own runs, see
:func:`lifted`). The operator is never limited: neither the chief's handle nor the operator's
``case.interrogate`` (whose consults are still audited).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from typing import Any

from .errors import ConfigurationError, QuotaExceededError

WINDOW_S = 60.0
"""The sliding window of every per-minute rate."""
RATE_MAX = 1_000_000


@dataclass(frozen=True)
class Quotas:
    """The limits every principal but the chief works under (``None``: no limit)."""

    consults_per_minute: int | None = 120
    audit_entries_per_minute: int | None = 1_200
    scope_writes_per_minute: int | None = 120
    run_tool_outputs: int | None = 200
    inbox_length: int | None = 1_000

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) \
                    or not 1 <= value <= RATE_MAX:
                raise ConfigurationError(
                    f"quotas.{f.name} must be a whole number from 1 to {RATE_MAX:,} or None "
                    f"(no limit), not {value!r}.")

    @classmethod
    def off(cls) -> Quotas:
        """No limit at all (benchmarks and labs that call thousands of times)."""
        return cls(**{f.name: None for f in fields(cls)})

    @classmethod
    def parse(cls, text: str, label: str = "BUREAU_QUOTAS") -> Quotas:
        """``off``, or ``name=value`` pairs separated by commas (``value`` a whole number or
        ``none``); names left out keep their defaults."""
        raw = text.strip()
        if raw.lower() == "off":
            return cls.off()
        valid = [f.name for f in fields(cls)]
        changes: dict[str, Any] = {}
        for part in filter(None, (p.strip() for p in raw.split(","))):
            name, sep, value = (s.strip() for s in part.partition("="))
            if not sep or name not in valid:
                raise ConfigurationError(
                    f"{label}: {part!r} is not name=value with a known name.",
                    f"Write 'off' or pairs such as consults_per_minute=600; names: "
                    f"{', '.join(valid)}.")
            if value.lower() == "none":
                changes[name] = None
                continue
            try:
                changes[name] = int(value)
            except ValueError:
                raise ConfigurationError(f"{label}: {name}={value!r} is not a whole number "
                                         "or none.") from None
        return replace(cls(), **changes)


class QuotaMeter:
    """Sliding one-minute windows, one per (principal, counter), in this process.

    Cheap on purpose: a deque of (time, amount) per key, pruned on use, behind one lock; no
    ledger read. ``check`` refuses before anything happens; ``add`` records what was done.
    """

    def __init__(self, clock: Any = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._windows: dict[tuple[str, str], deque[tuple[float, int]]] = {}

    def _used(self, key: tuple[str, str], now: float) -> tuple[int, float]:
        window = self._windows.get(key)
        if window is None:
            return 0, now
        while window and window[0][0] <= now - WINDOW_S:
            window.popleft()
        return sum(n for _, n in window), (window[0][0] if window else now)

    def check(self, principal: str, counter: str, limit: int | None, *, what: str,
              n: int = 1) -> None:
        """Refuse (``QuotaExceededError``) if ``n`` more would pass ``limit`` this minute."""
        if limit is None:
            return
        with self._lock:
            used, oldest = self._used((principal, counter), self._clock())
            if used + n <= limit:
                return
            wait = max(0.0, oldest + WINDOW_S - self._clock())
        raise over_rate(principal, counter, limit, what, wait)

    def take(self, principal: str, counter: str, limit: int | None, *, what: str,
             n: int = 1) -> None:
        """:meth:`check`, then count ``n`` at once (one lock: two threads cannot both pass
        the last slot)."""
        if limit is None:
            return
        with self._lock:
            now = self._clock()
            used, oldest = self._used((principal, counter), now)
            if used + n <= limit:
                self._windows.setdefault((principal, counter), deque()).append((now, n))
                return
            wait = max(0.0, oldest + WINDOW_S - now)
        raise over_rate(principal, counter, limit, what, wait)

    def add(self, principal: str, counter: str, n: int) -> None:
        """Count ``n`` done (no check: what was done is done)."""
        if n <= 0:
            return
        with self._lock:
            self._windows.setdefault((principal, counter), deque()).append((self._clock(), n))


def over_rate(principal: str, counter: str, limit: int, what: str,
              wait: float) -> QuotaExceededError:
    return QuotaExceededError(
        f"{principal} reached its quota of {limit:,} {what} per minute; the next one is "
        f"allowed in {wait:.1f} s.",
        f"Wait, or raise quotas.{counter} (Settings(quotas=Quotas({counter}=...)) or "
        f"BUREAU_QUOTAS={counter}=...).", retry_after_s=wait)


def over_cap(principal: str, counter: str, limit: int, what: str) -> QuotaExceededError:
    return QuotaExceededError(
        f"{principal} reached its quota of {limit:,} {what}.",
        f"End the run and start another, or raise quotas.{counter} "
        f"(Settings(quotas=Quotas({counter}=...)) or BUREAU_QUOTAS={counter}=...).")


@contextmanager
def lifted(holder: Any) -> Iterator[None]:
    """Switch every quota off on ``holder`` (a ``Bureau``) for the block, then restore its
    settings: the labs and benchmarks call thousands of times on purpose."""
    before = holder.settings
    holder.settings = before.with_(quotas=Quotas.off())
    try:
        yield
    finally:
        holder.settings = holder.settings.with_(quotas=before.quotas)


__all__ = ["WINDOW_S", "QuotaMeter", "Quotas", "lifted", "over_cap", "over_rate"]
