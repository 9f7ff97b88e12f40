"""The lab's plots (matplotlib, Agg-safe): each title states what the figure shows."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from bureau.figures import ABSTRACTED, CHANCE, LEAKED, PROTECTED_SHADES, SHARED, integer_ticks
from bureau.labs.leakage.metrics.metrics import relevance_auroc, roc_points
from bureau.labs.leakage.policies.policies import (
    BUREAU_POLICIES,
    POLICIES,
    POLICY_LABELS,
    SHARED_POOL,
    SHARED_POOL_WITH_OWN,
)
from bureau.labs.leakage.report.directions import change, compare, separation
from bureau.labs.leakage.report.paper import PAPER

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from bureau.labs.leakage.result import LabResult

COLORS = {
    "a_shared_pool_with_own": "#f87171",
    "a_shared_pool_others": LEAKED,
    "b_bureau_closed": PROTECTED_SHADES[0],
    "c_bureau_published": PROTECTED_SHADES[1],
    "d_bureau_abstractions": PROTECTED_SHADES[2],
    "e_bureau_mediated": "#7d3c98",
}
"""The course palette (:mod:`bureau.figures`): the shared pools red, the bureau's policies
green (markers tell b, c and d apart), a random draw grey and dashed."""
RANDOM_COLORS = {"a_shared_pool_others": CHANCE, "a_shared_pool_with_own": "#d1d5db"}


def _figure(width: float, height: float, layout: str | None = None) -> Figure:
    from bureau.figures import new_figure

    # No pyplot: no global state, works headless; renders as PNG in any notebook.
    return new_figure(width, height, layout)


MARKERS = {"a_shared_pool_with_own": "v", "a_shared_pool_others": "o", "b_bureau_closed": "s",
           "c_bureau_published": "o", "d_bureau_abstractions": "D"}
NUDGE = {"a_shared_pool_with_own": (8, -12), "a_shared_pool_others": (8, 4),
         "b_bureau_closed": (8, 6), "c_bureau_published": (-8, 10),
         "d_bureau_abstractions": (-8, -16)}


def tradeoff(summary: pd.DataFrame, name: str = "MAGPIE") -> Figure:
    """Private leak rate against shareable recall, one point per policy (``summarize``)."""
    fig = _figure(6.4, 4.6)
    ax = fig.add_subplot()
    rows = summary.set_index("policy")
    for policy in POLICIES:
        r = rows.loc[policy]
        x, y = 100 * r["shareable_recall"], 100 * r["private_leak_rate_pairs"]
        small = policy == "d_bureau_abstractions"  # drawn over c, which it nearly equals
        ax.scatter(x, y, s=45 if small else 110, marker=MARKERS[policy], color=COLORS[policy],
                   label=POLICY_LABELS[policy], zorder=4 if small else 3)
        ax.scatter(x, 100 * r["private_leak_rate_items"], s=60, facecolors="none",
                   edgecolors=COLORS[policy], zorder=3)
        dx, dy = NUDGE[policy]
        ax.annotate(POLICY_LABELS[policy].split(":")[0], (x, y), xytext=(dx, dy),
                    textcoords="offset points", ha="left" if dx > 0 else "right",
                    fontsize=9, color=COLORS[policy], fontweight="bold")
    ax.set_xlabel("shareable recall: other agents' shareable items retrieved (% of pairs)")
    ax.set_ylabel("private leak rate (% of pairs; hollow = % of items)")
    top = max(5.0, 100 * float(summary[["private_leak_rate_pairs",
                                         "private_leak_rate_items"]].max().max()) * 1.15)
    ax.set_ylim(-top * 0.06, top)
    ax.set_xlim(-4, max(5.0, 100 * float(summary["shareable_recall"].max()) * 1.2))
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    a = rows.loc[SHARED_POOL]
    c = rows.loc["c_bureau_published"]
    bureau_leak = rows.loc[list(BUREAU_POLICIES), "private_leak_rate_pairs"].max()
    ax.set_title(
        f"{name}: the shared pool leaks {100 * a['private_leak_rate_pairs']:.0f}% of private "
        f"pairs; the bureau {100 * bureau_leak:.0f}%\nwhile publishing keeps "
        f"{100 * c['shareable_recall']:.0f}% shareable recall (pool: "
        f"{100 * a['shareable_recall']:.0f}%)",
        fontsize=10,
    )
    return fig


def roc(result: LabResult, role_query: bool = True) -> Figure:
    """ROC curve of raw relevance (cosine to the task query) as a shareable-vs-private
    classifier, with the ``role: task`` query's curve beside it (``role_query=False``: the task
    query's alone, as lesson 05 reads it)."""
    pairs = result.policy(SHARED_POOL)
    others = pairs[pairs["requester"] != pairs["owner"]]
    fig = _figure(5.2, 5.0)
    ax = fig.add_subplot()
    auc = relevance_auroc(others["score_task"], others["label"])
    queries = (("score_task", "task", "-"), ("score_role_task", "role: task", ":"))
    for column, label, style in queries if role_query else queries[:1]:
        points = roc_points(others[column], others["label"])
        ax.plot(points["fpr"], points["tpr"], style, color=COLORS[SHARED_POOL],
                label=f"cosine to the {label} query (AUROC "
                      f"{relevance_auroc(others[column], others['label']):.3f})")
    ax.plot([0, 1], [0, 1], "--", color=CHANCE, label="no information (0.5)")
    ax.set_xlabel("false positive rate: private pairs ranked as shareable")
    ax.set_ylabel("true positive rate: shareable pairs ranked as shareable")
    ax.set_aspect("equal")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(
        f"{result.lab.name}: relevance {separation(auc)}:\nAUROC {auc:.3f} "
        f"(task query; MaaS paper on MAGPIE {PAPER['relevance_auroc']:.3f}) over "
        f"{len(others):,} pairs",
        fontsize=10,
    )
    return fig


def domains(domain_table: pd.DataFrame, top: int = 25, name: str = "MAGPIE") -> Figure:
    """Per domain: private leak rate (left) and shareable recall (right) of every policy.

    Shows the ``top`` domains with the most private pairs, sorted by the shared pool's leak rate.
    """
    size = domain_table[domain_table["policy"] == SHARED_POOL].set_index("domain")[
        "private_pairs"
    ]
    n_dom = len(size)
    shown = size.sort_values(ascending=False).head(top).index
    leak = domain_table.pivot(index="domain", columns="policy", values="leak_rate_pairs")
    leak = leak.loc[shown].sort_values(SHARED_POOL)
    recall = domain_table.pivot(index="domain", columns="policy", values="shareable_recall")
    recall = recall.loc[leak.index]
    fig = _figure(9.0, 0.26 * len(leak) + 2.2, layout="constrained")
    left, right = fig.subplots(1, 2, sharey=True)
    ys = list(range(len(leak)))
    left.barh(ys, 100 * leak[SHARED_POOL].fillna(0), height=0.7,
              color=COLORS[SHARED_POOL], label=POLICY_LABELS[SHARED_POOL])
    rnd = domain_table[domain_table["policy"] == SHARED_POOL].set_index("domain")
    left.scatter(100 * rnd.loc[leak.index, "random_leak_rate_pairs"].fillna(0), ys, s=40,
                 marker="|", color=CHANCE, label="random draw, same pool", zorder=4)
    for policy in BUREAU_POLICIES:
        left.scatter(100 * leak[policy].fillna(0), ys, s=14, marker=MARKERS[policy],
                     color=COLORS[policy], label=POLICY_LABELS[policy], zorder=3)
    left.set_yticks(ys, leak.index, fontsize=7)
    left.set_xlabel("private leak rate (% of pairs)")
    left.set_ylabel(f"{name} domain")
    left.grid(axis="x", alpha=0.3)
    height = 0.8 / 3
    for n, policy in enumerate((SHARED_POOL, "c_bureau_published", "d_bureau_abstractions")):
        right.barh([y + (n - 1) * height for y in ys], 100 * recall[policy].fillna(0),
                   height=height, color=COLORS[policy], label=POLICY_LABELS[policy])
    right.set_xlabel("shareable recall (% of pairs)")
    right.grid(axis="x", alpha=0.3)
    handles, labels = left.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=4, fontsize=7)
    leaky = int((domain_table[domain_table["policy"] == SHARED_POOL]["leak_rate_pairs"]
                 > 0).sum())
    bureau = domain_table[domain_table["policy"].isin(BUREAU_POLICIES)]
    bureau_leaky = bureau.loc[bureau["leak_rate_pairs"] > 0, "domain"].nunique()
    which = f"the {len(leak)} largest of {n_dom} domains" if len(leak) < n_dom else "all domains"
    closed = float(recall["b_bureau_closed"].fillna(0).mean()) if "b_bureau_closed" in recall \
        else 0.0
    published = float(recall["c_bureau_published"].fillna(0).mean())
    fig.suptitle(
        f"The shared pool leaks in {leaky} of {n_dom} domains, the bureau in {bureau_leaky};"
        f" publishing {change(closed, published)} recall\n({which}, by private pairs)",
        fontsize=10,
    )
    return fig


def baseline(table: pd.DataFrame, name: str, k: int, versus: str | None = None,
             with_own: bool = False) -> Figure:
    """Leak (left) and shareable recall (right) of both shared pools against depth, each beside
    its random expectation (dashed), and the bureau policies at their budget.

    ``table`` is summary.csv's rows of one dataset. The bureau reads ``k`` per scope from two
    scopes, so its points stand at ``2k`` cards in all. ``versus``: how the pool's leak compares
    with the random draw's, from a run's bootstrap interval
    (:func:`~bureau.labs.leakage.claims.against_chance`); without it, the two figures are
    compared with :func:`.directions.compare`'s tolerance. ``with_own``: the pool that also
    holds the requester's own items too (the report's; a lesson shows the headline pool only).
    The x axis ticks at the depths measured, whole cards.
    """
    fig = _figure(10.0, 4.2, layout="constrained")
    left, right = fig.subplots(1, 2)
    for ax, col, rnd, what in ((left, "pair_leak", "random_pair_leak", "private leak rate "
                                "(% of pairs)"),
                               (right, "shareable_recall", "random_shareable_recall",
                                "shareable recall (% of pairs)")):
        for policy in (SHARED_POOL, SHARED_POOL_WITH_OWN) if with_own else (SHARED_POOL,):
            rows = table[table["policy"] == policy].sort_values("k")
            ax.plot(rows["k"], 100 * rows[col], marker=MARKERS[policy], color=COLORS[policy],
                    label=POLICY_LABELS[policy])
            ax.plot(rows["k"], 100 * rows[rnd], "--", color=RANDOM_COLORS[policy],
                    label=f"random draw, {POLICY_LABELS[policy].split(':')[1].strip()}")
        for size, policy in zip((110, 70, 35), BUREAU_POLICIES, strict=True):  # drawn over
            rows = table[table["policy"] == policy]                          # one another
            ax.scatter(2 * rows["k"], 100 * rows[col], marker=MARKERS[policy], s=size,
                       color=COLORS[policy], label=f"{POLICY_LABELS[policy]} (k per scope)",
                       zorder=4)
        ax.set_xlabel("cards retrieved in all (k; the bureau: k per scope × two scopes)")
        pool_k = table[table["policy"] == SHARED_POOL]["k"].dropna()
        bureau_k = table[table["policy"].isin(BUREAU_POLICIES)]["k"].dropna()
        depths = sorted({int(x) for x in pool_k} | {2 * int(x) for x in bureau_k})
        if len(depths) <= 12:
            ax.set_xticks(depths)
        else:
            integer_ticks(ax.xaxis)
        ax.set_ylabel(what)
        ax.grid(alpha=0.3)
    handles, labels = left.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=4, fontsize=7)
    at = table[(table["policy"] == SHARED_POOL) & (table["k"] == k)].iloc[0]
    bureau = table[table["policy"].isin(BUREAU_POLICIES)]["pair_leak"].max()
    fig.suptitle(
        f"{name}: relevance as policy leaks {100 * at['pair_leak']:.0f}% of private pairs at "
        f"top-{k}, {versus or compare(at['pair_leak'], at['random_pair_leak'])} a random draw "
        f"({100 * at['random_pair_leak']:.0f}%); the bureau {100 * bureau:.0f}%",
        fontsize=10,
    )
    return fig


def mediation(summary: pd.DataFrame, mediated: dict, name: str = "MAGPIE") -> Figure:
    """Policy e beside a-d: private pair leak and shareable (minimum-info) recall per policy,
    and what mediation adds: the share of private pairs whose safe abstraction flowed."""
    import numpy as np

    fig = _figure(8.2, 4.4, layout="constrained")
    ax = fig.add_subplot()
    rows = summary.set_index("policy")
    names = [*POLICIES, "e_bureau_mediated"]
    leak = [100 * rows.loc[p, "private_leak_rate_pairs"] for p in POLICIES]
    leak.append(100 * mediated["pair_leak"])
    recall = [100 * rows.loc[p, "shareable_recall"] for p in POLICIES]
    recall.append(100 * mediated["min_info_recall"])
    x = np.arange(len(names))
    ax.bar(x - 0.2, leak, 0.4, color=LEAKED, label="private pairs leaked (raw)")
    ax.bar(x + 0.2, recall, 0.4, color=SHARED, label="shareable pairs delivered")
    ax.bar(len(names) - 1 + 0.6, 100 * mediated["abstract_coverage"], 0.4, color=ABSTRACTED,
           label="private pairs with an abstraction: abstraction delivered")
    ax.set_xticks(x, [POLICY_LABELS.get(p, "e: bureau + mediation") for p in names],
                  rotation=20, ha="right")
    ax.set_ylabel("% of (requester, other agent's item) pairs")
    ax.set_ylim(0, 118)  # room for the legend above the bars
    ax.legend(loc="upper left", fontsize=8, ncols=2)
    ax.set_title(
        f"{name}: mediation reveals no private item raw "
        f"({mediated['raw_private_reveals'] + mediated['probe']['raw_private_reveals']} of "
        f"{mediated['decisions'] + mediated['probe']['decisions']:,} decisions) and delivers "
        f"{100 * mediated['abstract_coverage']:.1f}% of the safe abstractions", fontsize=10)
    return fig


def content_mediator(measured: dict, name: str = "MAGPIE") -> Figure:
    """What could fail beside what could not: the content mediator (labels hidden) and e under
    label noise against the random line, with e's own point (the wiring check) for reference.

    Axes are the mediator's decisions scored against the labels: x = shareable cards revealed,
    y = private cards revealed. A mediator that reveals each card with probability p sits on the
    diagonal (leak = recall = p); a useful one sits below it, towards the bottom right.
    """
    import numpy as np

    fig = _figure(6.4, 4.6, layout="constrained")
    ax = fig.add_subplot()
    line = np.linspace(0, 100, 2)
    ax.plot(line, line, color=CHANCE, linestyle="--", label="random mediator (leak = recall)")
    cm = measured.get("content_mediator") or {}
    if cm:
        lab = cm["labels"]
        ax.scatter(100 * lab["recall"], 100 * lab["leak"], s=90, marker="s",
                   color=COLORS["e_bureau_mediated"], label="e: the labels (wiring check)")
        c = cm["content"]
        ax.scatter(100 * c["recall"], 100 * c["leak"], s=110, color="#d35400",
                   label="content mediator, labels hidden")
    for rate, r in (measured.get("label_noise") or {}).get("rates", {}).items():
        ax.scatter(100 * r["recall"], 100 * r["leak"], s=50, marker="^", color="#a569bd")
        ax.annotate(f"e, {rate:.0%} labels wrong", (100 * r["recall"], 100 * r["leak"]),
                    textcoords="offset points", xytext=(-10, 6), ha="right", fontsize=8)
    ax.set(xlim=(-3, 103), ylim=(-3, 103), xlabel="shareable cards revealed (%)",
           ylabel="private cards revealed raw (%)")
    if cm:
        c, p = cm["content"], cm["random"]["leak"]
        verdict = "below" if c["leak"] < c["recall"] else "not below"
        ax.set_title(f"{name}: reading content, the mediator sits {verdict} the random line\n"
                     f"(leak {100 * c['leak']:.0f} % at recall {100 * c['recall']:.0f} %; "
                     f"random at the same release rate: {100 * p:.0f} %)", fontsize=10)
    else:
        ax.set_title(f"{name}: too few decisions for a content mediator", fontsize=10)
    ax.legend(loc="upper left", fontsize=8)
    return fig
