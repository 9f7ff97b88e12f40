"""The lab's cost: its wall time beside the embedding floor and the machine's load.

The floor is what no run of this lab can beat on this machine: the same distinct texts embedded
once by a fresh, cache-less MiniLM. It is measured after the run, so it shares the machine's
load of that moment; the load (the 1-minute average and the cores other processes kept busy,
:func:`~bureau.labs.leakage.pipeline.busy_cores`) is reported beside both.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any


def machine_load() -> dict[str, float]:
    """The 1-minute load average and the cores other processes keep busy right now."""
    from bureau.labs.leakage.pipeline import busy_cores

    busy = busy_cores()
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = -1.0
    return {"load_1min": round(load, 2), "busy_cores_others": -1.0 if busy is None else
            round(busy, 2), "cores": float(os.cpu_count() or 0)}


def embedding_floor(texts: Sequence[str], encoder: Any | None = None) -> dict[str, float]:
    """Seconds a fresh, cache-less encoder takes for ``texts`` (each distinct text once)."""
    if encoder is None:
        from bureau.embedding import MiniLMEncoder

        encoder = MiniLMEncoder(cache_size=0)
    distinct = list(dict.fromkeys(texts))
    t0 = time.perf_counter()
    encoder.embed(distinct)
    return {"embed_alone_seconds": round(time.perf_counter() - t0, 2),
            "distinct_texts": float(len(distinct)),
            "tokens": float(getattr(encoder, "tokens_embedded", 0))}


__all__ = ["embedding_floor", "machine_load"]
