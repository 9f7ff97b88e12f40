"""Turn a :class:`~bureau.leakage.runner.LabResult` into tables, a benchmark and report files.

``summarize`` gives one row per policy; ``write_outputs`` writes ``summary.csv``,
``summary.json``, ``per_item.csv``, ``per_domain.csv``, ``pairs.csv.gz``, ``retrievals.csv.gz``,
three PNG plots and ``report.md`` into one directory.

``report.md`` is ``report_template.md`` (shipped beside this module) filled in by
:func:`report_values`: the prose lives in the template and holds no figure, every number comes
from the run (or, for the paper's, from :data:`~bureau.leakage.paper.PAPER`), so the report
cannot go on stating the counts of a dataset it was not run on.
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

import numpy as np
import pandas as pd

from bureau.embedding import MAX_TOKENS
from bureau.leakage.convert import QUERY_TEMPLATE
from bureau.leakage.metrics import (
    per_domain,
    per_scenario_auroc,
    pooled_auroc,
    private_leak_rate_items,
    private_leak_rate_pairs,
    shareable_recall,
)
from bureau.leakage.paper import PAPER
from bureau.leakage.policies import (
    DEFAULT_THRESHOLD,
    ENGINES,
    POLICIES,
    POLICY_LABELS,
    SHARED_POOL,
)
from bureau.leakage.runner import LabResult, leaked_contents
from bureau.text import MAX_QUESTION_CHARS

EMBEDDER = "all-MiniLM-L6-v2 int8 ONNX (bureau.embedding.MiniLMEncoder)"
TARGET_RATIO = 1.5
"""Lab wall time / embedding-alone time the lab aims to stay under (README, Benchmarks)."""
K_SENSITIVITY = (1, 3, 5, 10, 20)
"""Depths at which the shared pool is re-read off each pair's pool rank."""
MOST_LEAKY_DOMAINS, LEAST_LEAKY_DOMAINS = 8, 5
"""Rows of the report's per-domain table (the CSV has every domain)."""
MINI_MARKER = "magpie_mini"
"""A source path holding this is the bundled synthetic set, which the report must not pass off
as the benchmark."""
TEMPLATE_FILE = "report_template.md"
BENCHMARK_SECTION = "<!-- section: benchmark -->\n"
"""Splits the template: what follows is rendered only when the run was timed."""
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
            i.item_id for i in result.lab.items if i.abstraction and i.label == "private"
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
    pairs = result.policy(SHARED_POOL)
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


def k_sensitivity(result: LabResult, ks: Sequence[int] = K_SENSITIVITY) -> pd.DataFrame:
    """Policy a (shared pool) at other k, read off each pair's rank in the pool."""
    pairs = result.policy(SHARED_POOL)
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
    return per_scenario_auroc(result.policy(SHARED_POOL)).table


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
    hints = {i.item_id: i.abstraction for i in result.lab.items if i.abstraction}
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
            "target_ratio": TARGET_RATIO,
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
            f"lab / embedding alone  {self.ratio:8.2f} x  (target <= {TARGET_RATIO} x)",
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
    counts = dict(result.lab.counts)
    out: dict[str, Any] = {
        "dataset": {
            "source": str(result.lab.source) if result.lab.source else None,
            **counts,
            "requesters": counts["agents"],
        },
        "setup": {
            "k": result.k,
            "query_template": QUERY_TEMPLATE,
            "retrieved": "top-k per scope; no relevance threshold (see *_at_threshold)",
            "threshold": float(summary["threshold"].iloc[0]),
            "embedder": EMBEDDER,
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




def _num(n: int) -> str:
    return f"{n:,}"


def _scope(result: LabResult) -> str:
    """What the run measured, in words: the mini set must never pass for the benchmark."""
    lab = result.lab
    name = lab.name
    if MINI_MARKER in str(lab.source or ""):
        scope = f"the bundled synthetic mini set ({name}'s format, not {name} data)"
        if lab.is_subset:
            scope = (f"{_num(len(lab))} of the {_num(lab.source_scenarios or 0)} scenarios of "
                     f"{scope}, spread evenly over the ids")
        return scope
    if lab.is_subset:
        return (f"{_num(len(lab))} of the {_num(lab.source_scenarios or 0)} {name} scenarios "
                "(--limit: spread evenly over the ids)")
    return f"the full {name} set"


def load_template() -> tuple[Template, Template]:
    """The report template shipped beside this module: (main part, benchmark section)."""
    text = resources.files(__package__).joinpath(TEMPLATE_FILE).read_text(encoding="utf-8")
    main, bench = text.split(BENCHMARK_SECTION)
    return Template(main), Template(bench)


def report_values(
    result: LabResult, summary: pd.DataFrame, info: dict[str, Any], domains: pd.DataFrame
) -> dict[str, str]:
    """Every figure report.md states, formatted, by template placeholder name.

    Counts come from ``info`` (the run's :func:`summary_dict`) and ``summary``; the paper's
    figures from :data:`PAPER`. A test renders two subsets and checks the counts against the data.
    """
    ds = info["dataset"]
    rel = info["relevance_auroc"]
    pol = {r["policy"]: r for r in summary.to_dict(orient="records")}
    a, b = pol[SHARED_POOL], pol["b_bureau_closed"]
    c, d = pol["c_bureau_published"], pol["d_bureau_abstractions"]
    k = result.k
    paper_hint_share = PAPER["hint_items"] / PAPER["private_preferences"]
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
         f"{_pct(b['private_leak_rate_pairs'])} (b), "
         f"{_pct(c['private_leak_rate_pairs'])} (c), {_pct(d['private_leak_rate_pairs'])} (d)"],
        ["Private items with a safe hint (abstraction)",
         f"{PAPER['hint_items']} of {PAPER['private_preferences']:,} ({_pct(paper_hint_share)})",
         f"{ds['safe_abstraction_private_preferences']} of {ds['private_preferences']:,} "
         f"private_preferences (+{ds['safe_abstraction_private_information']} of "
         f"{ds['private_information']} private_information) = {ds['safe_abstraction']} of "
         f"{ds['private']:,}"],
    ]
    dom_a = domains[domains["policy"] == SHARED_POOL].sort_values(
        ["leak_rate_pairs", "private_pairs"], ascending=[False, False]
    )
    leaky = int((dom_a["leak_rate_pairs"] > 0).sum())
    bureau_leaky = int((domains[domains["policy"] != SHARED_POOL]["leak_rate_pairs"] > 0).sum())
    shown = pd.concat([dom_a.head(MOST_LEAKY_DOMAINS), dom_a.tail(LEAST_LEAKY_DOMAINS)])
    dom_rows = [
        [r["domain"], f"{r['private_pairs']}", _pct(r["leak_rate_pairs"]),
         _pct(r["leak_rate_items"]), _pct(r["shareable_recall"]),
         "n/a" if pd.isna(r["auroc_a_mean"]) else f"{r['auroc_a_mean']:.2f}"]
        for r in shown.drop_duplicates("domain").to_dict(orient="records")
    ]
    near = min(info["shared_pool_k_sensitivity"],
               key=lambda r: abs((r["private_leak_rate_items"] or 0) - PAPER["private_leak_rate"]))
    eng = info["setup"]["engine_check"]
    values: dict[str, Any] = {
        "dataset_name": result.lab.name,
        "scope": _scope(result),
        "scenarios": _num(ds["scenarios"]),
        "agents": _num(ds["agents"]),
        "shareable": _num(ds["shareable"]),
        "private": _num(ds["private"]),
        "private_information": _num(ds["private_information"]),
        "hints_private_preferences": _num(ds["safe_abstraction_private_preferences"]),
        "k": k,
        "auroc_pooled": f"{rel['pooled']:.3f}",
        "mean_cosine_shareable": f"{rel['mean_cosine_shareable']:.3f}",
        "mean_cosine_private": f"{rel['mean_cosine_private']:.3f}",
        "a_leak_pairs": _pct(a["private_leak_rate_pairs"]),
        "a_leak_items": _pct(a["private_leak_rate_items"]),
        "a_recall": _pct(a["shareable_recall"]),
        "c_recall": _pct(c["shareable_recall"]),
        "d_recall": _pct(d["shareable_recall"]),
        "private_pairs": _num(c["private_pairs"]),
        "d_abstractions_delivered": _num(d["abstraction_pairs_delivered"]),
        "d_hint_pairs": _num(d["hint_pairs"]),
        **{f"{p}_leaked_pairs": pol[name]["leaked_pairs"] for p, name in
           (("b", "b_bureau_closed"), ("c", "c_bureau_published"),
            ("d", "d_bureau_abstractions"))},
        **{f"{p}_content_leaks": pol[name]["content_leaks"] for p, name in
           (("b", "b_bureau_closed"), ("c", "c_bureau_published"),
            ("d", "d_bureau_abstractions"))},
        "paper_auroc": f"{PAPER['relevance_auroc']:.3f}",
        "paper_leak": _pct(PAPER["private_leak_rate"]),
        "paper_hint_items": _num(PAPER["hint_items"]),
        "paper_table": _md_table(["figure", "paper (MaaS)", "this run"], paper_rows),
        "policy_table": _md_table(
            ["policy", "engine", "private leak (pairs)", "private leak (items → ≥1 agent)",
             "shareable recall", "abstractions delivered", "content leaks"],
            policy_rows,
        ),
        "threshold": f"{summary['threshold'].iloc[0]:.2f}",
        "strict_table": _md_table(["policy", "private leak (pairs)", "shareable recall"],
                                  strict_rows),
        "plot_tradeoff": PLOTS["tradeoff"],
        "plot_roc": PLOTS["roc"],
        "plot_domains": PLOTS["domains"],
        "domains": len(dom_a),
        "leaky_domains": leaky,
        "bureau_leaky_cells": bureau_leaky,
        "domain_table": _md_table(
            ["domain", "private pairs", "leak (pairs)", "leak (items)", "shareable recall (a)",
             "AUROC (mean of scenarios)"],
            dom_rows,
        ),
        "query_template": QUERY_TEMPLATE,
        "question_limit": MAX_QUESTION_CHARS,
        "queries_cut": _num(sum(ag.query_cut for s in result.lab.scenarios for ag in s.agents)),
        "queries": _num(len(result.queries)),
        "max_tokens": MAX_TOKENS,
        "engine_same_topk": _num(eng.get("same_topk", 0)),
        "engine_queries": _num(eng.get("queries", 0)),
        "engine_max_score_diff": f"{eng.get('max_score_diff', float('nan')):.1e}",
        "nearest_k": near["k"],
        "nearest_k_leak": _pct(near["private_leak_rate_items"]),
        "k_table": _md_table(
            ["k", "private leak (pairs)", "private leak (items → ≥1 agent)", "shareable recall"],
            [[r["k"], _pct(r["private_leak_rate_pairs"]), _pct(r["private_leak_rate_items"]),
              _pct(r["shareable_recall"])] for r in info["shared_pool_k_sensitivity"]],
        ),
    }
    bench = info.get("benchmark")
    if bench:
        t = info["timings"]
        values |= {
            "benchmark_table": _md_table(
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
                     f"(target ≤ {bench['target_ratio']}×)"],
                ],
            ),
            "phases": ", ".join(
                f"{name} {t[name]:.1f}"
                for name in ("embed_wait", "seed", "publish", "abstractions", "retrieve",
                             "shared_pool", "frames")
            ),
            "cards_written": _num(t["cards_written"]),
            "searches": _num(t["searches"]),
        }
    return {name: str(value) for name, value in values.items()}


def render_report(
    result: LabResult, summary: pd.DataFrame, info: dict[str, Any], domains: pd.DataFrame
) -> str:
    """report.md: the measured figures beside the paper's, with the setup differences.

    ``Template.substitute`` raises on a placeholder without a value, so a figure the template
    names can never be left out silently.
    """
    main, bench = load_template()
    values = report_values(result, summary, info, domains)
    text = main.substitute(values)
    if "benchmark_table" in values:
        text += "\n" + bench.substitute(values)
    return text
