"""The lab's three plots (matplotlib, Agg-safe): each title states what the figure shows."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from bureau.leakage.metrics import pooled_auroc, roc_points
from bureau.leakage.paper import PAPER
from bureau.leakage.policies import POLICIES, POLICY_LABELS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from bureau.leakage.runner import LabResult

COLORS = {
    "a_shared_pool": "#c0392b",
    "b_bureau_closed": "#7f8c8d",
    "c_bureau_published": "#2471a3",
    "d_bureau_abstractions": "#1e8449",
}


def _figure(width: float, height: float, layout: str | None = None) -> Figure:
    from matplotlib.figure import Figure

    # No pyplot: no global state, works headless; notebooks display a Figure like any other.
    return Figure(figsize=(width, height), layout=layout)


MARKERS = {"a_shared_pool": "o", "b_bureau_closed": "s", "c_bureau_published": "o",
           "d_bureau_abstractions": "D"}
NUDGE = {"a_shared_pool": (8, -4), "b_bureau_closed": (8, 6), "c_bureau_published": (-8, 10),
         "d_bureau_abstractions": (-8, -16)}


def tradeoff(summary: pd.DataFrame) -> Figure:
    """Private leak rate against shareable recall, one point per policy."""
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
    a = rows.loc["a_shared_pool"]
    c = rows.loc["c_bureau_published"]
    bureau_leak = rows.loc[list(POLICIES)[1:], "private_leak_rate_pairs"].max()
    ax.set_title(
        f"Shared pool leaks {100 * a['private_leak_rate_pairs']:.0f}% of private pairs; the "
        f"bureau {100 * bureau_leak:.0f}%\nwhile publishing keeps "
        f"{100 * c['shareable_recall']:.0f}% shareable recall (pool: "
        f"{100 * a['shareable_recall']:.0f}%)",
        fontsize=10,
    )
    return fig


def roc(result: LabResult) -> Figure:
    """ROC curve of raw relevance (cosine) as a shareable-vs-private classifier."""
    pairs = result.policy("a_shared_pool")
    others = pairs[pairs["requester"] != pairs["owner"]]
    points = roc_points(others["score"], others["label"])
    auc = pooled_auroc(pairs)
    fig = _figure(5.2, 5.0)
    ax = fig.add_subplot()
    ax.plot(points["fpr"], points["tpr"], color=COLORS["a_shared_pool"],
            label=f"cosine relevance (AUROC {auc:.3f})")
    ax.plot([0, 1], [0, 1], "--", color="grey", label="no information (0.5)")
    ax.set_xlabel("false positive rate: private pairs ranked as shareable")
    ax.set_ylabel("true positive rate: shareable pairs ranked as shareable")
    ax.set_aspect("equal")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(
        f"Relevance barely tells shareable from private:\nAUROC {auc:.3f} "
        f"(paper {PAPER['relevance_auroc']:.3f}) over {len(others):,} pairs",
        fontsize=10,
    )
    return fig


def domains(domain_table: pd.DataFrame, top: int = 25) -> Figure:
    """Per domain: private leak rate (left) and shareable recall (right) of every policy.

    Shows the ``top`` domains with the most private pairs, sorted by the shared pool's leak rate.
    """
    size = domain_table[domain_table["policy"] == "a_shared_pool"].set_index("domain")[
        "private_pairs"
    ]
    n_dom = len(size)
    shown = size.sort_values(ascending=False).head(top).index
    leak = domain_table.pivot(index="domain", columns="policy", values="leak_rate_pairs")
    leak = leak.loc[shown].sort_values("a_shared_pool")
    recall = domain_table.pivot(index="domain", columns="policy", values="shareable_recall")
    recall = recall.loc[leak.index]
    fig = _figure(9.0, 0.26 * len(leak) + 2.2, layout="constrained")
    left, right = fig.subplots(1, 2, sharey=True)
    ys = list(range(len(leak)))
    left.barh(ys, 100 * leak["a_shared_pool"].fillna(0), height=0.7,
              color=COLORS["a_shared_pool"], label=POLICY_LABELS["a_shared_pool"])
    for policy in list(POLICIES)[1:]:
        left.scatter(100 * leak[policy].fillna(0), ys, s=14, marker=MARKERS[policy],
                     color=COLORS[policy], label=POLICY_LABELS[policy], zorder=3)
    left.set_yticks(ys, leak.index, fontsize=7)
    left.set_xlabel("private leak rate (% of pairs)")
    left.set_ylabel("MAGPIE domain")
    left.grid(axis="x", alpha=0.3)
    height = 0.8 / 3
    for n, policy in enumerate(("a_shared_pool", "c_bureau_published", "d_bureau_abstractions")):
        right.barh([y + (n - 1) * height for y in ys], 100 * recall[policy].fillna(0),
                   height=height, color=COLORS[policy], label=POLICY_LABELS[policy])
    right.set_xlabel("shareable recall (% of pairs)")
    right.grid(axis="x", alpha=0.3)
    handles, labels = left.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=4, fontsize=7)
    leaky = int((domain_table[domain_table["policy"] == "a_shared_pool"]["leak_rate_pairs"]
                 > 0).sum())
    bureau = domain_table[domain_table["policy"] != "a_shared_pool"]
    bureau_leaky = bureau.loc[bureau["leak_rate_pairs"] > 0, "domain"].nunique()
    which = f"the {len(leak)} largest of {n_dom} domains" if len(leak) < n_dom else "all domains"
    fig.suptitle(
        f"The shared pool leaks in {leaky} of {n_dom} domains, the bureau in {bureau_leaky};"
        f" publishing restores recall\n({which}, by private pairs)",
        fontsize=10,
    )
    return fig
