"""The lab's benchmark: its wall time against the time the same distinct texts take to embed
alone, with a fresh, cache-less encoder (the README's target: at most :data:`TARGET_RATIO`).

A module of its own because it measures the run rather than what the run found: it reads only
the runs' timings and texts, never their figures, and it embeds once more, so the report's
analysis (:mod:`bureau.labs.leakage.metrics.analysis`) stays free of any model call.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bureau.labs.leakage.result import LabResult

TARGET_RATIO = 1.5
"""Lab wall time / embedding-alone time the lab aims to stay under (docs/benchmarks.md)."""


@dataclass(frozen=True)
class Benchmark:
    """Wall time of the lab against the time the same distinct texts take to embed alone."""

    lab_seconds: float
    distinct_texts: int
    texts_embedded: int
    tokens_embedded: int
    encoder_seconds: float
    embed_alone_seconds: float
    embed_alone_tokens: int
    per_dataset: dict[str, float] = field(default_factory=dict)
    """Lab seconds of each dataset's run (their sum is ``lab_seconds``)."""
    busy_at_start: float = -1.0
    """Cores other processes kept busy as the lab started (-1: could not be read)."""
    stepped_back: int = 0
    """Embedding workers the lab stepped back (:func:`~bureau.labs.leakage.pipeline.one_steps_back`)."""

    @property
    def tokens_per_second(self) -> float:
        return self.tokens_embedded / self.encoder_seconds if self.encoder_seconds else math.nan

    @property
    def embed_alone_tokens_per_second(self) -> float:
        s = self.embed_alone_seconds
        return self.embed_alone_tokens / s if s else math.nan

    @property
    def ratio(self) -> float:
        """Lab wall time / embedding-alone time (target: <= 1.5)."""
        return self.lab_seconds / self.embed_alone_seconds if self.embed_alone_seconds else math.nan

    def as_dict(self) -> dict[str, Any]:
        return {
            "lab_seconds": self.lab_seconds,
            "distinct_texts": self.distinct_texts,
            "texts_embedded": self.texts_embedded,
            "tokens_embedded": self.tokens_embedded,
            "encoder_seconds": self.encoder_seconds,
            "tokens_per_second": self.tokens_per_second,
            "texts_per_second": self.texts_embedded / self.lab_seconds if self.lab_seconds else 0,
            "embed_alone_seconds": self.embed_alone_seconds,
            "embed_alone_tokens": self.embed_alone_tokens,
            "embed_alone_tokens_per_second": self.embed_alone_tokens_per_second,
            "ratio_lab_to_embedding": self.ratio,
            "target_ratio": TARGET_RATIO,
            "lab_seconds_per_dataset": self.per_dataset,
            "busy_at_start": self.busy_at_start,
            "stepped_back": self.stepped_back,
        }

    def lines(self) -> list[str]:
        parts = ", ".join(f"{name} {sec:.1f} s" for name, sec in self.per_dataset.items())
        return [
            f"lab wall time          {self.lab_seconds:8.1f} s  ({parts})",
            f"texts embedded         {self.texts_embedded:8,d}  (distinct texts in the lab: "
            f"{self.distinct_texts:,})",
            f"tokens embedded        {self.tokens_embedded:8,d}  "
            f"({self.tokens_per_second:,.0f} tokens/s inside the lab)",
            f"embedding alone        {self.embed_alone_seconds:8.1f} s  (same {self.distinct_texts:,} "
            f"texts, fresh encoder, no cache: {self.embed_alone_tokens_per_second:,.0f} tokens/s)",
            f"lab / embedding alone  {self.ratio:8.2f} x  (target <= {TARGET_RATIO} x)",
            f"machine at the start   {self.busy_at_start:8.2f} busy cores  ("
            + ("one embedding worker stepped back)" if self.stepped_back
               else "busy: no embedding worker stepped back)"),
        ]


def benchmark(results: LabResult | Sequence[LabResult], encoder: Any | None = None) -> Benchmark:
    """Embed the runs' distinct texts once more with a fresh, cache-less MiniLM and time it.

    With several runs (both benchmarks) the lab time is their sum and the texts their union:
    the target compares the whole lab with embedding everything it embeds, once.
    """
    runs = [results] if isinstance(results, LabResult) else list(results)
    if encoder is None:
        from bureau.embedding import MiniLMEncoder

        encoder = MiniLMEncoder(cache_size=0)
    texts = list(dict.fromkeys(x for r in runs for x in r.texts))
    t0 = time.perf_counter()
    encoder.embed(texts)
    seconds = time.perf_counter() - t0
    return Benchmark(
        lab_seconds=sum(r.timings.total for r in runs),
        distinct_texts=len(texts),
        texts_embedded=sum(r.timings.texts_embedded for r in runs),
        tokens_embedded=sum(r.timings.tokens_embedded for r in runs),
        encoder_seconds=sum(r.timings.encoder_seconds for r in runs),
        embed_alone_seconds=seconds,
        embed_alone_tokens=int(getattr(encoder, "tokens_embedded", 0)),
        per_dataset={r.lab.name: r.timings.total for r in runs},
        busy_at_start=runs[0].timings.busy_at_start if runs else -1.0,
        stepped_back=runs[0].timings.stepped_back if runs else 0,
    )
