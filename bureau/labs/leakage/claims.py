"""What a lesson may say about a leak-lab run: its headline figures, the direction words computed
from them, and the guards that stop a lesson whose prose the run contradicts (issue 48).

Why: a lesson typed "relevance barely tells shareable from private" above a run whose AUROC was
0.992, "leaks less than random" above a run that leaked more, "publishing the abstractions costs
recall" above two equal recalls. Its prose had been written against one data set and shown on
another. Here every direction is read off the run: a figure title or a printed sentence takes
its verb from :mod:`.report.directions`, and a sentence the lesson's markdown states
outright is listed as a :class:`Claim` that :func:`require` checks on the run in front of the
learner, failing the lesson loudly (naming the claim and the figures) where the data does not
show it. ``tests/test_lesson_claims.py`` runs the lessons on a planted contradiction (the old
hand-written mini sets) and sees them stop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from bureau.errors import BureauError
from bureau.labs.leakage.metrics.analysis import at_k, relevance, summarize, summary_table
from bureau.labs.leakage.metrics.metrics import (
    percentile_interval,
    private_leak_rate_pairs,
    resample_counts,
    scenario_totals,
    shareable_recall,
)
from bureau.labs.leakage.policies.policies import BUREAU_POLICIES, DEFAULT_THRESHOLD, SHARED_POOL
from bureau.labs.leakage.report.directions import change, compare, separation
from bureau.labs.leakage.result import LabResult

HINT = 0.7
"""An AUROC from which relevance counts as a real hint (the usual line for acceptable
discrimination): MAGPIE's 0.59 is below it, AgentSocialBench's 0.77 above."""


class ClaimError(BureauError):
    """The lesson says something its own run does not show: the data changed under it."""

    hint = ("The figures above are right; the sentence is not, for this data. Run the lesson on "
            "the data it was written for (the shipped slice, or the full benchmark), or read the "
            "figures instead of the sentence.")


def at_threshold(result: LabResult, threshold: float, policy: str = SHARED_POOL) -> dict:
    """Leak rate and recall of ``policy`` if only top-k cards with cosine >= threshold count."""
    pairs = result.policy(policy)
    strict = pairs.assign(retrieved=pairs["retrieved"] & (pairs["score"] >= threshold))
    return {
        "threshold": threshold,
        "private_leak_rate_pairs": private_leak_rate_pairs(strict),
        "shareable_recall": shareable_recall(strict),
    }


def against_chance(result: LabResult, resamples: int = 1000,
                   seed: int = 0) -> tuple[str, float, float]:
    """Does the shared pool leak more or less than a random draw of the same size? The
    difference (pool - random, private pairs) with a 95 % bootstrap interval over scenarios
    (pairs of one scenario share a query and a pool: scenarios are the unit): "less than" when
    the whole interval lies below 0, "more than" above, else "about as much as". A statistical
    answer, not a tolerance: 51.7 % beside 62.3 % on AgentSocialBench is less; 28.7 % beside
    30.4 % on MAGPIE is not told apart from chance."""
    totals = scenario_totals(at_k(result, SHARED_POOL))
    counts = resample_counts(len(totals), resamples, seed)
    with np.errstate(divide="ignore", invalid="ignore"):
        pairs = counts @ totals["private_pairs"].to_numpy()
        diff = (counts @ (totals["leaked_pairs"] - totals["random_leaked_pairs"]).to_numpy()) \
            / pairs
    lo, hi = percentile_interval(diff)
    word = "less than" if hi < 0 else "more than" if lo > 0 else "about as much as"
    return word, lo, hi


def headline(result: LabResult, threshold: float = DEFAULT_THRESHOLD) -> dict[str, Any]:
    """The figures the lessons read (and ``figures.json`` keeps for the full sets): the shared
    pool's leak and recall at the run's k beside a random draw of the same size, relevance as a
    classifier, the pool cut at the bureau's threshold, and the bureau policies."""
    rows = summarize(result).set_index("policy")
    table = summary_table(result)
    pool = table[(table["policy"] == SHARED_POOL) & (table["k"] == result.k)].iloc[0]
    rel = relevance(result)
    cut = at_threshold(result, threshold)
    versus, lo, hi = against_chance(result)
    return {
        "k": result.k,
        "pool_leak": float(pool["pair_leak"]),
        "random_leak": float(pool["random_pair_leak"]),
        "pool_recall": float(pool["shareable_recall"]),
        "random_recall": float(pool["random_shareable_recall"]),
        "pool_vs_random": versus,
        "pool_minus_random_ci": [lo, hi],
        "auroc": float(rel["pooled"]),
        "auroc_per_scenario": float(rel["per_scenario_mean"]),
        "mean_cosine_shareable": float(rel["mean_cosine_shareable"]),
        "mean_cosine_private": float(rel["mean_cosine_private"]),
        "threshold": float(threshold),
        "threshold_leak": float(cut["private_leak_rate_pairs"]),
        "threshold_recall": float(cut["shareable_recall"]),
        "bureau_leak": float(rows.loc[list(BUREAU_POLICIES), "private_leak_rate_pairs"].max()),
        "c_recall": float(rows.loc["c_bureau_published", "shareable_recall"]),
        "d_recall": float(rows.loc["d_bureau_abstractions", "shareable_recall"]),
        "abstraction_pairs": int(rows.loc["d_bureau_abstractions",
                                          "abstraction_pairs_delivered"]),
    }


@dataclass(frozen=True)
class Claim:
    """A sentence a lesson's prose states, and the test on the run's figures that makes it true."""

    sentence: str
    holds: Callable[[dict[str, Any]], bool]


CLAIMS: dict[str, Claim] = {
    "pool-leaks": Claim(
        "a shared pool ranked by relevance hands other agents' private items to requesters",
        lambda h: h["pool_leak"] >= 0.05),
    "relevance-weak": Claim(
        "relevance is a weak signal of what may be shared (AUROC below 0.7)",
        lambda h: h["auroc"] < HINT),
    "relevance-hint": Claim(
        "relevance is a real hint here (AUROC of 0.7 or more)",
        lambda h: h["auroc"] >= HINT),
    "threshold-leaks": Claim(
        "at the bureau's own relevance threshold the shared pool still leaks",
        lambda h: h["threshold_leak"] >= 0.05),
    "threshold-costs-recall": Claim(
        "the threshold cuts shareable recall along with the leak",
        lambda h: h["threshold_recall"] < h["pool_recall"] - 0.01),
    "bureau-zero": Claim(
        "the bureau's policies hand no other agent's private item to a requester",
        lambda h: h["bureau_leak"] == 0),
    "pool-below-random": Claim(
        "the shared pool leaks less than a random draw of the same size (the whole 95 % "
        "interval of the difference below 0)",
        lambda h: h["pool_vs_random"] == "less than"),
    "abstractions-cost-recall": Claim(
        "publishing the safe abstractions beside the shareable items costs shareable recall",
        lambda h: change(h["c_recall"], h["d_recall"]) == "costs"),
}
"""Every directional sentence a lesson's markdown states outright, by key."""


def require(figures: dict[str, Any], *keys: str, data: str = "this run") -> str:
    """Check the named :data:`CLAIMS` on ``figures`` (:func:`headline`); returns one line saying
    they hold, or raises :class:`ClaimError` naming each that does not, with the figures."""
    failed = [key for key in keys if not CLAIMS[key].holds(figures)]
    if failed:
        shown = ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                          for k, v in figures.items() if not isinstance(v, list))
        raise ClaimError(
            f"On {data}, the lesson's text does not hold: "
            + "; ".join(f"'{CLAIMS[k].sentence}'" for k in failed) + f". The figures: {shown}.")
    return f"Checked on {data}: " + "; ".join(CLAIMS[k].sentence for k in keys) + "."


__all__ = ["CLAIMS", "HINT", "Claim", "ClaimError", "against_chance", "at_threshold", "change",
           "compare", "headline", "require", "separation"]
