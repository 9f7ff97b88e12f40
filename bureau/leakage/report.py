"""Turn lab runs (:class:`~bureau.leakage.runner.LabResult`, one per benchmark) into tables, a
benchmark and report files.

:func:`analyse` computes every figure of one run once (:class:`Analysis`); :func:`write_outputs`
writes ``summary.csv`` (one row per dataset x policy x k, :data:`SUMMARY_COLUMNS`),
``summary.json`` (every figure, bootstrap intervals and probe counts), ``policies.csv``,
``per_item.csv``, ``per_domain.csv``, ``per_scenario_auroc.csv``, ``pairs.csv.gz``,
``retrievals.csv.gz``, ``probe.csv``, the plots and ``report.md`` into one directory.

``report.md`` is ``report_template.md`` (shipped beside this module) filled in by
:func:`report_values`: the prose lives in the template and holds no figure, every number comes
from the run (or, for the published ones, from :mod:`~bureau.leakage.paper`), so the report
cannot go on stating the counts of a dataset it was not run on. The template has one section per
benchmark and a benchmark (timing) section; a report holds the sections of the runs it was given.
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

import numpy as np
import pandas as pd

from bureau.embedding import MAX_TOKENS
from bureau.leakage.agentsocialbench import IN_SCOPE, SocialDataset, pairing_stats
from bureau.leakage.convert import QUERY_TEMPLATE, QUERY_VARIANTS, slug
from bureau.leakage.mediated import EVERY_CARD, leaked_abstractions, mediated_summary
from bureau.leakage.metrics import (
    bootstrap_auroc,
    bootstrap_rates,
    per_domain,
    per_scenario_auroc,
    pooled_auroc,
    private_leak_rate_items,
    private_leak_rate_pairs,
    random_draw_probability,
    random_expectations,
    relevance_auroc,
    resample_counts,
    scenario_totals,
    shareable_recall,
)
from bureau.leakage.paper import AGENTSOCIALBENCH_LEADERBOARD, PAPER
from bureau.leakage.policies import (
    BUREAU_POLICIES,
    DEFAULT_THRESHOLD,
    ENGINES,
    MEDIATED,
    POLICIES,
    POLICY_LABELS,
    PROBE_LIMIT,
    SHARED_POOL,
    SHARED_POOL_WITH_OWN,
    SHARED_POOLS,
)
from bureau.leakage.runner import QUERY_SCORES, LabResult, leaked_contents
from bureau.text import MAX_QUESTION_CHARS

EMBEDDER = "all-MiniLM-L6-v2 int8 ONNX (bureau.embedding.MiniLMEncoder)"
TARGET_RATIO = 1.5
"""Lab wall time / embedding-alone time the lab aims to stay under (README, Benchmarks)."""
K_SENSITIVITY = (1, 3, 5, 10, 20)
"""Depths at which the shared pools are re-read off each pair's pool rank (plus k and 2k)."""
SOCIAL_KS = (3, 5, 10)
"""The shared-pool depths the AgentSocialBench section tabulates."""
MOST_LEAKY_DOMAINS, LEAST_LEAKY_DOMAINS = 8, 5
"""Rows of the report's per-domain table (the CSV has every domain)."""
MINI_MARKERS = ("magpie_mini", "agentsocialbench_mini")
"""A source path holding one of these is a bundled synthetic set, which the report must not
pass off as the benchmark."""
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 0
CI_LEVEL = 0.95
HEADLINE_AUROC_QUERY = "task"
"""The relevance AUROC headline asks with the scenario task alone: the MaaS setting, where the
request is the task and the memory decides what is relevant to it."""
TEMPLATE_FILE = "report_template.md"
SECTION = "<!-- section: {} -->\n"
SECTIONS = ("magpie", "agentsocialbench", "mediated", "benchmark")
"""The template's parts, in order: one per benchmark (each followed by its policy-e part), then
the timing section."""
PLOTS = {
    "tradeoff": "leak_vs_recall.png",
    "baseline": "random_baseline.png",
    "roc": "roc_relevance.png",
    "domains": "per_domain.png",
    "mediation": "mediation.png",
}
"""Plot files per dataset, each prefixed with the dataset's slug (``magpie_roc_relevance.png``)."""
SUMMARY_COLUMNS = (
    "dataset", "policy", "k", "pair_leak", "item_leak", "shareable_recall", "random_pair_leak",
    "random_item_leak", "random_shareable_recall", "auroc",
)
RELEVANCE_ROWS = {name: f"relevance_{name}_query" for name in QUERY_VARIANTS}
"""summary.csv's AUROC rows, one per query variant (the AUROC needs no policy and no k)."""


def _rate(num: int, den: int) -> float:
    return num / den if den else float("nan")


def benchmark_kind(result: LabResult) -> str:
    """``agentsocialbench`` or ``magpie``: which template section describes the run."""
    return "agentsocialbench" if isinstance(result.lab.dataset, SocialDataset) else "magpie"


# --- figures of one run ----------------------------------------------------------------------


def at_k(result: LabResult, policy: str, k: int | None = None) -> pd.DataFrame:
    """The exposure table of ``policy`` at depth ``k`` (default: the run's), with ``p_random``.

    The shared pools are re-read off each pair's pool rank, so any k is exact; the bureau
    policies were asked at the run's k only. ``p_random`` is the chance a uniform draw of the
    same budget from the same pool returns the pair's item (:func:`random_draw_probability`).
    """
    k = result.k if k is None else k
    df = result.policy(policy)
    if policy in SHARED_POOLS:
        df = df.assign(retrieved=df["pool_rank"] <= k)
    elif k != result.k:
        raise ValueError(f"{policy} was run at k = {result.k} only")
    return df.assign(p_random=random_draw_probability(df["pool_size"], k))


def figures(df: pd.DataFrame) -> dict[str, float]:
    """Pair leak, item leak, shareable recall and their random expectations of one table."""
    rnd = random_expectations(df)
    return {
        "pair_leak": private_leak_rate_pairs(df),
        "item_leak": private_leak_rate_items(df),
        "shareable_recall": shareable_recall(df),
        "random_pair_leak": rnd["pair_leak"],
        "random_item_leak": rnd["item_leak"],
        "random_shareable_recall": rnd["shareable_recall"],
    }


def pool_ks(k: int) -> list[int]:
    """Depths at which the shared pools are reported: :data:`K_SENSITIVITY`, k and 2k."""
    return sorted({*K_SENSITIVITY, *SOCIAL_KS, k, 2 * k})


def summarize(result: LabResult, threshold: float = DEFAULT_THRESHOLD) -> pd.DataFrame:
    """One row per policy at the run's k: leak rates, recall, their random expectations,
    abstractions delivered.

    ``*_at_threshold`` columns apply the stricter reading "top-k *and* cosine >= threshold" (the
    Bureau's evidence responder only uses such cards).
    """
    rows = []
    hint_items = {i.item_id for i in result.lab.items if i.abstraction and i.label == "private"}
    for policy in POLICIES:
        df = at_k(result, policy)
        others = df[df["requester"] != df["owner"]]
        private = others[others["label"] == "private"]
        shareable = others[others["label"] == "shareable"]
        strict = others.assign(retrieved=others["retrieved"] & (others["score"] >= threshold))
        hint = private[private["item_id"].isin(hint_items)]
        leaked_items = private.groupby(["scenario_id", "item_id"])["retrieved"].any()
        fig = figures(df)
        rows.append(
            {
                "policy": policy,
                "label": POLICY_LABELS[policy],
                "description": POLICIES[policy],
                "engine": ENGINES[policy],
                "k": result.k,
                "private_pairs": len(private),
                "leaked_pairs": int(private["retrieved"].sum()),
                "private_leak_rate_pairs": fig["pair_leak"],
                "private_items": len(leaked_items),
                "leaked_items": int(leaked_items.sum()),
                "private_leak_rate_items": fig["item_leak"],
                "shareable_pairs": len(shareable),
                "retrieved_shareable_pairs": int(shareable["retrieved"].sum()),
                "shareable_recall": fig["shareable_recall"],
                "random_pair_leak": fig["random_pair_leak"],
                "random_item_leak": fig["random_item_leak"],
                "random_shareable_recall": fig["random_shareable_recall"],
                "hint_pairs": len(hint),
                "abstraction_pairs_delivered": int(hint["abstraction_retrieved"].sum()),
                "abstraction_recall": _rate(int(hint["abstraction_retrieved"].sum()), len(hint)),
                "content_leaks": len(leaked_contents(result, policy)),
                "threshold": threshold,
                "private_leak_rate_pairs_at_threshold": private_leak_rate_pairs(strict),
                "shareable_recall_at_threshold": shareable_recall(strict),
            }
        )
    return pd.DataFrame(rows)


def relevance(result: LabResult, query: str = HEADLINE_AUROC_QUERY) -> dict[str, Any]:
    """Relevance AUROC of the raw cosine over every (requester, other agent's item) pair, with
    ``query`` (a :data:`~bureau.leakage.convert.QUERY_VARIANTS` name) as the question; pooled,
    per scenario, and the pooled AUROC of every other query variant (``by_query``)."""
    pairs = result.policy(SHARED_POOL)
    column = QUERY_SCORES[query]
    scored = pairs.assign(score=pairs[column])
    per = per_scenario_auroc(scored)
    raw = pairs[pairs["requester"] != pairs["owner"]]  # every variant's own column, untouched
    others = scored[scored["requester"] != scored["owner"]]
    return {
        "query": query,
        "pooled": pooled_auroc(scored),
        "by_query": {name: relevance_auroc(raw[col], raw["label"])
                     for name, col in QUERY_SCORES.items()},
        "per_scenario_mean": per.mean,
        "per_scenario_median": float(per.table["auroc"].median()) if len(per.table) else math.nan,
        "scenarios_scored": len(per.table),
        "scenarios_skipped": list(per.skipped),
        "pairs": len(others),
        "shareable_pairs": int((others["label"] == "shareable").sum()),
        "private_pairs": int((others["label"] == "private").sum()),
        "mean_cosine_shareable": float(others.loc[others["label"] == "shareable", "score"].mean()),
        "mean_cosine_private": float(others.loc[others["label"] == "private", "score"].mean()),
    }


def k_sensitivity(result: LabResult, ks: Sequence[int] | None = None) -> pd.DataFrame:
    """Both shared pools at other k, read off each pair's rank in the pool, with the random
    expectation of each figure."""
    rows = []
    for policy in SHARED_POOLS:
        for k in ks or pool_ks(result.k):
            rows.append({"policy": policy, "k": k, **figures(at_k(result, policy, k))})
    return pd.DataFrame(rows)


def summary_table(result: LabResult) -> pd.DataFrame:
    """summary.csv's rows for one run (:data:`SUMMARY_COLUMNS`): the shared pools at every
    depth of :func:`pool_ks`, the bureau policies at the run's k (per scope), and one AUROC row
    per query variant."""
    name = result.lab.name
    rows = [{"dataset": name, **r} for r in k_sensitivity(result).to_dict(orient="records")]
    for policy in BUREAU_POLICIES:
        rows.append({"dataset": name, "policy": policy, "k": result.k,
                     **figures(at_k(result, policy))})
    med = mediated_summary(result, DEFAULT_THRESHOLD)
    rows.append({"dataset": name, "policy": MEDIATED, "k": result.k, "pair_leak": med["pair_leak"],
                 "item_leak": med["item_leak"], "shareable_recall": med["min_info_recall"]})
    rel = relevance(result)
    for query, auc in rel["by_query"].items():
        rows.append({"dataset": name, "policy": RELEVANCE_ROWS[query], "auroc": auc})
    out = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
    out["k"] = out["k"].astype("Int64")
    return out


def intervals(
    result: LabResult, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> dict[str, Any]:
    """Bootstrap percentile intervals (:data:`CI_LEVEL`) over scenarios for the headline
    figures: the shared pools at k and 2k, the bureau policies at k, the task-query AUROC."""
    scenarios = sorted({s.scenario_id for s in result.lab.scenarios})
    counts = resample_counts(len(scenarios), resamples, seed)
    out: dict[str, Any] = {"level": CI_LEVEL, "resamples": resamples, "seed": seed,
                           "unit": "scenario"}
    cells = [(p, result.k) for p in POLICIES] + [(p, 2 * result.k) for p in SHARED_POOLS]
    for policy, k in cells:
        totals = scenario_totals(at_k(result, policy, k)).reindex(scenarios, fill_value=0.0)
        out[f"{policy}@{k}"] = bootstrap_rates(totals, counts, CI_LEVEL)
    pairs = result.policy(SHARED_POOL)
    column = QUERY_SCORES[HEADLINE_AUROC_QUERY]
    out["auroc_task_query"] = bootstrap_auroc(pairs.assign(score=pairs[column]), counts,
                                              scenarios, level=CI_LEVEL)
    return out


def probe_summary(result: LabResult) -> dict[str, Any]:
    """The exhaustive boundary probe in figures (hits must be 0)."""
    probe = result.probe
    return {
        "state": "d_bureau_abstractions (final)",
        "limit_per_scope": PROBE_LIMIT,
        "requesters": len(probe),
        "probes": int(probe["probes"].sum()),
        "hits": int(probe["hits"].sum()),
        "cards_returned": int(probe["cards_returned"].sum()),
        "max_scope_cards": int(probe["max_scope_cards"].max()) if len(probe) else 0,
        "every_probe_searched_every_readable_scope": bool(probe["scopes_as_listed"].all()),
    }


def own_slots(result: LabResult) -> dict[str, float]:
    """How much of the with-own pool's top-k the requester's own items take, against their
    share of the pool: why that variant understates every figure."""
    got = result.retrievals[result.retrievals["policy"] == SHARED_POOL_WITH_OWN]
    own = float((got["item_owner"] == got["requester"]).mean()) if len(got) else math.nan
    sizes = {(s.scenario_id, a.name): (sum(i.owner == a.name for i in s.items), len(s.items))
             for s in result.lab.scenarios for a in s.agents}
    held = sum(n for n, _ in sizes.values())
    pool = sum(n for _, n in sizes.values())
    return {"own_share_of_top_k": own, "own_share_of_pool": _rate(held, pool)}


def per_scenario_table(result: LabResult) -> pd.DataFrame:
    pairs = result.policy(SHARED_POOL)
    return per_scenario_auroc(pairs.assign(score=pairs[QUERY_SCORES[HEADLINE_AUROC_QUERY]])).table


def domain_table(result: LabResult) -> pd.DataFrame:
    """Per-domain leak rates and recall of every policy, long format (``policy`` column), with
    the random expectation of the pair leak."""
    frames = []
    for policy in POLICIES:
        df = at_k(result, policy)
        frame = per_domain(df).reset_index()
        others = df[(df["requester"] != df["owner"]) & (df["label"] == "private")]
        rnd = others.groupby("domain")["p_random"].mean().rename("random_leak_rate_pairs")
        frame = frame.merge(rnd, left_on="domain", right_index=True, how="left")
        frames.append(frame.assign(policy=policy))
    out = pd.concat(frames, ignore_index=True)
    per = per_scenario_table(result).groupby("domain")["auroc"].mean().rename("auroc_a_mean")
    out = out.merge(per, left_on="domain", right_index=True, how="left")
    return out[["policy", "domain", *[c for c in out.columns if c not in ("policy", "domain")]]]


def item_table(result: LabResult) -> pd.DataFrame:
    """One row per (policy, item): how many other agents received it (or its abstraction)."""
    pairs = result.pairs[result.pairs["requester"] != result.pairs["owner"]]
    grouped = pairs.groupby(["policy", "scenario_id", "domain", "item_id", "owner", "label"])
    out = grouped.agg(
        other_agents=("requester", "size"),
        retrieved_by=("retrieved", "sum"),
        abstraction_delivered_to=("abstraction_retrieved", "sum"),
        mean_score=("score", "mean"),
        max_score=("score", "max"),
        best_rank=("rank", "min"),
    ).reset_index()
    out["leaked"] = (out["label"] == "private") & (out["retrieved_by"] > 0)
    hints = {i.item_id: i.abstraction for i in result.lab.items if i.abstraction}
    out["has_safe_abstraction"] = out["item_id"].isin(hints)
    out["policy"] = pd.Categorical(out["policy"], categories=list(POLICIES), ordered=True)
    out = out.sort_values(["policy", "scenario_id", "item_id"]).reset_index(drop=True)
    out["policy"] = out["policy"].astype(str)
    return out


@dataclass
class Analysis:
    """Every figure of one run, computed once: the files, the report and the command read it."""

    result: LabResult
    threshold: float = DEFAULT_THRESHOLD
    policies: pd.DataFrame = field(init=False)
    table: pd.DataFrame = field(init=False)
    relevance: dict[str, Any] = field(init=False)
    intervals: dict[str, Any] = field(init=False)
    probe: dict[str, Any] = field(init=False)
    domains: pd.DataFrame = field(init=False)
    mediated: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        self.policies = summarize(self.result, self.threshold)
        self.table = summary_table(self.result)
        self.relevance = relevance(self.result)
        self.intervals = intervals(self.result)
        self.probe = probe_summary(self.result)
        self.domains = domain_table(self.result)
        self.mediated = mediated_summary(self.result, self.threshold)

    @property
    def name(self) -> str:
        return self.result.lab.name

    @property
    def kind(self) -> str:
        return benchmark_kind(self.result)

    @property
    def slug(self) -> str:
        return slug(self.name, "dataset")

    def cell(self, policy: str, k: int | None = None) -> dict[str, Any]:
        """The summary.csv row of ``policy`` at ``k`` (default: the run's)."""
        k = self.result.k if k is None else k
        rows = self.table[(self.table["policy"] == policy) & (self.table["k"] == k)]
        return rows.iloc[0].to_dict()

    def ci(self, policy: str, figure: str, k: int | None = None) -> tuple[float, float]:
        k = self.result.k if k is None else k
        return tuple(self.intervals[f"{policy}@{k}"][figure])  # type: ignore[return-value]


def analyse(result: LabResult, threshold: float = DEFAULT_THRESHOLD) -> Analysis:
    return Analysis(result, threshold)


# --- benchmark -----------------------------------------------------------------------------------


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
    )


# --- files ---------------------------------------------------------------------------------------


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
    out: dict[str, Any] = {
        "datasets": {a.name: dataset_dict(a) for a in analyses},
        "paper": PAPER,
        "agentsocialbench_leaderboard": AGENTSOCIALBENCH_LEADERBOARD,
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


def write_outputs(
    results: LabResult | Sequence[LabResult],
    out_dir: str | Path,
    bench: Benchmark | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    meta: dict[str, Any] | None = None,
) -> dict[str, Path]:
    """Write every table, the plots and report.md for one or more runs; returns {name: path}."""
    from bureau.leakage import plots

    runs = [results] if isinstance(results, LabResult) else list(results)
    analyses = [analyse(r, threshold) for r in runs]
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
    tagged([leaked_abstractions(r) for r in runs]).to_csv(paths["leaked_abstractions"],
                                                          index=False)
    for a in analyses:
        figures_ = {
            "tradeoff": plots.tradeoff(a.policies, a.name),
            "baseline": plots.baseline(a.table, a.name, a.result.k),
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


def _pct(x: float | None) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


def _ci(interval: Sequence[float] | None, pct: bool = True) -> str:
    """``lo–hi`` of an interval, as percentages or as AUROC digits."""
    if interval is None:
        return "n/a"
    lo, hi = interval
    return f"{_pct(lo)}–{_pct(hi)}" if pct else f"{lo:.3f}–{hi:.3f}"


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _num(n: int) -> str:
    return f"{n:,}"


def _scope(result: LabResult) -> str:
    """What the run measured, in words: the mini set must never pass for the benchmark."""
    lab = result.lab
    name = lab.name
    if any(marker in str(lab.source or "") for marker in MINI_MARKERS):
        scope = f"the bundled synthetic mini set ({name}'s format, not {name} data)"
        if lab.is_subset:
            scope = (f"{_num(len(lab))} of the {_num(lab.source_scenarios or 0)} scenarios of "
                     f"{scope}, the first in file order")
        return scope
    if lab.is_subset:
        return (f"{_num(len(lab))} of the {_num(lab.source_scenarios or 0)} {name} scenarios "
                "(--limit: the first in file order)")
    return f"the full {name} set"


def load_template() -> dict[str, Template]:
    """The report template shipped beside this module, by section (:data:`SECTIONS`)."""
    text = resources.files(__package__).joinpath(TEMPLATE_FILE).read_text(encoding="utf-8")
    parts: dict[str, Template] = {}
    for name in reversed(SECTIONS):
        text, _, part = text.partition(SECTION.format(name))
        parts[name] = Template(part)
    return parts


def _common_values(a: Analysis) -> dict[str, Any]:
    """Placeholders both benchmark sections share: the headline shared pool and bureau figures
    with their random expectations and intervals, the probe, the queries."""
    result, k = a.result, a.result.k
    rel = a.relevance
    pol = {r["policy"]: r for r in a.policies.to_dict(orient="records")}
    a1, a2, aw = a.cell(SHARED_POOL), a.cell(SHARED_POOL, 2 * k), a.cell(SHARED_POOL_WITH_OWN)
    c, d = pol["c_bureau_published"], pol["d_bureau_abstractions"]
    slots = own_slots(result)
    policy_rows = [
        [
            f"**{r['label']}**",
            r["engine"],
            f"{_pct(r['private_leak_rate_pairs'])} ({r['leaked_pairs']:,}/{r['private_pairs']:,})",
            f"{_pct(r['private_leak_rate_items'])} ({r['leaked_items']:,}/{r['private_items']:,})",
            f"{_pct(r['shareable_recall'])} ({r['retrieved_shareable_pairs']:,}/"
            f"{r['shareable_pairs']:,})",
            f"{_pct(r['random_pair_leak'])} / {_pct(r['random_item_leak'])} / "
            f"{_pct(r['random_shareable_recall'])}",
            f"{r['abstraction_pairs_delivered']:,}/{r['hint_pairs']:,}",
            r["content_leaks"],
        ]
        for r in pol.values()
    ]
    tokens = result.query_tokens
    values: dict[str, Any] = {
        "dataset_name": a.name,
        "scope": _scope(result),
        "k": k,
        "k2": 2 * k,
        "ci_level": f"{100 * CI_LEVEL:.0f}%",
        "resamples": _num(a.intervals["resamples"]),
        "seed": a.intervals["seed"],
        "auroc_task": f"{rel['pooled']:.3f}",
        "auroc_task_ci": _ci(a.intervals["auroc_task_query"], pct=False),
        "auroc_role_task": f"{rel['by_query']['role_task']:.3f}",
        "auroc_own_job": f"{rel['by_query']['own_job']:.3f}",
        "mean_cosine_shareable": f"{rel['mean_cosine_shareable']:.3f}",
        "mean_cosine_private": f"{rel['mean_cosine_private']:.3f}",
        "a_leak_pairs": _pct(a1["pair_leak"]),
        "a_leak_pairs_ci": _ci(a.ci(SHARED_POOL, "pair_leak")),
        "a_random_pairs": _pct(a1["random_pair_leak"]),
        "a_leak_items": _pct(a1["item_leak"]),
        "a_leak_items_ci": _ci(a.ci(SHARED_POOL, "item_leak")),
        "a_random_items": _pct(a1["random_item_leak"]),
        "a_recall": _pct(a1["shareable_recall"]),
        "a_recall_ci": _ci(a.ci(SHARED_POOL, "shareable_recall")),
        "a_random_recall": _pct(a1["random_shareable_recall"]),
        "a2_leak_pairs": _pct(a2["pair_leak"]),
        "a2_leak_pairs_ci": _ci(a.ci(SHARED_POOL, "pair_leak", 2 * k)),
        "a2_random_pairs": _pct(a2["random_pair_leak"]),
        "a2_leak_items": _pct(a2["item_leak"]),
        "a2_random_items": _pct(a2["random_item_leak"]),
        "a2_recall": _pct(a2["shareable_recall"]),
        "a2_recall_ci": _ci(a.ci(SHARED_POOL, "shareable_recall", 2 * k)),
        "a2_random_recall": _pct(a2["random_shareable_recall"]),
        "aw_leak_pairs": _pct(aw["pair_leak"]),
        "aw_random_pairs": _pct(aw["random_pair_leak"]),
        "aw_recall": _pct(aw["shareable_recall"]),
        "own_share": _pct(slots["own_share_of_top_k"]),
        "own_pool_share": _pct(slots["own_share_of_pool"]),
        "c_recall": _pct(c["shareable_recall"]),
        "c_recall_ci": _ci(a.ci("c_bureau_published", "shareable_recall")),
        "c_random_recall": _pct(c["random_shareable_recall"]),
        "d_recall": _pct(d["shareable_recall"]),
        "d_recall_ci": _ci(a.ci("d_bureau_abstractions", "shareable_recall")),
        "d_random_recall": _pct(d["random_shareable_recall"]),
        "private_pairs": _num(c["private_pairs"]),
        "d_abstractions_delivered": _num(d["abstraction_pairs_delivered"]),
        "d_hint_pairs": _num(d["hint_pairs"]),
        **{f"{p}_leaked_pairs": pol[name]["leaked_pairs"] for p, name in
           (("b", "b_bureau_closed"), ("c", "c_bureau_published"),
            ("d", "d_bureau_abstractions"))},
        **{f"{p}_content_leaks": pol[name]["content_leaks"] for p, name in
           (("b", "b_bureau_closed"), ("c", "c_bureau_published"),
            ("d", "d_bureau_abstractions"))},
        "probes": _num(a.probe["probes"]),
        "probe_hits": _num(a.probe["hits"]),
        "probe_limit": PROBE_LIMIT,
        "probe_requesters": _num(a.probe["requesters"]),
        "probe_max_cards": a.probe["max_scope_cards"],
        "policy_table": _md_table(
            ["policy", "engine", "private leak (pairs)", "private leak (items, to at least one "
             "other agent)", "shareable recall", "random: pairs / items / recall",
             "abstractions delivered", "content leaks"],
            policy_rows,
        ),
        "query_template": QUERY_TEMPLATE,
        "question_limit": _num(MAX_QUESTION_CHARS),
        "queries_cut": _num(sum(ag.query_cut for s in result.lab.scenarios for ag in s.agents)),
        "queries": _num(len(result.queries)),
        "queries_over_tokens": _num(sum(n > MAX_TOKENS for n in tokens.values())),
        "queries_cut_short": _num(sum(
            ag.query_cut and tokens.get((s.scenario_id, ag.name), MAX_TOKENS) < MAX_TOKENS
            for s in result.lab.scenarios for ag in s.agents)),
        "max_tokens": MAX_TOKENS,
    }
    return values


def _k_rows(a: Analysis, ks: Sequence[int]) -> list[list[str]]:
    """Rows of a shared-pool depth table: both pools, each figure beside its random value."""
    rows = []
    for k in ks:
        o, w = a.cell(SHARED_POOL, k), a.cell(SHARED_POOL_WITH_OWN, k)
        rows.append([k, f"{_pct(o['pair_leak'])} (random {_pct(o['random_pair_leak'])})",
                     f"{_pct(o['item_leak'])} (random {_pct(o['random_item_leak'])})",
                     f"{_pct(o['shareable_recall'])} (random "
                     f"{_pct(o['random_shareable_recall'])})",
                     f"{_pct(w['pair_leak'])} (random {_pct(w['random_pair_leak'])})"])
    return rows


K_HEADERS = ["k (in all)", "leak, pairs: pool of others", "leak, items: pool of others",
             "shareable recall: pool of others", "leak, pairs: pool with own"]


def report_values(a: Analysis, info: dict[str, Any]) -> dict[str, str]:
    """Every figure the MAGPIE section states, formatted, by template placeholder name.

    Counts come from ``info`` (the run's :func:`dataset_dict`) and the analysis; the paper's
    figures from :data:`PAPER`. A test renders two subsets and checks the counts against the data.
    """
    k = a.result.k
    ds = info["dataset"]
    rel = a.relevance
    pol = {r["policy"]: r for r in a.policies.to_dict(orient="records")}
    b, c, d = (pol[p] for p in BUREAU_POLICIES)
    a1 = a.cell(SHARED_POOL)
    paper_hint_share = PAPER["hint_items"] / PAPER["private_preferences"]
    paper_rows = [
        ["Relevance AUROC (shareable vs private)", f"{PAPER['relevance_auroc']:.3f}",
         f"{rel['pooled']:.3f} (task query; {_ci(a.intervals['auroc_task_query'], False)}); "
         f"{rel['by_query']['role_task']:.3f} (role: task); {rel['per_scenario_mean']:.3f} mean "
         f"of {rel['scenarios_scored']} scenarios"],
        ["Private leak rate, relevance retrieval", _pct(PAPER["private_leak_rate"]),
         f"{_pct(a1['item_leak'])} of private items reach at least one other agent; "
         f"{_pct(a1['pair_leak'])} of (requester, private item) pairs (pool of others, top-{k}; "
         f"random {_pct(a1['random_item_leak'])} / {_pct(a1['random_pair_leak'])})"],
        ["Private leak rate behind the bureau boundary", "–",
         f"{_pct(b['private_leak_rate_pairs'])} (b), "
         f"{_pct(c['private_leak_rate_pairs'])} (c), {_pct(d['private_leak_rate_pairs'])} (d)"],
        ["Private items with a safe hint (abstraction)",
         f"{PAPER['hint_items']} of {PAPER['private_preferences']:,} ({_pct(paper_hint_share)})",
         f"{ds['safe_abstraction_private_preferences']} of {ds['private_preferences']:,} "
         f"private_preferences (+{ds['safe_abstraction_private_information']} of "
         f"{ds['private_information']} private_information) = {ds['safe_abstraction']} of "
         f"{ds['private']:,}"],
    ]
    strict_rows = [
        [r["label"], _pct(r["private_leak_rate_pairs_at_threshold"]),
         _pct(r["shareable_recall_at_threshold"])]
        for r in pol.values()
    ]
    domains = a.domains
    dom_a = domains[domains["policy"] == SHARED_POOL].sort_values(
        ["leak_rate_pairs", "private_pairs"], ascending=[False, False]
    )
    leaky = int((dom_a["leak_rate_pairs"] > 0).sum())
    bureau = domains[domains["policy"].isin(BUREAU_POLICIES)]
    bureau_leaky = int((bureau["leak_rate_pairs"] > 0).sum())
    shown = pd.concat([dom_a.head(MOST_LEAKY_DOMAINS), dom_a.tail(LEAST_LEAKY_DOMAINS)])
    dom_rows = [
        [r["domain"], f"{r['private_pairs']}", _pct(r["leak_rate_pairs"]),
         _pct(r["random_leak_rate_pairs"]), _pct(r["leak_rate_items"]),
         _pct(r["shareable_recall"]),
         "n/a" if pd.isna(r["auroc_a_mean"]) else f"{r['auroc_a_mean']:.2f}"]
        for r in shown.drop_duplicates("domain").to_dict(orient="records")
    ]
    ks = pool_ks(k)
    near = min(ks, key=lambda kk: abs((a.cell(SHARED_POOL, kk)["item_leak"] or 0)
                                      - PAPER["private_leak_rate"]))
    eng = info["setup"]["engine_check"]
    return {name: str(value) for name, value in {
        **_common_values(a),
        "scenarios": _num(ds["scenarios"]),
        "agents": _num(ds["agents"]),
        "shareable": _num(ds["shareable"]),
        "private": _num(ds["private"]),
        "private_information": _num(ds["private_information"]),
        "hints_private_preferences": _num(ds["safe_abstraction_private_preferences"]),
        "paper_auroc": f"{PAPER['relevance_auroc']:.3f}",
        "paper_leak": _pct(PAPER["private_leak_rate"]),
        "paper_hint_items": _num(PAPER["hint_items"]),
        "paper_table": _md_table(["figure", "paper (MaaS)", "this run"], paper_rows),
        "threshold": f"{a.threshold:.2f}",
        "strict_table": _md_table(["policy", "private leak (pairs)", "shareable recall"],
                                  strict_rows),
        "plot_tradeoff": f"{a.slug}_{PLOTS['tradeoff']}",
        "plot_baseline": f"{a.slug}_{PLOTS['baseline']}",
        "plot_roc": f"{a.slug}_{PLOTS['roc']}",
        "plot_domains": f"{a.slug}_{PLOTS['domains']}",
        "domains": len(dom_a),
        "leaky_domains": leaky,
        "bureau_leaky_cells": bureau_leaky,
        "domain_table": _md_table(
            ["domain", "private pairs", "leak (pairs)", "random (pairs)", "leak (items)",
             "shareable recall", "AUROC (task query, mean of scenarios)"],
            dom_rows,
        ),
        "engine_same_topk": _num(eng.get("same_topk", 0)),
        "engine_queries": _num(eng.get("queries", 0)),
        "engine_max_score_diff": f"{eng.get('max_score_diff', float('nan')):.1e}",
        "nearest_k": near,
        "nearest_k_leak": _pct(a.cell(SHARED_POOL, near)["item_leak"]),
        "k_table": _md_table(K_HEADERS, _k_rows(a, ks)),
    }.items()}


def social_values(a: Analysis, info: dict[str, Any]) -> dict[str, str]:
    """Every figure the AgentSocialBench section states, by template placeholder name."""
    ds = info["dataset"]
    pairing = pairing_stats(a.result.lab.dataset)
    total = pairing["all"]
    board = AGENTSOCIALBENCH_LEADERBOARD
    domains = a.domains.set_index(["policy", "domain"])
    cat_rows = []
    for category in IN_SCOPE:
        if (SHARED_POOL, category) not in domains.index:
            continue
        o = domains.loc[(SHARED_POOL, category)]
        bureau_leak = max(domains.loc[(p, category), "leak_rate_pairs"] for p in BUREAU_POLICIES)
        lo, hi = board["leak_rate"][category]
        cat_rows.append([category, _num(int(o["private_pairs"])), _pct(o["leak_rate_pairs"]),
                         _pct(o["random_leak_rate_pairs"]), _pct(bureau_leak),
                         f"{_pct(lo)}–{_pct(hi)}"])
    pair_rows = [[s.category, _num(s.private_items), _num(s.exact), _num(s.fuzzy),
                  _num(s.unpaired), f"{s.unused_keys:,} of {s.abstraction_keys:,}"]
                 for s in pairing.values()]
    ks = sorted({*SOCIAL_KS, a.result.k, 2 * a.result.k})
    return {name: str(value) for name, value in {
        **_common_values(a),
        "scenarios": _num(ds["scenarios"]),
        "agents": _num(ds["agents"]),
        "shareable": _num(ds["shareable"]),
        "private": _num(ds["private"]),
        "cross_domain": _num(ds["cross_domain"]),
        "mediated_comm": _num(ds["mediated_comm"]),
        "cross_user": _num(ds["cross_user"]),
        "skipped": _num(ds["skipped"]),
        "paired": _num(total.paired),
        "paired_items": _num(total.private_items),
        "exact": _num(total.exact),
        "fuzzy": _num(total.fuzzy),
        "unpaired": _num(total.unpaired),
        "pairing_table": _md_table(["category", "private items", "exact", "fuzzy", "none",
                                    "keys unused"], pair_rows),
        "social_k_table": _md_table(K_HEADERS, _k_rows(a, ks)),
        "category_table": _md_table(
            ["category", "private pairs", f"shared pool of others, top-{a.result.k} (pairs)",
             "random (pairs)", "bureau b–d (pairs)",
             f"published LLM agents, no privacy guidance ({board['models']} models)"],
            cat_rows,
        ),
        "board_models": board["models"],
        "plot_baseline": f"{a.slug}_{PLOTS['baseline']}",
        "plot_tradeoff": f"{a.slug}_{PLOTS['tradeoff']}",
    }.items()}


def mediated_values(a: Analysis) -> dict[str, str]:
    """Every figure of a run's policy-e part, by template placeholder name."""
    m, k = a.mediated, a.result.k
    pol = {r["policy"]: r for r in a.policies.to_dict(orient="records")}
    a1, a2 = a.cell(SHARED_POOL), a.cell(SHARED_POOL, 2 * k)
    rows = [
        [POLICY_LABELS[SHARED_POOL] + f", top-{k}", f"{k} in all", _pct(a1["pair_leak"]),
         _pct(a1["shareable_recall"]), "—"],
        [POLICY_LABELS[SHARED_POOL] + f", top-{2 * k}", f"{2 * k} in all",
         _pct(a2["pair_leak"]), _pct(a2["shareable_recall"]), "—"],
    ]
    for p in BUREAU_POLICIES:
        r = pol[p]
        rows.append([POLICY_LABELS[p], f"{k} per scope (own + board)",
                     _pct(r["private_leak_rate_pairs"]),
                     _pct(r["shareable_recall"]),
                     f"{r['abstraction_pairs_delivered']:,} pairs (published)" if p ==
                     "d_bureau_abstractions" else "—"])
    rows.append(["e: bureau + mediation", f"{k} per other agent, decided",
                 _pct(m["pair_leak"]), _pct(m["min_info_recall"]),
                 f"{_pct(m['abstract_coverage'])} ({m['abstract_pairs']:,} pairs)"])
    actions = m["private_actions"]
    if a.kind == "agentsocialbench":
        total = pairing_stats(a.result.lab.dataset)["all"]
        pairing = (f"AgentSocialBench's `acceptable_abstractions` are keyed by short phrases, "
                   f"not by the `must_not_cross` sentences, so they are paired first exactly, then "
                   f"by key containment (`bureau.leakage.agentsocialbench`): {total.paired:,} "
                   f"of {total.private_items:,} private items pair ({total.exact:,} exact, "
                   f"{total.fuzzy:,} fuzzy), {total.unpaired:,} have no abstraction and are "
                   f"withheld whole, and {total.unused_keys:,} of {total.abstraction_keys:,} keys "
                   "pair with no sentence.")
    else:
        private = [i for i in a.result.lab.items if i.label == "private"]
        n = sum(1 for i in private if i.abstraction)
        pairing = (f"MAGPIE has no abstraction field: the hint rule of `bureau.leakage.magpie` "
                   f"gives {n:,} of {len(private):,} private items a safe abstraction; "
                   "every other private item can only be withheld.")
    values = {
        "dataset_name": a.name,
        "k": k,
        "threshold": a.threshold,
        "every_card": EVERY_CARD,
        "policy_file": "scenarios/policies/leak-lab.yaml",
        "requests": _num(m["requests"]),
        "decisions": _num(m["decisions"]),
        "private_pairs": _num(m["private_pairs"]),
        "raw": _num(m["raw_private_reveals"]),
        "probe_raw": _num(m["probe"]["raw_private_reveals"]),
        "probes": _num(m["probe"]["probes"]),
        "probe_decisions": _num(m["probe"]["decisions"]),
        "probe_abstracts": _num(m["probe"]["abstracts_released"]),
        "probe_withheld": _num(m["probe"]["withheld"]),
        "probe_limit": PROBE_LIMIT,
        "recall": _pct(m["min_info_recall"]),
        "recall_pairs": f"{m['min_info_revealed_pairs']:,}/{m['shareable_pairs']:,}",
        "coverage": _pct(m["abstract_coverage"]),
        "coverage_pairs": f"{m['abstract_pairs']:,}/{m['private_pairs_with_abstraction']:,}",
        "coverage_all": _pct(m["abstract_coverage_all"]),
        "coverage_strict": _pct(m["abstract_coverage_at_threshold"]),
        "recall_strict": _pct(m["min_info_recall_at_threshold"]),
        "abs_leak": _pct(m["abstraction_leakage"]),
        "abs_leaky": _num(m["abstractions_with_leaked_terms"]),
        "abs_distinct": _num(m["distinct_abstractions_released"]),
        "private_actions": ", ".join(f"{n:,} {act}" for act, n in sorted(actions.items()))
        or "none",
        "audit": _num(m["audit_entries"]),
        "pairing": pairing,
        "compare_table": _md_table(["policy", "cards read", "private pairs leaked (raw)",
                                    "shareable / minimum-info recall", "abstractions"], rows),
        "plot_mediation": f"{a.slug}_{PLOTS['mediation']}",
    }
    return {name: str(value) for name, value in values.items()}


def benchmark_values(info: dict[str, Any]) -> dict[str, str]:
    bench = info["benchmark"]
    rows = [["lab wall time", f"{bench['lab_seconds']:.1f} s"]]
    rows += [[f"… of which {name}", f"{sec:.1f} s"]
             for name, sec in bench["lab_seconds_per_dataset"].items()]
    rows += [
        ["texts embedded (distinct texts)",
         f"{bench['texts_embedded']:,} ({bench['distinct_texts']:,})"],
        ["tokens embedded", f"{bench['tokens_embedded']:,}"],
        ["tokens/s inside the lab (encoder busy time)", f"{bench['tokens_per_second']:,.0f}"],
        ["embedding alone (fresh encoder, no cache)",
         f"{bench['embed_alone_seconds']:.1f} s "
         f"({bench['embed_alone_tokens_per_second']:,.0f} tokens/s)"],
        ["lab / embedding alone", f"{bench['ratio_lab_to_embedding']:.2f}× "
         f"(target ≤ {bench['target_ratio']}×)"],
    ]
    phases = []
    for name, d in info["datasets"].items():
        t = d["timings"]
        phases.append(f"{name}: " + ", ".join(
            f"{p} {t[p]:.1f}" for p in ("embed_wait", "seed", "publish", "abstractions",
                                        "retrieve", "probe", "mediated", "mediated_probe",
                                        "shared_pool", "frames")))
    t_all = [d["timings"] for d in info["datasets"].values()]
    load = info["environment"]["load_average_1_5_15_at_end"]
    return {
        "benchmark_table": _md_table(["figure", "value"], rows),
        "phases": "; ".join(phases),
        "cards_written": _num(sum(t["cards_written"] for t in t_all)),
        "searches": _num(sum(t["searches"] for t in t_all)),
        "load": "n/a" if not load else " / ".join(f"{x:.2f}" for x in load),
        "cpus": str(info["environment"]["cpus"]),
    }


def render_report(analyses: Sequence[Analysis], info: dict[str, Any]) -> str:
    """report.md: one section per run (its benchmark's part of the template), then the timing
    section when the run was timed.

    ``Template.substitute`` raises on a placeholder without a value, so a figure the template
    names can never be left out silently.
    """
    parts = load_template()
    texts = []
    for a in analyses:
        dinfo = info["datasets"][a.name]
        if a.kind == "agentsocialbench":
            texts.append(parts["agentsocialbench"].substitute(social_values(a, dinfo)))
        else:
            texts.append(parts["magpie"].substitute(report_values(a, dinfo)))
        texts.append(parts["mediated"].substitute(mediated_values(a)))
    if "benchmark" in info:
        texts.append(parts["benchmark"].substitute(benchmark_values(info)))
    return "\n".join(t.strip("\n") + "\n" for t in texts)
