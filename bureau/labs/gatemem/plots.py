"""The GateMem lab's figures, each drawn from ``summary.json`` alone, titles computed from it.

Every function takes the summary's dict (:func:`bureau.labs.gatemem.report.summary`), so a
figure reproduces from the JSON a run wrote (``tests/test_gatemem.py`` redraws them from the
file). A title states the finding in words chosen by comparing the values it shows, never typed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from bureau.figures import (
    CHANCE,
    LEAKED,
    PRIVATE,
    PROTECTED,
    PROTECTED_SHADES,
    PUBLISHED,
    SHARED,
    CourseFigure,
    integer_ticks,
    new_figure,
)

COLORS = {"bureau": PROTECTED, "shared_pool": LEAKED, "owner_only": PROTECTED_SHADES[2],
          "random": CHANCE}
"""The course palette (:mod:`bureau.figures`): the bureau green (owner-only, a bureau too, a
lighter green), the shared pool red, the random draw grey."""
BAND = PUBLISHED
"""The leaderboard's range and rows: figures others published, never ranked with this run's."""
LOSS_COLORS = {"withheld": PROTECTED_SHADES, "not ranked": (SHARED,), "deleted": ("#7c3aed",),
               "never said in one turn": (PRIVATE,)}
"""Why a utility checkpoint failed: withheld by a rule green (the withhold colour, a shade per
rule), allowed but not in the top k blue (meant to cross), deleted violet, never said grey."""


def pct(x: float) -> str:
    return "n/a" if x is None or x != x else f"{100 * x:.0f} %"


def compare(a: float, b: float, more: str = "more", fewer: str = "fewer",
            same: str = "as many") -> str:
    """A comparison word for ``a`` against ``b`` (equal to the nearest percent: ``same``)."""
    if a != a or b != b or round(100 * a) == round(100 * b):
        return same
    return more if a > b else fewer


def _cell(summary: Mapping[str, Any], domain: str, policy: str) -> Mapping[str, Any]:
    for row in summary["figures"]:
        if row["domain"] == domain and row["policy"] == policy:
            return row
    return {}


def _domains(summary: Mapping[str, Any]) -> list[str]:
    return [d for d in summary["domains"] if any(r["domain"] == d for r in summary["figures"])]


def uaf_title(summary: Mapping[str, Any]) -> str:
    b, p = _cell(summary, "all", "bureau"), _cell(summary, "all", "shared_pool")
    return (f"The bureau hands over {compare(b['A'], p['A'])} access violations than the shared "
            f"pool ({pct(b['A'])} against {pct(p['A'])}), {compare(b['F'], p['F'])} deleted "
            f"values ({pct(b['F'])} against {pct(p['F'])}), and "
            f"{compare(b['U'], p['U'], 'more', 'less', 'as much')} utility ({pct(b['U'])} "
            f"against {pct(p['U'])})")


def uaf_figure(summary: Mapping[str, Any]) -> CourseFigure:
    """U, A and F per domain for each policy, with intervals, beside the leaderboard's range
    (its lowest and highest row of that domain, LLM answers judged)."""
    domains = _domains(summary)
    policies = summary["policies"]
    board = {r["domain"]: r for r in summary.get("leaderboard_domain", [])}
    fig = new_figure(12.5, 4.6)
    axes = fig.subplots(1, 3, sharey=True)
    width = 0.8 / len(policies)
    x = np.arange(len(domains))
    for ax, fig_name, key in zip(axes, ("U: utility met", "A: access violations",
                                        "F: forgetting failures"), ("U", "A", "F"), strict=True):
        for i, d in enumerate(domains):
            r = board.get(d)
            if r is not None:
                lo, hi = r[f"{key.lower()}_min"] / 100, r[f"{key.lower()}_max"] / 100
                ax.add_patch(_band(i - 0.45, lo, 0.9, hi - lo))
        for j, pol in enumerate(policies):
            vals = [_cell(summary, d, pol).get(key, np.nan) for d in domains]
            los = [_cell(summary, d, pol).get(f"{key}_lo", np.nan) for d in domains]
            his = [_cell(summary, d, pol).get(f"{key}_hi", np.nan) for d in domains]
            err = np.array([[max(0.0, v - lo) if v == v and lo == lo else 0.0 for v, lo in
                             zip(vals, los, strict=True)],
                            [max(0.0, hi - v) if v == v and hi == hi else 0.0 for v, hi in
                             zip(vals, his, strict=True)]])
            ax.bar(x - 0.4 + width * (j + 0.5), vals, width, yerr=err, capsize=2,
                   color=COLORS.get(pol, "#666"), label=summary["policy_labels"].get(pol, pol))
        # Each bar is a share of a handful of checkpoints: the count under each domain says how
        # many (a share of one is 0 or 1 whatever the truth).
        ax.set_xticks(x, [f"{d}\nn={_cell(summary, d, policies[0]).get(f'n_{key}', '?')}"
                          for d in domains])
        ax.set_title(fig_name, fontsize=10)
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("domain (n: its checkpoints of this kind)")
    axes[0].set_ylabel("share of checkpoints (evidence handed over)")
    handles, labels = axes[0].get_legend_handles_labels()
    handles.append(_band(0, 0, 0, 0))
    labels.append("leaderboard range (LLM answers, judged)")
    fig.legend(handles, labels, loc="lower center", ncol=5, fontsize=8,
               bbox_to_anchor=(0.5, -0.08))
    fig.suptitle(_wrap(uaf_title(summary)), fontsize=10)
    return fig


def _band(x: float, y: float, w: float, h: float) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), w, h, color=BAND, alpha=0.35, linewidth=0)


def headline_title(summary: Mapping[str, Any]) -> str:
    h = next((r for r in summary["headline"] if r["domain"] == "all"), None)
    if h is None:
        return "Utility against access violations"
    kept, avoided = h["utility_kept"], h["violations_avoided"]
    head = (f"Utility kept against violations avoided: the bureau keeps {pct(kept)} of the "
            f"shared pool's utility and avoids {pct(avoided)} of its access violations")
    cell = _cell(summary, "all", "bureau")
    if pct(h["utility_kept_lo"]) == pct(h["utility_kept_hi"]) and \
            pct(h["violations_avoided_lo"]) == pct(h["violations_avoided_hi"]):
        # Resampling episodes within a domain of one episode gives that episode back: no interval.
        return (f"{head} ({cell.get('episodes', '?')} episodes, one per domain: too few for an "
                "interval)")
    return (f"{head} (95 % intervals {pct(h['utility_kept_lo'])}–{pct(h['utility_kept_hi'])} "
            f"and {pct(h['violations_avoided_lo'])}–{pct(h['violations_avoided_hi'])})")


def headline_figure(summary: Mapping[str, Any]) -> CourseFigure:
    """U against A per domain and policy (with intervals), the leaderboard's rows behind."""
    fig = new_figure(10.0, 5.6)
    ax = fig.subplots()
    board = summary.get("leaderboard_rows", [])
    if board:
        ax.scatter([r["a"] / 100 for r in board], [r["u"] / 100 for r in board], s=10,
                   color=BAND, alpha=0.6, label="leaderboard rows (LLM answers, judged)",
                   zorder=1)
    markers = {"medical": "o", "office": "s", "education": "^", "household": "D", "all": "*"}
    for pol in summary["policies"]:
        for d in [*_domains(summary), "all"]:
            c = _cell(summary, d, pol)
            if not c:
                continue
            ax.errorbar(c["A"], c["U"], xerr=[[max(0, c["A"] - c["A_lo"])],
                                              [max(0, c["A_hi"] - c["A"])]],
                        yerr=[[max(0, c["U"] - c["U_lo"])], [max(0, c["U_hi"] - c["U"])]],
                        fmt=markers.get(d, "o"), color=COLORS.get(pol, "#666"),
                        markersize=11 if d == "all" else 6, capsize=2, zorder=3,
                        label=summary["policy_labels"].get(pol, pol) if d == "all" else None)
    ax.set_xlabel("A: share of privacy checkpoints whose evidence holds a leak target")
    ax.set_ylabel("U: share of utility checkpoints whose evidence holds every include")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), title_fontsize=8,
              title="circle medical, square office,\ntriangle education, diamond household,\n"
                    "star all domains")
    ax.set_title(_wrap(headline_title(summary), 80), fontsize=10)
    return fig


def losses_title(summary: Mapping[str, Any]) -> str:
    rows = summary.get("losses", [])
    total = sum(r["checkpoints"] for r in rows)
    failed_of = _cell(summary, "all", "bureau").get("n_U", 0)
    if not total:
        return f"The bureau's evidence met all {failed_of} utility checkpoints"
    by: dict[str, int] = {}
    for r in rows:
        label = r["loss"] + (f": {r['loss_detail']}" if r["loss_detail"] else "")
        by[label] = by.get(label, 0) + r["checkpoints"]
    top, n = max(by.items(), key=lambda kv: kv[1])
    return (f"Where the bureau loses utility: {total} of {failed_of} utility checkpoints miss an "
            f"include; the largest cause, {top}, accounts for {n}")


def losses_figure(summary: Mapping[str, Any]) -> CourseFigure:
    """The bureau's failed utility checkpoints per domain, stacked by why (scoring's causes)."""
    rows = summary.get("losses", [])
    domains = _domains(summary)
    labels = sorted({r["loss"] + (f": {r['loss_detail']}" if r["loss_detail"] else "")
                     for r in rows})
    fig = new_figure(9.5, 4.2)
    ax = fig.subplots()
    left = np.zeros(len(domains))
    cmap = _loss_colours(labels)
    for i, label in enumerate(labels):
        vals = np.array([sum(r["checkpoints"] for r in rows if r["domain"] == d and (
            r["loss"] + (f": {r['loss_detail']}" if r["loss_detail"] else "")) == label)
            for d in domains], dtype=float)
        ax.barh(domains, vals, left=left, color=cmap[i], label=label)
        left += vals
    ax.set_xlabel("failed utility checkpoints (the bureau's evidence lacked an include)")
    integer_ticks(ax.xaxis)
    ax.set_ylabel("domain")
    if labels:
        ax.legend(fontsize=8, loc="best")
    ax.set_title(_wrap(losses_title(summary), 90), fontsize=10)
    return fig


def _loss_colours(labels: Sequence[str]) -> list[str]:
    """One colour per loss label (``"withheld: <rule>"`` and the rest), from :data:`LOSS_COLORS`:
    the labels of one cause take its shades in turn."""
    used: dict[str, int] = {}
    out = []
    for label in labels:
        cause = label.split(":")[0]
        shades = LOSS_COLORS.get(cause, (CHANCE,))
        out.append(shades[used.get(cause, 0) % len(shades)])
        used[cause] = used.get(cause, 0) + 1
    return out


def _wrap(text: str, width: int = 120) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width))


FIGURES = {"uaf_by_domain": uaf_figure, "utility_vs_violations": headline_figure,
           "bureau_losses": losses_figure}
"""File stem -> drawing function (each reads ``summary.json``'s dict)."""

__all__ = ["FIGURES", "compare", "headline_figure", "headline_title", "losses_figure",
           "losses_title", "pct", "uaf_figure", "uaf_title"]
