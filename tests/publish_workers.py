"""Code the multi-process publish tests run inside their child processes."""

from __future__ import annotations

import threading
from typing import Any


def publish_from_threads(case: Any, role: str, card_id: str, calls: int,
                         threads: int) -> tuple[list[str], list[str]]:
    """Publish one card ``calls`` times from ``threads`` threads released together.

    Returns the card ids the callers received and the errors they raised (as reprs).
    """
    ids: list[str] = []
    errors: list[str] = []
    start = threading.Barrier(threads)

    def worker(n: int) -> None:
        start.wait()
        for _ in range(n):
            try:
                ids.append(case.publish(role, card_id).id)
            except Exception as exc:  # noqa: BLE001 - every failure is reported to the parent
                errors.append(repr(exc))

    shares = [calls // threads + (i < calls % threads) for i in range(threads)]
    pool = [threading.Thread(target=worker, args=(n,)) for n in shares]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return ids, errors
