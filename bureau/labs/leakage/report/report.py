"""Turn lab runs (:class:`~bureau.labs.leakage.result.LabResult`, one per benchmark) into a run's
files: ``report.md`` (the template filled in, section by section) and every table beside it.

:func:`write_outputs` writes ``summary.csv`` (one row per dataset x policy x k,
:data:`SUMMARY_COLUMNS`), ``summary.json`` (every figure, bootstrap intervals and probe counts),
``policies.csv``, ``per_item.csv``, ``per_domain.csv``, ``per_scenario_auroc.csv``,
``pairs.csv.gz``, ``retrievals.csv.gz``, ``probe.csv``, the plots and ``report.md`` into one
directory.

``report.md`` is ``report_template.md`` filled in by :mod:`.wording` (the template has one
section per benchmark and a benchmark (timing) section; a report holds the sections of the runs
it was given).

Where the rest lives, so each part stays one concept: the figures of a run in
:mod:`bureau.labs.leakage.metrics.analysis` (:func:`analyse`, :class:`Analysis` and its tables), the benchmark
in :mod:`bureau.labs.leakage.timing`, ``summary.json``'s dict in :mod:`bureau.labs.leakage.report.summary`. The wording
is :mod:`.wording`'s. Their public names are re-exported below, so
``bureau.labs.leakage.report.report`` still offers the whole pipeline.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from bureau.labs.leakage.metrics.analysis import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    CI_LEVEL,
    HEADLINE_AUROC_QUERY,
    K_SENSITIVITY,
    RELEVANCE_ROWS,
    SOCIAL_KS,
    SUMMARY_COLUMNS,
    Analysis,
    analyse,
    at_k,
    benchmark_kind,
    domain_table,
    figures,
    intervals,
    item_table,
    k_sensitivity,
    own_slots,
    per_scenario_table,
    pool_ks,
    probe_summary,
    relevance,
    summarize,
    summary_table,
)
from bureau.labs.leakage.metrics.repetition import abstraction_table
from bureau.labs.leakage.policies.mediated import leaked_abstractions
from bureau.labs.leakage.policies.policies import (
    DEFAULT_THRESHOLD,
)
from bureau.labs.leakage.report.summary import EMBEDDER, dataset_dict, summary_dict
from bureau.labs.leakage.report.wording import (
    K_HEADERS,
    LEAST_LEAKY_DOMAINS,
    MINI_MARKERS,
    MOST_LEAKY_DOMAINS,
    PLOTS,
    SECTION,
    SECTIONS,
    TEMPLATE_FILE,
    benchmark_values,
    load_template,
    mediated_values,
    render_report,
    report_values,
    social_values,
)
from bureau.labs.leakage.result import LabResult
from bureau.labs.leakage.timing import TARGET_RATIO, Benchmark, benchmark

__all__ = [
    "BOOTSTRAP_RESAMPLES", "BOOTSTRAP_SEED", "CI_LEVEL", "EMBEDDER", "HEADLINE_AUROC_QUERY",
    "K_HEADERS", "K_SENSITIVITY", "LEAST_LEAKY_DOMAINS", "MINI_MARKERS", "MOST_LEAKY_DOMAINS",
    "PLOTS", "RELEVANCE_ROWS", "SECTION", "SECTIONS", "SOCIAL_KS", "SUMMARY_COLUMNS",
    "TARGET_RATIO", "TEMPLATE_FILE", "Analysis", "Benchmark", "analyse", "at_k", "benchmark",
    "benchmark_kind", "benchmark_values", "dataset_dict", "domain_table", "figures", "intervals",
    "item_table", "k_sensitivity", "load_template", "mediated_values", "own_slots",
    "per_scenario_table", "pool_ks", "probe_summary", "relevance", "render_report",
    "report_values", "social_values", "summarize", "summary_dict", "summary_table",
    "write_outputs",
]


# --- files ---------------------------------------------------------------------------------------


def write_outputs(
    results: LabResult | Sequence[LabResult],
    out_dir: str | Path,
    bench: Benchmark | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    meta: dict[str, Any] | None = None,
    analyses: Sequence[Analysis] | None = None,
) -> dict[str, Path]:
    """Write every table, the plots and report.md for one or more runs; returns {name: path}.
    ``analyses``: the runs' analyses at ``threshold`` if the caller already has them (the
    command prints them too; the bootstrap intervals are not worth computing twice)."""
    from bureau.labs.leakage.report import plots

    runs = [results] if isinstance(results, LabResult) else list(results)
    analyses = list(analyses) if analyses is not None else [analyse(r, threshold) for r in runs]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    info = summary_dict(analyses, bench, meta)
    paths = {
        "summary_csv": out / "summary.csv",
        "summary_json": out / "summary.json",
        "policies": out / "policies.csv",
        "per_item": out / "per_item.csv",
        "per_domain": out / "per_domain.csv",
        "per_scenario": out / "per_scenario_auroc.csv",
        "pairs": out / "pairs.csv.gz",
        "retrievals": out / "retrievals.csv.gz",
        "probe": out / "probe.csv",
        "mediated": out / "mediated.csv.gz",
        "leaked_abstractions": out / "leaked_abstractions.csv",
        "abstractions": out / "abstractions.csv",
        "report": out / "report.md",
    }

    def tagged(frames: list[pd.DataFrame]) -> pd.DataFrame:
        return pd.concat([f.assign(dataset=a.name) for a, f in zip(analyses, frames, strict=True)],
                         ignore_index=True)

    pd.concat([a.table for a in analyses], ignore_index=True).to_csv(paths["summary_csv"],
                                                                     index=False)
    paths["summary_json"].write_text(json.dumps(info, indent=2) + "\n")
    tagged([a.policies for a in analyses]).to_csv(paths["policies"], index=False)
    tagged([item_table(r) for r in runs]).to_csv(paths["per_item"], index=False)
    tagged([a.domains for a in analyses]).to_csv(paths["per_domain"], index=False)
    tagged([per_scenario_table(r) for r in runs]).to_csv(paths["per_scenario"], index=False)
    tagged([r.pairs for r in runs]).to_csv(paths["pairs"], index=False)
    tagged([r.retrievals.drop(columns="content") for r in runs]).to_csv(paths["retrievals"],
                                                                         index=False)
    tagged([r.probe for r in runs]).to_csv(paths["probe"], index=False)
    tagged([r.mediated for r in runs]).to_csv(paths["mediated"], index=False)
    tagged([abstraction_table(r) for r in runs]).to_csv(paths["abstractions"], index=False)
    tagged([leaked_abstractions(r) for r in runs]).to_csv(paths["leaked_abstractions"],
                                                          index=False)
    for a in analyses:
        figures_ = {
            "tradeoff": plots.tradeoff(a.policies, a.name),
            "baseline": plots.baseline(a.table, a.name, a.result.k, with_own=True),
            "roc": plots.roc(a.result),
            "domains": plots.domains(a.domains, name=a.name),
            "mediation": plots.mediation(a.policies, a.mediated, a.name),
        }
        for name, fig in figures_.items():
            path = out / f"{a.slug}_{PLOTS[name]}"
            fig.savefig(path, dpi=120, bbox_inches="tight")
            paths[f"{a.slug}_{name}"] = path
    paths["report"].write_text(render_report(analyses, info))
    return paths
