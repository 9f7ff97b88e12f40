"""Turn a :class:`~bureau.leakage.policies.LabResult` into tables, a benchmark and report files.

``summarize`` gives one row per policy; ``write_outputs`` writes ``summary.csv``,
``summary.json``, ``per_item.csv``, ``per_domain.csv``, ``pairs.csv.gz``, ``retrievals.csv.gz``,
three PNG plots and ``report.md`` into one directory.
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bureau.leakage.metrics import (
    per_domain,
    per_scenario_auroc,
    pooled_auroc,
    private_leak_rate_items,
    private_leak_rate_pairs,
    shareable_recall,
)
from bureau.leakage.policies import (
    DEFAULT_THRESHOLD,
    POLICIES,
    POLICY_LABELS,
    QUERY_TEMPLATE,
    LabResult,
    leaked_contents,
)

PAPER = {
    "source": "Li, Memory as a Service (MaaS), arXiv:2506.22815v2, MAGPIE diagnostic probe",
    "relevance_auroc": 0.570,
    "private_leak_rate": 0.530,
    "hint_items": 66,
    "private_preferences": 1456,
}
ENGINES = {
    "a_shared_pool": "numpy, exact cosine over the Bureau's MiniLM vectors",
    "b_bureau_closed": "Bureau (Case.retrieve) on embedded seekdb",
    "c_bureau_published": "Bureau (Case.retrieve) on embedded seekdb",
    "d_bureau_abstractions": "Bureau (Case.retrieve) on embedded seekdb",
}
PLOTS = {
    "tradeoff": "leak_vs_recall.png",
    "roc": "roc_relevance.png",
    "domains": "per_domain.png",
}


def _rate(num: int, den: int) -> float:
    return num / den if den else float("nan")


def summarize(result: LabResult, threshold: float = DEFAULT_THRESHOLD) -> pd.DataFrame:
    """One row per policy: leak rates, shareable recall, abstractions delivered.

    ``*_at_threshold`` columns apply the stricter reading "top-k *and* cosine >= threshold" (the
    Bureau's evidence responder only uses such cards).
    """
    rows = []
    for policy in POLICIES:
        df = result.policy(policy)
        others = df[df["requester"] != df["owner"]]
        private = others[others["label"] == "private"]
        shareable = others[others["label"] == "shareable"]
        strict = others.assign(retrieved=others["retrieved"] & (others["score"] >= threshold))
        hint_items = set(
            i.item_id for i in result.dataset.items if i.abstraction and i.label == "private"
        )
        hint = private[private["item_id"].isin(hint_items)]
        leaked_items = private.groupby(["scenario_id", "item_id"])["retrieved"].any()
        rows.append(
            {
                "policy": policy,
                "label": POLICY_LABELS[policy],
                "description": POLICIES[policy],
                "engine": ENGINES[policy],
                "k": result.k,
                "private_pairs": len(private),
                "leaked_pairs": int(private["retrieved"].sum()),
                "private_leak_rate_pairs": private_leak_rate_pairs(df),
                "private_items": len(leaked_items),
                "leaked_items": int(leaked_items.sum()),
                "private_leak_rate_items": private_leak_rate_items(df),
                "shareable_pairs": len(shareable),
                "retrieved_shareable_pairs": int(shareable["retrieved"].sum()),
                "shareable_recall": shareable_recall(df),
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


def relevance(result: LabResult) -> dict[str, Any]:
    """Relevance AUROC of the raw cosine over every (requester, other agent's item) pair."""
    pairs = result.policy("a_shared_pool")
    per = per_scenario_auroc(pairs)
    others = pairs[pairs["requester"] != pairs["owner"]]
    return {
        "pooled": pooled_auroc(pairs),
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


def k_sensitivity(result: LabResult, ks: Sequence[int] = (1, 3, 5, 10, 20)) -> pd.DataFrame:
    """Policy a (shared pool) at other k, read off each pair's rank in the pool."""
    pairs = result.policy("a_shared_pool")
    rows = []
    for k in ks:
        at_k = pairs.assign(retrieved=pairs["pool_rank"] <= k)
        rows.append(
            {
                "k": k,
                "private_leak_rate_pairs": private_leak_rate_pairs(at_k),
                "private_leak_rate_items": private_leak_rate_items(at_k),
                "shareable_recall": shareable_recall(at_k),
            }
        )
    return pd.DataFrame(rows)


def per_scenario_table(result: LabResult) -> pd.DataFrame:
    return per_scenario_auroc(result.policy("a_shared_pool")).table


def domain_table(result: LabResult) -> pd.DataFrame:
    """Per-domain leak rates and recall of every policy, long format (``policy`` column)."""
    frames = []
    for policy in POLICIES:
        frame = per_domain(result.policy(policy)).reset_index()
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
    hints = {i.item_id: i.abstraction for i in result.dataset.items if i.abstraction}
    out["has_safe_abstraction"] = out["item_id"].isin(hints)
    out["policy"] = pd.Categorical(out["policy"], categories=list(POLICIES), ordered=True)
    out = out.sort_values(["policy", "scenario_id", "item_id"]).reset_index(drop=True)
    out["policy"] = out["policy"].astype(str)
    return out


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
            "target_ratio": 1.5,
        }

    def lines(self) -> list[str]:
        return [
            f"lab wall time          {self.lab_seconds:8.1f} s",
            f"texts embedded         {self.texts_embedded:8,d}  (distinct texts in the lab: "
            f"{self.distinct_texts:,})",
            f"tokens embedded        {self.tokens_embedded:8,d}  "
            f"({self.tokens_per_second:,.0f} tokens/s inside the lab)",
            f"embedding alone        {self.embed_alone_seconds:8.1f} s  (same {self.distinct_texts:,} "
            f"texts, fresh encoder, no cache: {self.embed_alone_tokens_per_second:,.0f} tokens/s)",
            f"lab / embedding alone  {self.ratio:8.2f} x  (target <= 1.5 x)",
        ]


def benchmark(result: LabResult, encoder: Any | None = None) -> Benchmark:
    """Embed the lab's distinct texts once more with a fresh, cache-less MiniLM and time it."""
    if encoder is None:
        from bureau.embedding import MiniLMEncoder

        encoder = MiniLMEncoder(cache_size=0)
    t0 = time.perf_counter()
    encoder.embed(result.texts)
    seconds = time.perf_counter() - t0
    t = result.timings
    return Benchmark(
        lab_seconds=t.total,
        distinct_texts=t.distinct_texts,
        texts_embedded=t.texts_embedded,
        tokens_embedded=t.tokens_embedded,
        encoder_seconds=t.encoder_seconds,
        embed_alone_seconds=seconds,
        embed_alone_tokens=int(getattr(encoder, "tokens_embedded", 0)),
    )


# --- files ---------------------------------------------------------------------------------------


def _clean(value: Any) -> Any:
    """JSON-safe: NaN -> None, numpy scalars -> Python."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def summary_dict(
    result: LabResult,
    summary: pd.DataFrame,
    bench: Benchmark | None = None,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    counts = result.dataset.counts()
    out: dict[str, Any] = {
        "dataset": {
            "source": str(result.dataset.source) if result.dataset.source else None,
            **counts,
            "requesters": counts["agents"],
        },
        "setup": {
            "k": result.k,
            "query_template": QUERY_TEMPLATE,
            "retrieved": "top-k per scope; no relevance threshold (see *_at_threshold)",
            "threshold": float(summary["threshold"].iloc[0]),
            "embedder": "all-MiniLM-L6-v2 int8 ONNX (bureau.embedding.MiniLMEncoder)",
            "engine_check": result.engine_check,
            "cases": len(result.case_ids),
        },
        "policies": {
            row["policy"]: {k: v for k, v in row.items() if k != "policy"}
            for row in summary.to_dict(orient="records")
        },
        "relevance_auroc": relevance(result),
        "paper": PAPER,
        "timings": result.timings.as_dict(),
        "shared_pool_k_sensitivity": k_sensitivity(result).to_dict(orient="records"),
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
    result: LabResult,
    out_dir: str | Path,
    bench: Benchmark | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    meta: dict[str, Any] | None = None,
) -> dict[str, Path]:
    """Write every table, the plots and report.md; returns {name: path}."""
    from bureau.leakage import plots

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize(result, threshold)
    info = summary_dict(result, summary, bench, meta)
    paths = {
        "summary_csv": out / "summary.csv",
        "summary_json": out / "summary.json",
        "per_item": out / "per_item.csv",
        "per_domain": out / "per_domain.csv",
        "per_scenario": out / "per_scenario_auroc.csv",
        "pairs": out / "pairs.csv.gz",
        "retrievals": out / "retrievals.csv.gz",
        "report": out / "report.md",
        **{name: out / file for name, file in PLOTS.items()},
    }
    summary.to_csv(paths["summary_csv"], index=False)
    paths["summary_json"].write_text(json.dumps(info, indent=2) + "\n")
    item_table(result).to_csv(paths["per_item"], index=False)
    domains = domain_table(result)
    domains.to_csv(paths["per_domain"], index=False)
    per_scenario_table(result).to_csv(paths["per_scenario"], index=False)
    result.pairs.to_csv(paths["pairs"], index=False)
    result.retrievals.drop(columns="content").to_csv(paths["retrievals"], index=False)
    figures = {
        "tradeoff": plots.tradeoff(summary),
        "roc": plots.roc(result),
        "domains": plots.domains(domains),
    }
    for name, fig in figures.items():
        fig.savefig(paths[name], dpi=120, bbox_inches="tight")
    paths["report"].write_text(render_report(result, summary, info, domains))
    return paths


def _pct(x: float | None) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def render_report(
    result: LabResult, summary: pd.DataFrame, info: dict[str, Any], domains: pd.DataFrame
) -> str:
    """report.md: the measured figures beside the paper's, with the setup differences."""
    ds = info["dataset"]
    rel = info["relevance_auroc"]
    pol = {r["policy"]: r for r in summary.to_dict(orient="records")}
    a, c, d = pol["a_shared_pool"], pol["c_bureau_published"], pol["d_bureau_abstractions"]
    k = result.k
    if "magpie_mini" in str(ds.get("source") or ""):
        scope = "the bundled synthetic mini set (MAGPIE's format, not MAGPIE data)"
    elif ds["scenarios"] == 200:
        scope = "the full MAGPIE set"
    else:
        scope = f"{ds['scenarios']} MAGPIE scenarios (--limit: spread evenly over the ids)"
    policy_rows = [
        [
            f"**{r['label']}**",
            r["engine"],
            f"{_pct(r['private_leak_rate_pairs'])} ({r['leaked_pairs']:,}/{r['private_pairs']:,})",
            f"{_pct(r['private_leak_rate_items'])} ({r['leaked_items']:,}/{r['private_items']:,})",
            f"{_pct(r['shareable_recall'])} ({r['retrieved_shareable_pairs']:,}/"
            f"{r['shareable_pairs']:,})",
            f"{r['abstraction_pairs_delivered']:,}/{r['hint_pairs']:,}",
            r["content_leaks"],
        ]
        for r in pol.values()
    ]
    strict_rows = [
        [r["label"], _pct(r["private_leak_rate_pairs_at_threshold"]),
         _pct(r["shareable_recall_at_threshold"])]
        for r in pol.values()
    ]
    paper_rows = [
        ["Relevance AUROC (shareable vs private)", f"{PAPER['relevance_auroc']:.3f}",
         f"{rel['pooled']:.3f} pooled; {rel['per_scenario_mean']:.3f} mean of "
         f"{rel['scenarios_scored']} scenarios"],
        ["Private leak rate, relevance retrieval", _pct(PAPER["private_leak_rate"]),
         f"{_pct(a['private_leak_rate_items'])} of private items reach ≥1 other agent; "
         f"{_pct(a['private_leak_rate_pairs'])} of (requester, private item) pairs (policy a, "
         f"top-{k})"],
        ["Private leak rate behind the bureau boundary", "–",
         f"{_pct(pol['b_bureau_closed']['private_leak_rate_pairs'])} (b), "
         f"{_pct(c['private_leak_rate_pairs'])} (c), {_pct(d['private_leak_rate_pairs'])} (d)"],
        ["Private items with a safe hint (abstraction)",
         f"{PAPER['hint_items']} of {PAPER['private_preferences']:,} (4.5%)",
         f"{ds['safe_abstraction_private_preferences']} of {ds['private_preferences']:,} "
         f"private_preferences (+{ds['safe_abstraction_private_information']} of "
         f"{ds['private_information']} private_information) = {ds['safe_abstraction']} of "
         f"{ds['private']:,}"],
    ]
    dom_a = domains[domains["policy"] == "a_shared_pool"].sort_values(
        ["leak_rate_pairs", "private_pairs"], ascending=[False, False]
    )
    leaky = int((dom_a["leak_rate_pairs"] > 0).sum())
    bureau_leaky = int(
        (domains[domains["policy"] != "a_shared_pool"]["leak_rate_pairs"] > 0).sum()
    )
    dom_rows = [
        [r["domain"], f"{r['private_pairs']}", _pct(r["leak_rate_pairs"]),
         _pct(r["leak_rate_items"]), _pct(r["shareable_recall"]),
         "n/a" if pd.isna(r["auroc_a_mean"]) else f"{r['auroc_a_mean']:.2f}"]
        for r in pd.concat([dom_a.head(8), dom_a.tail(5)]).drop_duplicates("domain")
        .to_dict(orient="records")
    ]
    near = min(info["shared_pool_k_sensitivity"],
               key=lambda r: abs((r["private_leak_rate_items"] or 0) - PAPER["private_leak_rate"]))
    eng = info["setup"]["engine_check"]
    bench = info.get("benchmark")
    t = info["timings"]
    lines = [
        "# Leakage lab: MAGPIE through four memory policies",
        "",
        f"Measured on {scope}: {ds['scenarios']} scenarios, {ds['agents']:,} agents "
        f"(every agent is a requester), {ds['shareable']:,} shareable and {ds['private']:,} "
        f"private items; top-{k} per scope; one offline embedder (all-MiniLM-L6-v2, int8 ONNX) "
        "for every policy.",
        "",
        "## Result",
        "",
        f"- **Relevance is not authorisation.** Ranking by cosine relevance separates shareable "
        f"from private items with a pooled AUROC of **{rel['pooled']:.3f}** (paper: 0.570; 0.5 "
        f"is a coin flip). Mean cosine to the query: shareable {rel['mean_cosine_shareable']:.3f}, "
        f"private {rel['mean_cosine_private']:.3f}.",
        f"- **A shared pool leaks.** With every agent's items in one scope, the top-{k} hands "
        f"{_pct(a['private_leak_rate_pairs'])} of (requester, other agent's private item) pairs "
        f"to the requester, and {_pct(a['private_leak_rate_items'])} of private items reach at "
        "least one other agent.",
        f"- **The bureau boundary leaks nothing** in every state: "
        f"{pol['b_bureau_closed']['leaked_pairs']} + {c['leaked_pairs']} + {d['leaked_pairs']} "
        f"leaked pairs over {c['private_pairs']:,} private pairs per state, confirmed by comparing "
        "card bodies (content leaks: "
        f"{pol['b_bureau_closed']['content_leaks']}/{c['content_leaks']}/{d['content_leaks']}).",
        f"- **Utility comes from publishing, not from relevance.** Publishing shareable items "
        f"(c) gives a shareable recall of {_pct(c['shareable_recall'])} against "
        f"{_pct(a['shareable_recall'])} for the shared pool; publishing the safe abstractions "
        f"too (d) delivers {d['abstraction_pairs_delivered']:,} of {d['hint_pairs']:,} hint "
        f"pairs as abstractions while recall is {_pct(d['shareable_recall'])}.",
        "",
        "## Measured beside the paper",
        "",
        _md_table(["figure", "paper (MaaS)", "this run"], paper_rows),
        "",
        "## Policies",
        "",
        _md_table(
            ["policy", "engine", "private leak (pairs)", "private leak (items → ≥1 agent)",
             "shareable recall", "abstractions delivered", "content leaks"],
            policy_rows,
        ),
        "",
        f"Stricter reading, top-{k} **and** cosine ≥ {summary['threshold'].iloc[0]:.2f} (the "
        "Bureau's relevance threshold; its evidence responder uses only such cards):",
        "",
        _md_table(["policy", "private leak (pairs)", "shareable recall"], strict_rows),
        "",
        f"![leak rate vs shareable recall]({PLOTS['tradeoff']})",
        "",
        f"![ROC of relevance]({PLOTS['roc']})",
        "",
        "## Per domain",
        "",
        f"{len(dom_a)} domains; the shared pool leaks in {leaky} of them, the bureau policies in "
        f"{bureau_leaky} (domain × policy cells with any leak). Most and least leaky domains "
        "under policy a (full table: `per_domain.csv`):",
        "",
        _md_table(
            ["domain", "private pairs", "leak (pairs)", "leak (items)", "shareable recall (a)",
             "AUROC (mean of scenarios)"],
            dom_rows,
        ),
        "",
        f"![per-domain leak rates]({PLOTS['domains']})",
        "",
        "## Setup (to reproduce)",
        "",
        "- **Data**: MAGPIE `magpie.tsv` loaded by `bureau.leakage.magpie.load_magpie`; one item "
        "per `shareable_preferences` entry (`description`) and per `private_preferences` / "
        "`private_information` entry (`value`), text `\"<key with spaces>: <body>\"`.",
        "- **Cases**: each scenario is a Bureau case (`Bureau.create_case`), each agent a role "
        "(slug of its name), each item a private card of its owner (kind `shareable` or "
        "`private`).",
        f"- **Query** (one per requester agent): `{QUERY_TEMPLATE}` — the agent's MAGPIE `role` "
        "(its name if empty), `\": \"`, the scenario `task`; whitespace collapsed; cut at the last "
        "space within 500 characters (the Bureau's question limit) when longer "
        f"({_truncated(result)} of {len(result.queries):,} queries were cut; MiniLM reads at most "
        "256 tokens anyway).",
        f"- **Retrieved**: item *i* counts as retrieved for requester *r* if *i* (or its board "
        f"copy, mapped back through `source_id`) is among the top-{k} cards of one of *r*'s "
        "scopes. No relevance threshold in the headline figures. Own items are never counted.",
        "- **Policies**: (a) one scope holding every agent's items, ranked by cosine — computed "
        "exactly in numpy over the same vectors the Bureau stores (no second copy in seekdb); "
        "(b) the real Bureau on embedded seekdb, `Case.retrieve` over the requester's own space "
        "and the board, nothing published; (c) after `Case.publish` of every shareable card by "
        "its owner; (d) after each owner whispered the safe abstraction of each hint-carrying "
        "private item (kind `abstraction`) and published that card — the private item itself "
        "stays private. b → c → d are successive states of one case per scenario.",
        f"- **Engine check**: in state c, seekdb's top-{k} over the board equalled numpy's exact "
        f"top-{k} for {eng.get('same_topk', 0):,} of {eng.get('queries', 0):,} queries "
        f"(largest score difference {eng.get('max_score_diff', float('nan')):.1e}), so computing "
        "policy a in numpy changes no ranking.",
        "- **Relevance AUROC**: raw cosine of every (requester, other agent's item) pair, "
        "label 1 = shareable, `sklearn.metrics.roc_auc_score`; pooled over all pairs and per "
        "scenario (`per_scenario_auroc.csv`). The score does not depend on the policy.",
        "- **Leak rates**: pairs = leaked (requester, other agent's private item) pairs / all "
        "such pairs; items = private items retrieved by at least one agent other than the owner / "
        "all private items. Shareable recall = retrieved (requester, other agent's shareable "
        "item) pairs / all such pairs.",
        "",
        "## Why the figures differ from the paper",
        "",
        f"The shared pool at other k (read off each pair's rank in the pool; k = {k} above). "
        f"The item-level leak comes closest to the paper's 53.0% at k = {near['k']} "
        f"({_pct(near['private_leak_rate_items'])}): with the same ranking, a deeper retrieval "
        "alone would reproduce the paper's order of magnitude (the paper does not state its k):",
        "",
        _md_table(
            ["k", "private leak (pairs)", "private leak (items → ≥1 agent)", "shareable recall"],
            [[r["k"], _pct(r["private_leak_rate_pairs"]), _pct(r["private_leak_rate_items"]),
              _pct(r["shareable_recall"])] for r in info["shared_pool_k_sensitivity"]],
        ),
        "",
        "- The paper's probe is described only briefly (AUROC 0.570, private leak 53.0%); its "
        "exact query, retriever, k and leak denominator are not published with it, so the "
        "comparison is of orders of magnitude, not of digits.",
        f"- Here the query is the task plus the requester's role, k = {k} per scope, and the "
        "embedder is MiniLM; a larger k, another query or another embedder moves the leak rate "
        "(a leak *rate* under top-k is mostly set by k / items per scenario) while the AUROC, "
        "which needs no k, is the more comparable figure.",
        f"- Hint items: our rule (documented in `bureau/leakage/magpie.py`) finds "
        f"{ds['safe_abstraction_private_preferences']} in `private_preferences` where the paper "
        "counts 66 with an unpublished rule; 22 `private_information` items are counted as "
        "private too (1,478 in all).",
        "",
        "## What this does and does not prove",
        "",
        "- It proves that, on this benchmark, relevance ranking barely distinguishes what may be "
        "shared from what may not, so a relevance-ranked shared pool hands private items to "
        "other agents; and that the Bureau's scope rule (own space + board) returned no other "
        "agent's private card to any requester in any state — measured, not assumed.",
        "- It does not prove that publishing is safe: the board holds whatever owners publish, "
        "and MAGPIE's shareable/private labels decide that here. It says nothing about what an "
        "agent *says* once it has a card (no LLM runs here), nor about agents that collude, "
        "nor about other embedders or datasets.",
        "",
    ]
    if bench:
        lines += [
            "## Benchmark",
            "",
            _md_table(
                ["figure", "value"],
                [
                    ["lab wall time", f"{bench['lab_seconds']:.1f} s"],
                    ["texts embedded (distinct texts)",
                     f"{bench['texts_embedded']:,} ({bench['distinct_texts']:,})"],
                    ["tokens embedded", f"{bench['tokens_embedded']:,}"],
                    ["tokens/s inside the lab (encoder busy time)",
                     f"{bench['tokens_per_second']:,.0f}"],
                    ["embedding alone (fresh encoder, no cache)",
                     f"{bench['embed_alone_seconds']:.1f} s "
                     f"({bench['embed_alone_tokens_per_second']:,.0f} tokens/s)"],
                    ["lab / embedding alone", f"{bench['ratio_lab_to_embedding']:.2f}× "
                     "(target ≤ 1.5×)"],
                ],
            ),
            "",
            "Lab time by phase (s; embedding runs on background threads, so the phases overlap it): "
            + ", ".join(
                f"{name} {t[name]:.1f}"
                for name in ("embed_wait", "seed", "publish", "abstractions", "retrieve",
                             "shared_pool", "frames")
            )
            + f"; {t['cards_written']:,} cards written, {t['searches']:,} scoped searches.",
            "",
        ]
    return "\n".join(lines)


def _truncated(result: LabResult) -> int:
    n = 0
    for s in result.dataset.scenarios:
        for a in s.agents:
            full = " ".join(f"{' '.join(a.role.split()) or a.name}: {s.task}".split())
            n += int(result.queries[(s.scenario_id, a.name)] != full)
    return n
