"""Lessons 05, 05b and 07 (measuring leakage): find the data, show a case, check the exercise,
say what the run shows (computed, :mod:`.claims`), and every other name the lessons use.

The lesson imports only from here, so the lab's modules (MAGPIE conversion, the runner, the
report, the plots) can be split or renamed without touching the notebook: the names in
``__all__`` are the lesson's contract with the package.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from bureau.errors import ScenarioError
from bureau.labs.leakage.claims import at_threshold, compare, headline, require, separation
from bureau.labs.leakage.datasets.agentsocialbench import default_agentsocialbench_path
from bureau.labs.leakage.datasets.convert import (
    load_lab,
    query_text,
    role_names,
    seed_key,
    to_bureau_scenario,
)
from bureau.labs.leakage.datasets.labset import LabSet
from bureau.labs.leakage.datasets.magpie import (
    MagpieDataset,
    default_magpie_path,
    load_magpie,
    subset,
)
from bureau.labs.leakage.datasets.slices import MAGPIE_SLICE, SOCIAL_SLICE, slice_figures
from bureau.labs.leakage.metrics.analysis import domain_table, relevance, summarize, summary_table
from bureau.labs.leakage.policies.measured import measured_summary
from bureau.labs.leakage.policies.mediated import mediated_summary
from bureau.labs.leakage.policies.policies import SHARED_POOL
from bureau.labs.leakage.report import plots
from bureau.labs.leakage.result import LabResult
from bureau.labs.leakage.runner import run_lab
from bureau.resources import shipped_path

MINI = shipped_path("data", "magpie_mini")
SOCIAL_MINI = shipped_path("data", "agentsocialbench_mini")
"""The hand-written test fixtures (invented text in the benchmarks' format): the lessons never
fall back on them any more; the tests use them, and plant them to see a lesson's claims fail."""
LEAK_TARGET = 0.05
"""The exercise: push the shared pool's private leak rate (pairs) below 5% with a threshold."""
STEP = 0.01
"""The exercise's thresholds have two decimals: the lowest one that works is unique."""

__all__ = [
    "LEAK_TARGET",
    "MAGPIE_SLICE",
    "MINI",
    "SHARED_POOL",
    "SOCIAL_MINI",
    "SOCIAL_SLICE",
    "at_threshold",
    "beside_reading",
    "beside_the_full_set",
    "c_versus_d",
    "check_threshold",
    "compare",
    "depth_reading",
    "headline",
    "domain_table",
    "load_dataset",
    "load_second_benchmark",
    "measured_summary",
    "mediated_summary",
    "plots",
    "query_text",
    "relevance",
    "require",
    "role_names",
    "run_lab",
    "scenario_cards",
    "separation",
    "slice_figures",
    "subset",
    "summarize",
    "summary_table",
    "threshold_sweep",
]


def _given(path: str | Path | None) -> Path | None:
    """A path the learner typed (``""`` and ``None``: not given; ``~`` expanded)."""
    return Path(path).expanduser() if path else None


def load_dataset(path: str | Path | None = None) -> tuple[MagpieDataset, str]:
    """MAGPIE from ``path`` (the TSV, or a folder holding it) if given, else from where
    :func:`~bureau.labs.leakage.datasets.magpie.default_magpie_path` looks (``$BUREAU_MAGPIE``, then
    ``../shared/datasets/magpie``); if it cannot be read there, the slice of real MAGPIE
    scenarios that ships in ``data/magpie_slice``. Plus a note saying which, and why."""
    try:
        data = load_magpie(_given(path) or default_magpie_path())
        return data, f"Using MAGPIE: {len(data)} scenarios, {len(data.items):,} items."
    except ScenarioError as exc:
        data = load_magpie(MAGPIE_SLICE)
        return data, (
            f"{_missing('MAGPIE', path, exc)}, so this runs on the slice that ships with Bureau: "
            f"{len(data)} real MAGPIE scenarios ({len(data.items):,} items) drawn at random from "
            "its 200 (data/magpie_slice, licence and citation beside it).")


def load_second_benchmark(limit: int | None = None,
                          path: str | Path | None = None) -> tuple[LabSet, str]:
    """AgentSocialBench's first ``limit`` scenarios from ``path`` (the folder holding
    ``scenarios/``) if given, else from ``$BUREAU_AGENTSOCIALBENCH`` or
    ``../shared/datasets/agentsocialbench``; if it cannot be read there, the slice of real
    scenarios that ships in ``data/agentsocialbench_slice``. Plus a note saying which."""
    try:
        lab = load_lab(_given(path) or default_agentsocialbench_path(), limit)
        return lab, f"Using AgentSocialBench: {len(lab)} scenarios, {len(lab.items):,} items."
    except ScenarioError as exc:
        lab = load_lab(SOCIAL_SLICE, limit)
        return lab, (
            f"{_missing('AgentSocialBench', path, exc)}, so this runs on the slice that ships "
            f"with Bureau: {len(lab)} of its real scenarios (data/agentsocialbench_slice, "
            "licence and citation beside it).")


def _missing(name: str, path: str | Path | None, exc: ScenarioError) -> str:
    """Why the full benchmark did not load: the learner's own path, named; else where the
    lesson looked, without this machine's paths (the note also shows on the course site)."""
    if _given(path) is not None:
        return f"{name} was not found at the path you gave ({exc.message})"
    return f"{name} itself is not on this machine (see \"Get the data\")"


FULL_FIGURES = (("pool_leak", "shared pool: private pairs leaked"),
                ("random_leak", "random draw of the same size"),
                ("auroc", "relevance AUROC (0.5 = a coin flip)"),
                ("threshold_leak", "shared pool cut at the bureau's threshold"),
                ("c_recall", "(c) shareable recall"),
                ("d_recall", "(d) shareable recall"))


def beside_the_full_set(figures: dict[str, Any], which: str = "magpie") -> pd.DataFrame:
    """This run's headline figures beside the shipped slice's and the full benchmark's, as
    ``tools/make_slices.py`` measured them when the slice was drawn (``figures.json``), so a
    learner on the slice sees how far its figures are from the benchmark's: read from the
    data, not typed."""
    stored = slice_figures(MAGPIE_SLICE if which == "magpie" else SOCIAL_SLICE)
    columns = {"this run": figures}
    for label, key in (("whole slice", "slice"), ("full benchmark", "full")):
        if key in stored:
            columns[f"{label} ({stored[key]['scenarios']} scenarios)"] = stored[key]
    rows = [{"figure": text, **{name: fig.get(key) for name, fig in columns.items()}}
            for key, text in FULL_FIGURES]
    return pd.DataFrame(rows).set_index("figure").astype(float).round(3)


def beside_reading(figures: dict[str, Any], which: str = "magpie",
                   scenarios: int | None = None) -> str:
    """:func:`beside_the_full_set` in a sentence computed from it: the row where this run strays
    farthest from the full benchmark, and how far the whole slice strays at most, so a learner
    knows which column to quote."""
    stored = slice_figures(MAGPIE_SLICE if which == "magpie" else SOCIAL_SLICE)
    full, whole = stored.get("full"), stored.get("slice")
    if not full:
        return "No full-benchmark figures ship with this slice: read this run's on their own."
    gaps = [(abs(figures[key] - full[key]), key, text) for key, text in FULL_FIGURES
            if figures.get(key) is not None and full.get(key) is not None]
    gap, key, text = max(gaps)
    run = f"this run ({scenarios} scenarios)" if scenarios else "this run"
    out = (f"Beside the full benchmark ({full['scenarios']} scenarios), {run} strays farthest on "
           f"\"{text}\": {figures[key]:.3f} against {full[key]:.3f} ({figures[key] - full[key]:+.3f})")
    if whole:
        most = max(abs(whole[k] - full[k]) for k, _ in FULL_FIGURES
                   if whole.get(k) is not None and full.get(k) is not None)
        out += f"; the whole slice ({whole['scenarios']} scenarios) strays at most {most:.3f}"
    return (out + ". A run on part of a benchmark is a sample of it: read its figures against "
            "each other (the pool beside its own random draw), and quote the full benchmark's.")


def depth_reading(table: pd.DataFrame) -> str:
    """The shared pool's leak beside the random draw's as k grows (``summary_table`` rows), in a
    sentence computed from them: where the two start, and the depth where they meet, if any."""
    from bureau.labs.leakage.report.directions import compare as _compare

    rows = table[table["policy"] == SHARED_POOL].sort_values("k")
    first = rows.iloc[0]
    start = (f"At top-{int(first['k'])} the shared pool leaks {first['pair_leak']:.1%} of private "
             f"pairs, a random draw of the same size {first['random_pair_leak']:.1%}")
    if _compare(first["pair_leak"], first["random_pair_leak"]) == "about as much as":
        return (f"{start}: about as much from the first depth, so the ranking holds nothing back "
                "at any k.")
    meet = next((r for _, r in rows.iloc[1:].iterrows()
                 if _compare(r["pair_leak"], r["random_pair_leak"]) == "about as much as"), None)
    if meet is not None:
        return (f"{start}; by top-{int(meet['k'])} the two meet ({meet['pair_leak']:.1%} and "
                f"{meet['random_pair_leak']:.1%}): once the top-k holds most of a scenario's "
                "items, the ranking holds nothing back.")
    last = rows.iloc[-1]
    return (f"{start}; at top-{int(last['k'])}, {last['pair_leak']:.1%} against "
            f"{last['random_pair_leak']:.1%}: the ranking delays the secrets, and the leak still "
            "climbs with k.")


def scenario_cards(scenario: Any) -> pd.DataFrame:
    """The cards a MAGPIE scenario becomes: one row per item, with its role and label, each
    card's text whole (the lesson reads what is private in it)."""
    roles = role_names(scenario)
    bureau_scenario = to_bureau_scenario(scenario)
    rows = []
    for n, item in enumerate(scenario.items):
        _, memory = bureau_scenario.seed(seed_key(n))
        text = memory.content
        rows.append(
            {
                "role": roles[item.agent],
                "kind": memory.kind,
                "topic": memory.topic,
                "card": text,
                "safe abstraction": item.abstraction or "",
            }
        )
    return pd.DataFrame(rows)


def c_versus_d(result: LabResult) -> str:
    """What publishing the safe abstractions (d) added to publishing the shareable items (c) in
    this run, as one line: how many items carry an abstraction at all, in how many (requester,
    private item) pairs d delivered one, each policy's shareable recall, and what d did to it
    (the verb from the two recalls: :func:`~bureau.labs.leakage.claims.change`)."""
    from bureau.labs.leakage.claims import change

    rows = summarize(result).set_index("policy")
    c, d = rows.loc["c_bureau_published"], rows.loc["d_bureau_abstractions"]
    hints = sum(1 for item in result.lab.items if item.abstraction)
    return (f"{hints} of {len(result.lab.items)} items carry a safe abstraction; d delivered one "
            f"in {int(d['abstraction_pairs_delivered'])} (requester, private item) pairs. "
            f"Shareable recall: c {c['shareable_recall']:.1%}, d {d['shareable_recall']:.1%}: "
            f"publishing the abstractions too {change(c['shareable_recall'], d['shareable_recall'])}"
            " shareable recall.")


def threshold_sweep(result: LabResult, thresholds: Any) -> pd.DataFrame:
    """:func:`at_threshold` for each threshold, one row each: the exercise reads it as a table."""
    return pd.DataFrame([at_threshold(result, float(t)) for t in thresholds])


def check_threshold(answer: Any) -> tuple[bool, str]:
    """The exercise check: ``answer = {"result": result, "threshold": my_threshold}``."""
    if not isinstance(answer, dict) or not isinstance(answer.get("result"), LabResult):
        return False, 'Pass {"result": result, "threshold": my_threshold}.'
    result, threshold = answer["result"], answer.get("threshold")
    if threshold is None:
        return False, "Replace `None` with a cosine threshold, e.g. my_threshold = 0.5."
    if not isinstance(threshold, int | float) or not -1.0 <= float(threshold) <= 1.0:
        return False, f"A cosine threshold is a number between -1 and 1, got {threshold!r}."
    if abs(threshold / STEP - round(threshold / STEP)) > 1e-6:
        return False, f"Give the threshold with two decimals (e.g. 0.42), got {threshold!r}."
    threshold = round(float(threshold), 2)
    base = at_threshold(result, -1.0)
    got = at_threshold(result, threshold)
    leak, recall = got["private_leak_rate_pairs"], got["shareable_recall"]
    if leak >= LEAK_TARGET:
        return False, (
            f"At {threshold:.2f} the shared pool still leaks {leak:.1%} of private pairs "
            f"(target: below {LEAK_TARGET:.0%}). Try a higher threshold."
        )
    lower = round(threshold - STEP, 2)
    if threshold > -1.0 and at_threshold(result, lower)["private_leak_rate_pairs"] < LEAK_TARGET:
        return False, (
            f"At {threshold:.2f} the pool leaks {leak:.1%}, below {LEAK_TARGET:.0%}; but so does "
            f"{lower:.2f}. The task asks for the lowest such threshold: every step up costs "
            "recall. Try lower (threshold_sweep shows many at once)."
        )
    return True, (
        f"{threshold:.2f} is the lowest threshold at which the pool leaks under "
        f"{LEAK_TARGET:.0%} ({leak:.1%} of private pairs), and even there shareable recall fell "
        f"from {base['shareable_recall']:.1%} to {recall:.1%}. A relevance threshold cuts "
        "private and shareable items alike: relevance is not authorisation."
    )
