"""Lesson 05 (measuring leakage): find the data, show a case, check the exercise, and every
other name the lesson uses.

The lesson imports only from here, so the lab's modules (MAGPIE conversion, the runner, the
report, the plots) can be split or renamed without touching the notebook: the names in
``__all__`` are the lesson's contract with the package.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from bureau.errors import ScenarioError
from bureau.leakage import plots
from bureau.leakage.agentsocialbench import default_agentsocialbench_path
from bureau.leakage.analysis import domain_table, relevance, summarize, summary_table
from bureau.leakage.convert import (
    load_lab,
    query_text,
    role_names,
    seed_key,
    to_bureau_scenario,
)
from bureau.leakage.labset import LabSet
from bureau.leakage.magpie import MagpieDataset, default_magpie_path, load_magpie, subset
from bureau.leakage.measured import measured_summary
from bureau.leakage.mediated import mediated_summary
from bureau.leakage.metrics import private_leak_rate_pairs, shareable_recall
from bureau.leakage.policies import SHARED_POOL
from bureau.leakage.result import LabResult
from bureau.leakage.runner import run_lab
from bureau.resources import shipped_path

MINI = shipped_path("data", "magpie_mini")
SOCIAL_MINI = shipped_path("data", "agentsocialbench_mini")
LEAK_TARGET = 0.05
"""The exercise: push the shared pool's private leak rate (pairs) below 5% with a threshold."""

__all__ = [
    "LEAK_TARGET",
    "MINI",
    "SOCIAL_MINI",
    "at_threshold",
    "check_threshold",
    "domain_table",
    "load_dataset",
    "load_second_benchmark",
    "measured_summary",
    "mediated_summary",
    "plots",
    "query_text",
    "relevance",
    "run_lab",
    "scenario_cards",
    "subset",
    "summarize",
    "summary_table",
    "threshold_sweep",
]


def load_dataset() -> tuple[MagpieDataset, str]:
    """MAGPIE if it can be found, else the bundled synthetic mini set; plus a note saying which."""
    try:
        data = load_magpie(default_magpie_path())
        return data, f"Using MAGPIE: {len(data)} scenarios, {len(data.items):,} items."
    except ScenarioError as exc:
        data = load_magpie(MINI)
        return data, (
            f"NOTE: MAGPIE was not found ({exc.message}) — falling back to data/magpie_mini, "
            f"{len(data)} hand-written scenarios in MAGPIE's format. The figures below then "
            "describe that toy set, not the benchmark."
        )


def load_second_benchmark(limit: int | None = None) -> tuple[LabSet, str]:
    """AgentSocialBench's first ``limit`` scenarios if it can be found, else the bundled
    synthetic sample in its format; plus a note saying which (offline either way)."""
    try:
        lab = load_lab(default_agentsocialbench_path(), limit)
        return lab, f"Using AgentSocialBench: {len(lab)} scenarios, {len(lab.items):,} items."
    except ScenarioError as exc:
        lab = load_lab(SOCIAL_MINI, limit)
        return lab, (
            f"NOTE: AgentSocialBench was not found ({exc.message}) — falling back to "
            f"data/agentsocialbench_mini, {len(lab)} hand-written scenarios in its format."
        )


def scenario_cards(scenario: Any) -> pd.DataFrame:
    """The cards a MAGPIE scenario becomes: one row per item, with its role and label."""
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
                "card": text if len(text) <= 90 else text[:89] + "…",
                "safe abstraction": item.abstraction or "",
            }
        )
    return pd.DataFrame(rows)


def at_threshold(result: LabResult, threshold: float, policy: str = SHARED_POOL) -> dict:
    """Leak rate and recall of ``policy`` if only top-k cards with cosine >= threshold count."""
    pairs = result.policy(policy)
    strict = pairs.assign(retrieved=pairs["retrieved"] & (pairs["score"] >= threshold))
    return {
        "threshold": threshold,
        "private_leak_rate_pairs": private_leak_rate_pairs(strict),
        "shareable_recall": shareable_recall(strict),
    }


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
    base = at_threshold(result, -1.0)
    got = at_threshold(result, float(threshold))
    leak, recall = got["private_leak_rate_pairs"], got["shareable_recall"]
    if leak >= LEAK_TARGET:
        return False, (
            f"At {threshold:.2f} the shared pool still leaks {leak:.1%} of private pairs "
            f"(target: below {LEAK_TARGET:.0%}). Try a higher threshold."
        )
    return True, (
        f"At {threshold:.2f} the pool leaks {leak:.1%} of private pairs — but shareable recall "
        f"fell from {base['shareable_recall']:.1%} to {recall:.1%}. A relevance threshold cuts "
        "private and shareable items alike: relevance is not authorisation."
    )
