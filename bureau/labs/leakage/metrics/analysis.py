"""The figures of one lab run: leak rates, recall, their random expectations, the relevance
AUROC, bootstrap intervals, the probe, and the per-domain and per-item tables.

:func:`analyse` computes every figure of one run once (:class:`Analysis`); the files
(:func:`bureau.labs.leakage.report.report.write_outputs`), ``summary.json`` (:mod:`bureau.labs.leakage.report.summary`),
the report's section values (:mod:`bureau.labs.leakage.report.report`) and the lesson read it. These are the
tables the report is built from, kept apart from the formatting of the report, so a figure is
computed in one place and only read elsewhere: nothing here formats text, writes a file or knows
the template.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from bureau.labs.leakage.datasets.convert import QUERY_VARIANTS, slug
from bureau.labs.leakage.datasets.social_model import SocialDataset
from bureau.labs.leakage.metrics.metrics import (
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
from bureau.labs.leakage.metrics.repetition import abstraction_table, repetition_summary
from bureau.labs.leakage.policies.measured import measured_summary
from bureau.labs.leakage.policies.mediated import mediated_summary
from bureau.labs.leakage.policies.policies import (
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
from bureau.labs.leakage.policies.shared_pool import QUERY_SCORES
from bureau.labs.leakage.result import LabResult
from bureau.labs.leakage.runner import leaked_contents

K_SENSITIVITY = (1, 3, 5, 10, 20)
"""Depths at which the shared pools are re-read off each pair's pool rank (plus k and 2k)."""
SOCIAL_KS = (3, 5, 10)
"""The shared-pool depths the AgentSocialBench section tabulates."""
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 0
CI_LEVEL = 0.95
HEADLINE_AUROC_QUERY = "task"
"""The relevance AUROC headline asks with the scenario task alone: the MaaS setting, where the
request is the task and the memory decides what is relevant to it."""
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


# --- figures of one run --------------------------------------------------------------------------


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
    ``query`` (a :data:`~bureau.labs.leakage.datasets.convert.QUERY_VARIANTS` name) as the question; pooled,
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
    measured: dict[str, Any] = field(init=False)
    """What could fail beside e's wiring check (:func:`bureau.labs.leakage.policies.measured.measured_summary`)."""
    repetition: dict[str, Any] = field(init=False)
    """Abstraction leakage as term repetition (:mod:`bureau.labs.leakage.metrics.repetition`)."""

    def __post_init__(self) -> None:
        self.policies = summarize(self.result, self.threshold)
        self.table = summary_table(self.result)
        self.relevance = relevance(self.result)
        self.intervals = intervals(self.result)
        self.probe = probe_summary(self.result)
        self.domains = domain_table(self.result)
        self.mediated = mediated_summary(self.result, self.threshold)
        self.measured = measured_summary(self.result)
        self.repetition = repetition_summary(abstraction_table(self.result))

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
