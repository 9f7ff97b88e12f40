"""The hand-judged reference samples: what the lab's automatic checks are worth on items a person
read (issue 20 §2).

Two samples, each a CSV of ids and judgements under ``data/leak_judgements/`` (rubric in its
README; no dataset text is committed, the texts are joined back from the datasets here):

Abstractions (``abstractions.csv``)
    Safe abstractions policy e releases in place of a private item. Does the abstraction
    disclose (2), hint at (1) or keep (0) the fact its private sentence protects? The checks:
    the mediator's term check (:func:`bureau.mediation.abstraction.leaked_terms`), the same with
    the names both sides know left out, and term repetition (:mod:`bureau.labs.leakage.metrics.repetition`).
Revealed items (``revealed.csv``)
    Items policy e releases raw because the benchmark labels them shareable (MAGPIE
    ``shareable``, AgentSocialBench ``minimum_info_needed``); the content mediator releases the
    ones under its threshold. Does the released text disclose, hint at or keep a fact its
    *owner's* private items protect (the same agent's ``private`` / ``must_not_cross``
    sentences)? The checks: policy e's labels (they release every item of the sample, so they
    flag none), the content mediator (flags an item whose sensitivity score reaches the run's
    threshold, i.e. one it would withhold), and the two term checks run against each of the
    owner's private sentences (flagged when any of them is repeated).

Each check's precision and recall are reported against "discloses" (2) and against "discloses
or hints" (1 or 2). A module of its own because the samples are data a person wrote, read by
both the summary and the report, and their arithmetic must be checkable from the files alone
(``tests/test_leak_judged.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from bureau.labs.leakage.metrics.repetition import (
    is_known_term,
    known_names,
    known_words,
    quoted_out,
    raw_texts,
    repeated_terms,
)
from bureau.mediation.abstraction import leaked_terms

if TYPE_CHECKING:
    from bureau.labs.leakage.datasets.labset import LabItem, LabSet
    from bureau.labs.leakage.metrics.analysis import Analysis

FOLDER = ("data", "leak_judgements")
ABSTRACTIONS = "abstractions.csv"
REVEALED = "revealed.csv"
COLUMNS = ["n", "dataset", "item_id", "judgement", "note"]
"""The one shape of both files: sample order, dataset, the lab's item id, 0 / 1 / 2, why."""
TERM_CHECKS = ("checker", "checker_without_known_names", "term_repetition")
REVEALED_CHECKS = ("policy_e_labels", "content_mediator", *TERM_CHECKS)
POSITIVES = (("discloses", frozenset({2})), ("discloses_or_hints", frozenset({1, 2})))


def load_judgements(name: str = ABSTRACTIONS) -> pd.DataFrame:
    """One hand-judged sample (:data:`COLUMNS`, ids only)."""
    from bureau.resources import shipped_path

    return pd.read_csv(shipped_path(*FOLDER, name), keep_default_na=False)


def precision_recall(flagged: list[bool], truth: list[int]) -> dict[str, Any]:
    """A check's flags against the judgements: precision and recall for each reading of
    :data:`POSITIVES` (NaN where the check flags nothing or nothing is positive)."""
    row: dict[str, Any] = {"flagged": sum(flagged)}
    for label, positive in POSITIVES:
        pos = [t in positive for t in truth]
        tp = sum(f and p for f, p in zip(flagged, pos, strict=True))
        row[label] = {"precision": tp / sum(flagged) if sum(flagged) else float("nan"),
                      "recall": tp / sum(pos) if sum(pos) else float("nan"),
                      "true_positives": tp, "positives": sum(pos)}
    return row


def _index(labs: Iterable[LabSet]) -> dict[str, tuple[LabItem, str, tuple[str, ...],
                                                    list[str]]]:
    """Item id -> (item, its raw sentence, the scenario's known names, the raw sentences of
    its owner's private items)."""
    found: dict[str, tuple[Any, str, tuple[str, ...], list[str]]] = {}
    for lab in labs:
        names, raw = known_names(lab), raw_texts(lab)
        private: dict[tuple[str, str], list[str]] = {}
        for i in lab.items:
            if i.label == "private":
                private.setdefault((i.scenario_id, i.owner), []).append(raw.get(i.item_id, i.text))
        for i in lab.items:
            found[i.item_id] = (i, raw.get(i.item_id, i.text), names.get(i.scenario_id, ()),
                                private.get((i.scenario_id, i.owner), []))
    return found


def judged_checks(labs: Iterable[LabSet], judgements: pd.DataFrame | None = None
                  ) -> dict[str, Any]:
    """Each abstraction check's precision and recall on the hand-judged abstractions. ``labs``:
    the datasets the sample was drawn from (a judged item missing from them, or without an
    abstraction, is counted in ``missing``)."""
    judged = load_judgements(ABSTRACTIONS) if judgements is None else judgements
    found = _index(labs)
    flags: dict[str, list[bool]] = {c: [] for c in TERM_CHECKS}
    truth: list[int] = []
    missing = 0
    for r in judged.itertuples():
        if r.item_id not in found or not found[r.item_id][0].abstraction:
            missing += 1
            continue
        item, original, known, _ = found[r.item_id]
        skip = known_words(known)
        checker = leaked_terms(item.text, item.abstraction)
        flags["checker"].append(bool(checker))
        flags["checker_without_known_names"].append(any(not is_known_term(t, skip) for t in checker))
        flags["term_repetition"].append(
            bool(repeated_terms(quoted_out(original, item.abstraction), item.abstraction, known)))
        truth.append(int(r.judgement))
    out: dict[str, Any] = {"judged": len(truth), "missing": missing,
                           "judgements": {j: truth.count(j) for j in (0, 1, 2)}}
    out.update({name: precision_recall(f, truth) for name, f in flags.items()})
    return out


def judged_revealed(labs: Iterable[LabSet], judgements: pd.DataFrame | None = None,
                    withheld: Mapping[str, bool] | None = None) -> dict[str, Any]:
    """Each check's precision and recall on the hand-judged revealed items (module docstring).

    ``withheld``: item id -> whether the content mediator would withhold it (its score at or
    above the run's threshold, :func:`content_flags`); without it, or for an item it lacks, the
    content mediator's row is computed on the items it has (``scored``). A judged item missing
    from ``labs``, or not labelled shareable there, is counted in ``missing``.
    """
    judged = load_judgements(REVEALED) if judgements is None else judgements
    withheld = withheld or {}
    found = _index(labs)
    flags: dict[str, list[bool]] = {c: [] for c in REVEALED_CHECKS if c != "content_mediator"}
    truth: list[int] = []
    scored_flags: list[bool] = []
    scored_truth: list[int] = []
    missing = 0
    for r in judged.itertuples():
        if r.item_id not in found or found[r.item_id][0].label != "shareable":
            missing += 1
            continue
        item, _, known, private = found[r.item_id]
        skip = known_words(known)
        checker = [t for p in private for t in leaked_terms(p, item.text)]
        flags["policy_e_labels"].append(False)  # e releases every shareable item raw
        flags["checker"].append(bool(checker))
        flags["checker_without_known_names"].append(any(not is_known_term(t, skip) for t in checker))
        flags["term_repetition"].append(any(repeated_terms(p, item.text, known) for p in private))
        truth.append(int(r.judgement))
        if item.item_id in withheld:
            scored_flags.append(bool(withheld[item.item_id]))
            scored_truth.append(int(r.judgement))
    out: dict[str, Any] = {"judged": len(truth), "missing": missing,
                           "judgements": {j: truth.count(j) for j in (0, 1, 2)}}
    out.update({name: precision_recall(f, truth) for name, f in flags.items()})
    out["content_mediator"] = {**precision_recall(scored_flags, scored_truth),
                               "scored": len(scored_truth)}
    return out


def content_flags(analyses: Iterable[Analysis]) -> dict[str, bool]:
    """Item id -> whether each run's content mediator would withhold the item: its sensitivity
    score at or above the threshold that run calibrated (:mod:`bureau.labs.leakage.policies.measured`)."""
    out: dict[str, bool] = {}
    for a in analyses:
        threshold = (a.measured.get("content_mediator") or {}).get("threshold")
        scores = a.result.content
        if threshold is None or scores is None or scores.empty:
            continue
        out.update(zip(scores["item_id"], scores["content_score"] >= threshold, strict=True))
    return out


def judged_samples(analyses: Iterable[Analysis]) -> dict[str, dict[str, Any]]:
    """Both samples' checks for a set of runs (what summary.json and the report read)."""
    analyses = list(analyses)
    labs = [a.result.lab for a in analyses]
    return {"abstractions": judged_checks(labs),
            "revealed": judged_revealed(labs, withheld=content_flags(analyses))}
