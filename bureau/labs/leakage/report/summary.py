"""``summary.json``: every figure of every run as one JSON-safe dict, plus the run's setup, the
published figures, the benchmark and the machine it ran on.

A module of its own because ``summary.json`` is the machine-readable record of a run, and the
report reads it (its counts come from :func:`dataset_dict`), not the other way round: it depends
on the analysis (:mod:`bureau.labs.leakage.metrics.analysis`) and the benchmark (:mod:`bureau.labs.leakage.timing`)
only, never on the template or the report's wording.
"""

from __future__ import annotations

import math
import os
import platform
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from bureau.embedding import MAX_TOKENS
from bureau.labs.leakage.datasets.convert import QUERY_TEMPLATE, QUERY_VARIANTS
from bureau.labs.leakage.datasets.social_pairing import pairing_stats
from bureau.labs.leakage.metrics.analysis import HEADLINE_AUROC_QUERY, Analysis, own_slots
from bureau.labs.leakage.metrics.judged import judged_samples
from bureau.labs.leakage.report.paper import AGENTSOCIALBENCH_LEADERBOARD, PAPER
from bureau.labs.leakage.timing import Benchmark
from bureau.text import MAX_QUESTION_CHARS

EMBEDDER = "all-MiniLM-L6-v2 int8 ONNX (bureau.embedding.MiniLMEncoder)"


def _clean(value: Any) -> Any:
    """JSON-safe: NaN -> None, numpy scalars -> Python, tuples -> lists."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if value is pd.NA:
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def dataset_dict(a: Analysis) -> dict[str, Any]:
    """Every figure of one run, as summary.json holds it under the dataset's name."""
    result = a.result
    counts = dict(result.lab.counts)
    out: dict[str, Any] = {
        "dataset": {
            "name": a.name,
            "benchmark": a.kind,
            "source": str(result.lab.source) if result.lab.source else None,
            **counts,
            "requesters": counts["agents"],
        },
        "setup": {
            "k": result.k,
            "k_meaning": "shared pools: top-k in all; bureau policies: top-k per scope "
                         "(own space + board)",
            "query_asked": QUERY_TEMPLATE,
            "query_variants": QUERY_VARIANTS,
            "auroc_headline_query": HEADLINE_AUROC_QUERY,
            "question_limit_chars": MAX_QUESTION_CHARS,
            "queries_cut": sum(ag.query_cut for s in result.lab.scenarios for ag in s.agents),
            "queries_over_model_tokens": sum(n > MAX_TOKENS for n in result.query_tokens.values()),
            "queries_cut_below_model_tokens": sum(
                ag.query_cut and result.query_tokens.get((s.scenario_id, ag.name), MAX_TOKENS)
                < MAX_TOKENS for s in result.lab.scenarios for ag in s.agents),
            "model_max_tokens": MAX_TOKENS,
            "retrieved": "top-k per scope; no relevance threshold (see *_at_threshold)",
            "random_baseline": "each pool item drawn with probability min(k, N)/N; item leak "
                               "assumes independent requesters",
            "threshold": a.threshold,
            "embedder": EMBEDDER,
            "engine_check": result.engine_check,
            "cases": len(result.case_ids),
        },
        "policies": {
            row["policy"]: {k: v for k, v in row.items() if k != "policy"}
            for row in a.policies.to_dict(orient="records")
        },
        "summary": a.table.astype(object).where(a.table.notna(), None).to_dict(orient="records"),
        "relevance_auroc": a.relevance,
        "intervals": a.intervals,
        "probe": a.probe,
        "mediated": a.mediated,
        "mediated_wiring_and_measured": a.measured,
        "abstraction_repetition": a.repetition,
        "own_items_in_with_own_pool": own_slots(result),
        "timings": result.timings.as_dict(),
    }
    if a.kind == "agentsocialbench":
        out["pairing"] = {k: {**vars(v), "paired": v.paired}
                          for k, v in pairing_stats(result.lab.dataset).items()}
        out["published"] = AGENTSOCIALBENCH_LEADERBOARD
    else:
        out["published"] = PAPER
    return out


def summary_dict(
    analyses: Sequence[Analysis],
    bench: Benchmark | None = None,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    judged = judged_samples(analyses)
    out: dict[str, Any] = {
        "datasets": {a.name: dataset_dict(a) for a in analyses},
        "paper": PAPER,
        "agentsocialbench_leaderboard": AGENTSOCIALBENCH_LEADERBOARD,
        "abstraction_checks_on_judged_sample": judged["abstractions"],
        "revealed_checks_on_judged_sample": judged["revealed"],
        "environment": {
            "python": platform.python_version(),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "load_average_1_5_15_at_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        },
    }
    if bench is not None:
        out["benchmark"] = bench.as_dict()
    if meta:
        out["run"] = meta
    return _clean(out)
