"""Policy e beside what could fail: a mediator that reads content, label noise, recall by budget.

Policy e's mediator decides from the card's ``sensitivity``, which the lab copies from the
benchmark's own label: "0 raw private reveals" is therefore a *wiring check* (label conformance:
the service's mediator, budget and audit chain do what the policy file says for every
private-card decision), not a measurement of how well mediation separates private from
shareable. This module adds the figures that could come out badly (issue 20 §2):

Content mediator (labels hidden)
    :func:`content_scores` gives every item a *sensitivity score*: the highest cosine of its text
    with the descriptions of :data:`SENSITIVE_CATEGORIES` (fixed a priori, one sentence per
    category, embedded with the Bureau's own MiniLM encoder). The mediator withholds a card whose
    score reaches a threshold and reveals the rest; it never sees a label. It decides the same
    cards e decided in its asks (same budget: top-k of each owner), so the two are compared
    card for card; the decisions are computed in numpy from the lab's vectors, not run through
    the service (the service run is e's). The threshold is chosen on a *calibration* half of the
    scenarios (:func:`split_of`: a hash of the scenario id) as the one maximising recall minus
    leak, and every figure is reported on the other half. Scored against the labels: leak =
    private-card decisions revealed / private-card decisions, recall = shareable-card decisions
    revealed / shareable-card decisions. The random line is a mediator that reveals each card
    with the same probability as the content mediator's release rate: its expected leak and
    recall both equal that rate.
Label noise
    :func:`label_noise` flips a seeded share (5 / 10 / 20 %) of all items' labels and applies e's
    rule (shareable: reveal; private: abstract if it has a safe abstraction, else withhold) to the
    same decisions. At 0 % the rule must reproduce the service's recorded actions exactly
    (``rule_matches_service``), which ties the simulation to the run.
Recall by budget
    :func:`recall_by_k` reads e's exhaustive probe (every card of every owner decided, with the
    requester's query cosine) and gives e's minimum-info recall at any per-owner k, with the
    holders' item counts (why top-5 of an owner misses shareable items) and the k at which e
    decides as many foreign shareable cards per requester as policy c returns.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bureau.labs.leakage.metrics.metrics import relevance_auroc

if TYPE_CHECKING:
    from bureau.labs.leakage.datasets.labset import LabSet
    from bureau.labs.leakage.result import LabResult

SENSITIVE_CATEGORIES: dict[str, str] = {
    "health": "a medical condition, diagnosis, illness, injury, medication, therapy or mental "
              "health problem",
    "finance": "personal money trouble: debt, an overdraft, a loan, bankruptcy, salary, income "
               "or savings",
    "legal": "legal trouble: a lawsuit, an arrest, a criminal record, a court case or "
             "immigration status",
    "relationships": "private family and relationship matters: divorce, an affair, dating, "
                     "pregnancy or a family conflict",
    "identity": "sexual orientation, gender identity, religion, political views or ethnicity",
    "work": "job trouble: being fired, looking for another job, a poor performance review, a "
            "disciplinary action or a plan to quit",
    "secret": "a secret or confidential plan the person does not want the others to know",
    "identifiers": "a home address, phone number, password, account number or other personal "
                   "identifier",
}
"""The sensitive categories the content mediator compares a card with, written before any figure
was seen and not tuned: the categories privacy rubrics and both benchmarks' penalties name."""
CATEGORY_TEXTS = list(SENSITIVE_CATEGORIES.values())
NOISE_RATES = (0.05, 0.10, 0.20)
NOISE_SEEDS = tuple(range(10))
CONTENT_COLUMNS = ("scenario_id", "item_id", "label", "content_score")


def content_scores(encoder: Any, lab: LabSet, vectors: dict[str, np.ndarray]) -> pd.DataFrame:
    """Every item's sensitivity score (:data:`CONTENT_COLUMNS`): its highest cosine with a
    category description. ``vectors`` holds the lab's item vectors; a description not in it
    is embedded here, once (the runner counts the descriptions among the lab's texts)."""
    todo = [t for t in CATEGORY_TEXTS if t not in vectors]
    if todo:
        vectors.update(zip(todo, encoder.embed(todo), strict=True))
    cats = np.stack([np.asarray(vectors[t], dtype=float) for t in CATEGORY_TEXTS])
    cats /= np.linalg.norm(cats, axis=1, keepdims=True)
    rows = []
    for item in lab.items:
        v = np.asarray(vectors[item.text], dtype=float)
        rows.append((item.scenario_id, item.item_id, item.label,
                     float(np.max(cats @ (v / np.linalg.norm(v))))))
    return pd.DataFrame(rows, columns=list(CONTENT_COLUMNS))


def split_of(scenario_id: str) -> str:
    """``calibration`` or ``evaluation``, fixed by a hash of the scenario id (no seed to pick)."""
    return ("calibration" if hashlib.sha256(scenario_id.encode()).digest()[0] % 2 == 0
            else "evaluation")


def foreign_asks(result: LabResult) -> pd.DataFrame:
    """e's ask-stage decisions on another agent's item (the cards a–e all compare on)."""
    dec = result.mediated
    ask = dec[dec["stage"] == "ask"]
    return ask[ask["item_owner"].notna() & (ask["item_owner"] != ask["requester"])]


def _leak_recall(private: np.ndarray, revealed: np.ndarray) -> dict[str, Any]:
    priv, share = private.astype(bool), ~private.astype(bool)
    rev = revealed.astype(bool)
    return {
        "private_decisions": int(priv.sum()),
        "shareable_decisions": int(share.sum()),
        "private_revealed": int((priv & rev).sum()),
        "shareable_revealed": int((share & rev).sum()),
        "leak": float((priv & rev).sum() / priv.sum()) if priv.sum() else float("nan"),
        "recall": float((share & rev).sum() / share.sum()) if share.sum() else float("nan"),
        "release_rate": float(rev.mean()) if len(rev) else float("nan"),
    }


def best_threshold(scores: np.ndarray, private: np.ndarray) -> float:
    """The withhold threshold maximising recall minus leak (ties: the highest, i.e. the mediator
    that withholds least: withholding everything is not a finding).

    Candidates are the observed scores and +inf (withhold nothing); a card is withheld when its
    score is at or above the threshold."""
    private = private.astype(bool)
    best, best_j = float("inf"), -np.inf
    for t in [*np.unique(scores), float("inf")]:
        rev = scores < t
        f = _leak_recall(private, rev)
        j = (0 if np.isnan(f["recall"]) else f["recall"]) - (
            0 if np.isnan(f["leak"]) else f["leak"])
        if j >= best_j - 1e-12:
            best, best_j = float(t), j
    return best


def content_mediator(result: LabResult, scores: pd.DataFrame | None = None) -> dict[str, Any]:
    """The content mediator's figures (module docstring) on the evaluation half, beside e's on
    the same decisions and the random line; the threshold comes from the calibration half."""
    scores = result.content if scores is None else scores
    asks = foreign_asks(result)
    if asks.empty or scores is None or scores.empty:
        return {}
    frame = asks.merge(scores[["scenario_id", "item_id", "content_score"]],
                       on=["scenario_id", "item_id"], how="left")
    frame["split"] = frame["scenario_id"].map(split_of)
    private = (frame["item_label"] == "private").to_numpy()
    cal = (frame["split"] == "calibration").to_numpy()
    threshold = best_threshold(frame["content_score"].to_numpy()[cal], private[cal])
    ev = ~cal
    s_ev = frame["content_score"].to_numpy()[ev]
    content = _leak_recall(private[ev], s_ev < threshold)
    labelled = _leak_recall(private[ev], (frame["action"] == "reveal").to_numpy()[ev])
    p = content["release_rate"]
    return {
        "threshold": threshold,
        "categories": len(SENSITIVE_CATEGORIES),
        "calibration_decisions": int(cal.sum()),
        "evaluation_decisions": int(ev.sum()),
        "evaluation_scenarios": int(frame.loc[ev, "scenario_id"].nunique()),
        "content": content,
        "random": {"leak": p, "recall": p, "release_rate": p},
        "labels": labelled,
        "auroc": _auroc(s_ev, private[ev]),
    }


def _auroc(scores: np.ndarray, private: np.ndarray) -> float:
    """P(a private card outscores a shareable one), ties half; NaN with one class only."""
    if private.all() or not private.any():
        return float("nan")
    labels = np.where(private, "private", "shareable")
    return relevance_auroc(-scores, labels)  # relevance_auroc: label 1 = shareable


def e_rule(label: str, has_abstraction: bool) -> str:
    """Policy e's rule for another agent's card (``scenarios/policies/leak-lab.yaml``)."""
    if label == "shareable":
        return "reveal"
    return "abstract" if has_abstraction else "withhold"


def flipped_items(lab: LabSet, rate: float, seed: int) -> set[tuple[str, str]]:
    """round(rate * items) items, drawn without replacement by ``seed`` from every item of the
    lab in file order: the ones whose label the noise flips."""
    keys = [(i.scenario_id, i.item_id) for i in lab.items]
    n = int(round(rate * len(keys)))
    pick = np.random.default_rng(seed).choice(len(keys), size=n, replace=False) if n else []
    return {keys[j] for j in pick}


def label_noise(result: LabResult, rates: Sequence[float] = NOISE_RATES,
                seeds: Sequence[int] = NOISE_SEEDS) -> dict[str, Any]:
    """e's leak and recall on its ask decisions when a share of the labels is flipped (module
    docstring): per rate the mean, lowest and highest over ``seeds``."""
    asks = foreign_asks(result)
    if asks.empty:
        return {}
    keys = list(zip(asks["scenario_id"], asks["item_id"], strict=True))
    true = asks["item_label"].to_numpy()
    has_abs = asks["has_abstraction"].astype(bool).to_numpy()
    private = true == "private"
    clean = [e_rule(lab, a) for lab, a in zip(true, has_abs, strict=True)]
    out: dict[str, Any] = {
        "decisions": len(asks),
        "rule_matches_service": bool((np.array(clean) == asks["action"].to_numpy()).all()),
        "rates": {},
    }
    flip = {"private": "shareable", "shareable": "private"}
    for rate in rates:
        runs = []
        for seed in seeds:
            flipped = flipped_items(result.lab, rate, seed)
            noisy = [flip[lab] if key in flipped else lab
                     for key, lab in zip(keys, true, strict=True)]
            rev = np.array([e_rule(lab, a) == "reveal"
                            for lab, a in zip(noisy, has_abs, strict=True)])
            runs.append(_leak_recall(private, rev))
        leaks = [r["leak"] for r in runs]
        recalls = [r["recall"] for r in runs]
        out["rates"][rate] = {
            "leak": float(np.mean(leaks)), "leak_range": (min(leaks), max(leaks)),
            "recall": float(np.mean(recalls)), "recall_range": (min(recalls), max(recalls)),
            "seeds": len(seeds),
        }
    return out


def recall_by_k(result: LabResult, ks: Sequence[int] = (1, 2, 3, 5, 8, 10, 15)
                ) -> dict[str, Any]:
    # a k above an owner's card count decides all of them: the curve has every k of ``ks``
    """e's minimum-info recall at per-owner budget k, from the exhaustive probe (module
    docstring), the holders' item counts and the k matching policy c's shareable budget."""
    dec = result.mediated
    probe = dec[(dec["stage"] == "probe") & dec["item_owner"].notna()
                & (dec["item_owner"] != dec["requester"])].copy()
    if probe.empty:
        return {}
    group = ["scenario_id", "requester", "item_owner"]
    probe = probe.sort_values([*group, "score"], ascending=[True, True, True, False],
                              kind="stable")
    probe["rank"] = probe.groupby(group).cumcount() + 1
    shareable_pairs = sum(1 for s in result.lab.scenarios for a in s.agents for i in s.items
                          if i.owner != a.name and i.label == "shareable")
    requesters = sum(len(s.agents) for s in result.lab.scenarios)
    share = probe[(probe["item_label"] == "shareable") & (probe["action"] == "reveal")]
    # items per holder: an owner is an agent of one scenario (agent names repeat across them)
    held = pd.Series([f"{i.scenario_id}\0{i.owner}" for i in result.lab.items]).value_counts() \
        if result.lab.items else pd.Series(dtype=int)
    c = result.pairs[(result.pairs["policy"] == "c_bureau_published")
                     & (result.pairs["label"] == "shareable") & result.pairs["retrieved"]]
    c_per_requester = len(c) / requesters if requesters else float("nan")
    top = int(probe["rank"].max())
    curve = {}
    match = None
    for k in range(1, max(top, *ks) + 1):
        got = share[share["rank"] <= k]
        per_requester = len(got) / requesters
        if match is None and per_requester >= c_per_requester:
            match = k
        if k in ks:
            curve[k] = len(got) / shareable_pairs if shareable_pairs else float("nan")
    holders = held.to_numpy() if len(held) else np.array([0])
    return {
        "recall_at_k": curve,
        "holder_items": {"min": int(holders.min()), "median": float(np.median(holders)),
                         "max": int(holders.max()), "holders": int(len(held))},
        "c_shareable_per_requester": c_per_requester,
        "k_matching_c": match,
        "recall_at_matching_k": (len(share[share["rank"] <= match]) / shareable_pairs
                                 if match and shareable_pairs else float("nan")),
    }


def measured_summary(result: LabResult) -> dict[str, Any]:
    """Everything above for one run (the report and ``summary.json`` read it)."""
    dec = foreign_asks(result)
    private = dec[dec["item_label"] == "private"]
    return {
        "wiring_check": {
            "private_card_decisions": len(private),
            "private_cards_revealed": int((private["action"] == "reveal").sum()),
            "shareable_card_decisions": int((dec["item_label"] == "shareable").sum()),
            "what_it_checks": "label conformance: the mediator decides from the card's "
                              "sensitivity, copied from the benchmark's label",
        },
        "content_mediator": content_mediator(result),
        "label_noise": label_noise(result),
        "recall_by_k": recall_by_k(result),
    }
