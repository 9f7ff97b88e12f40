"""The peers bench's table, CSV/JSON and plot, with each peer's version and exact filter."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from .runner import PeersResult

FAIRNESS = ("mem0 and LangGraph isolate when the caller picks the right filter or namespace; "
            "the identity is a string the caller passes, so a caller (or a model filling a "
            "tool's arguments) that passes another role's gets that role's cards (the spoof "
            "column). The bureau's claim is not a better filter: an agent holds a handle and "
            "never holds that choice.")


def _pct(v: float) -> str:
    return "n/a" if v != v else f"{100 * v:.1f} %"


def format_table(result: PeersResult) -> str:
    """A Markdown table: one line per case set and configuration, random lines in brackets."""
    return format_records(result.records(), result.k, result.versions)


def format_records(records: list[dict[str, Any]], k: int, versions: dict[str, str]) -> str:
    """:func:`format_table` of rows read back from ``peers.json``."""
    head = ("| case set (cards stored) | configuration | question leak (random) | pair leak (random) | "
            "probe leak (random) | own recall | board recall | spoof | p50 ms (× bureau) | "
            "p95 ms (× bureau) |")
    lines = [head, "|" + "---|" * 10]
    for r in records:
        lines.append(
            f"| {r['case_set']} ({r['cards']:,}) | {r['config']} | {_pct(r['question_leak'])} "
            f"({_pct(r['question_leak_random'])}) | {_pct(r['pair_leak'])} "
            f"({_pct(r['pair_leak_random'])}) | {_pct(r['probe_leak'])} "
            f"({_pct(r['probe_leak_random'])}) | {_pct(r['own_recall'])} | "
            f"{_pct(r['board_recall'])} | {r['spoof_hits']} of {r['spoof_n']} | "
            f"{r['p50_ms']:.2f} ({r['p50_ratio']:.2f}) | {r['p95_ms']:.2f} "
            f"({r['p95_ratio']:.2f}) |")
    filters = sorted({(r["config"], r["version"], r["filter"]) for r in records})
    lines += ["", f"k = {k}; versions: "
              + ", ".join(f"{name} {v}" for name, v in versions.items())]
    lines += [f"- {c} ({v}): `{f}`" for c, v, f in filters]
    lines += ["", FAIRNESS]
    return "\n".join(lines)


def write_report(result: PeersResult, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    records = result.records()
    paths = [out / "peers.csv", out / "peers.json", out / "peers.png"]
    with paths[0].open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(records[0]))
        w.writeheader()
        w.writerows(records)
    paths[1].write_text(json.dumps({
        "k": result.k, "versions": result.versions, "vector_misses": result.vector_misses,
        "seconds": round(result.seconds, 1), "fairness": FAIRNESS, "rows": records}, indent=2))
    plot(records, paths[2])
    return paths


def plot(records: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    configs = list(dict.fromkeys(r["config"] for r in records))
    sets = list(dict.fromkeys(r["case_set"] for r in records))
    by = {(r["case_set"], r["config"]): r for r in records}
    fig, axes = plt.subplots(1, 3, figsize=(16, 5.5), sharey=True)
    width = 0.8 / len(configs)
    for ax, metric, title in zip(axes, ("probe_leak", "board_recall", "spoof"),
                                 ("another role's private card returned\n(probe with its text)",
                                  "board card returned\n(probe with its text)",
                                  "identity field set to the card's owner\n(spoof probe)"),
                                 strict=True):
        for i, c in enumerate(configs):
            vals = [100 * by[(s, c)][metric] if (s, c) in by else 0 for s in sets]
            ax.bar([x + i * width for x in range(len(sets))], vals, width, label=c)
        if metric == "probe_leak":
            rand = [100 * max(by[(s, c)]["probe_leak_random"] for c in configs if (s, c) in by)
                    for s in sets]
            ax.plot([x + 0.4 - width / 2 for x in range(len(sets))], rand, "k_", ms=30,
                    label="random draw (highest)")
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(sets))], sets, rotation=15)
        ax.set_title(title)
        ax.set_xlabel("case set")
    axes[0].set_ylabel("% of probes")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=9)
    fig.suptitle("Peers isolate only with the right filter, and hand over any role's cards to "
                 "a caller that names it; the bureau's handle names no one")
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


__all__ = ["FAIRNESS", "format_records", "format_table", "plot", "write_report"]


write_outputs = write_report
"""The labs' common name for writing a result's files (:mod:`bureau.labs`)."""
